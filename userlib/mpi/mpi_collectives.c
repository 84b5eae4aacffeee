// SPDX-License-Identifier: MIT
/*
 * mpi_collectives: Bcast, Allreduce, Alltoall and Allgather checked element by element,
 * at small, medium and large counts (the large ones take the MPIs' pipelined and
 * rendezvous paths), from every root where there is one.
 *
 * Output (rank 0): one line per operation with its sizes and time, then a line starting
 * "mpi_collectives: OK" naming the ranks and hosts. Any fault: "FAIL rank ..." on stderr
 * and the job aborts.
 */
#include "mpi_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		mpit_fail("cannot allocate %zu bytes", n);
	return p;
}

static uint64_t seed2(int a, int b, size_t n)
{
	return ((uint64_t)n << 32) ^ ((uint64_t)a << 16) ^ (uint64_t)b;
}

static void report(const char *op, const char *what, double t0)
{
	if (rank == 0)
		printf("  %-10s %-44s %8.1f ms\n", op, what, (MPI_Wtime() - t0) * 1e3);
}

static void check_bcast(size_t n)
{
	uint8_t *buf = xmalloc(n);
	char text[96], sz[32];
	double t0 = MPI_Wtime();
	int root;

	for (root = 0; root < nranks; root++) {
		if (rank == root)
			mpit_fill(buf, n, seed2(root, 0, n));
		else
			memset(buf, 0, n);
		MPIT_CHECK(MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD));
		snprintf(text, sizeof(text), "MPI_Bcast from root %d", root);
		mpit_expect_pattern(buf, n, seed2(root, 0, n), text);
	}
	snprintf(text, sizeof(text), "%s from each of %d roots", mpit_size_text(n, sz, sizeof(sz)),
		 nranks);
	report("bcast", text, t0);
	free(buf);
}

static void check_allreduce(size_t count, int in_place)
{
	int64_t *sum = xmalloc(count * sizeof(*sum));
	double *max = xmalloc(count * sizeof(*max)), *mine = xmalloc(count * sizeof(*mine));
	int64_t *in = xmalloc(count * sizeof(*in));
	int64_t tri = (int64_t)nranks * (nranks + 1) / 2;
	double t0 = MPI_Wtime();
	char text[96], sz[32];
	size_t i;

	for (i = 0; i < count; i++) {
		/* distinct per rank and element; the sum is exact in 64 bits */
		in[i] = (int64_t)(rank + 1) * (int64_t)(i + 1) - (int64_t)(i % 7) * rank;
		sum[i] = in[i];
		/* the maximum sits on a different rank for different elements */
		mine[i] = (double)((rank + (int)i) % nranks) + 0.25 * (double)i;
	}
	MPIT_CHECK(MPI_Allreduce(in_place ? MPI_IN_PLACE : (void *)in, sum, (int)count, MPI_INT64_T,
				 MPI_SUM, MPI_COMM_WORLD));
	MPIT_CHECK(MPI_Allreduce(mine, max, (int)count, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
	for (i = 0; i < count; i++) {
		int64_t want = tri * (int64_t)(i + 1) - (int64_t)(i % 7) * ((int64_t)nranks * (nranks - 1) / 2);
		double want_max = (double)(nranks - 1) + 0.25 * (double)i;

		if (sum[i] != want)
			mpit_fail("MPI_Allreduce(SUM, %zu x int64%s): element %zu is %lld, expected %lld",
				  count, in_place ? ", in place" : "", i, (long long)sum[i], (long long)want);
		if (max[i] != want_max)
			mpit_fail("MPI_Allreduce(MAX, %zu x double): element %zu is %g, expected %g",
				  count, i, max[i], want_max);
	}
	snprintf(text, sizeof(text), "%zu x int64 SUM%s + double MAX (%s)", count,
		 in_place ? " in place" : "", mpit_size_text(count * 8, sz, sizeof(sz)));
	report("allreduce", text, t0);
	free(sum);
	free(max);
	free(mine);
	free(in);
}

static void check_alltoall(size_t block)
{
	uint8_t *out = xmalloc(block * nranks), *in = xmalloc(block * nranks);
	double t0 = MPI_Wtime();
	char text[96], sz[32];
	int peer;

	for (peer = 0; peer < nranks; peer++)
		mpit_fill(out + block * peer, block, seed2(rank, peer, block));
	memset(in, 0, block * nranks);
	MPIT_CHECK(MPI_Alltoall(out, (int)block, MPI_BYTE, in, (int)block, MPI_BYTE, MPI_COMM_WORLD));
	for (peer = 0; peer < nranks; peer++) {
		snprintf(text, sizeof(text), "MPI_Alltoall block from rank %d", peer);
		mpit_expect_pattern(in + block * peer, block, seed2(peer, rank, block), text);
	}
	snprintf(text, sizeof(text), "%s per pair", mpit_size_text(block, sz, sizeof(sz)));
	report("alltoall", text, t0);
	free(out);
	free(in);
}

static void check_allgather(size_t block)
{
	uint8_t *mine = xmalloc(block), *all = xmalloc(block * nranks);
	double t0 = MPI_Wtime();
	char text[96], sz[32];
	int peer;

	mpit_fill(mine, block, seed2(rank, -1, block));
	memset(all, 0, block * nranks);
	MPIT_CHECK(MPI_Allgather(mine, (int)block, MPI_BYTE, all, (int)block, MPI_BYTE, MPI_COMM_WORLD));
	for (peer = 0; peer < nranks; peer++) {
		snprintf(text, sizeof(text), "MPI_Allgather block of rank %d", peer);
		mpit_expect_pattern(all + block * peer, block, seed2(peer, -1, block), text);
	}
	snprintf(text, sizeof(text), "%s per rank", mpit_size_text(block, sz, sizeof(sz)));
	report("allgather", text, t0);
	free(mine);
	free(all);
}

/* How many different hosts the ranks run on. */
static int count_hosts(void)
{
	char *names = xmalloc((size_t)nranks * MPI_MAX_PROCESSOR_NAME);
	int i, j, hosts = 0;

	MPIT_CHECK(MPI_Allgather(mpit_host(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names,
				 MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD));
	for (i = 0; i < nranks; i++) {
		for (j = 0; j < i; j++)
			if (!strcmp(names + (size_t)i * MPI_MAX_PROCESSOR_NAME,
				    names + (size_t)j * MPI_MAX_PROCESSOR_NAME))
				break;
		hosts += j == i;
	}
	free(names);
	return hosts;
}

int main(int argc, char **argv)
{
	static const size_t bcast[] = { 1, 1000, 64 << 10, 1 << 20 };
	static const size_t reduce[] = { 1, 1000, 128 << 10 };  /* 1 MiB of int64 */
	static const size_t blocks[] = { 1, 1000, 64 << 10 };
	int hosts;
	size_t i;

	mpit_init(&argc, &argv, &rank, &nranks);
	if (argc > 1) {
		fprintf(stderr, "usage: %s (no options)\n", argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	hosts = count_hosts();
	if (rank == 0)
		printf("# mpi_collectives: %d ranks on %d hosts\n", nranks, hosts);
	MPIT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	for (i = 0; i < sizeof(bcast) / sizeof(bcast[0]); i++)
		check_bcast(bcast[i]);
	for (i = 0; i < sizeof(reduce) / sizeof(reduce[0]); i++) {
		check_allreduce(reduce[i], 0);
		check_allreduce(reduce[i], 1);
	}
	for (i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		check_alltoall(blocks[i]);
		check_allgather(blocks[i]);
	}
	MPIT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	if (rank == 0)
		printf("mpi_collectives: OK: %d ranks on %d hosts: bcast, allreduce, alltoall, allgather\n",
		       nranks, hosts);
	MPI_Finalize();
	return 0;
}
