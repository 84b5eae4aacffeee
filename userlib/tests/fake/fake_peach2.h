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
	uint64_t size;          /* page rounded */
	uint32_t nr;
	struct peach2_chunk chunk[MAX_PIECES]; /* offset in buffer, len, global */
};

extern uint32_t node_id, node_count;
extern struct fake_alloc allocs[MAX_ALLOCS];
extern uint32_t nr_allocs;
/* The window mapping: every node's memory at its global address. */
extern unsigned char *fake_window;

int fake_is_dma_ioctl(unsigned long req);
/* 0 or -errno, like the driver. */
int fake_dma_ioctl(unsigned long req, void *arg);

int fake_is_rp_ioctl(unsigned long req);
int fake_rp_ioctl(unsigned long req, void *arg);
/* Ends this process's exports of buffer @buf (0: all of them). */
void fake_rp_revoke(uint32_t buf);

#endif
