/* SPDX-License-Identifier: MIT */
/*
 * C API of the PEACH2 device model core.
 *
 * The core holds all of the card's behaviour (registers, address decoding,
 * routing, link packets, errors, interrupts) and knows nothing of QEMU: the
 * QEMU glue (hw/misc/peach2.c) feeds it MMIO accesses and link bytes and
 * gives it callbacks for guest-memory DMA, interrupts and logging. Host unit
 * tests drive the same API.
 *
 * Threading: the caller serialises every call (QEMU: the BQL) but
 * peach2_core_window_append(), which may run beside any of them.
 * Errors: no call aborts on guest or wire input; bad input is reported
 * through the card's error registers, an interrupt and the log callback.
 * No C++ exception crosses this boundary.
 */
#ifndef PEACH2_CORE_H
#define PEACH2_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct peach2_core peach2_core;

enum peach2_core_log_level {
	PEACH2_LOG_GUEST_ERROR = 0, /* the guest or a peer did something wrong */
	PEACH2_LOG_INFO = 1,        /* link state changes and the like */
};

/*
 * An error condition, for tracing (QEMU: one typed trace event per code).
 * The same event also reaches log() as text.
 */
#define PEACH2_CORE_NONE 0xffffffffu /* a field that does not apply */
typedef struct peach2_core_error {
	uint32_t code;      /* enum peach2_err; PEACH2_ERR_NONE: a refused
			     * firmware image, see fw_status */
	uint32_t fw_status; /* enum peach2_fw_status, with code NONE */
	bool counted;       /* latched and counted in the ERR registers; false
			     * for the read proxy's RP_FULL/RP_OFF/DMA_WRITE
			     * answers (flow control) and firmware refusals */
	uint64_t addr;      /* as ERR_ADDR: a global address, a register or
			     * card-memory offset, a descriptor's location */
	uint32_t port;      /* the link (PEACH2_PORT_E/W/S), or NONE */
	uint32_t node;      /* the other node: destination, source, peer */
	uint32_t channel;   /* the DMA channel, or NONE */
	uint64_t value;     /* by code: an access size, a length, a command
			     * value, bytes lost, descriptors done, a tag */
	const char *what;   /* the log text's detail */
} peach2_core_error;

typedef struct peach2_core_host {
	void *opaque;
	/* Write len bytes at bus address addr of this node's memory, its
	 * last 8 bytes after the others (a packet lands in address order: a
	 * guest polling its last word must not see it before the rest).
	 * Return 0, or -1 if the memory system rejected the access. */
	int (*dma_write)(void *opaque, uint64_t addr, const void *buf, size_t len);
	/* Read len bytes at bus address addr (DMA sources, host descriptors).
	 * Return 0, or -1 if rejected. */
	int (*dma_read)(void *opaque, uint64_t addr, void *buf, size_t len);
	/* The card has work for peach2_core_service() (a DMA run, a firmware
	 * image to load, a DMA run that can go on now that a link drained):
	 * call it soon (QEMU: a bottom half). Never called for packets: see
	 * peach2_core_tx_pending(). */
	void (*schedule_service)(void *opaque);
	/* A DMA run has more work after its bounded slice: call
	 * peach2_core_service() again *after a short pause*, so the CPUs get
	 * the I/O lock in between (a long copy must not starve the guest's
	 * timers and interrupts). May be NULL: schedule_service() is used. */
	void (*defer_service)(void *opaque);
	/* Send MSI-X vector `vector`. */
	void (*notify)(void *opaque, unsigned vector);
	/* A line of log text (no trailing newline). May be NULL. */
	void (*log)(void *opaque, int level, const char *msg);
	/* An error condition, typed (peach2_core_error). May be NULL. */
	void (*error)(void *opaque, const peach2_core_error *e);
	/* The emulated clock in ns (QEMU: QEMU_CLOCK_VIRTUAL), for the card
	 * trace's timestamps. May be NULL (timestamps 0). */
	uint64_t (*now_ns)(void *opaque);
	/* Direct writes (docs/hardware.md, "Link transports"): deliver a
	 * write this card made straight into the memory of the peer on `port`
	 * (`addr`: a bus address of the peer's host memory), the peer's
	 * inbound filter applied by the transport. Return true if delivered;
	 * false sends it as a packet, as always (the peer then checks, applies
	 * or refuses it itself). Asked only for WRITE packets to the peer's own
	 * host memory with nothing queued before them on the port, while
	 * peach2_core_link_direct() says the port can. May be NULL. */
	bool (*direct_write)(void *opaque, unsigned port, uint64_t addr,
			     const void *buf, size_t len);
	/* A DMA piece as a direct write whose bytes are this node's memory at
	 * bus address `src` (the run's source), copied by the transport
	 * without a bounce buffer; it stands for `pkts` WRITE packets (one
	 * per page of `addr`), which the peer counts as received. All of it
	 * or nothing: return true if delivered; false if not (the card then
	 * tries a page at a time, or reads the source with dma_read and sends
	 * it as always, so a source the transport cannot read straight fails
	 * as it would). Asked when direct_write would be. May be NULL. */
	bool (*direct_copy)(void *opaque, unsigned port, uint64_t addr,
			    uint64_t src, size_t len, uint64_t pkts);
} peach2_core_host;

typedef struct peach2_core_config {
	uint32_t node_id;     /* < PEACH2_MAX_NODES */
	uint32_t node_count;  /* 1 .. PEACH2_MAX_NODES, > node_id */
	uint64_t tx_limit;    /* bytes queued per link before dropping; 0 = default */
} peach2_core_config;

/* Returns NULL and writes a message to err (if non-NULL) on a bad config. */
peach2_core *peach2_core_new(const peach2_core_config *cfg,
			     const peach2_core_host *host,
			     char *err, size_t errlen);
void peach2_core_free(peach2_core *core);
/* Device reset: registers, errors, counters, card memory; links keep their
 * transport state and say HELLO again. */
void peach2_core_reset(peach2_core *core);

/* MMIO from this node's CPU. size is 1, 2, 4 or 8. */
uint64_t peach2_core_reg_read(peach2_core *core, uint64_t off, unsigned size);
void peach2_core_reg_write(peach2_core *core, uint64_t off, uint64_t val, unsigned size);
uint64_t peach2_core_cardmem_read(peach2_core *core, uint64_t off, unsigned size);
void peach2_core_cardmem_write(peach2_core *core, uint64_t off, uint64_t val, unsigned size);
uint64_t peach2_core_window_read(peach2_core *core, uint64_t off, unsigned size);
/* A CPU store into the window. Cheap enough for a vCPU's MMIO exit: it never
 * runs DMA or firmware work. Returns PEACH2_WINDOW_* bits: TX_PENDING,
 * packets wait on a link (as peach2_core_tx_pending() != 0: send them now);
 * WC_OPEN, a write-combining buffer is open (call peach2_core_close_write()
 * when the CPU fences, or once it has stopped storing for a moment). */
#define PEACH2_WINDOW_TX_PENDING 1u
#define PEACH2_WINDOW_WC_OPEN    2u
unsigned peach2_core_window_write(peach2_core *core, uint64_t off, uint64_t val, unsigned size);
/* The common store of a PIO stream, without the caller's serialisation (a
 * vCPU without the BQL): appended to the open write-combining buffer when it
 * continues it (true), else nothing happens (false: call
 * peach2_core_window_write() the usual way). */
bool peach2_core_window_append(peach2_core *core, uint64_t off, uint64_t val, unsigned size);

/* Close the open write-combining buffer: its packet is delivered or queued
 * on a link. Nothing else; safe in a vCPU's fence. */
void peach2_core_close_write(peach2_core *core);
/* Whether a write-combining buffer is open (stores held back). */
bool peach2_core_write_open(peach2_core *core);

/* The bottom half: close the open write (stores before a DMA start go
 * first), load a firmware image handed over, run a bounded slice of DMA
 * work. Asks for more through schedule_service()/defer_service(). */
void peach2_core_service(peach2_core *core);
/* peach2_core_service() with its own slice of DMA: at most max_bytes per
 * channel (0: the usual slice), and no firmware load. For running a run's
 * first slice where it was started (QEMU: right after the register write,
 * in the vCPU) without the bottom half's wake-up, bounded so that the vCPU
 * is not held for long. */
void peach2_core_service_bounded(peach2_core *core, uint64_t max_bytes);

/* Packets waiting: a bit (1 << port) for every port whose link has bytes
 * queued to send (peach2_core_link_tx_peek). The one signal for "send now":
 * check it after every call that can queue packets (stores, register
 * writes, service, link input and connection events). */
unsigned peach2_core_tx_pending(peach2_core *core);

/* Links: port is PEACH2_PORT_E/W/S. */
void peach2_core_link_attach(peach2_core *core, unsigned port); /* has a cable */
void peach2_core_link_connected(peach2_core *core, unsigned port, bool connected);
/* The connection's bytes travel through shared memory (same host) rather
 * than the socket: shown as PEACH2_LINK_SHM until it closes. */
void peach2_core_link_shared_memory(peach2_core *core, unsigned port, bool shm);
/* The transport can deliver writes to the peer's memory directly
 * (peach2_core_host.direct_write): shown as PEACH2_LINK_DIRECT until it
 * closes or this is called with false. */
void peach2_core_link_direct(peach2_core *core, unsigned port, bool direct);
/* Writes the peer on `port` delivered straight into this node's memory
 * (its direct_write): counted as if their packets had arrived and been
 * delivered (the port's rx and the host port's tx counters). */
void peach2_core_link_count_direct(peach2_core *core, unsigned port,
				   uint64_t pkts, uint64_t bytes);
/* Feed bytes received from the link. Returns false when the stream is
 * corrupt: the caller must drop the connection (it reconnects). */
bool peach2_core_link_receive(peach2_core *core, unsigned port, const void *buf, size_t len);
/* Bytes waiting to be sent on a port: a pointer to the first contiguous run
 * and its length (0 if none). Valid until the next call into the core. */
size_t peach2_core_link_tx_peek(peach2_core *core, unsigned port, const void **buf);
void peach2_core_link_tx_consume(peach2_core *core, unsigned port, size_t n);
/* Fault injection the host drives (docs/hardware.md, "Fault injection"):
 * the next n packets the card queues on `port` are lost on the wire after
 * taking their sequence numbers, so the peer sees the gap (BAD_PACKET, it
 * drops the connection, both sides reconnect); n replaces what was left.
 * fault_state: packets still to lose and lost so far on the port. */
void peach2_core_link_fault_drop(peach2_core *core, unsigned port, uint32_t n);
void peach2_core_link_fault_state(peach2_core *core, unsigned port,
				  uint32_t *drop_left, uint64_t *dropped);

/*
 * The inbound filter, for a transport that applies it to direct writes:
 * a number that changes whenever the filter may have (a command, IN_CTRL,
 * a reset), whether it is enabled, and its ranges as [base, end) pairs of
 * bus addresses in ascending order (up to max pairs; returns how many).
 */
uint64_t peach2_core_inbound_generation(peach2_core *core);
bool peach2_core_inbound_enabled(peach2_core *core);
size_t peach2_core_inbound_ranges(peach2_core *core, uint64_t (*ranges)[2],
				  size_t max);

/*
 * Card event trace for peach2-model (docs/trace-format.md): every packet the
 * card originates, forwards and delivers, DMA runs and descriptors,
 * interrupts and read-proxy requests, timestamped with now_ns(), into a
 * bounded ring of ring_records records (0: the default, 65536 = 4 MiB) that
 * a thread of the core drains to `path`. Off until opened; recording never
 * blocks the caller: a full ring drops events and counts them (the END
 * record says how many). Opening again replaces the trace. Returns false and
 * writes a message to err if the file cannot be created or the ring size is
 * out of range.
 */
bool peach2_core_trace_open(peach2_core *core, const char *path,
			    uint32_t ring_records, char *err, size_t errlen);
/* Drain the ring, write the END record, close the file (no-op if off). */
void peach2_core_trace_close(peach2_core *core);
/* Events recorded so far and how many of them the full ring dropped. */
void peach2_core_trace_stats(peach2_core *core, uint64_t *events,
			     uint64_t *dropped);

#ifdef __cplusplus
}
#endif

#endif /* PEACH2_CORE_H */
