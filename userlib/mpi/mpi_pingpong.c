// SPDX-License-Identifier: MIT
/*
 * mpi_pingpong: point-to-point messages checked byte for byte, then timed.
 *
 * Rank r < N/2 pairs with rank r + N/2 (on a ring of 4 nodes with one rank per node,
 * both pairs are two hops apart); all pairs run at once and rank 0 reports its pair.
 * For every power of two from MIN to MAX, messages of that size and its neighbours
 * (p - 1, p + 1) go once each way at shifting buffer offsets and are checked in full,
 * with a canary behind each receive buffer (a transport that writes past the message
 * is caught). Then ITERS round trips of size p are timed (fewer for big sizes, at most
 * BUDGET bytes per size), after WARMUP untimed ones, and the last message of each
 * direction is checked again. Each round trip is timed on its own, so that the median
 * can stand beside the mean: one descheduled round trip in a run of a few hundred moves
 * the mean of an emulated cluster by more than the transport does, and perftest's
 * "typical" latency, which MPI is compared with, is a median.
 * With -b, a stream of messages per size is timed too (bandwidth): STREAM of them (default:
 * as many as the timed round trips), WINDOW non-blocking sends at a time, as OSU's osu_bw
 * does; a stream of a few messages measures mostly its start and its drain.
 *
 * Output (rank 0): a table "bytes iters lat_us med_us MB/s [stream_MB/s]" (lat_us = half
 * the mean round trip, med_us = half the median one; MB/s = bytes / lat_us), then a line
 * starting "mpi_pingpong: OK" with the bytes rank 0 sent. Any fault: "FAIL rank ..." on stderr and the job aborts.
 */
#include "mpi_common.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OFFSET 64   /* buffer offsets cycle through 0..MAX_OFFSET-1 */
#define CANARY 64       /* bytes behind every receive that must stay untouched */
#define TAG_VERIFY 1
#define TAG_TIMED 2
#define TAG_STREAM 3
#define TAG_ACK 4

struct options {
	size_t min, max, budget;
	int iters, warmup, window;
	int timing, stream;
	int stream_count;         /* -S: messages per stream; 0: the timed round trips' count */
};

struct pair {
	int rank, peer;
	int pinger;               /* the rank that sends first */
	uint8_t *sbuf, *rbuf;     /* MAX + MAX_OFFSET + CANARY bytes each */
	unsigned long long sent;  /* payload bytes this rank sent */
};

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-m MIN] [-M MAX] [-i ITERS] [-B BUDGET] [-w WARMUP] [-n] [-b] [-W WINDOW]\n"
		"       [-S STREAM]\n"
		"  -m, -M   smallest and largest message (default 1 and 4M; powers of two)\n"
		"  -i       timed round trips per size (default 100)\n"
		"  -B       at most this many bytes per size and direction when timing (default 16M)\n"
		"  -w       untimed round trips before timing (default: a tenth of ITERS, at least 2)\n"
		"  -n       check only, no timing\n"
		"  -b       also time a stream per size, WINDOW non-blocking sends at a time (default 16)\n"
		"  -S       messages in each stream (default: the timed round trips of the size)\n",
		prog);
	MPI_Abort(MPI_COMM_WORLD, 2); /* not exit(): see mpit_parse_size */
	exit(2);
}

static uint64_t seed_of(size_t size, int round, int from)
{
	return ((uint64_t)size << 24) ^ ((uint64_t)round << 2) ^ (uint64_t)from;
}

/* Receive exactly size bytes at rbuf + off and check them, the count and the canary. */
static void recv_checked(struct pair *p, size_t size, size_t off, uint64_t seed, int tag,
			 const char *what)
{
	uint8_t *dst = p->rbuf + off;
	MPI_Status st;
	int count;
	char text[128];
	size_t i;

	memset(dst + size, 0xc5, CANARY);
	MPIT_CHECK(MPI_Recv(dst, (int)(size + CANARY), MPI_BYTE, p->peer, tag, MPI_COMM_WORLD, &st));
	MPIT_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
	if ((size_t)count != size)
		mpit_fail("%s: received %d bytes from rank %d, expected %zu", what, count, p->peer, size);
	snprintf(text, sizeof(text), "%s from rank %d (offset %zu)", what, p->peer, off);
	mpit_expect_pattern(dst, size, seed, text);
	for (i = 0; i < CANARY; i++)
		if (dst[size + i] != 0xc5)
			mpit_fail("%s: byte %zu behind the %zu-byte message was overwritten (0x%02x)",
				  text, i, size, dst[size + i]);
}

static void send_pattern(struct pair *p, size_t size, size_t off, uint64_t seed, int tag)
{
	mpit_fill(p->sbuf + off, size, seed);
	MPIT_CHECK(MPI_Send(p->sbuf + off, (int)size, MPI_BYTE, p->peer, tag, MPI_COMM_WORLD));
	p->sent += size;
}

/* One round trip of size bytes, both directions checked. */
static void verify_size(struct pair *p, size_t size, int round)
{
	size_t soff = (size_t)round * 7 % MAX_OFFSET, roff = (size_t)round * 13 % MAX_OFFSET;

	if (p->pinger) {
		send_pattern(p, size, soff, seed_of(size, round, p->rank), TAG_VERIFY);
		recv_checked(p, size, roff, seed_of(size, round, p->peer), TAG_VERIFY, "reply");
	} else {
		recv_checked(p, size, roff, seed_of(size, round, p->peer), TAG_VERIFY, "message");
		send_pattern(p, size, soff, seed_of(size, round, p->rank), TAG_VERIFY);
	}
}

static void round_trip(struct pair *p, size_t size)
{
	if (p->pinger) {
		MPIT_CHECK(MPI_Send(p->sbuf, (int)size, MPI_BYTE, p->peer, TAG_TIMED, MPI_COMM_WORLD));
		MPIT_CHECK(MPI_Recv(p->rbuf, (int)size, MPI_BYTE, p->peer, TAG_TIMED, MPI_COMM_WORLD,
				    MPI_STATUS_IGNORE));
	} else {
		MPIT_CHECK(MPI_Recv(p->rbuf, (int)size, MPI_BYTE, p->peer, TAG_TIMED, MPI_COMM_WORLD,
				    MPI_STATUS_IGNORE));
		MPIT_CHECK(MPI_Send(p->sbuf, (int)size, MPI_BYTE, p->peer, TAG_TIMED, MPI_COMM_WORLD));
	}
	p->sent += size;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct latency {
	double mean_us, median_us; /* half a round trip */
};

/* iters timed round trips of size bytes; rtt holds at least iters entries. */
static struct latency time_size(struct pair *p, const struct options *o, size_t size,
				int iters, double *rtt)
{
	uint64_t mine = seed_of(size, -1, p->rank), theirs = seed_of(size, -1, p->peer);
	int warmup = o->warmup >= 0 ? o->warmup : (iters / 10 > 2 ? iters / 10 : 2);
	double t0, t, sum = 0;
	int i;

	mpit_fill(p->sbuf, size, mine);
	for (i = 0; i < warmup; i++)
		round_trip(p, size);
	t0 = MPI_Wtime();
	for (i = 0; i < iters; i++) {
		round_trip(p, size);
		t = MPI_Wtime();
		rtt[i] = t - t0;
		sum += rtt[i];
		t0 = t;
	}
	mpit_expect_pattern(p->rbuf, size, theirs, "last timed message");
	qsort(rtt, (size_t)iters, sizeof(*rtt), by_value);
	t = iters % 2 ? rtt[iters / 2] : (rtt[iters / 2 - 1] + rtt[iters / 2]) / 2;
	return (struct latency){ .mean_us = sum * 1e6 / iters / 2, .median_us = t * 1e6 / 2 };
}

/* The pinger streams iters messages, window at a time; MB/s as the pinger sees it. */
static double stream_size(struct pair *p, const struct options *o, size_t size, int iters)
{
	MPI_Request req[64];
	MPI_Status st[64]; /* not MPI_STATUSES_IGNORE: GCC 12 misreads MPICH's (MPI_Status *)1 */
	double t0;
	int i, w, n;
	char ack;

	t0 = MPI_Wtime();
	for (i = 0; i < iters; i += n) {
		n = iters - i < o->window ? iters - i : o->window;
		for (w = 0; w < n; w++) {
			if (p->pinger)
				MPIT_CHECK(MPI_Isend(p->sbuf, (int)size, MPI_BYTE, p->peer, TAG_STREAM,
						     MPI_COMM_WORLD, &req[w]));
			else
				MPIT_CHECK(MPI_Irecv(p->rbuf, (int)size, MPI_BYTE, p->peer, TAG_STREAM,
						     MPI_COMM_WORLD, &req[w]));
		}
		MPIT_CHECK(MPI_Waitall(n, req, st));
		if (p->pinger)
			p->sent += (unsigned long long)size * n;
	}
	/* the receiver has everything once its acknowledgement arrives */
	if (p->pinger)
		MPIT_CHECK(MPI_Recv(&ack, 1, MPI_BYTE, p->peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	else
		MPIT_CHECK(MPI_Send(&ack, 1, MPI_BYTE, p->peer, TAG_ACK, MPI_COMM_WORLD));
	t0 = MPI_Wtime() - t0;
	if (!p->pinger)
		mpit_expect_pattern(p->rbuf, size, seed_of(size, -1, p->peer), "last streamed message");
	return (double)size * iters / t0 / 1e6;
}

int main(int argc, char **argv)
{
	struct options o = { .min = 1, .max = 4u << 20, .budget = 16u << 20, .iters = 100,
			     .warmup = -1, .window = 16, .timing = 1, .stream = 0 };
	struct pair p = { 0 };
	int rank, size, c, round = 0, nsizes = 0, npairs;
	unsigned long long sent0 = 0;
	char lib[MPI_MAX_LIBRARY_VERSION_STRING], a[32], b[32];
	int liblen;
	size_t s, bufsize, last = 0;

	mpit_init(&argc, &argv, &rank, &size);
	while ((c = getopt(argc, argv, "m:M:i:B:w:nbW:S:h")) != -1) {
		switch (c) {
		case 'm': o.min = mpit_parse_size(optarg, "-m"); break;
		case 'M': o.max = mpit_parse_size(optarg, "-M"); break;
		case 'i': o.iters = atoi(optarg); break;
		case 'B': o.budget = mpit_parse_size(optarg, "-B"); break;
		case 'w': o.warmup = atoi(optarg); break;
		case 'n': o.timing = 0; break;
		case 'b': o.stream = 1; break;
		case 'W': o.window = atoi(optarg); break;
		case 'S': o.stream_count = atoi(optarg); break;
		default: usage(argv[0]);
		}
	}
	if (optind != argc || o.min < 1 || o.min > o.max || o.max > (1u << 30) || o.iters < 1 ||
	    o.warmup < -1 || o.window < 1 || o.window > 64 || o.stream_count < 0)
		usage(argv[0]);
	if (size < 2)
		mpit_fail("needs at least 2 ranks (got %d)", size);
	npairs = size / 2;
	if (rank >= 2 * npairs) { /* an odd rank out: only the closing collectives */
		p.sent = ULLONG_MAX;
		MPIT_CHECK(MPI_Reduce(&p.sent, &sent0, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, 0,
				      MPI_COMM_WORLD));
		MPIT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
		MPI_Finalize();
		return 0;
	}
	p.rank = rank;
	p.pinger = rank < npairs;
	p.peer = p.pinger ? rank + npairs : rank - npairs;
	bufsize = o.max + 1 + MAX_OFFSET + CANARY;
	p.sbuf = malloc(bufsize);
	p.rbuf = malloc(bufsize);
	if (!p.sbuf || !p.rbuf)
		mpit_fail("cannot allocate 2 x %zu bytes", bufsize);

	if (rank == 0) {
		MPIT_CHECK(MPI_Get_library_version(lib, &liblen));
		lib[strcspn(lib, "\n,")] = 0;
		printf("# mpi_pingpong: %d ranks, %d pair(s) (rank r <-> r + %d); rank 0 on %s; %s\n",
		       size, npairs, npairs, mpit_host(), lib);
	}
	/* Every pair knows where its peer runs: rank 0 prints its own pair's hosts. */
	{
		char peer_host[MPI_MAX_PROCESSOR_NAME] = "";
		MPIT_CHECK(MPI_Sendrecv(mpit_host(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, p.peer, 0,
					peer_host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, p.peer, 0,
					MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		if (rank == 0)
			printf("# pair 0: rank 0 on %s <-> rank %d on %s\n", mpit_host(), p.peer, peer_host);
	}

	/* 1. every size and its neighbours checked both ways, each size once */
	for (s = o.min; s <= o.max; s *= 2) {
		size_t v;

		for (v = s > o.min ? s - 1 : s; v <= s + 1 && v <= o.max; v++)
			if (v > last) {
				verify_size(&p, v, round++);
				last = v;
				nsizes++;
			}
	}
	if (rank == 0)
		printf("# checked: %d message sizes from %s to %s, each way, byte for byte\n", nsizes,
		       mpit_size_text(o.min, a, sizeof(a)),
		       mpit_size_text(o.max, b, sizeof(b)));

	/* 2. timing */
	if (o.timing) {
		double *rtt = malloc((size_t)(o.iters > 2 ? o.iters : 2) * sizeof(*rtt));

		if (!rtt)
			mpit_fail("cannot allocate %d round-trip times", o.iters);
		if (rank == 0)
			printf("%10s %6s %10s %10s %10s%s\n", "bytes", "iters", "lat_us", "med_us",
			       "MB/s", o.stream ? "  stream_MB/s" : "");
		for (s = o.min; s <= o.max; s *= 2) {
			int iters = o.iters;
			struct latency lat;
			double bw = 0;

			if ((size_t)iters * s > o.budget)
				iters = (int)(o.budget / s);
			if (iters < 2)
				iters = 2;
			lat = time_size(&p, &o, s, iters, rtt);
			if (o.stream)
				bw = stream_size(&p, &o, s, o.stream_count ? o.stream_count : iters);
			if (rank == 0) {
				printf("%10zu %6d %10.2f %10.2f %10.2f", s, iters, lat.mean_us,
				       lat.median_us, s / lat.mean_us);
				if (o.stream)
					printf("  %11.2f", bw);
				printf("\n");
			}
		}
		free(rtt);
	}

	MPIT_CHECK(MPI_Reduce(&p.sent, &sent0, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, 0,
			      MPI_COMM_WORLD));
	if (rank == 0)
		printf("mpi_pingpong: OK: %d pair(s), %d sizes checked each way; rank 0 sent %llu bytes "
		       "to rank %d; every rank sent at least %llu\n",
		       npairs, nsizes, p.sent, p.peer, sent0);
	free(p.sbuf);
	free(p.rbuf);
	MPIT_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_Finalize();
	return 0;
}
