/* SPDX-License-Identifier: MIT */
/* Shared state of the fake driver (fake_peach2.c) and its DMA (fake_dma.c). */
#ifndef FAKE_PEACH2_H
#define FAKE_PEACH2_H

#include <peach2/peach2_uapi.h>

#include <stdint.h>

#define FAKE_MEM   (64ull << 20)
#define MAX_ALLOCS 64
#define MAX_PIECES 256

struct fake_alloc {
	uint32_t handle;
	int pinned;             /* PIN: the caller's pages, not mmap'able */
	uint64_t pinned_at;     /* PIN: the address of their first page */
	uint64_t size;          /* page rounded */
	uint32_t nr;
	struct peach2_chunk chunk[MAX_PIECES]; /* offset in buffer, len, global */
};

extern uint32_t node_id, node_count;
extern struct fake_alloc allocs[MAX_ALLOCS];
extern uint32_t nr_allocs;
/* The window mapping: every node's memory at its global address. */
extern unsigned char *fake_window;

/* A new entry of allocs[] with pieces of mem<node_id> for @size bytes
 * (page rounded); 0 or -errno. */
int fake_reserve(uint64_t size, struct fake_alloc **out);
/* An fd of this node's mem file (the caller closes it). */
int fake_mem_fd(void);
/* $TCA_FAKE_DIR/<kind><node>, @size bytes, mapped shared (every process of
 * the fake cluster sees the same table); NULL on failure. */
void *fake_shared_table(const char *kind, uint32_t node, uint64_t size);
/* Whether process @pid (the owner of a table entry) still lives. */
int fake_alive(int32_t pid);
/* Sleep $@var milliseconds if it is set: a driver that waits for the
 * user's quarantined memory (verbs_check slowreg, slowconn). */
void fake_env_delay(const char *var);

int fake_is_dma_ioctl(unsigned long req);
/* 0 or -errno, like the driver. */
int fake_dma_ioctl(unsigned long req, void *arg);

int fake_is_rp_ioctl(unsigned long req);
int fake_rp_ioctl(unsigned long req, void *arg);
/* Ends this process's exports of buffer @buf (0: all of them). */
void fake_rp_revoke(uint32_t buf);
/* An export of [offset, offset + len) of buffer @buf: 0 or -errno. */
int fake_rp_export(uint32_t buf, uint32_t flags, uint64_t offset, uint64_t len, uint32_t *id,
		   uint32_t *key);
/* Byte @off of a buffer with chunks @c in the window mapping (room: bytes
 * left in its chunk), or NULL. */
unsigned char *fake_byte_at(const struct peach2_chunk *c, uint32_t nr, uint64_t off,
			    uint64_t *room);

/* Memory registration and names (fake_names.c). */
int fake_is_names_ioctl(unsigned long req);
int fake_names_ioctl(unsigned long req, void *arg);
/* Ends this process's names of buffer @buf (0: all of them). */
void fake_names_revoke(uint32_t buf);
/* The answer to a LOOKUP request @s: a status; the answer written. */
uint32_t fake_names_lookup(const struct peach2_rp_submit *s);

#endif
