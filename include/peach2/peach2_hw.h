/* SPDX-License-Identifier: MIT */
/*
 * PEACH2 emulated card: the hardware contract.
 *
 * This is the one header that holds the register map, address map, link
 * packet format and error codes. It is included by the QEMU device (C glue
 * and C++ core), the Linux driver and the userspace library. docs/hardware.md
 * explains it; when the two disagree, fix one of them.
 *
 * Everything here is little endian. Plain C, no dependencies beyond
 * fixed-width integers, so that kernel, QEMU and C++ can all include it.
 */
#ifndef PEACH2_HW_H
#define PEACH2_HW_H

#ifdef __KERNEL__
#include <linux/types.h>
typedef __u8 peach2_u8;
typedef __u16 peach2_u16;
typedef __u32 peach2_u32;
typedef __u64 peach2_u64;
#else
#include <stdint.h>
typedef uint8_t peach2_u8;
typedef uint16_t peach2_u16;
typedef uint32_t peach2_u32;
typedef uint64_t peach2_u64;
#endif

/* ---- PCI identity ------------------------------------------------------ */
#define PEACH2_PCI_VENDOR_ID   0x1234 /* QEMU's test-device vendor: emulation only */
#define PEACH2_PCI_DEVICE_ID   0x7ca2
#define PEACH2_PCI_CLASS       0x0280 /* network controller, other */
#define PEACH2_PCI_REVISION    0x01

/* ---- BARs -------------------------------------------------------------- */
#define PEACH2_BAR_REGS        0 /* 32-bit MMIO: registers + MSI-X */
#define PEACH2_BAR_CARDMEM     2 /* 32-bit MMIO: on-card memory */
#define PEACH2_BAR_WINDOW      4 /* 64-bit prefetchable: the global window */

#define PEACH2_REGS_SIZE       0x4000u
#define PEACH2_MSIX_TABLE_OFF  0x2000u
#define PEACH2_MSIX_PBA_OFF    0x3000u
#define PEACH2_MSIX_VECTORS    8u

/* On-card memory (BAR2): descriptor RAM then the mailbox. */
#define PEACH2_CARDMEM_SIZE    0x10000u
#define PEACH2_DESC_SIZE       32u
#define PEACH2_DESC_MAX        1024u
#define PEACH2_DESC_RAM_OFF    0x0000u /* 1024 x 32 B = 32 KiB */
#define PEACH2_MAILBOX_OFF     0x8000u /* 32 KiB, remotely writable */
#define PEACH2_MAILBOX_SIZE    0x8000u
#define PEACH2_MAILBOX_SLOTS   16u     /* one per source node, by convention */
#define PEACH2_MAILBOX_SLOT_SIZE (PEACH2_MAILBOX_SIZE / PEACH2_MAILBOX_SLOTS)

/* ---- Global address map (the window, BAR4) ------------------------------
 * The window holds PEACH2_MAX_NODES slices; slice n belongs to node n:
 *   global = (n << PEACH2_SLICE_SHIFT) | offset
 * Inside a slice:
 *   [0, HOST_SIZE)              host memory: delivered as a DMA write to bus
 *                               address `offset` on node n (the node's base
 *                               n << SLICE_SHIFT is subtracted on delivery)
 *   [CARD_OFF, +CARD_SIZE)      the node's card: mailbox (on-card memory)
 *   [GPU_OFF, +GPU_SIZE)        GPU regions (reserved: no GPUs are emulated;
 *                               a write there is an error at the target)
 * Any other offset is an error at the target.
 */
#define PEACH2_MAX_NODES       16u
#define PEACH2_SLICE_SHIFT     31u                     /* 2 GiB slices */
#define PEACH2_SLICE_SIZE      (1ull << PEACH2_SLICE_SHIFT)
#define PEACH2_WINDOW_SIZE     ((peach2_u64)PEACH2_MAX_NODES << PEACH2_SLICE_SHIFT)
#define PEACH2_HOST_SHIFT      30u                     /* 1 GiB of host memory */
#define PEACH2_HOST_SIZE       (1ull << PEACH2_HOST_SHIFT)
#define PEACH2_CARD_OFF        0x40000000ull
#define PEACH2_CARD_SIZE       0x00010000ull
#define PEACH2_CARD_MAILBOX_OFF 0x0000ull              /* within the card region */
#define PEACH2_CARD_DOORBELL_OFF 0x8000ull             /* read-proxy doorbell: takes
							* only RPREQ packets */
#define PEACH2_GPU_OFF         0x60000000ull
#define PEACH2_GPU_SIZE        0x20000000ull
#define PEACH2_NODE_BASE(n)    ((peach2_u64)(n) << PEACH2_SLICE_SHIFT)
#define PEACH2_ADDR_NODE(a)    ((peach2_u32)((a) >> PEACH2_SLICE_SHIFT))
#define PEACH2_ADDR_OFFSET(a)  ((a) & (PEACH2_SLICE_SIZE - 1))

/* ---- Registers (BAR0, 32-bit access unless noted) ------------------------ */
#define PEACH2_REG_ID          0x000 /* RO: PEACH2_ID_MAGIC */
#define PEACH2_REG_VERSION     0x004 /* RO: major << 16 | minor */
#define PEACH2_REG_NODE_ID     0x008 /* RO: this card's node id */
#define PEACH2_REG_NODE_COUNT  0x00c /* RO: nodes in the sub-cluster */
#define PEACH2_REG_SLICE_SHIFT 0x010 /* RO: PEACH2_SLICE_SHIFT */
#define PEACH2_REG_HOST_SHIFT  0x014 /* RO: PEACH2_HOST_SHIFT */
#define PEACH2_REG_CAPS        0x018 /* RO: PEACH2_CAP_* */
#define PEACH2_REG_SCRATCH     0x01c /* RW: no effect; for tests */

/* Link status, one register per port (E, W, S); N is the host side. */
#define PEACH2_REG_LINK(p)     (0x020 + 4 * (p))
#define   PEACH2_LINK_UP        (1u << 0)  /* peer said HELLO, link usable */
#define   PEACH2_LINK_CONNECTED (1u << 1)  /* transport connected */
#define   PEACH2_LINK_SHM       (1u << 2)  /* ... through shared memory (§5) */
#define   PEACH2_LINK_DIRECT    (1u << 3)  /* ... writes go straight into the peer's memory */
#define   PEACH2_LINK_PEER_PORT_SHIFT 8    /* bits 8..11: peer's port */
#define   PEACH2_LINK_PEER_NODE_SHIFT 16   /* bits 16..31: peer's node id */

#define PEACH2_REG_INT_STATUS  0x040 /* RW1C: PEACH2_INT_* */
#define PEACH2_REG_INT_MASK    0x044 /* RW: 1 = masked (reset: all masked) */
#define   PEACH2_INT_ERROR      (1u << 0) /* vector 0 */
#define   PEACH2_INT_LINK       (1u << 1) /* vector 0: a link went up/down */
#define   PEACH2_INT_MAILBOX    (1u << 2) /* vector 0: a remote wrote the mailbox */
#define   PEACH2_INT_RP         (1u << 3) /* vector 6: read-proxy requests queued */
#define   PEACH2_INT_DMA(ch)    (1u << (8 + (ch))) /* vector 1 + ch: channel ended */
#define PEACH2_INT_VECTOR_MISC  0u
#define PEACH2_INT_VECTOR_DMA(ch) (1u + (ch)) /* ch 0..4: vectors 1..5 */
#define PEACH2_INT_VECTOR_RP    6u

/* Error reporting: the first error since the last clear is latched with
 * its address; the counter counts every error. */
#define PEACH2_REG_ERR_STATUS  0x050 /* RW1C bit 31; bits 0..7 first code */
#define   PEACH2_ERR_VALID      (1u << 31)
#define PEACH2_REG_ERR_COUNT   0x054 /* RO: errors since reset (saturates) */
#define PEACH2_REG_ERR_ADDR_LO 0x058 /* RO: address of the latched error */
#define PEACH2_REG_ERR_ADDR_HI 0x05c
#define PEACH2_REG_LAST_ERR    0x060 /* RO: code of the most recent error */

/* Inbound filter: delivered writes to host memory are applied only inside
 * ranges the driver registered (its communication buffers); anything else is
 * refused with PEACH2_ERR_NOT_REGISTERED. Enabled, and empty, at reset. */
#define PEACH2_REG_IN_CTRL     0x070 /* RW: bit 0 enable (reset 1) */
#define   PEACH2_IN_ENABLE      (1u << 0)
#define PEACH2_REG_IN_COUNT    0x074 /* RO: ranges registered */
#define PEACH2_REG_IN_BASE_LO  0x078 /* RW: bus address of a range */
#define PEACH2_REG_IN_BASE_HI  0x07c
#define PEACH2_REG_IN_SIZE_LO  0x080 /* RW: bytes */
#define PEACH2_REG_IN_SIZE_HI  0x084
#define PEACH2_REG_IN_CMD      0x088 /* WO: PEACH2_IN_CMD_* using IN_BASE/IN_SIZE */
#define   PEACH2_IN_CMD_ADD     1u /* add [base, base+size): must not overlap */
#define   PEACH2_IN_CMD_REMOVE  2u /* remove the range starting at base */
#define   PEACH2_IN_CMD_CLEAR   3u /* remove every range */
#define PEACH2_REG_IN_RESULT   0x08c /* RO: 0 = last command done, else a peach2_err */
/* A pinned buffer takes a range per physically contiguous run of its pages,
 * and a guest that has run a while hands out runs of a few pages: one 8 MiB
 * pool of an MPI rank can need 2000 ranges. So the table is large (a range
 * per page of a 256 MiB guest); user_max_ranges keeps each user to a share. */
#define PEACH2_IN_MAX_RANGES   65536u

/* Per-port counters (64-bit pairs, LO then HI), port p in 0..3 (N,E,W,S). */
#define PEACH2_REG_CNT_BASE    0x100
#define PEACH2_REG_CNT_STRIDE  0x20
#define PEACH2_REG_TX_PKTS(p)  (PEACH2_REG_CNT_BASE + PEACH2_REG_CNT_STRIDE * (p) + 0x00)
#define PEACH2_REG_TX_BYTES(p) (PEACH2_REG_CNT_BASE + PEACH2_REG_CNT_STRIDE * (p) + 0x08)
#define PEACH2_REG_RX_PKTS(p)  (PEACH2_REG_CNT_BASE + PEACH2_REG_CNT_STRIDE * (p) + 0x10)
#define PEACH2_REG_RX_BYTES(p) (PEACH2_REG_CNT_BASE + PEACH2_REG_CNT_STRIDE * (p) + 0x18)

/* Error counters by code (RO, 32-bit each, saturating), codes 0..31. */
#define PEACH2_REG_ERR_BY_CODE(c) (0x200 + 4 * (c))

/* ---- DMA controller -----------------------------------------------------
 * PEACH2_DMA_CHANNELS independent channels. A channel runs either a chain of
 * descriptors (head in on-card descriptor RAM or in host memory) or one
 * transfer described by its registers ("register mode"). When it ends it
 * sets DONE or ERROR in its STATUS and INT_STATUS.DMA(ch) (MSI-X vector
 * 1 + ch). Restrictions as on PEACH2: source and destination 4-byte aligned,
 * equal low 4 address bits, length a multiple of 4.
 */
#define PEACH2_DMA_CHANNELS    4u
/* A fifth channel, same registers at PEACH2_REG_DMA(4, r), is the read
 * proxy's: the driver sends its replies on it (vector 5); user space never
 * gets it. */
#define PEACH2_DMA_PROXY_CHANNEL 4u
#define PEACH2_DMA_ENGINES     5u
#define PEACH2_REG_DMA_BASE    0x400
#define PEACH2_REG_DMA_STRIDE  0x40
#define PEACH2_REG_DMA(ch, r)  (PEACH2_REG_DMA_BASE + PEACH2_REG_DMA_STRIDE * (ch) + (r))
#define PEACH2_DMA_CTRL        0x00 /* WO: PEACH2_DMA_CTRL_* */
#define   PEACH2_DMA_CTRL_START_CHAIN (1u << 0) /* run the chain at HEAD */
#define   PEACH2_DMA_CTRL_START_REG   (1u << 1) /* run the register-mode transfer */
#define   PEACH2_DMA_CTRL_ABORT       (1u << 2) /* stop; ends with ERROR, DMA_ABORTED */
#define PEACH2_DMA_STATUS      0x04 /* RO; write 1s to clear DONE/ERROR */
#define   PEACH2_DMA_ST_BUSY    (1u << 0)
#define   PEACH2_DMA_ST_DONE    (1u << 1)
#define   PEACH2_DMA_ST_ERROR   (1u << 2)
#define   PEACH2_DMA_ST_ENDED   (PEACH2_DMA_ST_DONE | PEACH2_DMA_ST_ERROR)
#define   PEACH2_DMA_ST_CODE_SHIFT 8 /* bits 8..15: peach2_err of the failure */
#define   PEACH2_DMA_ST_CODE    (0xffu << PEACH2_DMA_ST_CODE_SHIFT)
#define PEACH2_DMA_HEAD_LO     0x08 /* RW: chain head: on-card descriptor index, */
#define PEACH2_DMA_HEAD_HI     0x0c /*     or a host bus address if HEAD_HOST */
#define   PEACH2_DMA_HEAD_HOST  (1ull << 63)
#define PEACH2_DMA_SRC_LO      0x10 /* RW: register mode: source bus address */
#define PEACH2_DMA_SRC_HI      0x14
#define PEACH2_DMA_DST_LO      0x18 /* RW: register mode: destination (global) */
#define PEACH2_DMA_DST_HI      0x1c
#define PEACH2_DMA_LEN         0x20 /* RW: register mode: bytes */
#define PEACH2_DMA_BLOCK       0x24 /* RW: register mode: burst | gap << 16 */
#define PEACH2_DMA_FLAGS       0x28 /* RW: register mode: PEACH2_DESC_* (no chain bits) */
#define PEACH2_DMA_DONE_DESCS  0x2c /* RO: descriptors completed in this run */
#define PEACH2_DMA_ERR_DESC_LO 0x30 /* RO: where the failing descriptor is */
#define PEACH2_DMA_ERR_DESC_HI 0x34 /*     (index, or host address | HEAD_HOST) */
#define PEACH2_DMA_BYTES_LO    0x38 /* RO: payload bytes moved in this run */
#define PEACH2_DMA_BYTES_HI    0x3c
#define PEACH2_DMA_MAX_CHAIN   65536u /* descriptors per run, on-card or host */
#define PEACH2_DMA_MAX_LEN     (64u << 20) /* bytes per descriptor */

/* A DMA descriptor: 32 bytes, little endian, in descriptor RAM (BAR2) or in
 * host memory (16-byte aligned). */
struct peach2_desc {
	peach2_u64 src;    /* source bus address on this node; IMM: the value */
	peach2_u64 dst;    /* destination: global address (any node, incl. own) */
	peach2_u32 len;    /* bytes: multiple of 4, 4 .. PEACH2_DMA_MAX_LEN; IMM: 4 or 8 */
	peach2_u16 burst;  /* block-stride: bytes per block (multiple of 4), 0 = contiguous */
	peach2_u16 gap;    /* block-stride: bytes skipped after each block (multiple of 4) */
	peach2_u32 next;   /* next descriptor: index, or host bus address if NEXT_HOST */
	peach2_u32 flags;  /* PEACH2_DESC_* ; undefined bits must be 0 */
};
#define PEACH2_DESC_LAST       (1u << 0) /* the chain ends after this one */
#define PEACH2_DESC_NEXT_HOST  (1u << 1) /* `next` is a host bus address */
#define PEACH2_DESC_IMM        (1u << 2) /* write the low `len` bytes of src to dst */
#define PEACH2_DESC_STRIDE_SRC (1u << 3) /* gap applies to the source */
#define PEACH2_DESC_STRIDE_DST (1u << 4) /* gap applies to the destination */
#define PEACH2_DESC_FLAGS_ALL  0x1fu

/* ---- Read proxy ---------------------------------------------------------
 * PEACH2 cannot read remote memory. A node that wants to read (or to do an
 * atomic operation on) another node's memory sends a request to that node's
 * card, which queues it in a ring in its host's memory and interrupts its
 * driver; the driver checks it, and answers with the proxy DMA channel:
 * the data (READ) to the requester's `reply` address, then a completion
 * record to `cpl`. Nothing on the target runs in user space.
 *
 * Sending (requester's driver): write the 64-byte request into RP_TX_REQ,
 * then the target node id into RP_TX_SEND. The card sends one RPREQ packet
 * to the target's doorbell (global address NODE_BASE(target) + CARD_OFF +
 * CARD_DOORBELL_OFF) and sets RP_TX_RESULT (0 or the routing error). PIO
 * stores to a doorbell are refused (BAD_TARGET): only cards send requests,
 * so only drivers do.
 *
 * A READ may scatter its reply over up to PEACH2_RP_MAX_PIECES pieces of
 * the requester's memory (a malloc'ed buffer is physically fragmented):
 * operand[0] = n pieces (0: the one piece at `reply`; with n, `reply` is 0),
 * and RP_TX_LIST_LO/HI the bus address of n struct peach2_rp_piece in the
 * requester's host memory, which the card reads at RP_TX_SEND and sends
 * after the request (payload 64 + 16 n bytes; a list the card cannot read:
 * RP_TX_RESULT DMA_READ, nothing sent). The pieces' lengths add up to
 * `len`; piece i receives the bytes that follow the earlier pieces'.
 *
 * Receiving (target card): an RPREQ is checked (payload 64 bytes, or 64 +
 * 16 n for a READ of n pieces; cpl in host memory and 32-byte aligned; else
 * RP_BAD_PACKET, dropped), stamped with the packet's src_node and written
 * to ring entry TAIL % RING_SIZE, a list after it in the next
 * PEACH2_RP_LIST_ENTRIES(n) entries (4 pieces per entry, wrapping like the
 * ring); TAIL advances over all of them and INT_STATUS.RP is set (vector
 * 6). With the ring disabled or without room for all of them (TAIL - HEAD +
 * entries > RING_SIZE), or when host memory refuses an entry,
 * the card answers by itself with a completion record of status RP_OFF /
 * RP_FULL / DMA_WRITE, and with RP_BAD_REQUEST when a READ's list is not
 * the one its operand[0] announces. A ring of fewer than 17 entries never
 * fits a READ of PEACH2_RP_MAX_PIECES pieces. A link partner's own packets (hops 0) must carry its
 * node id as src_node, else the stream is dropped (BAD_PACKET).
 * The driver consumes entries and writes HEAD; if entries remain after a
 * HEAD write, INT_STATUS.RP is set again, so the driver can stop after a
 * bounded number per interrupt.
 *
 * Completion record (struct peach2_rp_cpl) at the requester's `cpl`: the
 * first 24 bytes in one write, then `tag` (the request's seq) in a second
 * 8-byte write; poll `tag` with acquire loads, then read the rest.
 */
#define PEACH2_REG_RP_CTRL       0x700 /* RW: bit 0 enable the ring (0 -> 1 sets
					* HEAD = TAIL = 0) */
#define   PEACH2_RP_ENABLE        (1u << 0)
#define PEACH2_REG_RP_RING_SIZE  0x704 /* RW (while disabled): entries, power of 2 */
#define PEACH2_REG_RP_BASE_LO    0x708 /* RW (while disabled): bus address, 64-B aligned */
#define PEACH2_REG_RP_BASE_HI    0x70c
#define PEACH2_REG_RP_HEAD       0x710 /* RW: entries consumed (free running);
					* only forward, never past TAIL */
#define PEACH2_REG_RP_TAIL       0x714 /* RO: entries produced (free running) */
#define PEACH2_REG_RP_TX_SEND    0x718 /* WO: target node: send RP_TX_REQ */
#define PEACH2_REG_RP_TX_RESULT  0x71c /* RO: 0 or peach2_err of the last send */
#define PEACH2_REG_RP_TX_SENT    0x720 /* RO counters, 32-bit, saturating */
#define PEACH2_REG_RP_RX_QUEUED  0x724
#define PEACH2_REG_RP_RX_REFUSED 0x728 /* answered by the card (RP_FULL, RP_OFF,
					* DMA_WRITE, RP_BAD_REQUEST) */
#define PEACH2_REG_RP_RX_DROPPED 0x72c /* RP_BAD_PACKET: not answerable */
#define PEACH2_REG_RP_TX_LIST_LO 0x730 /* RW: bus address of the reply list
					* (struct peach2_rp_piece[n]) */
#define PEACH2_REG_RP_TX_LIST_HI 0x734
#define PEACH2_REG_RP_TX_REQ     0x740 /* RW: 64 bytes, struct peach2_rp_req */
/* Fault injection, for testing the driver's recovery paths: while non-zero,
 * each run started on the proxy channel decrements it and then makes no
 * progress until it is aborted (CTRL.ABORT). Reset 0. */
#define PEACH2_REG_FAULT_PROXY_STALL 0x7f0 /* RW: runs to stall */
/* Fault injection, for testing the driver's watch over its serving thread:
 * while non-zero, each request-interrupt message (INT_STATUS.RP) the card
 * would send is withheld instead and it decrements; the bit stays set and
 * counts as signalled, so no message comes until the driver clears it (a
 * lost wake-up). Reset 0. */
#define PEACH2_REG_FAULT_RP_INT_LOST 0x7f4 /* RW: messages to withhold */
#define PEACH2_RP_RING_MAX       4096u
#define PEACH2_RP_ENTRY_SIZE     64u

#define PEACH2_RP_VERSION      1u
enum peach2_rp_op {
	PEACH2_RP_OP_READ = 1,     /* copy len bytes at addr to reply */
	PEACH2_RP_OP_CAS = 2,      /* 8 B at addr: if == operand[0], := operand[1] */
	PEACH2_RP_OP_FAA = 3,      /* 8 B at addr: += operand[0] */
};
#define PEACH2_RP_MAX_LEN      (4u << 20) /* bytes per READ request */
#define PEACH2_RP_MAX_PIECES   64u /* reply pieces per READ request */
/* Ring entries after a request that carry its list of n pieces. */
#define PEACH2_RP_PIECES_PER_ENTRY 4u
#define PEACH2_RP_LIST_ENTRIES(n) \
	(((n) + PEACH2_RP_PIECES_PER_ENTRY - 1) / PEACH2_RP_PIECES_PER_ENTRY)

/* A request, as sent in the RPREQ payload and as queued in the ring. */
struct peach2_rp_req {
	peach2_u8 op;          /* enum peach2_rp_op */
	peach2_u8 version;     /* PEACH2_RP_VERSION */
	peach2_u16 src_node;   /* requester: set by the receiving card */
	peach2_u32 export_id;  /* names memory the target's owner exported */
	peach2_u32 key;        /* the export's key */
	peach2_u32 len;        /* READ: bytes, multiple of 4; CAS/FAA: 8 */
	peach2_u64 addr;       /* target host bus address of the first byte */
	peach2_u64 seq;        /* strictly increasing per requester node;
				* the completion's tag */
	peach2_u64 reply;      /* READ: requester host bus address for the data;
				* (reply ^ addr) & 15 == 0 (DMA restriction) */
	peach2_u64 cpl;        /* requester host bus address of the completion
				* record, 32-byte aligned */
	peach2_u64 operand[2]; /* CAS: compare, swap; FAA: addend, 0;
				* READ: reply pieces listed after the
				* request (0: none, one piece at reply), 0 */
};

/* One piece of a READ's reply: requester host bus address and bytes. Each
 * piece is a DMA of its own: (addr ^ the target address of its first
 * byte) & 15 == 0, len a multiple of 4 and not 0. */
struct peach2_rp_piece {
	peach2_u64 addr;
	peach2_u32 len;
	peach2_u32 reserved;   /* 0 */
};

struct peach2_rp_cpl {
	peach2_u64 value;      /* CAS/FAA: the value before the operation */
	peach2_u32 status;     /* 0 or enum peach2_err */
	peach2_u32 len;        /* READ: bytes delivered (all or nothing) */
	peach2_u64 reserved;   /* 0 */
	peach2_u64 tag;        /* the request's seq; written last */
};

/* ---- Routing ------------------------------------------------------------
 * Per port (N, E, W, S) PEACH2_ROUTE_ENTRIES entries of address mask and
 * base/limit: a packet whose (address & mask) lies in [base, limit] of a
 * valid entry leaves by that port; N entries are checked first (N means
 * "this node": the node's base is subtracted and the write is delivered
 * here), then E, W, S. With ROUTE_CTRL.ENABLE clear (reset) the card routes
 * to direct neighbours only (by the node ids their HELLOs gave).
 */
#define PEACH2_ROUTE_ENTRIES   2u
#define PEACH2_REG_ROUTE_CTRL  0x5f0 /* RW: bit 0 enable the table */
#define   PEACH2_ROUTE_ENABLE   (1u << 0)
#define PEACH2_REG_ROUTE(port, e, r) (0x600 + 0x40 * (port) + 0x20 * (e) + (r))
#define PEACH2_ROUTE_MASK_LO   0x00
#define PEACH2_ROUTE_MASK_HI   0x04
#define PEACH2_ROUTE_BASE_LO   0x08
#define PEACH2_ROUTE_BASE_HI   0x0c
#define PEACH2_ROUTE_LIMIT_LO  0x10
#define PEACH2_ROUTE_LIMIT_HI  0x14
#define PEACH2_ROUTE_FLAGS     0x18 /* bit 0 valid */
#define   PEACH2_ROUTE_VALID    (1u << 0)

/* ---- Firmware image -------------------------------------------------------
 * The management processor's routing tables, as one image for the whole
 * sub-cluster. The driver places it in host memory and writes FW_ADDR,
 * FW_LEN and FW_CMD=LOAD; the card reads it (DMA), validates it and applies
 * the entries for its own node (route table + ROUTE_CTRL.ENABLE). An image
 * that fails validation is refused with FW_STATUS = the reason, the card's
 * links are held down and nothing else changes until a good image arrives.
 */
#define PEACH2_REG_FW_ADDR_LO  0x580 /* RW: bus address of the image */
#define PEACH2_REG_FW_ADDR_HI  0x584
#define PEACH2_REG_FW_LEN      0x588 /* RW: bytes */
#define PEACH2_REG_FW_CMD      0x58c /* WO: 1 = load */
#define   PEACH2_FW_CMD_LOAD    1u
#define PEACH2_REG_FW_STATUS   0x590 /* RO: enum peach2_fw_status */
#define PEACH2_REG_FW_VERSION  0x594 /* RO: image_version of the applied image */
#define PEACH2_REG_FW_ENTRIES  0x598 /* RO: entries applied for this node */
#define PEACH2_REG_FW_TOPOLOGY 0x5a0 /* RO: 32 bytes, topology text, NUL padded */
#define PEACH2_FW_MAX_SIZE     (1u << 20)

/*
 * FW_STATUS values: X(name, value, label, text) gives enum peach2_fw_status
 * (PEACH2_FW_<name>), peach2_fw_status_name() (the label sysfs shows) and
 * peach2_fw_status_text() (a phrase for logs and tools).
 */
#define PEACH2_FW_STATUSES(X) \
	X(NONE,            0, "none", "none") /* no image loaded: default routing */ \
	X(LOADING,         1, "loading", "loading") \
	X(OK,              2, "ok", "ok") \
	X(BAD_MAGIC,      16, "bad-magic", "bad magic") \
	X(BAD_VERSION,    17, "bad-version", "unsupported format version") \
	X(TRUNCATED,      18, "truncated", "truncated or inconsistent sizes") \
	X(BAD_CRC,        19, "bad-crc", "CRC mismatch") \
	X(WRONG_TOPOLOGY, 20, "wrong-topology", "wrong topology") /* node count differs */ \
	X(BAD_ENTRY,      21, "bad-entry", "bad entry") /* port/index/flags/range */ \
	X(NO_ENTRIES,     22, "no-entries", "no entries for this node") \
	X(READ_FAILED,    23, "read-failed", "image could not be read") /* by the card */

enum peach2_fw_status {
#define PEACH2_FW_ENUM(name, value, label, text) PEACH2_FW_##name = value,
	PEACH2_FW_STATUSES(PEACH2_FW_ENUM)
#undef PEACH2_FW_ENUM
};

static inline const char *peach2_fw_status_name(peach2_u32 status)
{
	switch (status) {
#define PEACH2_FW_NAME(name, value, label, text) case value: return label;
	PEACH2_FW_STATUSES(PEACH2_FW_NAME)
#undef PEACH2_FW_NAME
	default: return "unknown";
	}
}

static inline const char *peach2_fw_status_text(peach2_u32 status)
{
	switch (status) {
#define PEACH2_FW_TEXT(name, value, label, text) case value: return text;
	PEACH2_FW_STATUSES(PEACH2_FW_TEXT)
#undef PEACH2_FW_TEXT
	default: return "unknown";
	}
}

#define PEACH2_FW_MAGIC        0x57463250u /* "P2FW" */
#define PEACH2_FW_FORMAT       1u

struct peach2_fw_header {
	peach2_u32 magic;          /* PEACH2_FW_MAGIC */
	peach2_u16 format;         /* PEACH2_FW_FORMAT */
	peach2_u16 header_size;    /* sizeof(struct peach2_fw_header) */
	peach2_u32 total_size;     /* header + nr_entries * entry size */
	peach2_u32 crc32;          /* CRC-32 (IEEE) of the image with this field 0 */
	peach2_u16 node_count;     /* nodes in the sub-cluster */
	peach2_u16 nr_entries;
	peach2_u32 image_version;  /* chosen by whoever builds the image */
	char topology[32];         /* e.g. "ring:8", NUL padded */
	peach2_u32 reserved[2];    /* 0 */
};

struct peach2_fw_entry {
	peach2_u16 node;           /* the node whose card applies it */
	peach2_u8 port;            /* enum peach2_port */
	peach2_u8 index;           /* < PEACH2_ROUTE_ENTRIES */
	peach2_u32 flags;          /* PEACH2_ROUTE_VALID; others 0 */
	peach2_u64 mask;
	peach2_u64 base;
	peach2_u64 limit;
};

#define PEACH2_ID_MAGIC        0x50454332u /* "PEC2" */
#define PEACH2_VERSION_MAJOR   1u
#define PEACH2_VERSION_MINOR   1u /* 1: read proxy */
#define PEACH2_CAP_MAILBOX     (1u << 0)
#define PEACH2_CAP_DMA         (1u << 1)
#define PEACH2_CAP_ROUTING     (1u << 2)
#define PEACH2_CAP_READ_PROXY  (1u << 3)

/* Ports. N is the host port; E/W form rings; S joins rings. */
enum peach2_port {
	PEACH2_PORT_N = 0,
	PEACH2_PORT_E = 1,
	PEACH2_PORT_W = 2,
	PEACH2_PORT_S = 3,
	PEACH2_NR_PORTS = 4,
};
#define PEACH2_NR_LINKS 3 /* E, W, S: PEACH2_REG_LINK(p - 1) */

/*
 * Error codes (ERR_STATUS bits 0..7, LAST_ERR, ERR_BY_CODE index), one table
 * for every part: X(name, code, text) gives enum peach2_err
 * (PEACH2_ERR_<name>), peach2_err_name() (the symbolic name, as sysfs and
 * libtca print it) and peach2_err_text() (a phrase for logs). Read-proxy
 * codes: the target card answers RP_FULL/RP_OFF itself (flow control:
 * counted in RP_RX_REFUSED, not raised as errors) and raises RP_BAD_PACKET;
 * the other RP_ codes are the target driver's answers in a completion
 * record. docs/hardware.md §4 says when each is raised.
 */
#define PEACH2_ERRORS(X) \
	X(NONE,             0, "none") \
	X(NO_SUCH_NODE,     1, "no such node") /* window store to node >= node count */ \
	X(LINK_DOWN,        2, "link down") /* route exists but its link is down */ \
	X(NO_ROUTE,         3, "no route") /* no port leads to the node */ \
	X(READ_UNSUPPORTED, 4, "read from write-only window") \
	X(BAD_TARGET,       5, "bad target address") /* delivered write outside host/card memory */ \
	X(NO_GPU,           6, "no GPU at address") /* write to a GPU region: none emulated */ \
	X(BAD_PACKET,       7, "bad packet") /* malformed packet on a link: link reset */ \
	X(TX_OVERFLOW,      8, "link send queue overflow") /* packet dropped */ \
	X(DMA_WRITE,        9, "host memory rejected write") /* a delivered write */ \
	X(BAD_REG,         10, "bad register access") /* undefined register, bad size */ \
	X(HOP_LIMIT,       11, "hop limit exceeded") \
	X(NOT_REGISTERED,  12, "write outside registered buffers") \
	X(BAD_COMMAND,     13, "bad command") /* malformed command to the card */ \
	X(DMA_ALIGN,       14, "DMA alignment restriction") /* alignment, low 4 bits, length */ \
	X(DMA_ZERO_LEN,    15, "DMA descriptor of length 0") \
	X(DMA_LOOP,        16, "DMA descriptor loop") /* a chain reads a descriptor (or part) again */ \
	X(DMA_CHAIN_LONG,  17, "DMA chain too long") /* > PEACH2_DMA_MAX_CHAIN descriptors */ \
	X(DMA_BAD_INDEX,   18, "DMA descriptor index out of range") /* >= PEACH2_DESC_MAX */ \
	X(DMA_BAD_DESC,    19, "malformed DMA descriptor") /* flags, block/IMM fields, too long */ \
	X(DMA_READ,        20, "DMA read failed") /* a source or host descriptor */ \
	X(DMA_BUSY,        21, "DMA channel busy") /* start while the channel is busy */ \
	X(DMA_ABORTED,     22, "DMA aborted") /* CTRL.ABORT or a device reset */ \
	X(RP_FULL,         23, "read-proxy request ring full") /* retry later */ \
	X(RP_OFF,          24, "read proxy not enabled") /* target has no ring (no driver) */ \
	X(RP_BAD_REQUEST,  25, "bad read-proxy request") /* version, op, len, address */ \
	X(RP_NOT_EXPORTED, 26, "memory not exported") /* no such export, wrong key, op */ \
	X(RP_RANGE,        27, "outside the export") \
	X(RP_REPLAY,       28, "replayed read-proxy request") /* seq not newer */ \
	X(RP_BAD_PACKET,   29, "unanswerable read-proxy request") /* bad cpl: dropped */

enum peach2_err {
#define PEACH2_ERR_ENUM(name, code, text) PEACH2_ERR_##name = code,
	PEACH2_ERRORS(PEACH2_ERR_ENUM)
#undef PEACH2_ERR_ENUM
	PEACH2_ERR_NR_CODES = 32,
};

/* "DMA_ALIGN" for PEACH2_ERR_DMA_ALIGN; "UNKNOWN" for a code not in the table. */
static inline const char *peach2_err_name(peach2_u32 code)
{
	switch (code) {
#define PEACH2_ERR_NAME(name, code, text) case code: return #name;
	PEACH2_ERRORS(PEACH2_ERR_NAME)
#undef PEACH2_ERR_NAME
	default: return "UNKNOWN";
	}
}

/* "DMA alignment restriction" for PEACH2_ERR_DMA_ALIGN; "unknown" otherwise. */
static inline const char *peach2_err_text(peach2_u32 code)
{
	switch (code) {
#define PEACH2_ERR_TEXT(name, code, text) case code: return text;
	PEACH2_ERRORS(PEACH2_ERR_TEXT)
#undef PEACH2_ERR_TEXT
	default: return "unknown";
	}
}

/* True if @code is in the table. */
static inline int peach2_err_known(peach2_u32 code)
{
	switch (code) {
#define PEACH2_ERR_KNOWN(name, code, text) case code: return 1;
	PEACH2_ERRORS(PEACH2_ERR_KNOWN)
#undef PEACH2_ERR_KNOWN
	default: return 0;
	}
}

/* ---- Link packets ------------------------------------------------------
 * A link is a byte stream (a QEMU chardev: unix socket or TCP). It carries
 * packets: a 32-byte header followed by `len` payload bytes. A receiver that
 * sees a bad magic, version, type or length counts PEACH2_ERR_BAD_PACKET and
 * drops the connection; the transport reconnects and both sides say HELLO.
 */
#define PEACH2_PKT_MAGIC       0x54503250u /* "P2PT" */
#define PEACH2_PKT_VERSION     1u
#define PEACH2_PKT_MAX_PAYLOAD 4096u       /* bytes per WRITE packet on the wire */
#define PEACH2_WC_MAX          256u        /* PIO write combining: like PCIe max payload */
#define PEACH2_PKT_HOP_LIMIT   8u

enum peach2_pkt_type {
	PEACH2_PKT_HELLO = 1, /* payload: struct peach2_hello */
	PEACH2_PKT_WRITE = 2, /* payload: data for `addr` (global address) */
	PEACH2_PKT_RPREQ = 3, /* payload: struct peach2_rp_req, then a READ's
			       * reply list (struct peach2_rp_piece[operand[0]]);
			       * `addr` is the target's doorbell */
};

struct peach2_pkt_hdr {
	peach2_u32 magic;
	peach2_u8 version;
	peach2_u8 type;
	peach2_u8 hops;     /* cards passed so far */
	peach2_u8 flags;    /* must be 0 */
	peach2_u16 src_node;
	peach2_u16 dst_node; /* node `addr` decodes to (WRITE) */
	peach2_u32 len;     /* payload bytes */
	peach2_u64 addr;    /* WRITE: global address of the first byte */
	peach2_u32 seq;     /* per link and direction, from 0 after HELLO */
	peach2_u32 number;  /* end to end: the packet's number in the
			     * src_node -> dst_node stream, set by the source
			     * card and kept by every forwarding card (card
			     * traces match a packet across nodes by it) */
};

struct peach2_hello {
	peach2_u32 node_id;
	peach2_u32 node_count;
	peach2_u32 port;     /* sender's port the link leaves from */
	peach2_u32 version;  /* PEACH2_REG_VERSION value */
};

#ifdef __cplusplus
static_assert(sizeof(struct peach2_pkt_hdr) == 32, "packet header is 32 bytes");
static_assert(sizeof(struct peach2_hello) == 16, "hello payload is 16 bytes");
static_assert(sizeof(struct peach2_desc) == PEACH2_DESC_SIZE, "descriptor is 32 bytes");
static_assert(sizeof(struct peach2_fw_header) == 64, "firmware header is 64 bytes");
static_assert(sizeof(struct peach2_fw_entry) == 32, "firmware entry is 32 bytes");
static_assert(sizeof(struct peach2_rp_req) == PEACH2_RP_ENTRY_SIZE, "request is 64 bytes");
static_assert(sizeof(struct peach2_rp_piece) * PEACH2_RP_PIECES_PER_ENTRY == PEACH2_RP_ENTRY_SIZE,
	      "four reply pieces per ring entry");
static_assert(sizeof(struct peach2_rp_cpl) == 32, "completion record is 32 bytes");
#endif

#endif /* PEACH2_HW_H */
