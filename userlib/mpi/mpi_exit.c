// SPDX-License-Identifier: MIT
/*
 * mpi_exit: ranks that leave with exit() after MPI_Init, without MPI_Finalize.
 *
 * A program that exits on an error (a bad option, a failed open) is ordinary; MPI only
 * asks the job to end with an error. It must not crash on the way out: the transports'
 * threads (UCX's async thread) are still running while the C library runs the exit
 * handlers and static destructors of every library, ours (libibverbs.so.1) included
 * (docs/notes.md, "Issue 12").
 *
 * Every rank first exchanges a checked message with both ring neighbours, so that
 * the connections (QPs, CQs, registered memory) exist and have carried traffic, and
 * waits in a barrier. Then:
 *   default      every rank calls exit(CODE)
 *   -1           only rank 0 calls exit(CODE); the others wait for a message from rank 0
 *                that never comes: their job must end through MPI's error handling
 *   -e           every rank calls exit(CODE) at once after MPI_Init, before any message
 *                (a program rejecting its options), while the transports may still be
 *                wiring up
 * Output: "mpi_exit: rank R on HOST exits CODE with its connections open" per exiting
 * rank, before the exit.
 */
#include "mpi_common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG_RING 1
#define TAG_NEVER 2
#define RING_BYTES 65536 /* over the eager limit of both MPIs: the rendezvous path too */

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-c CODE] [-1 | -e]\n"
		"  -c   exit status of the ranks that exit (default 3)\n"
		"  -1   only rank 0 exits; the others wait for it\n"
		"  -e   every rank exits right after MPI_Init, before any message\n",
		prog);
	MPI_Abort(MPI_COMM_WORLD, 2);
	exit(2);
}

int main(int argc, char **argv)
{
	static uint8_t sbuf[RING_BYTES], rbuf[RING_BYTES];
	int rank, size, c, code = 3, only_rank0 = 0, early = 0, left, right;
	char *end;

	mpit_init(&argc, &argv, &rank, &size);
	while ((c = getopt(argc, argv, "c:1eh")) != -1) {
		switch (c) {
		case 'c':
			code = (int)strtol(optarg, &end, 10);
			if (*end || end == optarg || code < 0 || code > 255) {
				fprintf(stderr, "mpi_exit: -c %s: an exit status is 0..255\n", optarg);
				usage(argv[0]);
			}
			break;
		case '1':
			only_rank0 = 1;
			break;
		case 'e':
			early = 1;
			break;
		default:
			usage(argv[0]);
		}
	}

	if (only_rank0 && early)
		usage(argv[0]);
	if (early) {
		printf("mpi_exit: rank %d on %s exits %d right after MPI_Init\n", rank, mpit_host(),
		       code);
		fflush(stdout);
		exit(code);
	}
	right = (rank + 1) % size;
	left = (rank + size - 1) % size;
	mpit_fill(sbuf, sizeof(sbuf), (uint64_t)rank);
	MPIT_CHECK(MPI_Sendrecv(sbuf, RING_BYTES, MPI_BYTE, right, TAG_RING, rbuf, RING_BYTES,
				MPI_BYTE, left, TAG_RING, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	mpit_expect_pattern(rbuf, sizeof(rbuf), (uint64_t)left, "ring message");
	MPIT_CHECK(MPI_Barrier(MPI_COMM_WORLD));

	if (!only_rank0 || rank == 0) {
		printf("mpi_exit: rank %d on %s exits %d with its connections open\n", rank,
		       mpit_host(), code);
		fflush(stdout);
		exit(code);
	}
	/* Rank 0 is gone: this never completes; MPI ends the job. */
	MPIT_CHECK(MPI_Recv(rbuf, 1, MPI_BYTE, 0, TAG_NEVER, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	mpit_fail("received a message from rank 0 after it exited");
}
