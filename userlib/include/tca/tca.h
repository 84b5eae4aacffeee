/* SPDX-License-Identifier: MIT */
/*
 * libtca: userspace access to the PEACH2 card (TCA: Tightly Coupled
 * Accelerators). C API, usable from C (C99 or later) and C++.
 *
 * Model. Every node owns a slice of a shared global address space; a CPU
 * store into the card's window at global address A lands in the memory of
 * node A >> 31 (PIO "put"). The hardware only writes remotely. Memory that
 * other nodes may write into comes from tcaMalloc(); tcaGetHandle() describes
 * it in a fixed-size, self-contained tcaHandle that can be sent to a peer
 * (for example with tcaExchange(), which uses the card's mailbox), and the
 * peer then writes into it with tcaPut() or DMA. Reading another node's
 * memory (tcaGet) and 64-bit atomics on it (tcaCas, tcaFaa) go through the
 * target driver's read proxy, on memory its owner exported with tcaExport();
 * no process on the target takes part.
 *
 * Return values. Every function returns 0 (or a non-negative value where
 * documented) on success, and a negative code on failure: either -errno
 * (for example -ENOENT when the device node is missing, -ETIMEDOUT) or one
 * of the TCA_E* codes below. tcaErrorString() turns any of them into text.
 *
 * State and threads. The library holds one context (the open device, its
 * mappings, the tcaMalloc buffers and the DMA chains). It is opened lazily by the first
 * call that needs it (or explicitly by tcaInit()) and closed by
 * tcaFinalize() only: exit() leaves it open (threads still running then may
 * use its buffers; the process's end releases it). Calls that touch the context (init, malloc, free, handle
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
#define TCA_EALIGN        (-1008) /* DMA: addresses not 4-byte aligned, low 4 bits differ,
				   * or length not a multiple of 4 */
#define TCA_ESTRIDE       (-1009) /* DMA: bad block-stride parameters, or a strided side
				   * leaves its physically contiguous chunk */
#define TCA_EDMA          (-1010) /* DMA: the card ended a transfer with an error
				   * (tcaDmaTicket.status holds the card's code) */
#define TCA_ENODESC       (-1011) /* DMA: out of descriptors (on-card descriptor RAM
				   * is full, or the list is too long) */
#define TCA_ENOTEXPORTED  (-1012) /* get/atomic: the handle carries no export, or the
				   * target refused it (no such export, wrong key,
				   * operation not allowed: tcaRequest.status says) */
#define TCA_EREMOTE       (-1013) /* get/atomic: the target (its card or driver) refused
				   * or failed the request; tcaRequest.status holds the
				   * code (tcaCardErrorName) */

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
 * tcaExchange as a barrier): afterwards the pages may belong to someone else.
 * The same holds for this process's own gets (tcaGet/tcaGetNB) into it:
 * -EBUSY while one that is still pending (before its request timeout)
 * replies into the buffer; but a get that was cancelled, timed out, or not
 * collected before its timeout may still be answered late and then writes
 * into the freed pages, which may by then belong to another process. */
TCA_API int tcaFree(void *ptr);

/* ---- Handles ------------------------------------------------------------- */

#define TCA_HANDLE_MAGIC      0x48414354u /* "TCAH" */
#define TCA_HANDLE_VERSION    2u /* 2: export_id/export_key */
#define TCA_HANDLE_MAX_CHUNKS 14u

/* One physically contiguous piece; pieces follow each other in buffer
 * order, so a piece's buffer offset is the sum of the previous lengths. */
typedef struct tcaChunk {
	uint64_t global_addr; /* window address of the piece's first byte */
	uint64_t len;         /* bytes, > 0 */
} tcaChunk;

/* A description of `size` bytes of node `node`'s memory that any node can
 * write with tcaPut. Fixed size (256 bytes), no pointers: send it as bytes.
 * Treat the fields as read-only; build handles only with tcaGetHandle,
 * tcaSubHandle or tcaExport (`check` covers every other field). A handle
 * from tcaExport also names the export (id and key) through which other
 * nodes may read it (tcaGet) or do atomics on it (tcaCas, tcaFaa); 0/0
 * means "not exported". tcaSubHandle keeps the export. */
typedef struct tcaHandle {
	uint32_t magic;       /* TCA_HANDLE_MAGIC */
	uint16_t version;     /* TCA_HANDLE_VERSION */
	uint16_t nr_chunks;   /* 1 .. TCA_HANDLE_MAX_CHUNKS */
	uint32_t node;        /* owner node */
	uint32_t check;       /* hash of all other bytes */
	uint64_t size;        /* bytes described, > 0 */
	uint32_t export_id;   /* the owner's export (tcaExport), 0: none */
	uint32_t export_key;  /* its key; 0 when export_id is 0 */
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

/* ---- DMA ----------------------------------------------------------------- */

/* The card's DMA engine copies from this process's tcaMalloc memory into the
 * memory a tcaHandle describes: another node's (a remote put) or this
 * node's (a local copy). It runs on its own, on one of four channels, while
 * the CPU does other work; transfers on one channel run in order.
 *
 * Hardware restrictions (PEACH2): source and destination 4-byte aligned,
 * their low 4 address bits equal, length a multiple of 4. The library checks
 * them before anything starts (TCA_EALIGN). tcaMalloc memory is page
 * aligned, so for handles that start at their buffer's start the rule reads
 * (src offset - dst offset) % 16 == 0.
 *
 * The library splits each transfer where either side's memory stops being
 * physically contiguous, and into pieces of at most 64 MiB; each piece is a
 * card descriptor. Descriptors live, per the options:
 *   default            on-card descriptor RAM: fastest to start, 1024
 *                      descriptors shared by every process (TCA_ENODESC when full)
 *   TCA_DMA_HOST_DESC  host memory: no shared limit
 *   TCA_DMA_REG_MODE   the channel's registers, one descriptor per run: no
 *                      descriptor memory at all. A list that needs several
 *                      descriptors becomes several runs, back to back on one
 *                      channel; a run that fails does not stop the later ones
 *                      (the ticket reports the failure).
 *
 * Completion. Starting returns at once with a ticket; tcaDmaWait/tcaDmaTest
 * collect it. The source must stay unchanged until then. The receiver of a
 * remote put learns of arrival from a completion word: a 4- or 8-byte value
 * the card writes after the data (tcaDmaXfer.notify, tcaDmaPutNotify); it
 * arrives after every byte the list wrote to the same node before it. With
 * descriptors (default, HOST_DESC) a failing descriptor ends the list, so
 * the word is written only if the data went out. Memory written by DMA is
 * read with ordinary loads; poll the completion word with acquire loads.
 * Costs measured between two emulated nodes are in userlib/README.md.
 *
 * Memory of this node is named by the driver per process: a destination
 * (or source) handle of this node must describe this process's tcaMalloc
 * memory (TCA_ENOTBUF otherwise); other nodes' handles are used as they are.
 *
 * Threads: any number may start and wait concurrently (the library mutex is
 * held only while a request is checked and planned, never across the
 * driver's start or a wait). A ticket belongs to the process; collect each
 * one once, from any thread. The driver keeps at most 1024 finished,
 * uncollected runs per process (older ones are forgotten: -ENOENT) and
 * allows 1024 runs in flight (-EAGAIN). */

/* tcaDmaOpts.flags */
#define TCA_DMA_REG_MODE   (1u << 0) /* register mode (see above) */
#define TCA_DMA_HOST_DESC  (1u << 1) /* descriptors in host memory */
#define TCA_DMA_WAIT       (1u << 2) /* wait for completion (also with a ticket) */

/* tcaDmaOpts.channel */
#define TCA_DMA_CHANNELS    4u
#define TCA_DMA_ANY_CHANNEL 0u                      /* the driver picks an idle one */
#define TCA_DMA_CHANNEL(n)  ((uint32_t)(n) + 1u)    /* channel n, 0 .. 3 */

/* How to run a transfer; a NULL pointer means all defaults (zero). */
typedef struct tcaDmaOpts {
	uint32_t flags;      /* TCA_DMA_* above */
	uint32_t channel;    /* TCA_DMA_ANY_CHANNEL or TCA_DMA_CHANNEL(n) */
	int32_t timeout_ms;  /* when waiting: <= 0 waits as long as it takes */
	uint32_t reserved;   /* 0 */
} tcaDmaOpts;

/* tcaDmaXfer.stride: which side the block-stride gap applies to. */
#define TCA_DMA_STRIDE_SRC (1u << 0)
#define TCA_DMA_STRIDE_DST (1u << 1)

/* One transfer: `len` bytes from a local source to `dst` memory, then
 * optionally a completion word. Zero-initialise and set what you need.
 *
 * Source: `src` points into a tcaMalloc buffer of this process, or (src ==
 * NULL) `src_handle` describes this node's memory and `src_offset` is the
 * byte within it.
 *
 * Block-stride (burst > 0): the data moves in blocks of `burst` bytes; on the
 * side(s) named by `stride`, `gap` bytes are skipped after each block. burst
 * and gap are multiples of 4, a gap on one side only a multiple of 16, and
 * each strided side must stay inside one physically contiguous chunk of its
 * memory (TCA_ESTRIDE otherwise; a strided transfer is never split). The
 * strided side spans (ceil(len / burst) - 1) * (burst + gap) + last block.
 *
 * Completion word (notify != NULL): after the data, the card writes the low
 * `notify_len` (4 or 8; 0 means 8) bytes of `notify_value`, little endian,
 * at byte `notify_offset` of `notify` (any node); its address must be a
 * multiple of notify_len. len may be 0 for a word alone. */
typedef struct tcaDmaXfer {
	const tcaHandle *dst;        /* destination memory */
	uint64_t dst_offset;
	const void *src;             /* source pointer, or NULL to use src_handle */
	const tcaHandle *src_handle; /* this node's memory (with src == NULL) */
	uint64_t src_offset;         /* with src_handle */
	uint64_t len;                /* bytes */
	uint32_t stride;             /* 0, or TCA_DMA_STRIDE_SRC and/or _DST */
	uint16_t burst;              /* block-stride: bytes per block, 0 = contiguous */
	uint16_t gap;                /* block-stride: bytes skipped after each block */
	const tcaHandle *notify;     /* completion word target, or NULL */
	uint64_t notify_offset;
	uint64_t notify_value;
	uint32_t notify_len;         /* 4 or 8 (0: 8) */
	uint32_t reserved;           /* 0 */
} tcaDmaXfer;

/* What a started transfer left to collect. Plain data: copy it freely, but
 * collect it once. All zero means "nothing in flight" (completes at once). */
typedef struct tcaDmaTicket {
	uint64_t next;       /* driver ticket to collect next */
	uint32_t left;       /* runs not collected yet */
	uint32_t status;     /* first card error code of a collected run (0: none) */
} tcaDmaTicket;

/* Starts `count` transfers as one list (in order). With ticket == NULL the
 * call waits for completion (opts->timeout_ms; a transfer still running
 * after a timeout goes on, with nothing left to wait for it). With a ticket
 * it returns once started (or, with TCA_DMA_WAIT, when done; after
 * -ETIMEDOUT the ticket can still be waited for). Errors before anything
 * starts: -EINVAL (NULL pointers, bad flags, notify_len), TCA_EALIGN,
 * TCA_ESTRIDE, TCA_ERANGE, TCA_ENOTBUF (source not in this process's
 * buffers), TCA_EBADHANDLE, TCA_ENODE, TCA_ENODESC. From the driver:
 * -EAGAIN (1024 runs of this process in flight), -ENODEV (card gone), -EIO
 * (channel out of use). A card error ends in TCA_EDMA when waited for. */
TCA_API int tcaDmaStart(const tcaDmaXfer *xfers, size_t count, const tcaDmaOpts *opts,
			tcaDmaTicket *ticket);

/* One contiguous transfer: len bytes at `src` (inside a tcaMalloc buffer)
 * to bytes [dst_offset, dst_offset + len) of `dst`. As tcaDmaStart. */
TCA_API int tcaDmaPut(const tcaHandle *dst, size_t dst_offset, const void *src, size_t len,
		      const tcaDmaOpts *opts, tcaDmaTicket *ticket);

/* tcaDmaPut followed by the 8-byte completion word `value` at byte
 * `notify_offset` of the same handle (8-byte aligned address). */
TCA_API int tcaDmaPutNotify(const tcaHandle *dst, size_t dst_offset, const void *src,
			    size_t len, size_t notify_offset, uint64_t value,
			    const tcaDmaOpts *opts, tcaDmaTicket *ticket);

/* Waits until every run of the ticket has ended or timeout_ms passed
 * (<= 0: no limit). 0: done without error; TCA_EDMA: done, the card
 * reported ticket->status; -ETIMEDOUT: still running (the ticket keeps
 * what was collected; wait again); -ENOENT: the driver does not know the
 * ticket (collected before, or forgotten: it keeps 1024 uncollected). */
TCA_API int tcaDmaWait(tcaDmaTicket *ticket, int timeout_ms);

/* Like tcaDmaWait without waiting: 1 while still running, else as tcaDmaWait. */
TCA_API int tcaDmaTest(tcaDmaTicket *ticket);

/* ---- Persistent DMA chains --------------------------------------------------- */

/* A list built once (checked, split, descriptors written) and started many
 * times, e.g. the halo exchange of a stencil code: each start costs one
 * ioctl and a register write. The memory it names stays reserved until
 * tcaChainDestroy (also across tcaFree). Completion values are fixed at
 * creation; the data is read from the source at every start. */
typedef struct tcaChain {
	uint32_t id;          /* 0: no chain */
	uint32_t descriptors; /* card descriptors after splitting (information) */
} tcaChain;

/* Builds a chain of `count` transfers. opts: flags TCA_DMA_HOST_DESC or
 * TCA_DMA_REG_MODE (one run per descriptor) or 0; channel and timeout are
 * for tcaChainStart. Errors as tcaDmaStart. */
TCA_API int tcaChainCreate(const tcaDmaXfer *xfers, size_t count, const tcaDmaOpts *opts,
			   tcaChain *chain);

/* Starts the chain: opts->flags only TCA_DMA_WAIT, channel as tcaDmaStart;
 * ticket as tcaDmaStart. -EBUSY while the previous start has not ended. */
TCA_API int tcaChainStart(tcaChain chain, const tcaDmaOpts *opts, tcaDmaTicket *ticket);

/* Frees the chain (-EBUSY while it runs; -ENOENT if unknown). */
TCA_API int tcaChainDestroy(tcaChain chain);

/* ---- PIO or DMA ------------------------------------------------------------- */

/* Puts len bytes like tcaPut, choosing the mechanism: PIO up to a threshold
 * (TCA_PIO_MAX_DEFAULT bytes, where a blocking DMA put became cheaper than
 * PIO between two emulated nodes; the environment variable TCA_PIO_MAX, read
 * once, overrides: bytes, with optional K or M suffix), DMA above it when
 * `src` lies in a tcaMalloc buffer and has the destination's low 4 address
 * bits (an unaligned head or a tail of 1-3 bytes then goes by PIO), PIO
 * otherwise. Waits for the DMA to complete, so `src` may be reused on
 * return. Errors as tcaPut and tcaDmaStart. */
#define TCA_PIO_MAX_DEFAULT 1024u
TCA_API int tcaPutAuto(const tcaHandle *dst, size_t dst_offset, const void *src, size_t len);

/* The threshold tcaPutAuto uses (after TCA_PIO_MAX). */
TCA_API size_t tcaPioMax(void);

/* ---- Export, one-sided get, remote atomics (read proxy) -------------------- */

/* PEACH2 cannot read remote memory. Instead, a get sends a request to the
 * target node's card; the target's driver checks it against the memory a
 * process there has exported and DMA-writes the data back, followed by a
 * 32-byte completion record the requester polls. No process on the target
 * takes part (the exporter may be busy, asleep, or gone: then the request is
 * refused). The same path serves 64-bit compare-and-swap and fetch-and-add
 * on exported memory, atomic with respect to other such atomics on that
 * node (not to the exporter's own CPU stores: use them only on words that
 * are changed through tcaCas/tcaFaa).
 *
 * Exporting. tcaExport names [ptr, ptr + size) of one tcaMalloc buffer for
 * remote reads (TCA_EXPORT_READ) and/or atomics (TCA_EXPORT_ATOMIC) and
 * returns its handle, which carries the export's id and key; send it to the
 * peers (tcaExchange). An export ends with tcaUnexport, with tcaFree of its
 * buffer, or when the process closes the device or exits; requests that
 * arrive later are refused (TCA_ENOTEXPORTED). A process has at most 1024
 * exports.
 *
 * Getting. tcaGet reads `len` bytes at byte `src_offset` of an exported
 * handle (any node, this one included) into `dst`, which must lie in a
 * tcaMalloc buffer of this process. The card's DMA rules apply: len a
 * multiple of 4, and `dst` and the remote address with equal low 4 bits
 * (for handles starting at their buffer's start and page-aligned buffers:
 * dst - buffer start == src_offset mod 16); TCA_EALIGN before anything is
 * sent otherwise. A get is split into requests of at most 4 MiB that each
 * land in at most 64 physically contiguous pieces of `dst`; the data of a
 * completed get is complete (all or nothing per request; a failed get may
 * have written part of `dst`).
 *
 * Completion. Non-blocking forms (tcaGetNB, tcaCasNB, tcaFaaNB) fill a
 * tcaRequest; tcaTest polls it (1 while pending), tcaWait waits. A request
 * ends with 0, TCA_ENOTEXPORTED, TCA_EREMOTE (request.status holds the
 * target's code, e.g. RP_RANGE, RP_OFF: no driver there), TCA_EDEVICE
 * (a malformed answer), -ETIMEDOUT (no answer within the request timeout:
 * 10 s, or $TCA_RP_TIMEOUT_MS read once), or a submission error from the
 * driver: -EHOSTUNREACH (no route, link down), -ENXIO, -ENODEV, -EINVAL,
 * -EOPNOTSUPP, or -EFAULT (the driver could not return a request's tag: it
 * may have been sent; its completion slot is never reused). A target whose
 * request queue is full answers RP_FULL, and a link whose send queue is full
 * refuses a submission (the driver's -EAGAIN: nothing was sent); in both
 * cases the library resubmits after a short backoff until the request
 * timeout (request.retries counts them); neither is an error by itself.
 * Blocking calls are a non-blocking call followed by tcaWait.
 *
 * Threads: any number of threads may submit and poll concurrently, each
 * tcaRequest from one thread at a time; a second thread that calls tcaTest,
 * tcaWait or tcaCancel on a request another thread is polling or cancelling
 * at that moment gets -EBUSY. Request ids are unique within the process,
 * also across tcaFinalize/tcaInit: a tcaRequest left over from before
 * answers -ENOENT.
 *
 * Completion slots. Every piece in flight (a CAS/FAA is one piece, a get
 * one per 4 MiB or destination chunk, at most 256 of one request in flight
 * at once) holds one of 4096 completion slots per process; a call that
 * finds none free and has nothing of its own in flight gets -EAGAIN. A slot
 * whose piece was given up while in flight (timeout, tcaCancel) is retired:
 * never reused, since its answer may still come. When half of the slots are
 * retired (or none is free and some are), new requests take their slots
 * from a fresh set of 4096 (a new 128 KiB driver buffer); the old ones stay
 * allocated until tcaFinalize. */

#define TCA_EXPORT_READ   (1u << 0) /* tcaGet allowed */
#define TCA_EXPORT_ATOMIC (1u << 1) /* tcaCas / tcaFaa allowed */

/* Exports [ptr, ptr + size) of a tcaMalloc buffer (size 0: to the end of
 * the buffer) with `flags` (at least one of TCA_EXPORT_*) and fills *out
 * with the handle of that range, export id and key included. The range
 * must fit a handle (TCA_ETOOMANYCHUNKS otherwise). Errors: -EINVAL
 * (flags), TCA_ENOTBUF, TCA_ERANGE, -ENOSPC (1024 exports). */
TCA_API int tcaExport(const void *ptr, size_t size, uint32_t flags, tcaHandle *out);

/* Ends the export `h` names (a handle tcaExport returned to this process,
 * or one derived from it with tcaSubHandle). TCA_ENOTEXPORTED if the
 * handle has no export or it is not (any longer) one of this process's. */
TCA_API int tcaUnexport(const tcaHandle *h);

/* What a non-blocking call left to collect. Zero-initialise it; the
 * library owns it from the submitting call until tcaTest/tcaWait report
 * the end (then `id` is 0 and the other fields hold the outcome). Do not
 * copy a pending request. */
typedef struct tcaRequest {
	uint64_t id;          /* library's request id while pending; 0 when ended */
	int32_t result;       /* when ended: what tcaWait returned */
	uint32_t status;      /* when ended: the target's/card's code (enum peach2_err)
			       * of the first failing piece, 0 if none */
	uint64_t value;       /* CAS/FAA: the value before the operation */
	uint64_t bytes;       /* get: bytes delivered */
	uint32_t retries;     /* resubmissions: RP_FULL answers, and submissions
			       * the link refused (send queue full) */
	uint32_t pieces;      /* requests the call was split into */
} tcaRequest;

/* Starts a get (see above) and returns at once: 0 once submitted (*req is
 * pending, or already ended if the answer was that fast: tcaTest/tcaWait
 * tell the outcome either way). An error return means nothing was sent;
 * *req has then ended with that error. len == 0 ends at once with 0.
 * Errors before anything is sent:
 * -EINVAL, TCA_EBADHANDLE, TCA_ENOTEXPORTED (handle without export),
 * TCA_ENODE, TCA_ERANGE, TCA_ENOTBUF (dst), TCA_EALIGN, -EAGAIN (every
 * completion slot is held by a piece in flight: see "Completion slots"
 * above; the driver's -EAGAIN, a full link send queue, is retried instead),
 * -EBUSY (*req is a request that is still pending: it is left alone;
 * collect or cancel it first; a zeroed or ended tcaRequest may be reused),
 * -ENOMEM, and the driver's -EINVAL, -EOPNOTSUPP (card without a read
 * proxy), -EHOSTUNREACH, -ENXIO, -ENODEV. A driver -EFAULT (the request
 * may have been sent) returns 0 with *req ended with -EFAULT. tcaCasNB and
 * tcaFaaNB answer the same way. */
TCA_API int tcaGetNB(void *dst, const tcaHandle *src, size_t src_offset, size_t len,
		     tcaRequest *req);

/* tcaGetNB over `count` handles that describe consecutive bytes of one
 * export, in order, e.g. the successive tcaLookupName answers of one name
 * (a range with more physically contiguous pieces than a handle holds):
 * reads [src_offset, src_offset + len) of their concatenation in as few
 * requests as one handle would take, since the target's driver reads its
 * buffer onwards from a request's first byte. The caller vouches for the
 * order: the library checks only that every handle is valid and names the
 * same node and export (-EINVAL otherwise, and for count 0); the target
 * keeps every request inside its export. Otherwise as tcaGetNB. */
TCA_API int tcaGetSpanNB(void *dst, const tcaHandle *const *srcs, size_t count,
			 size_t src_offset, size_t len, tcaRequest *req);

/* Blocking get: tcaGetNB then tcaWait(req, 0). */
TCA_API int tcaGet(void *dst, const tcaHandle *src, size_t src_offset, size_t len);

/* 64-bit compare-and-swap on bytes [offset, offset + 8) of an exported
 * (TCA_EXPORT_ATOMIC) handle: if the word == compare it becomes swap; the
 * value before is returned in *old (NB: req->value). The word's address
 * must be 8-byte aligned (TCA_EALIGN). */
TCA_API int tcaCas(const tcaHandle *h, size_t offset, uint64_t compare, uint64_t swap,
		   uint64_t *old);
TCA_API int tcaCasNB(const tcaHandle *h, size_t offset, uint64_t compare, uint64_t swap,
		     tcaRequest *req);

/* 64-bit fetch-and-add (wrapping) of `add`; as tcaCas. */
TCA_API int tcaFaa(const tcaHandle *h, size_t offset, uint64_t add, uint64_t *old);
TCA_API int tcaFaaNB(const tcaHandle *h, size_t offset, uint64_t add, tcaRequest *req);

/* 1 while the request is pending; else its outcome (as tcaWait). An ended
 * request answers again with the same outcome. -ENOENT: the id is unknown
 * (never handed out, already collected through a copy of *req, or from
 * before tcaFinalize); -EBUSY: another thread is polling or cancelling the
 * same request right now. */
TCA_API int tcaTest(tcaRequest *req);

/* Waits until the request ends or timeout_ms passes (<= 0: until it ends,
 * which the request timeout bounds). Returns its outcome, or -ETIMEDOUT
 * with req->id still set when only this wait's timeout passed (wait again).
 * An ended request (id 0) answers with req->result. -ENOENT and -EBUSY as
 * tcaTest. */
TCA_API int tcaWait(tcaRequest *req, int timeout_ms);

/* Gives up a pending request, which ends with -ECANCELED. Completion slots
 * of pieces in flight are retired, never reused (a late answer may still
 * write them, and the get's destination bytes: see tcaFree); slots of
 * pieces waiting to be resent (answered RP_FULL, or refused by a full link
 * queue) go back to the pool. No-op (0) on an ended request (id 0);
 * -ENOENT for an unknown id, -EBUSY while another thread polls it. */
TCA_API int tcaCancel(tcaRequest *req);

/* The request timeout in milliseconds (10000, or $TCA_RP_TIMEOUT_MS). */
TCA_API int tcaRequestTimeoutMs(void);

/* ---- Registered memory: any memory of this process ------------------------ */

/* tcaRegister pins [ptr, ptr + size) of this process's own memory (malloc,
 * stack, any mapping it may write) and registers its pages with the card,
 * so that it serves as tcaMalloc memory does: DMA source (tcaDmaStart with
 * `src` in it), get destination, tcaGetHandle, tcaExport, tcaPublish.
 * Remote nodes then write it like any buffer. Whole pages are pinned (the
 * range is rounded out to pages; the rounded range counts for exports and
 * handles) until tcaDeregister with the same ptr and size, tcaFinalize or
 * exit. Pinned pages count against RLIMIT_MEMLOCK. Registrations may
 * overlap; a pointer is looked up in tcaMalloc buffers first, then in the
 * registrations (newest first) that hold the whole range it is used with.
 * A handle of registered memory names it for other nodes; on this node,
 * use pointers (DMA and gets take them).
 * Errors: -EINVAL (NULL, size 0), -EFAULT (not this process's writable
 * memory), -ENOMEM (RLIMIT_MEMLOCK, the driver's per-process limit, memory),
 * -ENOSPC (the card's filter table is full), -EOPNOTSUPP (driver before ABI 4). */
TCA_API int tcaRegister(void *ptr, size_t size);

/* Ends a registration tcaRegister(ptr, size) made (TCA_ENOTBUF if there is
 * none). Of several with the same pages it ends, the newest first, one whose
 * names and exports have all been ended (unpublish a registration's names
 * first), else one that never had any, else the newest with its names.
 * -EBUSY while a pending get replies into it. */
TCA_API int tcaDeregister(void *ptr, size_t size);

/* ---- Names: memory other nodes find by number ------------------------------ */

/* tcaPublish gives [ptr, ptr + size) of a tcaMalloc buffer or a registration
 * a name unique on this node within its kind (TCA_NAME_QP: 24 bits, for
 * Verbs QP numbers; TCA_NAME_KEY: 32 bits, for memory keys). Other nodes
 * find the memory by (node, kind, name) with tcaLookupName, without this
 * process taking part: this node's driver answers through the read proxy.
 * flags: TCA_NAME_WRITE (others will write it; when its buffer is freed the
 * pages are kept for the driver's quarantine time so that a late writer
 * cannot reach reused memory), TCA_NAME_READ / TCA_NAME_ATOMIC (the driver
 * exports the range for tcaGet / tcaCas / tcaFaa, and lookups return the
 * export in their handle). `group` and up to 32 bytes of `info` are returned
 * to whoever looks the name up. A name ends with tcaUnpublish, when its
 * buffer is freed or deregistered, or with the process.
 * Errors: -EINVAL, TCA_ENOTBUF, TCA_ERANGE, -ENOSPC (names used up),
 * -EOPNOTSUPP (driver before ABI 4). */
#define TCA_NAME_QP     1u
#define TCA_NAME_KEY    2u
#define TCA_NAME_WRITE  (1u << 0)
#define TCA_NAME_READ   (1u << 1)
#define TCA_NAME_ATOMIC (1u << 2)
#define TCA_NAME_INFO   32u
TCA_API int tcaPublish(const void *ptr, size_t size, uint32_t kind, uint32_t flags,
		       uint32_t group, const void *info, size_t info_len, uint32_t *name);

/* Ends a name this process published (-ENOENT if it is not one of them). */
TCA_API int tcaUnpublish(uint32_t kind, uint32_t name);

/* What a lookup found. `handle` describes bytes [offset, offset +
 * handle.size) of the published range: up to its end, or fewer when the
 * range has more physically contiguous pieces than a handle holds (look up
 * again at offset + handle.size for the rest); it carries the export (READ
 * and/or ATOMIC) when there is one. A writer must look the name up again
 * within lease_ms of starting this lookup (see TCA_NAME_WRITE). */
typedef struct tcaNameInfo {
	uint32_t kind;
	uint32_t name;
	uint32_t flags;       /* TCA_NAME_* as published */
	uint32_t group;
	uint64_t owner;       /* the publishing process's open device (node-wide serial) */
	uint64_t size;        /* bytes published */
	uint64_t offset;      /* where `handle` starts in the published range */
	uint32_t lease_ms;
	uint16_t tries;       /* requests sent for it (a late answer is asked again) */
	uint16_t answered_by; /* the one that answered (1: the first) */
	uint8_t info[TCA_NAME_INFO];
	tcaHandle handle;
} tcaNameInfo;

/* Looks up (kind, name) on node `node` (this node too) starting at byte
 * `offset` of the published range. Blocks for one read-proxy round trip; a
 * request not answered within 100 ms is sent again (a LOOKUP changes
 * nothing), each try waiting twice as long as the one before, until the
 * request timeout.
 * Errors: TCA_ENOTEXPORTED (no such name), TCA_EREMOTE (status in
 * tcaNameInfo is not kept: RP_RANGE for an offset beyond the range), the
 * submission errors of tcaGet (-EHOSTUNREACH, -ETIMEDOUT, ...). */
TCA_API int tcaLookupName(int node, uint32_t kind, uint32_t name, size_t offset,
			  tcaNameInfo *out);

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

/* Name of a card error code (enum peach2_err, as in tcaDmaTicket.status,
 * tcaRequest.status or the driver's err_last), e.g. "DMA_ALIGN",
 * "RP_NOT_EXPORTED"; "?" for unknown codes. */
TCA_API const char *tcaCardErrorName(uint32_t code);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TCA_TCA_H */
