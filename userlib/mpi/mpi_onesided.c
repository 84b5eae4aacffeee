// SPDX-License-Identifier: MIT
/*
 * mpi_onesided: MPI_Put, MPI_Get, MPI_Accumulate and MPI_Fetch_and_op checked.
 *
 * Windows of both kinds (MPI_Win_allocate: the MPI's own memory; MPI_Win_create over
 * malloc'ed memory: the user's pages, registered by the transport):
 *  - fence epochs: every rank puts a block into the next rank's window and gets one
 *    from it, at sizes from 1 B to 1 MiB, checked byte for byte;
 *  - accumulate: every rank adds its contribution into every rank's window (int64 SUM),
 *    the sums checked exactly;
 *  - passive target: under MPI_Win_lock_all a rank puts into the next rank, flushes and
 *    gets the block back; every rank increments a counter on rank 0 with
 *    MPI_Fetch_and_op under exclusive locks, and the fetched values must be exactly
 *    0 .. nranks*INCS-1 (atomicity: no value twice, none lost).
 *
 * Output (rank 0): a line per check and one starting "mpi_onesided: OK".
 */
#include "mpi_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIN_BYTES (1u << 20)
#define INCS 50

static int rank, nranks, next, prev;

static uint64_t seed3(int from, int to, size_t n)
{
	return ((uint64_t)n << 32) ^ ((uint64_t)from << 16) ^ (uint64_t)to ^ 0x5a5a0000000000ull;
}

static void fence_put_get(MPI_Win win, uint8_t *base, const char *kind)
{
	static const size_t sizes[] = { 1, 100, 4096, 65537, 256 << 10, 1 << 20 };
	uint8_t *local = malloc(WIN_BYTES);
	char text[128], sz[32];
	size_t i;

	if (!local)
		mpit_fail("out of memory");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];

		/* Put: mine -> next's window; prev's block lands in mine */
		mpit_fill(local, n, seed3(rank, next, n));
		MPIT_CHECK(MPI_Win_fence(0, win));
		MPIT_CHECK(MPI_Put(local, (int)n, MPI_BYTE, next, 0, (int)n, MPI_BYTE, win));
		MPIT_CHECK(MPI_Win_fence(0, win));
		snprintf(text, sizeof(text), "%s: MPI_Put of %zu bytes from rank %d", kind, n, prev);
		mpit_expect_pattern(base, n, seed3(prev, rank, n), text);

		/* Get: next's window -> mine (each rank first writes its own window) */
		mpit_fill(base, n, seed3(rank, -1, n));
		memset(local, 0, n);
		MPIT_CHECK(MPI_Win_fence(0, win));
		MPIT_CHECK(MPI_Get(local, (int)n, MPI_BYTE, next, 0, (int)n, MPI_BYTE, win));
		MPIT_CHECK(MPI_Win_fence(0, win));
		snprintf(text, sizeof(text), "%s: MPI_Get of %zu bytes from rank %d", kind, n, next);
		mpit_expect_pattern(local, n, seed3(next, -1, n), text);
	}
	if (rank == 0)
		printf("  %-8s fence: MPI_Put and MPI_Get, 1 B .. %s, to/from the next rank: OK\n", kind,
		       mpit_size_text(sizes[i - 1], sz, sizeof(sz)));
	free(local);
}

static void fence_accumulate(MPI_Win win, uint8_t *base, const char *kind)
{
	static const size_t counts[] = { 1, 1000, WIN_BYTES / 8 };
	int64_t *add = malloc(WIN_BYTES), *got = (int64_t *)(void *)base;
	int64_t tri = (int64_t)nranks * (nranks + 1) / 2;
	size_t i, k;
	int t;

	if (!add)
		mpit_fail("out of memory");
	for (k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		size_t n = counts[k];

		memset(base, 0, n * 8);
		for (i = 0; i < n; i++)
			add[i] = (int64_t)(rank + 1) * (int64_t)(i + 1);
		MPIT_CHECK(MPI_Win_fence(0, win));
		for (t = 0; t < nranks; t++) {
			int target = (rank + t) % nranks; /* not everyone at rank 0 first */

			MPIT_CHECK(MPI_Accumulate(add, (int)n, MPI_INT64_T, target, 0, (int)n,
						  MPI_INT64_T, MPI_SUM, win));
		}
		MPIT_CHECK(MPI_Win_fence(0, win));
		for (i = 0; i < n; i++)
			if (got[i] != tri * (int64_t)(i + 1))
				mpit_fail("%s: MPI_Accumulate(SUM) of %zu x int64 from %d ranks: element "
					  "%zu is %lld, expected %lld", kind, n, nranks, i,
					  (long long)got[i], (long long)(tri * (int64_t)(i + 1)));
	}
	if (rank == 0)
		printf("  %-8s fence: MPI_Accumulate(SUM) from every rank to every rank, up to %zu "
		       "x int64: OK\n", kind, counts[k - 1]);
	free(add);
	/*
	 * A fence is no barrier for what follows: a rank may leave it, lock the
	 * window and put into ours (passive()) while we still read the sums.
	 */
	MPIT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

static void passive(MPI_Win win, uint8_t *base, const char *kind)
{
	size_t n = 200000;
	uint8_t *local = malloc(n);
	int64_t one = 1, old, *mine = malloc(INCS * sizeof(int64_t)), *all = NULL;
	char *seen;
	char text[128];
	int i;

	if (!local || !mine)
		mpit_fail("out of memory");
	/* Put, flush, Get back: the Get must see the Put */
	MPIT_CHECK(MPI_Win_lock_all(0, win));
	mpit_fill(local, n, seed3(rank, next, n) ^ 1);
	MPIT_CHECK(MPI_Put(local, (int)n, MPI_BYTE, next, 8, (int)n, MPI_BYTE, win));
	MPIT_CHECK(MPI_Win_flush(next, win));
	memset(local, 0, n);
	MPIT_CHECK(MPI_Get(local, (int)n, MPI_BYTE, next, 8, (int)n, MPI_BYTE, win));
	MPIT_CHECK(MPI_Win_flush(next, win));
	MPIT_CHECK(MPI_Win_unlock_all(win));
	snprintf(text, sizeof(text), "%s: MPI_Get after MPI_Put and flush (lock_all) at rank %d", kind,
		 next);
	mpit_expect_pattern(local, n, seed3(rank, next, n) ^ 1, text);
	MPIT_CHECK(MPI_Barrier(MPI_COMM_WORLD));

	/* a counter on rank 0: fetch-and-add under exclusive locks */
	if (rank == 0) {
		MPIT_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
		memset(base, 0, 8);
		MPIT_CHECK(MPI_Win_unlock(0, win));
	}
	MPIT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	for (i = 0; i < INCS; i++) {
		MPIT_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
		MPIT_CHECK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win));
		MPIT_CHECK(MPI_Win_unlock(0, win));
		mine[i] = old;
	}
	if (rank == 0 && !(all = malloc((size_t)nranks * INCS * sizeof(int64_t))))
		mpit_fail("out of memory");
	MPIT_CHECK(MPI_Gather(mine, INCS, MPI_INT64_T, all, INCS, MPI_INT64_T, 0, MPI_COMM_WORLD));
	if (rank == 0) {
		int64_t total = (int64_t)nranks * INCS;

		seen = calloc((size_t)total, 1);
		if (!seen)
			mpit_fail("out of memory");
		for (i = 0; i < total; i++) {
			if (all[i] < 0 || all[i] >= total)
				mpit_fail("%s: MPI_Fetch_and_op returned %lld (rank %d's increment %d), "
					  "outside 0..%lld", kind, (long long)all[i], i / INCS, i % INCS,
					  (long long)total - 1);
			if (seen[all[i]]++)
				mpit_fail("%s: MPI_Fetch_and_op returned %lld twice: an increment was "
					  "not atomic", kind, (long long)all[i]);
		}
		printf("  %-8s passive: Put+flush+Get at the next rank; %lld MPI_Fetch_and_op "
		       "increments of one counter, each value once: OK\n", kind, (long long)total);
		free(seen);
		free(all);
	}
	free(mine);
	free(local);
}

static void run_all(MPI_Win win, uint8_t *base, const char *kind)
{
	fence_put_get(win, base, kind);
	fence_accumulate(win, base, kind);
	passive(win, base, kind);
	MPIT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
	MPI_Win win;
	uint8_t *base, *user;

	mpit_init(&argc, &argv, &rank, &nranks);
	if (argc > 1) {
		fprintf(stderr, "usage: %s (no options)\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	next = (rank + 1) % nranks;
	prev = (rank + nranks - 1) % nranks;
	if (rank == 0)
		printf("# mpi_onesided: %d ranks, windows of %u bytes\n", nranks, WIN_BYTES);

	MPIT_CHECK(MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
	MPIT_CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	run_all(win, base, "allocate");
	MPIT_CHECK(MPI_Win_free(&win));

	user = malloc(WIN_BYTES);
	if (!user)
		mpit_fail("out of memory");
	memset(user, 0, WIN_BYTES);
	MPIT_CHECK(MPI_Win_create(user, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MPIT_CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	run_all(win, user, "create");
	MPIT_CHECK(MPI_Win_free(&win));
	free(user);

	if (rank == 0)
		printf("mpi_onesided: OK: %d ranks: put, get, accumulate, fetch_and_op on allocated "
		       "and user windows\n", nranks);
	MPI_Finalize();
	return 0;
}
