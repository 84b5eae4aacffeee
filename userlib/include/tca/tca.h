/* SPDX-License-Identifier: MIT */
/*
 * libtca: userspace access to the PEACH2 card (TCA: Tightly Coupled
 * Accelerators). C API, usable from C (C99 or later) and C++.
 *
 * Model. Every node owns a slice of a shared global address space; a CPU
 * store into the card's window at global address A lands in the memory of
 * node A >> 31 (PIO "put"). Remote access is write-only. Memory that other
 * nodes may write into comes from tcaMalloc(); tcaGetHandle() describes it
 * in a fixed-size, self-contained tcaHandle that can be sent to a peer
 * (for example with tcaExchange(), which uses the card's mailbox), and the
 * peer then writes into it with tcaPut().
 *
 * Return values. Every function returns 0 (or a non-negative value where
 * documented) on success, and a negative code on failure: either -errno
 * (for example -ENOENT when the device node is missing, -ETIMEDOUT) or one
 * of the TCA_E* codes below. tcaErrorString() turns any of them into text.
 *
 * State and threads. The library holds one context (the open device, its
 * mappings and the tcaMalloc buffers). It is opened lazily by the first
 * call that needs it (or explicitly by tcaInit()) and closed by
 * tcaFinalize(). Calls that touch the context (init, malloc, free, handle
 * creation, exchange) are serialised by an internal mutex and are safe to
 * make from several threads. tcaPut/tcaPutRaw/tcaFence take no lock: any
 * number of threads may store concurrently (they then race like ordinary
 * stores to the same remote bytes would). tcaFinalize() must not run
 * concurrently with any other call, and pointers/handles obtained before it
 * are invalid afterwards. At most one tcaExchange() per peer may run at a
 * time (a second concurrent one with the same peer gets -EBUSY).
 *
 * Handles are plain data in little-endian byte order (all PEACH2 nodes are
 * x86-64); copy them with memcpy, send them anywhere, validate on receipt:
 * every function that takes a handle checks it (TCA_EBADHANDLE).
 */
#ifndef TCA_TCA_H
#define TCA_TCA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TCA_API __attribute__((visibility("default")))
#else
#define TCA_API
#endif

/* ---- Error codes (negative; disjoint from -errno values) --------------- */
#define TCA_SUCCESS          0
#define TCA_EBADHANDLE    (-1001) /* handle: bad magic/version/check or fields */
#define TCA_ERANGE        (-1002) /* offset/length outside the buffer, or overflow */
#define TCA_ENOTBUF       (-1003) /* pointer is not inside a tcaMalloc buffer */
#define TCA_ETOOMANYCHUNKS (-1004) /* range needs more than TCA_HANDLE_MAX_CHUNKS chunks */
#define TCA_ENODE         (-1005) /* node id not in the sub-cluster, or peer == self */
#define TCA_EABI          (-1006) /* driver speaks another ABI version */
#define TCA_EDEVICE       (-1007) /* driver reported impossible geometry */

/* ---- Context ------------------------------------------------------------ */

/* Opens /dev/peach2-0 (the environment variable TCA_DEVICE overrides the
 * path), queries it, and maps the global window (write-only) and the card's
 * mailbox (read-only). Calling it again while open is a no-op returning 0. */
TCA_API int tcaInit(void);

/* Frees every tcaMalloc buffer, unmaps and closes the device. Safe to call
 * when not initialised. A later call may open the device again. */
TCA_API void tcaFinalize(void);

/* This node's id (>= 0), or a negative error code. */
TCA_API int tcaNodeId(void);

/* Nodes in the sub-cluster (>= 1), or a negative error code. */
TCA_API int tcaNodeCount(void);

typedef struct tcaDeviceInfo {
	uint32_t abi_version;  /* driver ABI (PEACH2_ABI_VERSION) */
	uint32_t hw_version;   /* card major << 16 | minor */
	uint32_t node_id;
	uint32_t node_count;
	uint32_t link[3];      /* raw link status of ports E, W, S */
	uint32_t reserved;
	uint64_t window_size;  /* bytes of global window mapped */
	uint64_t max_alloc;    /* largest tcaMalloc size */
	uint64_t max_chunk;    /* largest physically contiguous piece */
} tcaDeviceInfo;

/* Fills *out from the driver's INFO answer taken at tcaInit time. */
TCA_API int tcaGetDeviceInfo(tcaDeviceInfo *out);

/* ---- Memory that remote nodes can write --------------------------------- */

/* Allocates `size` bytes (1 .. max_alloc) of DMA-able memory, mapped
 * read/write into this process, and stores its address in *ptr. The memory
 * is zero-filled. Remote nodes write into it after receiving a handle. */
TCA_API int tcaMalloc(void **ptr, size_t size);

/* Frees a buffer; `ptr` must be the address tcaMalloc returned. Peers must
 * have stopped writing into it first (agree on that, e.g. with a final
 * tcaExchange as a barrier): afterwards the pages may belong to someone else. */
TCA_API int tcaFree(void *ptr);

/* ---- Handles ------------------------------------------------------------- */

#define TCA_HANDLE_MAGIC      0x48414354u /* "TCAH" */
#define TCA_HANDLE_VERSION    1u
#define TCA_HANDLE_MAX_CHUNKS 14u

/* One physically contiguous piece; pieces follow each other in buffer
 * order, so a piece's buffer offset is the sum of the previous lengths. */
typedef struct tcaChunk {
	uint64_t global_addr; /* window address of the piece's first byte */
	uint64_t len;         /* bytes, > 0 */
} tcaChunk;

/* A description of `size` bytes of node `node`'s memory that any node can
 * write with tcaPut. Fixed size (256 bytes), no pointers: send it as bytes.
 * Treat the fields as read-only; build handles only with tcaGetHandle or
 * tcaSubHandle (`check` covers every other field). */
typedef struct tcaHandle {
	uint32_t magic;       /* TCA_HANDLE_MAGIC */
	uint16_t version;     /* TCA_HANDLE_VERSION */
	uint16_t nr_chunks;   /* 1 .. TCA_HANDLE_MAX_CHUNKS */
	uint32_t node;        /* owner node */
	uint32_t check;       /* hash of all other bytes */
	uint64_t size;        /* bytes described, > 0 */
	uint64_t reserved;    /* 0 */
	tcaChunk chunks[TCA_HANDLE_MAX_CHUNKS]; /* unused entries are 0 */
} tcaHandle;

/* Describes [ptr, ptr + size) of a tcaMalloc buffer; `ptr` may point
 * anywhere inside the buffer. size == 0 means "up to the end of the
 * buffer". TCA_ENOTBUF if ptr is not in a buffer, TCA_ERANGE if the range
 * leaves it, TCA_ETOOMANYCHUNKS if it spans more than
 * TCA_HANDLE_MAX_CHUNKS physically contiguous pieces. */
TCA_API int tcaGetHandle(const void *ptr, size_t size, tcaHandle *out);

/* Narrows a (possibly remote) handle to [offset, offset + size); size == 0
 * means "up to the end". Works on any valid handle, no device needed. */
TCA_API int tcaSubHandle(const tcaHandle *h, size_t offset, size_t size,
			 tcaHandle *out);

/* Checks a handle's magic, version, check value and internal consistency
 * (0 or TCA_EBADHANDLE). Needs no device. */
TCA_API int tcaHandleValidate(const tcaHandle *h);

/* Global window address of byte `offset` of the handle's memory
 * (TCA_ERANGE unless offset < size). Needs no device. */
TCA_API int tcaRemoteAddress(const tcaHandle *h, size_t offset,
			     uint64_t *global_addr);

/* ---- PIO ----------------------------------------------------------------- */

/* Stores `len` bytes from local memory `src` into bytes
 * [dst_offset, dst_offset + len) of the memory `dst` describes, through the
 * window. Any alignment and length: 1/2/4-byte stores for an unaligned head
 * and tail, naturally aligned 8-byte stores for the body, in ascending
 * address order. Ends with a store fence, so a later tcaPut (e.g. a flag)
 * cannot overtake this one. TCA_ERANGE if the range leaves the handle,
 * TCA_ENODE if dst->node is not in the sub-cluster. len == 0 is a no-op. */
TCA_API int tcaPut(const tcaHandle *dst, size_t dst_offset, const void *src,
		   size_t len);

/* Like tcaPut but to any window address [global_addr, global_addr + len)
 * (it must lie inside the mapped window), without handle checks: for tests
 * that address card regions or nodes that do not exist. */
TCA_API int tcaPutRaw(uint64_t global_addr, const void *src, size_t len);

/* Store fence: orders every earlier store of this thread before later ones. */
TCA_API int tcaFence(void);

/* ---- Address exchange over the card mailbox ------------------------------- */

/* Symmetric handshake with node `peer`: sends *mine, waits for the peer's
 * handle and stores it in *theirs. Both nodes must call it with each
 * other's id and the same `tag`; either may start first, and stale mailbox
 * data from earlier runs is ignored. Successive calls with the same peer
 * pair up in order (the n-th call on one side with the n-th on the other).
 * timeout_ms <= 0 waits forever; otherwise -ETIMEDOUT after that long.
 * TCA_ENODE if peer is this node or not in the sub-cluster. */
TCA_API int tcaExchange(int peer, const tcaHandle *mine, tcaHandle *theirs,
			int timeout_ms, uint32_t tag);

/* ---- Errors ---------------------------------------------------------------- */

/* Text for any code returned by this library (static storage, never NULL). */
TCA_API const char *tcaErrorString(int code);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TCA_TCA_H */
