/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * PEACH2 driver <-> userspace ABI: ioctls and mmap offsets of /dev/peach2-<n>.
 *
 * Rules: every struct has a fixed size and explicit padding; every
 * `reserved`/`pad` field and every undefined flag bit must be zero on input
 * (the driver answers -EINVAL otherwise), so that later versions can give
 * them meaning. `abi_version` in struct peach2_info tells which version the
 * driver speaks. Shared by driver/ and userlib/.
 */
#ifndef PEACH2_UAPI_H
#define PEACH2_UAPI_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/ioctl.h>
#else
#include <linux/types.h>
#include <sys/ioctl.h>
#endif

#define PEACH2_ABI_VERSION 1

#define PEACH2_DEV_PREFIX "peach2-" /* /dev/peach2-<n>, n = probe order */

/* ---- mmap offsets -------------------------------------------------------
 * [0, window_size)               the global window (write-combining, write
 *                                only: PROT_READ is refused, MAP_SHARED needed)
 * PEACH2_MMAP_CARDMEM            the card's mailbox, read-only, uncached
 * mmap_offset from PEACH2_IOC_ALLOC   a tcaMalloc buffer (read/write)
 * Every mapping must be MAP_SHARED and must lie inside its object; PROT_EXEC
 * is refused.
 */
#define PEACH2_MMAP_CARDMEM   (1ull << 40)
#define PEACH2_MMAP_BUF_BASE  (1ull << 41)

struct peach2_info {
	__u32 abi_version;    /* PEACH2_ABI_VERSION */
	__u32 node_id;
	__u32 node_count;
	__u32 hw_version;     /* PEACH2_REG_VERSION */
	__u32 link[3];        /* PEACH2_REG_LINK(E, W, S) values */
	__u32 pad0;
	__u64 window_size;    /* bytes of the mmap'able window */
	__u64 slice_size;     /* bytes per node slice */
	__u64 host_size;      /* bytes of host memory reachable in a slice */
	__u64 max_alloc;      /* largest single PEACH2_IOC_ALLOC size */
	__u64 max_chunk;      /* largest physically contiguous chunk */
	__u64 reserved[4];
};

/* Allocate a buffer remote nodes can write into (the first tcaMalloc). */
#define PEACH2_ALLOC_FLAGS_ALL 0u
struct peach2_alloc {
	__u64 size;           /* in: bytes (rounded up to pages), 1 .. max_alloc */
	__u32 flags;          /* in: must be 0 */
	__u32 handle;         /* out: names the buffer for this fd; never 0 */
	__u64 mmap_offset;    /* out: pass to mmap() */
	__u64 bus_addr;       /* out: bus address of byte 0 (chunk 0) */
	__u64 global_addr;    /* out: window address of byte 0 on this node */
	__u32 nr_chunks;      /* out: physically contiguous pieces */
	__u32 pad0;           /* must be 0 */
	__u64 reserved[2];    /* must be 0 */
};

struct peach2_free {
	__u32 handle;
	__u32 flags;          /* must be 0 */
};

/* One physically contiguous piece of a buffer. */
struct peach2_chunk {
	__u64 offset;         /* byte offset inside the buffer */
	__u64 len;            /* bytes */
	__u64 global_addr;    /* window address of the piece on this node */
};

/* Read the chunk list of a buffer: fills min(count, nr_chunks) entries
 * starting at `first`, returns the total in nr_chunks. */
struct peach2_chunks {
	__u32 handle;         /* in */
	__u32 first;          /* in: first chunk index */
	__u32 count;          /* in: entries room at `chunks` */
	__u32 nr_chunks;      /* out: chunks in the buffer */
	__u64 chunks;         /* in: user pointer to struct peach2_chunk[count] */
	__u64 reserved;       /* must be 0 */
};

#define PEACH2_IOC_MAGIC 'P'
#define PEACH2_IOC_INFO   _IOR(PEACH2_IOC_MAGIC, 0x00, struct peach2_info)
#define PEACH2_IOC_ALLOC  _IOWR(PEACH2_IOC_MAGIC, 0x01, struct peach2_alloc)
#define PEACH2_IOC_FREE   _IOW(PEACH2_IOC_MAGIC, 0x02, struct peach2_free)
#define PEACH2_IOC_CHUNKS _IOWR(PEACH2_IOC_MAGIC, 0x03, struct peach2_chunks)

#endif /* PEACH2_UAPI_H */
