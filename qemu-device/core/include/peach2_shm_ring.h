/* SPDX-License-Identifier: MIT */
/*
 * A single-producer single-consumer byte ring in memory shared by two
 * processes: the shared-memory transport of a cable between two QEMUs on
 * one host (docs/hardware.md §5, "link transports"). It carries the same
 * byte stream a socket cable carries, so everything after it (packet
 * parser, link protocol, inbound filter, counters) is unchanged.
 *
 * The peer is not trusted: it can write anything into the shared header
 * and data at any time. Each side keeps its own copy of the ring size and
 * of its own index, checks the peer's index on every use (an index out of
 * range breaks the ring: peach2_shm_ring_error()), and copies data out
 * before anyone parses it (the peer cannot change bytes under the parser).
 * No call aborts, blocks or touches memory outside [mem, mem + mem_len).
 *
 * Threading: one thread per side (QEMU: the BQL). Wake-ups are the
 * caller's (an eventfd per direction): kick the consumer after a write,
 * and the producer when peach2_shm_ring_read() says it waits for room.
 */
#ifndef PEACH2_SHM_RING_H
#define PEACH2_SHM_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PEACH2_SHM_RING_MAGIC   0x52534850u /* "PHSR" */
#define PEACH2_SHM_RING_VERSION 1u
#define PEACH2_SHM_RING_HEADER  256u        /* data starts here */
#define PEACH2_SHM_RING_MIN     4096u
#define PEACH2_SHM_RING_MAX     (256u << 20)

typedef struct peach2_shm_ring peach2_shm_ring;

/* Bytes of shared memory a ring of data_size bytes needs (header + data);
 * 0 unless data_size is a power of two in [MIN, MAX]. */
size_t peach2_shm_ring_mem_size(size_t data_size);

/* The producer formats mem (mem_len = peach2_shm_ring_mem_size(data_size)). */
peach2_shm_ring *peach2_shm_ring_create(void *mem, size_t mem_len, size_t data_size,
					 char *err, size_t errlen);
/* The consumer attaches to a ring the peer formatted, checking its header
 * against mem_len. NULL and a message in err when it does not fit. */
peach2_shm_ring *peach2_shm_ring_attach(void *mem, size_t mem_len, char *err, size_t errlen);
/* Frees the handle; the caller unmaps the memory. NULL is fine. */
void peach2_shm_ring_free(peach2_shm_ring *r);

/* Producer: copy up to len bytes in. Returns the bytes taken (a stream:
 * partial writes are normal). When not all fit, the ring records that the
 * producer waits, so that the consumer's next read asks for a kick. */
size_t peach2_shm_ring_write(peach2_shm_ring *r, const void *buf, size_t len);
/* Consumer: copy up to len bytes out. Returns the bytes copied; sets
 * *kick_producer when the producer waited for room and now has some. */
size_t peach2_shm_ring_read(peach2_shm_ring *r, void *buf, size_t len, bool *kick_producer);
/* Bytes waiting for the consumer (0 once broken). */
size_t peach2_shm_ring_readable(peach2_shm_ring *r);

/* Kick suppression: a consumer that polls the ring for a while says so
 * (and, when it stops, looks once more: the return is
 * peach2_shm_ring_readable()); a producer, after a write, kicks only when
 * this says the consumer is not polling. A lying consumer only delays its
 * own wake-ups. */
size_t peach2_shm_ring_set_polling(peach2_shm_ring *r, bool polling);
bool peach2_shm_ring_consumer_needs_kick(peach2_shm_ring *r);

/* NULL, or why the ring is broken (the peer broke its rules); a broken
 * ring moves no more bytes: drop the connection. */
const char *peach2_shm_ring_error(const peach2_shm_ring *r);

#ifdef __cplusplus
}
#endif

#endif /* PEACH2_SHM_RING_H */
