/* SPDX-License-Identifier: MIT */
/*
 * What the MPI test programs share: failing loudly (every rank that finds a fault
 * names itself and the fault, then the job aborts, so mpirun exits non-zero), the data
 * patterns that make every byte of a message checkable, sizes on the command line, and
 * where the ranks run.
 *
 * The programs are plain MPI C: the same sources build against Open MPI and MPICH
 * (userlib/mpi/CMakeLists.txt), and nothing in them knows about PEACH2 or UCX; the
 * launcher and the tests choose the transports (scripts/cluster.py --mpi).
 */
#ifndef PEACH2_MPI_COMMON_H
#define PEACH2_MPI_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* Report a fault of this rank and abort the whole job (exit status 1). */
void mpit_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* An MPI call that must succeed (the programs set MPI_ERRORS_RETURN to name the call). */
#define MPIT_CHECK(call)                                                          \
	do {                                                                      \
		int mpit_rc_ = (call);                                            \
		if (mpit_rc_ != MPI_SUCCESS)                                      \
			mpit_fail_mpi(mpit_rc_, #call, __FILE__, __LINE__);       \
	} while (0)
void mpit_fail_mpi(int rc, const char *call, const char *file, int line)
	__attribute__((noreturn));

/* MPI_Init, errors returned to the caller (MPIT_CHECK), rank and size. */
void mpit_init(int *argc, char ***argv, int *rank, int *size);

/*
 * The pattern word of 8-byte block k of a message identified by seed: every (seed, k)
 * pair gives a different-looking word, so a message landing at the wrong offset, a
 * stale buffer or a message of another round is caught, not only a corrupted byte.
 * Byte i of the message is byte i % 8 (little end first) of word i / 8.
 */
static inline uint64_t mpit_pattern_word(uint64_t seed, size_t k)
{
	uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull + (uint64_t)k * 0xbf58476d1ce4e5b9ull;

	x ^= x >> 31;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 29);
}
static inline uint8_t mpit_pattern_byte(uint64_t seed, size_t i)
{
	return (uint8_t)(mpit_pattern_word(seed, i / 8) >> (8 * (i % 8)));
}
void mpit_fill(void *buf, size_t n, uint64_t seed);
/* The offset of the first byte that differs from the pattern, or n when all match. */
size_t mpit_first_mismatch(const void *buf, size_t n, uint64_t seed);
/* mpit_fail with what, the offset and the bytes found and expected, unless buf matches. */
void mpit_expect_pattern(const void *buf, size_t n, uint64_t seed, const char *what);

/* "4096", "64k", "4M", "1G" (powers of 1024); anything else aborts the job (mpit_fail). */
size_t mpit_parse_size(const char *text, const char *option);
/* "1 B", "64 KiB", "4 MiB" (exact multiples only; else plain bytes). */
const char *mpit_size_text(size_t bytes, char *buf, size_t len);

/* This rank's host name (MPI_Get_processor_name). */
const char *mpit_host(void);

#endif
