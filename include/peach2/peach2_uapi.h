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

#include "peach2_dma_rules.h" /* enum peach2_dma_rule, for the refusal report */

#define PEACH2_ABI_VERSION 5 /* 2: DMA ioctls; 3: read proxy (export, get, atomics);
			      * 4: pinned memory, names, LOOKUP (TCA Verbs);
			      * 5: DMA_START reports a run that ended in it */

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

/*
 * Allocate a buffer remote nodes can write into (the first tcaMalloc).
 * Over user_max_bytes, an ALLOC waits (up to name_quarantine_ms + 1 s) for
 * the user's own quarantined buffers to go; with PEACH2_ALLOC_NOWAIT it is
 * refused at once (EDQUOT), for a caller that must not block (it tries
 * again later).
 */
#define PEACH2_ALLOC_NOWAIT    (1u << 0)
#define PEACH2_ALLOC_FLAGS_ALL PEACH2_ALLOC_NOWAIT
struct peach2_alloc {
	__u64 size;           /* in: bytes, 1 .. max_alloc; out: rounded up to pages */
	__u32 flags;          /* in: PEACH2_ALLOC_* */
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

/* Read the chunk list of a buffer: fills min(count, nr_chunks - first)
 * entries starting at `first` (first > nr_chunks: -EINVAL), returns the
 * total in nr_chunks. count == 0 only reports nr_chunks. */
struct peach2_chunks {
	__u32 handle;         /* in */
	__u32 first;          /* in: first chunk index */
	__u32 count;          /* in: entries room at `chunks` */
	__u32 nr_chunks;      /* out: chunks in the buffer */
	__u64 chunks;         /* in: user pointer to struct peach2_chunk[count] */
	__u64 reserved;       /* must be 0 */
};

/* ---- DMA ---------------------------------------------------------------
 * A transfer moves `len` bytes from a buffer of this fd to a buffer of this fd
 * (local copy) or to a global window address on another node (remote put;
 * the remote card accepts it only inside buffers registered there). The
 * driver splits transfers at chunk boundaries into card descriptors. Every
 * byte read or written on this node lies inside the caller's own buffers;
 * anything else is refused before the card is touched.
 */
#define PEACH2_XFER_STRIDE_SRC (1u << 0) /* gap applies to the source */
#define PEACH2_XFER_STRIDE_DST (1u << 1) /* gap applies to the destination */
#define PEACH2_XFER_IMM        (1u << 2) /* write `imm` (len 4 or 8); no source */
#define PEACH2_XFER_FLAGS_ALL  0x7u

struct peach2_xfer {
	__u32 src_handle;     /* buffer of this fd (0 with PEACH2_XFER_IMM) */
	__u32 dst_handle;     /* buffer of this fd, or 0: dst is a global address */
	__u64 src_offset;     /* bytes into the source buffer */
	__u64 dst;            /* dst_handle ? offset into it : global address of
			       * another node's memory */
	__u64 len;            /* bytes, multiple of 4, > 0 */
	__u16 burst;          /* block-stride: bytes per block (x4), 0 = contiguous */
	__u16 gap;            /* block-stride: bytes skipped per block (x4) */
	__u32 flags;          /* PEACH2_XFER_* */
	__u64 imm;            /* value for PEACH2_XFER_IMM */
};

/*
 * The rules a transfer's own fields must keep (peach2_dma_rules.h): those of
 * a card descriptor, with the offsets standing for addresses (buffer chunks
 * are page aligned, so offsets decide the low bits), plus the fields only a
 * transfer has. Contiguous transfers may be any length (the driver cuts
 * them). Buffers, ranges and chunks are the driver's to check.
 */
static inline enum peach2_dma_rule peach2_xfer_rule(const struct peach2_xfer *x)
{
	__u32 flags = 0;

	if (x->flags & ~PEACH2_XFER_FLAGS_ALL)
		return PEACH2_DMA_RULE_FLAGS;
	if (x->flags & PEACH2_XFER_STRIDE_SRC)
		flags |= PEACH2_DESC_STRIDE_SRC;
	if (x->flags & PEACH2_XFER_STRIDE_DST)
		flags |= PEACH2_DESC_STRIDE_DST;
	if (x->flags & PEACH2_XFER_IMM) {
		flags |= PEACH2_DESC_IMM;
		if (x->src_handle || x->src_offset)
			return PEACH2_DMA_RULE_IMM_FIELDS;
	} else if (x->imm) {
		return PEACH2_DMA_RULE_IMM_FIELDS;
	}
	return peach2_dma_shape_rule(x->src_offset, x->dst, x->len, x->burst,
				     x->gap, flags, 1);
}

/*
 * The bytes each side of a transfer (that keeps peach2_xfer_rule()) spans:
 * len, or for a strided side from its first to its last byte. Returns
 * PEACH2_DMA_RULE_OK, or TOO_LONG when the span overflows.
 */
static inline enum peach2_dma_rule
peach2_xfer_spans(const struct peach2_xfer *x, __u64 *sspan, __u64 *dspan)
{
	peach2_u64 span;	/* peach2_hw.h's type: uint64_t in user space */

	*sspan = x->len;
	*dspan = x->len;
	if (!x->burst)
		return PEACH2_DMA_RULE_OK;
	if (peach2_stride_span(x->len, x->burst, x->gap, &span))
		return PEACH2_DMA_RULE_TOO_LONG;
	if (x->flags & PEACH2_XFER_STRIDE_SRC)
		*sspan = span;
	if (x->flags & PEACH2_XFER_STRIDE_DST)
		*dspan = span;
	return PEACH2_DMA_RULE_OK;
}

/* How to run a submission or a chain. */
#define PEACH2_DMA_REG_MODE    (1u << 0) /* register mode: exactly one descriptor */
#define PEACH2_DMA_HOST_DESC   (1u << 1) /* descriptors in host memory, not on-card */
#define PEACH2_DMA_WAIT        (1u << 2) /* return when done (or timeout_ms) */
#define PEACH2_DMA_REAP        (1u << 3) /* DMA_START: collect a run that ended in it */
#define PEACH2_DMA_FLAGS_ALL   0xfu
#define PEACH2_DMA_ENDED       (1u << 4) /* out only: DMA_START collected the run */
#define PEACH2_DMA_ANY_CHANNEL 0xffffffffu
#define PEACH2_DMA_MAX_XFERS   4096u     /* transfers per submission or chain */

/*
 * Which transfer the driver refused, and why. CHAIN_CREATE and DMA_START
 * (one-shot lists) check every transfer before the card is touched; when one
 * breaks a rule they fail (EINVAL, or ENOENT for an unknown handle) and write
 * this pair into the request: `bad_xfer`, the index of the first refused
 * transfer in `xfers`, and `bad_rule`, an enum peach2_dma_rule
 * (peach2_dma_rules.h). On input the pair must be 0, as the reserved field
 * it replaces had to be; the driver writes it only on such a refusal, so
 * bad_rule 0 after a failure means no transfer was named (the request was
 * refused for another reason: flags, count, a chain id, descriptor room),
 * or the driver predates the report.
 *
 * Compatibility: the pair took the place of reserved[0] without an ABI
 * version change: old programs zero it (as they had to) and old drivers
 * leave it alone, so both keep working; a new program on an old driver
 * reads bad_rule 0.
 */
struct peach2_xfer_refusal {
	__u32 bad_xfer;       /* out: index into xfers (in: 0) */
	__u32 bad_rule;       /* out: enum peach2_dma_rule, 0 = none named (in: 0) */
};

/* Build a chain once (descriptors stay in on-card or host memory, buffers
 * stay referenced), start it many times, destroy it when done. */
struct peach2_chain_create {
	__u64 xfers;          /* in: user pointer to struct peach2_xfer[count] */
	__u32 count;          /* in: 1 .. PEACH2_DMA_MAX_XFERS */
	__u32 flags;          /* in: PEACH2_DMA_HOST_DESC, PEACH2_DMA_REG_MODE
			       * (one descriptor) or 0 */
	__u32 chain;          /* out: chain id of this fd, never 0 */
	__u32 nr_desc;        /* out: card descriptors after splitting */
	struct peach2_xfer_refusal refusal; /* out, on refusal: see above */
	__u64 reserved;       /* must be 0 */
};

struct peach2_chain_destroy {
	__u32 chain;
	__u32 flags;          /* must be 0 */
};

/* Start a chain (chain != 0: count and xfers 0, flags only PEACH2_DMA_WAIT
 * or PEACH2_DMA_REAP) or a one-shot list of transfers (chain == 0:
 * xfers/count as in chain_create). Returns a ticket to wait on. With
 * PEACH2_DMA_WAIT it also waits and fills `status`; on -ETIMEDOUT or -EINTR
 * the DMA goes on and `ticket` is filled in all the same. timeout_ms must be
 * 0 without WAIT.
 * With PEACH2_DMA_REAP (not with WAIT) a run that has ended by the time the
 * start returns is collected by it: `flags` comes back with PEACH2_DMA_ENDED
 * added, `status` filled, and the ticket is not waited for (DMA_WAIT says
 * ENOENT). A short run on an idle channel usually ends inside the start; a
 * run without ENDED is waited for as usual. It saves a DMA_WAIT per run. */
struct peach2_dma_start {
	__u32 chain;          /* in: chain id, or 0 for xfers/count */
	__u32 count;          /* in: one-shot: number of transfers */
	__u64 xfers;          /* in: one-shot: user pointer to peach2_xfer[count] */
	__u32 flags;          /* in: PEACH2_DMA_*; out: PEACH2_DMA_ENDED added */
	__u32 channel;        /* in: 0..3 or PEACH2_DMA_ANY_CHANNEL;
			       * out: the channel the run was queued on */
	__u32 timeout_ms;     /* in: with PEACH2_DMA_WAIT; 0 = no limit */
	__u32 status;         /* out (WAIT, ENDED): 0 done, else a peach2_err code */
	__u64 ticket;         /* out: completion ticket, increasing per fd */
	struct peach2_xfer_refusal refusal; /* out, on refusal: see above */
	__u64 reserved;       /* must be 0 */
};

/* Wait for a ticket. Returns 0 with `status` filled, -ETIMEDOUT, or
 * -ENOENT for a ticket this fd never got, already waited for, or forgot
 * (an fd keeps the last 1024 completed, unwaited tickets). poll() on the fd
 * reports POLLIN while a completed ticket has not been waited for. */
struct peach2_dma_wait {
	__u64 ticket;         /* in */
	__u32 timeout_ms;     /* in: 0 = do not wait, just check */
	__u32 status;         /* out: 0 done, else a peach2_err code */
	__u64 bytes;          /* out: bytes the card moved */
	__u64 reserved;       /* must be 0 */
};

/* ---- Read proxy: export, remote get, remote atomics ----------------------
 * Exporting makes a range of one of this fd's buffers readable (and/or open
 * to 64-bit atomics) by any node, through the target-side driver's read
 * proxy: no process on this node takes part in serving requests. An export
 * ends with PEACH2_IOC_UNEXPORT, when its buffer is freed, or when the file
 * is released (its last close and last mapping); a request that arrives later is refused (RP_NOT_EXPORTED). A
 * request already being served keeps the memory alive until its reply is
 * sent.
 */
#define PEACH2_EXPORT_READ    (1u << 0) /* PEACH2_RP_OP_READ allowed */
#define PEACH2_EXPORT_ATOMIC  (1u << 1) /* PEACH2_RP_OP_CAS/FAA allowed */
#define PEACH2_EXPORT_FLAGS_ALL 0x3u
#define PEACH2_MAX_EXPORTS_PER_FD 1024u

struct peach2_export {
	__u32 handle;         /* in: buffer of this fd */
	__u32 flags;          /* in: PEACH2_EXPORT_*, at least one */
	__u64 offset;         /* in: first byte inside the buffer */
	__u64 len;            /* in: bytes, > 0, inside the buffer */
	__u32 export_id;      /* out: names the export on this node, never 0 */
	__u32 key;            /* out: random; requests must quote it */
	__u64 reserved[2];    /* must be 0 */
};

struct peach2_unexport {
	__u32 export_id;
	__u32 flags;          /* must be 0 */
};

/* Send one request (struct peach2_rp_req) to node `node`. Returns once the
 * card has sent it; the answer arrives later as a struct peach2_rp_cpl at
 * byte cpl_offset of buffer cpl_handle, with tag == the `tag` returned here.
 * Both the reply range (READ) and the completion record must lie inside
 * this fd's buffers: the record inside one physically contiguous chunk and
 * 32-byte aligned, a READ's reply over at most PEACH2_RP_MAX_PIECES
 * physically contiguous runs (the driver sends their list with the
 * request; -EINVAL for more), a LOOKUP's inside one chunk; operands not
 * used by the op must be 0. The
 * target checks `addr` (and the READ alignment rule) and answers in the
 * record. Errors: -EINVAL (fields), -ENOENT (no such buffer handle), -ENXIO
 * (node not in the sub-cluster), -EHOSTUNREACH (no route / link down:
 * nothing was sent), -EAGAIN (the link's send queue is full: nothing was
 * sent, retry), -EIO (the card could not read the reply list: nothing was
 * sent), -ENOMEM, -EOPNOTSUPP (card without a read proxy), -ENODEV (card
 * gone). `node` may be this node. */
struct peach2_rp_submit {
	__u32 node;           /* in: target node */
	__u32 op;             /* in: enum peach2_rp_op */
	__u32 export_id;      /* in: the target's export */
	__u32 key;            /* in */
	__u64 addr;           /* in: target host bus address (from its chunks) */
	__u32 len;            /* in: READ: 4 .. PEACH2_RP_MAX_LEN, multiple of 4;
			       * CAS/FAA: 8 */
	__u32 reply_handle;   /* in: READ: buffer of this fd for the data; else 0 */
	__u64 reply_offset;   /* in: READ: offset in it; else 0 */
	__u32 cpl_handle;     /* in: buffer of this fd for the completion */
	__u32 flags;          /* in: must be 0 */
	__u64 cpl_offset;     /* in: 32-byte aligned */
	__u64 operand[2];     /* in: CAS: compare, swap; FAA: addend, 0 */
	__u64 tag;            /* out: the completion's tag (the request's seq) */
	__u64 reserved[2];    /* must be 0 */
};

#define PEACH2_IOC_MAGIC 'P'
#define PEACH2_IOC_INFO   _IOR(PEACH2_IOC_MAGIC, 0x00, struct peach2_info)
#define PEACH2_IOC_ALLOC  _IOWR(PEACH2_IOC_MAGIC, 0x01, struct peach2_alloc)
#define PEACH2_IOC_FREE   _IOW(PEACH2_IOC_MAGIC, 0x02, struct peach2_free)
#define PEACH2_IOC_CHUNKS _IOWR(PEACH2_IOC_MAGIC, 0x03, struct peach2_chunks)
#define PEACH2_IOC_CHAIN_CREATE  _IOWR(PEACH2_IOC_MAGIC, 0x10, struct peach2_chain_create)
#define PEACH2_IOC_CHAIN_DESTROY _IOW(PEACH2_IOC_MAGIC, 0x11, struct peach2_chain_destroy)
#define PEACH2_IOC_DMA_START     _IOWR(PEACH2_IOC_MAGIC, 0x12, struct peach2_dma_start)
#define PEACH2_IOC_DMA_WAIT      _IOWR(PEACH2_IOC_MAGIC, 0x13, struct peach2_dma_wait)
#define PEACH2_IOC_EXPORT        _IOWR(PEACH2_IOC_MAGIC, 0x20, struct peach2_export)
#define PEACH2_IOC_UNEXPORT      _IOW(PEACH2_IOC_MAGIC, 0x21, struct peach2_unexport)
#define PEACH2_IOC_RP_SUBMIT     _IOWR(PEACH2_IOC_MAGIC, 0x22, struct peach2_rp_submit)

/* ---- Registered memory (ABI 4) -------------------------------------------
 * PIN pins [addr, addr + len) of the caller's own memory (malloc'ed, stack,
 * any private or shared mapping it may write; not another device's) and
 * registers its pages with the card. The result is a buffer handle like
 * ALLOC's: CHUNKS, DMA transfers, EXPORT, PUBLISH and FREE work on it, mmap
 * does not (the memory is mapped already). Offset 0 of the buffer is the
 * first byte of addr's page; `offset` says where addr lies. The pages stay
 * pinned until FREE, close() or exit (see PUBLISH for a quarantine); they
 * count against RLIMIT_MEMLOCK (unless CAP_IPC_LOCK) and max_alloc_per_fd,
 * and every physically contiguous run takes one of the card's inbound filter
 * ranges (ENOSPC when the card's table is full).
 */
#define PEACH2_PIN_FLAGS_ALL 0u
struct peach2_pin {
	__u64 addr;           /* in: first byte */
	__u64 len;            /* in: bytes, > 0 */
	__u32 flags;          /* in: must be 0 */
	__u32 handle;         /* out: buffer handle, never 0 */
	__u64 offset;         /* out: addr - first page */
	__u64 size;           /* out: buffer bytes (whole pages) */
	__u32 nr_chunks;      /* out: physically contiguous pieces */
	__u32 pad0;           /* must be 0 */
	__u64 reserved[2];    /* must be 0 */
};

/* ---- Names (ABI 4) ---------------------------------------------------------
 * PUBLISH gives [offset, offset + len) of one of the file's buffers a name
 * that is unique on this node within its kind: QP numbers (24 bits) or
 * memory keys (32 bits). Any node, this one included, can look a name up
 * through the read proxy (PEACH2_RP_OP_LOOKUP): this node's driver answers
 * with the range's pieces, the flags, group and info given here, the
 * publishing file's serial (`owner`), and an export of the range that it
 * created for the READ/ATOMIC flags. A name ends with UNPUBLISH, FREE of its
 * buffer, or the file's release; a LOOKUP then answers RP_NOT_EXPORTED.
 *
 * PEACH2_NAME_WRITE says remote nodes will write the range (the driver
 * cannot stop them: the card's inbound filter admits every registered
 * page). Such a buffer's memory is not given back at once when it is freed:
 * its pages leave the card's filter at once, but stay allocated (pinned)
 * for name_quarantine_ms, so that a writer still holding a stale
 * translation writes nowhere (the card refuses it) rather than into pages
 * reused by someone else. Writers must look names up again at least every
 * name_lease_ms (info.lease_ms in the LOOKUP reply), which is shorter.
 */
#define PEACH2_NAME_QP       1u  /* QP numbers: 0x100 .. 0xffffff */
#define PEACH2_NAME_KEY      2u  /* memory keys: index << 8 | 8 random bits */
#define PEACH2_NAME_WRITE    (1u << 0) /* remote writers (quarantine on free) */
#define PEACH2_NAME_READ     (1u << 1) /* export the range for READ */
#define PEACH2_NAME_ATOMIC   (1u << 2) /* export the range for CAS/FAA */
#define PEACH2_NAME_FLAGS_ALL 0x7u
#define PEACH2_NAME_INFO     32u /* opaque bytes a publisher attaches */

struct peach2_publish {
	__u32 handle;         /* in: buffer of this file */
	__u32 kind;           /* in: PEACH2_NAME_QP or PEACH2_NAME_KEY */
	__u64 offset;         /* in: first byte in the buffer */
	__u64 len;            /* in: bytes, > 0, inside the buffer */
	__u32 flags;          /* in: PEACH2_NAME_* */
	__u32 group;          /* in: the publisher's grouping (Verbs: its PD) */
	__u8 info[PEACH2_NAME_INFO]; /* in: returned as is by LOOKUP */
	__u32 name;           /* out: never 0 */
	__u32 export_id;      /* out: with READ/ATOMIC, else 0 */
	__u32 key;            /* out: the export's key, else 0 */
	__u32 pad0;           /* must be 0 */
	__u64 reserved[2];    /* must be 0 */
};

struct peach2_unpublish {
	__u32 kind;
	__u32 name;
};

/*
 * PEACH2_RP_OP_LOOKUP (a read-proxy request the target's driver serves; the
 * cards carry any op): export_id = kind, key = name, addr = byte offset into
 * the published range, len = reply bytes (PEACH2_LOOKUP_MIN ..
 * PEACH2_LOOKUP_MAX, a multiple of 16), reply = where the answer goes (16-byte
 * aligned, inside one chunk of the caller's buffer, as for READ). The answer
 * is a struct peach2_lookup with as many pieces as fit, from `offset` on
 * (the first piece starts at `offset`). Status: 0, RP_NOT_EXPORTED (no such
 * name), RP_RANGE (offset not below len), RP_BAD_REQUEST (kind, len).
 */
#define PEACH2_RP_OP_LOOKUP  4u
#define PEACH2_LOOKUP_MIN    128u
#define PEACH2_LOOKUP_MAX    4096u

struct peach2_lookup_piece {
	__u64 global_addr;    /* window address (the target's node slice) */
	__u64 len;
};

struct peach2_lookup {
	__u32 kind;
	__u32 name;
	__u32 flags;          /* PEACH2_NAME_* as published */
	__u32 group;
	__u64 owner;          /* serial of the publishing file (node-wide) */
	__u64 len;            /* bytes published */
	__u64 offset;         /* of the first piece (the request's addr) */
	__u32 export_id;      /* READ/ATOMIC export of the whole range, or 0 */
	__u32 key;
	__u32 nr_pieces;      /* pieces that follow */
	__u32 lease_ms;       /* re-look the name up within this (WRITE) */
	__u8 info[PEACH2_NAME_INFO];
	__u64 reserved;       /* 0 */
	struct peach2_lookup_piece pieces[]; /* (len - 96) / 16 at most */
};

#define PEACH2_IOC_PIN       _IOWR(PEACH2_IOC_MAGIC, 0x30, struct peach2_pin)
#define PEACH2_IOC_PUBLISH   _IOWR(PEACH2_IOC_MAGIC, 0x31, struct peach2_publish)
#define PEACH2_IOC_UNPUBLISH _IOW(PEACH2_IOC_MAGIC, 0x32, struct peach2_unpublish)

#endif /* PEACH2_UAPI_H */
