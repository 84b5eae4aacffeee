// SPDX-License-Identifier: MIT
/* What the MPI test programs share (mpi_common.h). */
#include "mpi_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int my_rank = -1;

const char *mpit_host(void)
{
	static char name[MPI_MAX_PROCESSOR_NAME];
	int len = 0;

	if (!name[0] && MPI_Get_processor_name(name, &len) != MPI_SUCCESS)
		snprintf(name, sizeof(name), "?");
	return name;
}

void mpit_fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "FAIL rank %d on %s: ", my_rank, mpit_host());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1); /* MPI_Abort does not return; this keeps the compiler sure of it */
}

void mpit_fail_mpi(int rc, const char *call, const char *file, int line)
{
	char text[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof(text), "MPI error %d", rc);
	mpit_fail("%s failed at %s:%d: %s", call, file, line, text);
}

void mpit_init(int *argc, char ***argv, int *rank, int *size)
{
	if (MPI_Init(argc, argv) != MPI_SUCCESS) {
		fprintf(stderr, "FAIL: MPI_Init failed\n");
		exit(1);
	}
	/* Errors come back to MPIT_CHECK, which names the call before aborting the job. */
	MPIT_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	MPIT_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, rank));
	MPIT_CHECK(MPI_Comm_size(MPI_COMM_WORLD, size));
	my_rank = *rank;
	/* Lines of different ranks interleave on mpirun's output: keep each one whole. */
	setvbuf(stdout, NULL, _IOLBF, 0);
}

void mpit_fill(void *buf, size_t n, uint64_t seed)
{
	uint8_t *p = buf;
	size_t k;

	for (k = 0; k + 8 <= n; k += 8) {
		uint64_t w = mpit_pattern_word(seed, k / 8);

		memcpy(p + k, &w, 8); /* x86-64: little end first, as mpit_pattern_byte */
	}
	for (; k < n; k++)
		p[k] = mpit_pattern_byte(seed, k);
}

size_t mpit_first_mismatch(const void *buf, size_t n, uint64_t seed)
{
	const uint8_t *p = buf;
	size_t k;

	for (k = 0; k + 8 <= n; k += 8) {
		uint64_t w = mpit_pattern_word(seed, k / 8), got;

		memcpy(&got, p + k, 8);
		if (got != w)
			break;
	}
	for (; k < n; k++)
		if (p[k] != mpit_pattern_byte(seed, k))
			return k;
	return n;
}

void mpit_expect_pattern(const void *buf, size_t n, uint64_t seed, const char *what)
{
	size_t bad = mpit_first_mismatch(buf, n, seed), end = bad;
	const uint8_t *p = buf;

	if (bad == n)
		return;
	while (end < n && p[end] != mpit_pattern_byte(seed, end))
		end++;
	mpit_fail("%s: %zu bytes, byte %zu is 0x%02x, expected 0x%02x (first bad run: %zu bytes)",
		  what, n, bad, p[bad], mpit_pattern_byte(seed, bad), end - bad);
}

size_t mpit_parse_size(const char *text, const char *option)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (end == text || errno)
		goto bad;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end || v > (SIZE_MAX >> shift))
		goto bad;
	return (size_t)v << shift;
bad:
	/* not exit(): the job must end through MPI (a rank leaving after MPI_Init
	 * without MPI_Finalize or MPI_Abort leaves the others waiting) */
	mpit_fail("%s: '%s' is not a size (e.g. 4096, 64k, 4M, 1G)", option, text);
}

const char *mpit_size_text(size_t bytes, char *buf, size_t len)
{
	if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
		snprintf(buf, len, "%zu MiB", bytes >> 20);
	else if (bytes >= 1024 && bytes % 1024 == 0)
		snprintf(buf, len, "%zu KiB", bytes >> 10);
	else
		snprintf(buf, len, "%zu B", bytes);
	return buf;
}
