/*
 * PEACH2 / TCA interconnect card (emulated)
 *
 * Thin QEMU glue around the C++ device core (hw/misc/peach2/): PCI
 * config, BARs, MSI-X, link ports as chardevs, guest-memory DMA. Every
 * decision about guest or wire input is the core's; this file only moves
 * bytes and never trusts them. The programming model is docs/hardware.md
 * of the PEACH2 emulation project.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/memfd.h"
#include "qemu/module.h"
#include "qemu/processor.h"
#include "qemu/timer.h"
#include "sysemu/sysemu.h"
#include "sysemu/cpus.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "chardev/char-fe.h"
#include "chardev/char-socket.h"
#include "exec/memory.h"
#include "hw/boards.h"
#include "io/channel-socket.h"
#include "migration/vmstate.h"
#include "qom/object.h"
#include "trace.h"

#include "peach2/peach2_hw.h"
#include "peach2_core.h"
#include "peach2_shm_ring.h"

#include <sys/eventfd.h>

#define TYPE_PEACH2 "peach2"
OBJECT_DECLARE_SIMPLE_TYPE(Peach2State, PEACH2)

/* Bytes taken from a link per read callback; the core buffers the rest. */
#define PEACH2_RX_CHUNK (256 * 1024)
/*
 * An open write-combining buffer is sent when the CPU fences its stores
 * (SFENCE/MFENCE: cpu_wc_flush(), as on real x86) or, for code that never
 * fences, once the CPU has not stored into the window for this long. The
 * timer is only the fallback: under TCG on a busy host a short one fires in
 * the middle of a message and turns every store into its own packet.
 *
 * It is also dear: arming it wakes the main loop, firing takes the BQL from
 * the vCPU, and with a timer per put that was ~90 % of an 8-byte put
 * between two guests (docs/notes.md, 2026-11-27). So while fences do the
 * job (the timer finds nothing open) it looks later each time, up to
 * PEACH2_WC_LAZY_NS after the first store of a write; a write it has to
 * send brings it back to PEACH2_WC_IDLE_NS. "Not stored for this long" is
 * a whole PEACH2_WC_IDLE_NS between two looks with no store: a store only
 * sets a flag, as reading the clock was ~15 % of a 4 KiB PIO put.
 * The ceiling is 20 ms, not 1: at 1 ms a fenced 8-byte ping-pong still woke
 * the main loop (which takes the BQL) ~5 000 times a second, and its p99 was
 * 15x the median; at 20 ms ~600 times and 2.5x (docs/notes.md, 2026-11-29).
 * The price: the first write nobody fences after a fenced spell goes up to
 * 20 ms after its first store (the next ones 50-100 us).
 */
#define PEACH2_WC_IDLE_NS 50000
#define PEACH2_WC_LAZY_NS 20000000

/*
 * The shared-memory transport of a cable between two QEMUs of one host
 * (docs/hardware.md §5): each side with link-shm on sends the other, over
 * the socket cable and as its first bytes, an offer with two file
 * descriptors: a sealed memfd holding the ring it writes
 * (peach2_shm_ring.h) and an eventfd the peer kicks to wake it. When both
 * ends offered, the link's byte stream goes through the rings and the
 * socket stays open only to tell either side when the other is gone. An
 * end that did not offer (link-shm off, a TCP cable) skips the peer's
 * offer and says HELLO on the socket; seeing packets where an offer could
 * be, the offering end drops its ring and speaks the socket too.
 *
 * Direct writes: an end whose guest RAM is a shared memfd (the launcher's
 * memory-backend-memfd,share=on) adds two more descriptors to its offer
 * when the peer runs as the same user (SO_PEERCRED: such a peer could read
 * and write our memory through /proc anyway): that RAM and a Peach2Direct
 * area where it publishes its inbound filter. The peer then writes what
 * its card makes for our host memory straight into our RAM from its own
 * vCPU, without waking us (Peach2Direct below).
 */
#define PEACH2_SHM_OFFER_MAGIC 0x32764d4853325050ull /* "PP2SHMv2" */
#define PEACH2_SHM_OFFER_LEN 16                       /* magic, ring size */
#define PEACH2_SHM_OFFER_FDS 4 /* ring, eventfd[, guest RAM, direct area] */
#define PEACH2_SHM_RX_BUDGET (4u << 20) /* bytes per wake-up, then yield */
#define PEACH2_SHM_POLL_MAX_US 1000
/* The rings' watchdog: its period, and how often it may say it moved bytes. */
#define PEACH2_SHM_WATCH_NS (20 * SCALE_MS)
#define PEACH2_SHM_WATCH_SAY_NS (10 * NANOSECONDS_PER_SECOND)

/*
 * The direct-write area one end publishes for the peer that writes into its
 * memory (a sealed memfd, one per connection). The owner (the receiver)
 * writes the first cache line and the ranges; the peer (the writer) writes
 * the second line. Neither trusts the other's fields: the writer checks
 * every range against the RAM it mapped, the owner reads the writer's
 * counters as untrusted numbers.
 *
 * The ranges change under a generation count (odd while changing). A
 * writer announces the even generation it writes under in `writer` and
 * looks again (both sequentially consistent); the owner, after making the
 * generation odd, waits until no writer holds an older one before it
 * changes a range. So once an IN_CMD REMOVE or CLEAR returns to the guest,
 * no direct write lands in what it removed, as with packets. A writer that
 * holds the generation longer than PEACH2_DIRECT_WAIT_NS loses its link.
 * That is long: a writer is one memcpy, but a host with more guests than
 * CPUs may not run its thread for tens of ms (ring:8 on 2 cores dropped
 * links at 20 ms). After PEACH2_DIRECT_SPIN_NS the owner sleeps between
 * looks, so that the writer can have this CPU. The cable then gets no
 * direct area for PEACH2_DIRECT_BAN_NS, doubled at each offence up to
 * PEACH2_DIRECT_BAN_MAX_NS: a peer that reconnects and holds again stalls
 * this node at most one wait per ban. A connection made during a ban goes
 * without direct writes into this node for its whole life (packets through
 * the ring, as over a socket); a legitimate peer only loses speed.
 */
#define PEACH2_DIRECT_MAGIC 0x5443455249443250ull /* "P2DIRECT" */
#define PEACH2_DIRECT_WAIT_NS (250 * SCALE_MS)
#define PEACH2_DIRECT_SPIN_NS (50 * SCALE_US)
#define PEACH2_DIRECT_NAP_US 20
#define PEACH2_DIRECT_BAN_NS (10 * NANOSECONDS_PER_SECOND)
#define PEACH2_DIRECT_BAN_MAX_NS (160 * NANOSECONDS_PER_SECOND)
#define PEACH2_DIRECT_PUBLISH_NS (100 * SCALE_US) /* after the last filter command */

typedef struct Peach2DirectRange {
    uint64_t base, end;   /* bus addresses, [base, end) */
    uint64_t ram_off;     /* where base is in the owner's RAM file */
} Peach2DirectRange;

typedef struct Peach2DirectArea {
    /* written by the owner */
    uint64_t magic;
    uint64_t gen;         /* odd while the ranges change; starts at 2 */
    uint64_t accept;      /* 1: direct writes welcome (else: packets) */
    uint64_t applied;     /* bytes of the writer's ring fed to the card */
    uint64_t count;       /* ranges[0 .. count) */
    uint64_t owner_pad[3];
    /* written by the writer */
    uint64_t writer;      /* the generation it writes under; 0: idle */
    uint64_t pkts, bytes; /* its direct writes so far */
    uint64_t writer_pad[5];
    Peach2DirectRange ranges[PEACH2_IN_MAX_RANGES];
} Peach2DirectArea;

typedef struct Peach2Direct {
    /* Ours, the peer writes into our memory: */
    Peach2DirectArea *area;
    size_t area_len;
    uint64_t rx_total;        /* bytes of the peer's ring fed to the card */
    uint64_t folded_pkts, folded_bytes; /* its counters, told to the card */
    /* The peer's, we write into its memory: */
    Peach2DirectArea *peer_area;
    size_t peer_area_len;
    uint8_t *peer_ram;
    size_t peer_ram_len;
    uint64_t pkts, bytes;     /* our direct writes (the peer sees copies) */
    uint64_t gen;             /* our area's generation (ours, not its copy) */
    bool held_too_long;       /* the peer did: our area stays odd */
} Peach2Direct;

typedef struct Peach2Shm {
    peach2_shm_ring *tx, *rx;   /* ours (we write), the peer's (we read) */
    void *tx_mem, *rx_mem;
    size_t tx_len, rx_len;
    int wake_fd;                /* ours: the peer kicks it */
    int peer_wake_fd;           /* the peer's; -1 until its offer came */
    uint8_t offer[PEACH2_SHM_OFFER_LEN];
    size_t offer_got;
    int offer_fds[PEACH2_SHM_OFFER_FDS]; /* came with the offer's first bytes */
    int offer_nfds;
    uint8_t *bounce;            /* the peer's bytes, copied out of its ring */
    uint64_t tx_total;          /* bytes written into our ring */
    bool looking;               /* rx marked polled for a vCPU's RP_TAIL looks */
    Peach2Direct direct;
    /* The watchdog's last look (peach2_shm_watch) */
    uint64_t watch_rx_total, watch_tx_total;
    bool watch_unread, watch_unsent;
    uint64_t late_wakeups;      /* bytes it moved itself, this connection */
    uint64_t late_unsaid;       /* ... since it last said so */
    int64_t late_said_ns;
} Peach2Shm;

/* Faults the host injects with qom-set (docs/hardware.md §5). */
typedef struct Peach2Fault {
    bool cut;           /* the cable is cut: every connection is dropped */
    bool stalled;       /* this card does not read the port */
    bool deaf;          /* its wake-ups are lost (the watchdog still looks) */
    int64_t hold_until; /* QEMU_CLOCK_REALTIME ns: the port sends nothing */
    QEMUTimer *hold_timer;
    QEMUBH *cut_bh;     /* drops the connection outside chardev callbacks */
} Peach2Fault;

typedef struct Peach2Port {
    Peach2State *dev;
    unsigned port;
    CharBackend chr;
    guint watch;        /* waiting for the chardev to become writable */
    bool shm_on;        /* this connection uses the shared-memory transport */
    bool first_bytes;   /* the peer's transport (offer or packets) unknown */
    Peach2Shm shm;
    unsigned shm_failures;
    int64_t direct_ban_ns;    /* the last ban's length (0: none yet) */
    int64_t direct_ban_until; /* no direct area offered before (REALTIME) */
    Peach2Fault fault;
} Peach2Port;

struct Peach2State {
    PCIDevice parent_obj;

    MemoryRegion bar0;
    MemoryRegion regs;
    MemoryRegion cardmem;
    MemoryRegion window;

    peach2_core *core;
    QEMUBH *service_bh;
    QEMUTimer *wc_timer;
    QEMUTimer *dma_timer;
    QEMUTimer *look_timer;   /* ends the rings' polled mark after the looks */
    QEMUTimer *shm_watch_timer; /* peach2_shm_watch */
    int64_t last_look_ns;    /* the last RP_TAIL read (QEMU_CLOCK_REALTIME) */
    int64_t dma_burst_start; /* when the current burst of slices began */
    bool dma_run;            /* slices follow each other (a deferral chain) */
    bool dma_deferred;       /* the last service asked for more */
    /* A window store since the timer's last look (set without the BQL). */
    bool stored_since_look;
    int64_t wc_first_look_ns; /* store to the timer's first look */
    bool in_reg_write;        /* in peach2_core_reg_write() */
    bool service_after_write; /* it asked for service */
    Peach2Port ports[PEACH2_NR_PORTS]; /* E, W, S used; N is the host */

    uint32_t node_id;
    uint32_t node_count;
    uint64_t tx_limit;
    char *trace;            /* a file, or a directory for nodeN.p2trace */
    uint32_t trace_ring;    /* records in the ring; 0: the core's default */
    char *trace_file;       /* the file being written, NULL when off */
    Notifier trace_exit;    /* QEMU exits without unrealizing: close then */
    bool link_shm;
    bool link_direct;       /* offer direct writes when the RAM allows */
    MemoryRegion *ram;      /* the guest RAM we offer, NULL: none to offer */
    uint64_t direct_gen;    /* the inbound filter generation published */
    Peach2DirectRange *direct_ranges; /* the published ranges, ours */
    Peach2DirectRange *direct_spare;  /* the next table, built here */
    uint64_t *direct_scratch;         /* the core's ranges, read here */
    uint64_t direct_count;
    QEMUTimer *direct_timer;          /* publishes a changed filter */
    uint32_t shm_ring_size;
    uint32_t shm_poll_us;   /* after a delivery, look for more this long */
    uint32_t dma_burst_us;  /* DMA slices back to back for this long */
    uint32_t dma_pause_us;  /* then the BQL and the CPU are free this long */
    uint32_t dma_start_kib; /* a start's first slice, in the vCPU */
    uint32_t dma_poll_kib;  /* a STATUS read's slice, in the vCPU */
};

/* ---- core callbacks ---------------------------------------------------- */

/*
 * A packet's last word after its other bytes, as the card's packets land in
 * address order: memcpy stores in an order of its own (glibc's stores a
 * copy's tail before its middle), and a guest that polls a write's last
 * word would see it early. pci_dma_write() puts a barrier before each part.
 */
static int peach2_dma_write(void *opaque, uint64_t addr, const void *buf,
                            size_t len)
{
    PCIDevice *dev = PCI_DEVICE(opaque);
    size_t head = len > 8 ? len - 8 : 0;

    if (head && pci_dma_write(dev, addr, buf, head) != MEMTX_OK) {
        return -1;
    }
    return pci_dma_write(dev, addr + head, (const uint8_t *)buf + head,
                         len - head) == MEMTX_OK ? 0 : -1;
}

static int peach2_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    Peach2State *s = opaque;

    return pci_dma_read(PCI_DEVICE(s), addr, buf, len) == MEMTX_OK ? 0 : -1;
}

static void peach2_schedule_service(void *opaque)
{
    Peach2State *s = opaque;

    qemu_bh_schedule(s->service_bh);
}

/*
 * The core asks for service. During a register write (a DMA start) the
 * vCPU runs the first slice itself once the write is done: the bottom half
 * would cost the main loop's wake-up and the BQL's hand-over, ~100 us of a
 * small run between two TCG guests (docs/notes.md, 2026-11-27). The slice
 * is dma-start-kib per channel: at 64 KiB a stream of 1 MiB RDMA Writes
 * paid that hand-over, and the completion interrupt it brings, per Write;
 * at 1 MiB (about 50 us of copying on this project's host) such a run ends
 * inside its start, and the streams ran twice as fast (docs/notes.md,
 * twenty-second session). dma-start-kib=0: the bottom half does it all.
 */
static void peach2_core_wants_service(void *opaque)
{
    Peach2State *s = opaque;

    if (s->in_reg_write && s->dma_start_kib) {
        s->service_after_write = true;
        return;
    }
    qemu_bh_schedule(s->service_bh);
}

/*
 * Pause between slices of a long DMA run. The run goes on in the main loop;
 * without a pause, slice after slice would keep the BQL and the vCPU could
 * not take its timer and device interrupts until the whole copy was done.
 * The timer only schedules the bottom half, which runs under the device's
 * re-entrancy guard (a DMA aimed at this device's own BARs must not re-enter
 * the model).
 */
/*
 * The main loop may run at real-time priority (scripts/cluster.py), so the
 * pause must also leave the vCPUs a fair share of the host CPU: by default
 * half of it (dma-burst-us, dma-pause-us; docs/hardware.md §6).
 */
/* dma-start-kib, dma-poll-kib (0: none) */
#define PEACH2_DMA_VCPU_SLICE_MAX_KIB 65536
#define PEACH2_DMA_PACE_MAX_US 100000 /* dma-burst-us, dma-pause-us */

static void peach2_defer(void *opaque)
{
    Peach2State *s = opaque;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);

    /*
     * A burst is counted from the first slice of a run: a run that starts
     * after the DMA work was done (or waited on a link) owes no pause yet.
     * (Counting bursts only from the last pause made the first deferral
     * after an idle spell a pause: every transfer longer than one slice,
     * e.g. each 1 MiB RDMA Write, waited 0.5 ms.)
     */
    s->dma_deferred = true;
    if (!s->dma_run) {
        s->dma_run = true;
        s->dma_burst_start = now;
    }
    if (timer_pending(s->dma_timer)) {
        return;
    }
    if (now - s->dma_burst_start < (int64_t)s->dma_burst_us * SCALE_US ||
        !s->dma_pause_us) {
        qemu_bh_schedule(s->service_bh);
        return;
    }
    s->dma_burst_start = now + (int64_t)s->dma_pause_us * SCALE_US;
    timer_mod(s->dma_timer, s->dma_burst_start);
}

static uint64_t peach2_now_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

static void peach2_notify(void *opaque, unsigned vector)
{
    PCIDevice *pdev = PCI_DEVICE(opaque);

    if (msix_enabled(pdev)) {
        msix_notify(pdev, vector);
    }
}

static void peach2_log(void *opaque, int level, const char *msg)
{
    Peach2State *s = opaque;

    trace_peach2_log(s->node_id, msg);
    if (level == PEACH2_LOG_INFO) {
        info_report("peach2 node %u: %s", s->node_id, msg);
    } else {
        qemu_log_mask(LOG_GUEST_ERROR, "%s\n", msg);
    }
}

/*
 * An error condition from the core, typed: one trace event per code (as
 * hw/nvme traces its error conditions), besides the log line.
 */
static void peach2_error(void *opaque, const peach2_core_error *e)
{
    Peach2State *s = opaque;
    uint32_t n = s->node_id;

    if (!e->counted && e->code != PEACH2_ERR_NONE) {
        /* The card answered a read-proxy request itself: flow control. */
        trace_peach2_rp_answer(n, e->node, peach2_err_name(e->code), e->value);
        return;
    }
    switch (e->code) {
    case PEACH2_ERR_NONE:
        trace_peach2_err_firmware(n, peach2_fw_status_name(e->fw_status),
                                  e->addr, e->value);
        break;
    case PEACH2_ERR_NO_SUCH_NODE:
        trace_peach2_err_no_such_node(n, e->addr, e->node);
        break;
    case PEACH2_ERR_LINK_DOWN:
        trace_peach2_err_link_down(n, e->addr, e->port, e->node, e->value);
        break;
    case PEACH2_ERR_NO_ROUTE:
        trace_peach2_err_no_route(n, e->addr, e->node);
        break;
    case PEACH2_ERR_READ_UNSUPPORTED:
        trace_peach2_err_read_unsupported(n, e->addr, e->value);
        break;
    case PEACH2_ERR_BAD_TARGET:
        trace_peach2_err_bad_target(n, e->addr, e->value);
        break;
    case PEACH2_ERR_NO_GPU:
        trace_peach2_err_no_gpu(n, e->addr, e->value);
        break;
    case PEACH2_ERR_BAD_PACKET:
        trace_peach2_err_bad_packet(n, e->port, e->node, e->what);
        break;
    case PEACH2_ERR_TX_OVERFLOW:
        trace_peach2_err_tx_overflow(n, e->addr, e->port, e->value);
        break;
    case PEACH2_ERR_DMA_WRITE:
        trace_peach2_err_dma_write(n, e->addr, e->value);
        break;
    case PEACH2_ERR_BAD_REG:
        trace_peach2_err_bad_reg(n, e->addr, e->value);
        break;
    case PEACH2_ERR_HOP_LIMIT:
        trace_peach2_err_hop_limit(n, e->addr, e->node);
        break;
    case PEACH2_ERR_NOT_REGISTERED:
        trace_peach2_err_not_registered(n, e->addr, e->value);
        break;
    case PEACH2_ERR_BAD_COMMAND:
        trace_peach2_err_bad_command(n, e->addr, e->value);
        break;
    case PEACH2_ERR_DMA_BUSY:
        trace_peach2_err_dma_busy(n, e->channel, e->addr);
        break;
    case PEACH2_ERR_DMA_ALIGN:
    case PEACH2_ERR_DMA_ZERO_LEN:
    case PEACH2_ERR_DMA_LOOP:
    case PEACH2_ERR_DMA_CHAIN_LONG:
    case PEACH2_ERR_DMA_BAD_INDEX:
    case PEACH2_ERR_DMA_BAD_DESC:
    case PEACH2_ERR_DMA_READ:
    case PEACH2_ERR_DMA_ABORTED:
        /* A run stopped: the code is in the channel's STATUS too. */
        trace_peach2_err_dma_stopped(n, e->channel, peach2_err_name(e->code),
                                     e->addr, e->value);
        break;
    case PEACH2_ERR_RP_BAD_PACKET:
        trace_peach2_err_rp_bad_packet(n, e->addr, e->node, e->value);
        break;
    default:
        trace_peach2_err_unknown(n, e->code, e->addr);
        break;
    }
}

/*
 * Calls into the core that start outside the device's MMIO handlers and
 * bottom half (a vCPU's store fence, link input and events) hold the
 * device's re-entrancy guard like those do: a write the card delivers into
 * its own BARs is then refused by the memory core (the card counts
 * DMA_WRITE) instead of re-entering the model in the middle of a call.
 */
static bool peach2_guard_enter(Peach2State *s)
{
    MemReentrancyGuard *g = &DEVICE(s)->mem_reentrancy_guard;
    bool was = g->engaged_in_io;

    g->engaged_in_io = true;
    return was;
}

static void peach2_guard_leave(Peach2State *s, bool was)
{
    DEVICE(s)->mem_reentrancy_guard.engaged_in_io = was;
}

/* ---- links ------------------------------------------------------------- */

static void peach2_port_drain(Peach2Port *p);
static void peach2_send_queued(Peach2State *s);

/* ---- links: the shared-memory transport ------------------------------- */

static void peach2_shm_kick(int fd)
{
    uint64_t one = 1;

    if (fd >= 0 && write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
        trace_peach2_shm_kick_failed(fd, errno);
    }
}

/*
 * The peer broke the transport: drop the cable; it reconnects. Said on
 * stderr (a misconfigured or rogue peer is worth seeing without -d), the
 * first few times and then every 100th, since it may retry every second.
 */
static void peach2_shm_fail(Peach2Port *p, const char *why)
{
    p->shm_failures++;
    if (p->shm_failures <= 3 || p->shm_failures % 100 == 0) {
        warn_report("peach2 node %u port %u: shared-memory link: %s; "
                    "dropping the connection (%u so far)", p->dev->node_id,
                    p->port, why, p->shm_failures);
    }
    trace_peach2_shm_fail(p->dev->node_id, p->port, why);
    qemu_chr_fe_disconnect(&p->chr);
}

/*
 * A sealed memfd of len bytes that a peer will map, mapped here too: its
 * fd (the mapping in *mem), or -1.
 */
static int peach2_shm_memfd_new(const char *name, size_t len, void **mem)
{
    Error *err = NULL;
    int fd = qemu_memfd_create(name, len, false, 0,
                               F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL, &err);

    if (fd < 0) {
        warn_report_err(err);
        return -1;
    }
    *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (*mem == MAP_FAILED) {
        *mem = NULL;
        close(fd);
        return -1;
    }
    return fd;
}

/*
 * The size of a memfd a peer sent, if it is sealed against shrinking (a
 * mapping of it can never turn into SIGBUS) and not empty; else 0.
 */
static size_t peach2_shm_sealed_size(int fd)
{
    int seals = fcntl(fd, F_GET_SEALS);
    struct stat st;

    if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st) < 0 ||
        st.st_size <= 0) {
        return 0;
    }
    return st.st_size;
}

/* ---- direct writes (same host, docs/hardware.md §5) ------------------- */

static size_t peach2_direct_area_len(void)
{
    return ROUND_UP(sizeof(Peach2DirectArea), qemu_real_host_page_size());
}

/*
 * The guest RAM this end can offer its peers: one shared file (the
 * launcher's memory-backend-memfd,share=on). None with link-direct off, on
 * the socket transport, or while a card trace records deliveries (a direct
 * write never reaches our card, so it could not be recorded).
 */
static void peach2_direct_find_ram(Peach2State *s)
{
    MachineState *ms = MACHINE(qdev_get_machine());
    MemoryRegion *ram = ms->ram;

    s->ram = NULL;
    if (!s->link_direct || !s->link_shm || s->trace_file || !ram ||
        !memory_region_is_ram(ram) || !ram->ram_block ||
        !qemu_ram_is_shared(ram->ram_block) || memory_region_get_fd(ram) < 0) {
        return;
    }
    s->ram = ram;
}

/* Does the other end of this cable run as our user (a unix socket)? */
static bool peach2_peer_same_user(Peach2Port *p)
{
    Chardev *chr = qemu_chr_fe_get_driver(&p->chr);
    SocketChardev *sc;
    struct ucred cred;
    socklen_t len = sizeof(cred);

    if (!chr || !object_dynamic_cast(OBJECT(chr), TYPE_CHARDEV_SOCKET)) {
        return false;
    }
    sc = SOCKET_CHARDEV(chr);
    if (!sc->sioc ||
        getsockopt(sc->sioc->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        return false;
    }
    return cred.uid == geteuid();
}

/* Where [base, end) of our bus addresses lies in our RAM file, if wholly. */
static bool peach2_direct_translate(Peach2State *s, uint64_t base,
                                    uint64_t end, uint64_t *ram_off)
{
    MemoryRegionSection sec = memory_region_find(get_system_memory(), base,
                                                 end - base);
    bool ok = sec.mr == s->ram && int128_get64(sec.size) == end - base;

    if (ok) {
        *ram_off = sec.offset_within_region;
    }
    if (sec.mr) {
        memory_region_unref(sec.mr);
    }
    return ok;
}

/*
 * Our inbound filter as ranges of our RAM file, when it changed: the
 * ranges that lie wholly in plain RAM (any other write travels as a packet
 * and this card decides). Ranges already known keep their translation.
 * True if the table changed.
 */
static bool peach2_direct_refresh(Peach2State *s)
{
    uint64_t gen = peach2_core_inbound_generation(s->core);
    uint64_t (*r)[2] = (uint64_t (*)[2])s->direct_scratch;
    Peach2DirectRange *old = s->direct_ranges;
    Peach2DirectRange *now = s->direct_spare;
    size_t n, i, j = 0, count = 0;

    if (!s->ram || gen == s->direct_gen) {
        return false;
    }
    s->direct_gen = gen;
    n = peach2_core_inbound_enabled(s->core) ?
        peach2_core_inbound_ranges(s->core, r, PEACH2_IN_MAX_RANGES) : 0;
    for (i = 0; i < n; i++) {
        uint64_t off;

        while (j < s->direct_count && old[j].base < r[i][0]) {
            j++;
        }
        if (j < s->direct_count && old[j].base == r[i][0] &&
            old[j].end == r[i][1]) {
            now[count++] = old[j];
        } else if (peach2_direct_translate(s, r[i][0], r[i][1], &off)) {
            now[count++] = (Peach2DirectRange){ r[i][0], r[i][1], off };
        }
    }
    s->direct_spare = old;
    s->direct_ranges = now;
    s->direct_count = count;
    return true;
}

/*
 * The peer on p held a direct write too long: its next connections get no
 * direct area for a while, longer at each offence. The ban in seconds.
 */
static int64_t peach2_direct_ban(Peach2Port *p)
{
    p->direct_ban_ns = p->direct_ban_ns ?
                       MIN(p->direct_ban_ns * 2, PEACH2_DIRECT_BAN_MAX_NS) :
                       PEACH2_DIRECT_BAN_NS;
    p->direct_ban_until = qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                          p->direct_ban_ns;
    trace_peach2_direct_ban(p->dev->node_id, p->port,
                            p->direct_ban_ns / NANOSECONDS_PER_SECOND);
    return p->direct_ban_ns / NANOSECONDS_PER_SECOND;
}

/*
 * Make our area's generation odd (the peer's next direct write sees it and
 * travels as a packet) and wait until no direct write under an older one
 * is in flight. False if the peer held one over PEACH2_DIRECT_WAIT_NS.
 */
static bool peach2_direct_quiesce(Peach2Port *p)
{
    Peach2Direct *d = &p->shm.direct;
    Peach2DirectArea *a = d->area;
    int64_t start, now;
    uint64_t w;

    if (!(d->gen & 1)) {
        qatomic_set(&a->gen, ++d->gen); /* odd: changing */
    }
    smp_mb(); /* gen, then the writer's mark; the writer: mark, then gen */
    start = now = get_clock();
    while ((w = qatomic_load_acquire(&a->writer)) != 0 && w < d->gen) {
        now = get_clock();
        if (now - start > PEACH2_DIRECT_WAIT_NS) {
            return false;
        }
        if (now - start < PEACH2_DIRECT_SPIN_NS) {
            cpu_relax();
        } else {
            g_usleep(PEACH2_DIRECT_NAP_US);
        }
    }
    if (now - start >= PEACH2_DIRECT_SPIN_NS) {
        trace_peach2_direct_slow_writer(p->dev->node_id, p->port,
                                        (now - start) / SCALE_US);
    }
    return true;
}

/*
 * Stop the peer on p writing under the ranges it has: its writes travel as
 * packets until the next publish. False if there is no area, or the peer
 * held a write too long (the link is dropped; our area stays odd).
 */
static bool peach2_direct_hold(Peach2Port *p)
{
    Peach2Direct *d = &p->shm.direct;

    if (!d->area || d->held_too_long) {
        return false;
    }
    if (d->gen & 1) {
        return true; /* held already, and nothing was in flight then */
    }
    if (!peach2_direct_quiesce(p)) {
        g_autofree char *why = NULL;

        d->held_too_long = true;
        why = g_strdup_printf("the peer held a direct write over %" PRId64
                              " ms; no direct writes into this node on this "
                              "cable for %" PRId64 " s",
                              (int64_t)(PEACH2_DIRECT_WAIT_NS / SCALE_MS),
                              peach2_direct_ban(p));
        peach2_shm_fail(p, why);
        return false;
    }
    return true;
}

/* Publish our ranges and whether we take direct writes now to the peer on p. */
static void peach2_direct_publish(Peach2Port *p)
{
    Peach2State *s = p->dev;
    Peach2Direct *d = &p->shm.direct;
    Peach2DirectArea *a = d->area;

    if (!peach2_direct_hold(p)) {
        return;
    }
    peach2_direct_refresh(s); /* never an older table than the filter's */
    memcpy(a->ranges, s->direct_ranges,
           s->direct_count * sizeof(Peach2DirectRange));
    qatomic_set(&a->count, s->direct_count);
    qatomic_set(&a->accept, !p->fault.stalled);
    qatomic_store_release(&a->gen, ++d->gen); /* the ranges before "even" */
    trace_peach2_direct_publish(s->node_id, p->port, s->direct_count,
                                !p->fault.stalled);
}

/*
 * After anything that may change the filter. The peers stop writing under
 * the old ranges before the command returns to the guest (so nothing lands
 * where a range was removed); the new table is published once the commands
 * have stopped for PEACH2_DIRECT_PUBLISH_NS: a PIN adds thousands of
 * ranges, one IN_CMD each, and copying the table for each would cost
 * O(ranges^2). Meanwhile the writes travel as packets and our card's
 * filter decides.
 */
static void peach2_direct_update(Peach2State *s)
{
    unsigned i;

    if (!s->ram ||
        peach2_core_inbound_generation(s->core) == s->direct_gen) {
        return;
    }
    for (i = PEACH2_PORT_E; i < PEACH2_NR_PORTS; i++) {
        peach2_direct_hold(&s->ports[i]);
    }
    timer_mod(s->direct_timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                               PEACH2_DIRECT_PUBLISH_NS);
}

/* The timer of peach2_direct_update: the new table, to every held peer. */
static void peach2_direct_publish_all(void *opaque)
{
    Peach2State *s = opaque;
    unsigned i;

    peach2_direct_refresh(s); /* also with no peer: update stops asking */
    for (i = PEACH2_PORT_E; i < PEACH2_NR_PORTS; i++) {
        Peach2Direct *d = &s->ports[i].shm.direct;

        if (d->area && (d->gen & 1)) {
            peach2_direct_publish(&s->ports[i]);
        }
    }
}

/* What realize made for direct writes (the connections' areas go with them). */
static void peach2_direct_free(Peach2State *s)
{
    if (s->direct_timer) {
        timer_free(s->direct_timer);
        s->direct_timer = NULL;
    }
    g_free(s->direct_ranges);
    g_free(s->direct_spare);
    g_free(s->direct_scratch);
    s->direct_ranges = s->direct_spare = NULL;
    s->direct_scratch = NULL;
}

/* The peer's direct writes, counted by it in our area: tell our card. */
static void peach2_direct_fold(Peach2Port *p)
{
    Peach2Direct *d = &p->shm.direct;
    uint64_t pkts, bytes;

    if (!d->area) {
        return;
    }
    pkts = qatomic_read(&d->area->pkts);
    bytes = qatomic_read(&d->area->bytes);
    if (pkts >= d->folded_pkts && bytes >= d->folded_bytes &&
        (pkts != d->folded_pkts || bytes != d->folded_bytes)) {
        peach2_core_link_count_direct(p->dev->core, p->port,
                                      pkts - d->folded_pkts,
                                      bytes - d->folded_bytes);
    }
    d->folded_pkts = pkts; /* a count that went back is the peer's lie */
    d->folded_bytes = bytes;
}

/* A new connection: our area for the peer, published. Its fd, or -1. */
static int peach2_direct_area_create(Peach2Port *p)
{
    Peach2Direct *d = &p->shm.direct;
    size_t len = peach2_direct_area_len();
    void *mem;
    int fd = peach2_shm_memfd_new("peach2-direct", len, &mem);

    if (fd < 0) {
        return -1;
    }
    d->area = mem;
    d->area_len = len;
    d->area->magic = PEACH2_DIRECT_MAGIC;
    d->gen = 0; /* publish: odd while it fills the area, then even */
    peach2_direct_publish(p);
    return fd;
}

/* Map the peer's RAM and area from its offer. NULL, or why not. */
static const char *peach2_direct_accept(Peach2Port *p, int ramfd, int areafd)
{
    Peach2Direct *d = &p->shm.direct;
    size_t area_len = peach2_direct_area_len();
    size_t ram_len;
    void *ram, *area;

    if (!p->dev->link_direct) {
        return "link-direct is off here";
    }
    ram_len = peach2_shm_sealed_size(ramfd);
    if (!ram_len || peach2_shm_sealed_size(areafd) != area_len) {
        return "the peer's RAM or area is not a sealed memfd of a fit size";
    }
    ram = mmap(NULL, ram_len, PROT_READ | PROT_WRITE, MAP_SHARED, ramfd, 0);
    if (ram == MAP_FAILED) {
        return "cannot map the peer's RAM";
    }
    area = mmap(NULL, area_len, PROT_READ | PROT_WRITE, MAP_SHARED, areafd, 0);
    if (area == MAP_FAILED) {
        munmap(ram, ram_len);
        return "cannot map the peer's direct area";
    }
    if (qatomic_read(&((Peach2DirectArea *)area)->magic) !=
        PEACH2_DIRECT_MAGIC) {
        munmap(ram, ram_len);
        munmap(area, area_len);
        return "the peer's direct area is not one";
    }
    d->peer_ram = ram;
    d->peer_ram_len = ram_len;
    d->peer_area = area;
    d->peer_area_len = area_len;
    return NULL;
}

static void peach2_direct_close(Peach2Port *p)
{
    Peach2Direct *d = &p->shm.direct;

    if (d->area) {
        /*
         * The peer keeps its mapping of our RAM until it sees the connection
         * close: it must not write under our last table meanwhile, or a range
         * removed after this would still take its writes.
         */
        if (!d->held_too_long && !peach2_direct_quiesce(p)) {
            /*
             * Traced, not logged: a rogue could close every second. (One
             * that held too long was waited for once, not again here.)
             */
            trace_peach2_shm_fail(p->dev->node_id, p->port,
                                  "the peer held a direct write at close");
            peach2_direct_ban(p);
        }
        peach2_direct_fold(p); /* what the peer wrote still counts */
        munmap(d->area, d->area_len);
    }
    if (d->peer_area) {
        munmap(d->peer_area, d->peer_area_len);
    }
    if (d->peer_ram) {
        munmap(d->peer_ram, d->peer_ram_len);
    }
    memset(d, 0, sizeof(*d));
}

/*
 * A DMA source read straight from this guest's RAM (direct copies): only
 * plain RAM the card may reach as bus master (its bus-master address
 * space, so a disabled bus master or an unmapped source reads nothing);
 * anything else goes the usual way (pci_dma_read, with its errors).
 * The pointer is good while the caller holds the RCU read lock.
 */
static const void *peach2_ram_at(Peach2State *s, uint64_t src, size_t len)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    MemoryRegion *mr;
    hwaddr xlat, l = len;

    mr = address_space_translate(as, src, &xlat, &l, false,
                                 MEMTXATTRS_UNSPECIFIED);
    if (l < len || !memory_region_is_ram(mr) ||
        memory_region_is_ram_device(mr)) {
        return NULL;
    }
    return (uint8_t *)memory_region_get_ram_ptr(mr) + xlat;
}

/*
 * memcpy of up to a page. GCC expands a memcpy whose size it can bound (by
 * the packet size, below) inline as `rep movsq`, which copies a cached MiB
 * in 4 KiB pieces 2.4x slower than the C library's memcpy on this project's
 * hosts (66 against 28 us, docs/notes.md): the empty asm hides the bound,
 * so the library's is called.
 */
static inline void peach2_copy_page(void *dst, const void *src, size_t len)
{
    asm("" : "+r"(len));
    memcpy(dst, src, len);
}

/*
 * Copy a direct write of several pages a page at a time, in order, as its
 * packets would land: a guest that polls the last word of a page (or of
 * the whole transfer) sees it only after the bytes before it. Within a
 * page too: memcpy stores in an order of its own, so a page's last 8
 * bytes go after the rest (as in peach2_dma_write).
 */
static void peach2_copy_in_order(uint8_t *dst, const uint8_t *src,
                                 size_t len, uint64_t addr)
{
    while (len) {
        size_t n = MIN(len, PEACH2_PKT_MAX_PAYLOAD -
                            addr % PEACH2_PKT_MAX_PAYLOAD);
        size_t head = n > 8 ? n - 8 : 0;

        peach2_copy_page(dst, src, head);
        smp_wmb(); /* the page's last word after the rest of it */
        memcpy(dst + head, src + head, n - head);
        smp_wmb(); /* this page before the next one */
        dst += n;
        src += n;
        addr += n;
        len -= n;
    }
}

/*
 * The core's direct_write and direct_copy: a write our card made for the
 * peer on `port` (the bytes of buf, or, buf NULL, of this guest's RAM at
 * src) goes straight into the peer's RAM, from this vCPU or bottom half, if
 * the peer's published ranges admit all of it and everything we sent before
 * it has been applied (order); the peer counts it as the `pkts` packets it
 * stands for. False: nothing was written (the core then sends it as
 * packets).
 */
static bool peach2_direct_apply(Peach2State *s, unsigned port, uint64_t addr,
                                const void *buf, uint64_t src, size_t len,
                                uint64_t pkts)
{
    Peach2Port *p;
    Peach2Direct *d;
    Peach2DirectArea *a;
    uint64_t gen, lo, hi, base, end, ram_off, off;
    const char *why = "no range holds it";
    bool done = false;

    RCU_READ_LOCK_GUARD(); /* peach2_ram_at's pointer */
    if (port < PEACH2_PORT_E || port >= PEACH2_NR_PORTS) {
        return false;
    }
    p = &s->ports[port];
    d = &p->shm.direct;
    a = d->peer_area;
    if (!p->shm_on || !a || p->fault.cut ||
        (p->fault.hold_until &&
         qemu_clock_get_ns(QEMU_CLOCK_REALTIME) < p->fault.hold_until)) {
        return false;
    }
    if (qatomic_load_acquire(&a->applied) != p->shm.tx_total) {
        trace_peach2_direct_refused(s->node_id, port, addr, len,
                                    "packets before it not applied yet");
        return false;
    }
    gen = qatomic_load_acquire(&a->gen);
    if (!gen || (gen & 1)) {
        trace_peach2_direct_refused(s->node_id, port, addr, len,
                                    "the peer's ranges are changing");
        return false;
    }
    qatomic_set(&a->writer, gen);
    smp_mb(); /* mark, then look again; the owner: gen, then our mark */
    /* accept under the generation: a stall published before it holds */
    if (qatomic_read(&a->gen) != gen || !qatomic_read(&a->accept)) {
        why = "the peer's ranges changed, or it takes none";
        goto out;
    }
    /* The last range that starts at or below addr. */
    lo = 0;
    hi = MIN(qatomic_read(&a->count), (uint64_t)PEACH2_IN_MAX_RANGES);
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;

        if (qatomic_read(&a->ranges[mid].base) <= addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo == 0) {
        goto out;
    }
    base = qatomic_read(&a->ranges[lo - 1].base);
    end = qatomic_read(&a->ranges[lo - 1].end);
    ram_off = qatomic_read(&a->ranges[lo - 1].ram_off);
    if (addr < base || end < addr || end - addr < len ||
        ram_off > d->peer_ram_len || addr - base > d->peer_ram_len - ram_off) {
        goto out;
    }
    off = ram_off + (addr - base);
    if (len > d->peer_ram_len - off) {
        goto out;
    }
    if (!buf) {
        buf = peach2_ram_at(s, src, len);
        if (!buf) {
            why = "the source is not in our RAM";
            goto out;
        }
    }
    peach2_copy_in_order(d->peer_ram + off, buf, len, addr);
    smp_mb(); /* the data before the next write (a flag) and our counts */
    d->pkts += pkts;
    d->bytes += len;
    qatomic_set(&a->pkts, d->pkts);
    qatomic_set(&a->bytes, d->bytes);
    done = true;
    trace_peach2_direct_write(s->node_id, port, addr, len);
out:
    qatomic_store_release(&a->writer, 0);
    if (!done) {
        trace_peach2_direct_refused(s->node_id, port, addr, len, why);
    }
    return done;
}

static bool peach2_direct_write(void *opaque, unsigned port, uint64_t addr,
                                const void *buf, size_t len)
{
    return peach2_direct_apply(opaque, port, addr, buf, 0, len, 1);
}

static bool peach2_direct_copy(void *opaque, unsigned port, uint64_t addr,
                               uint64_t src, size_t len, uint64_t pkts)
{
    return peach2_direct_apply(opaque, port, addr, NULL, src, len, pkts);
}

/*
 * Packets come in bursts (a payload, then the flag that says it is there):
 * after a delivery, wait a little for the next one rather than go back to
 * sleep and pay another wake-up; the peer does not kick meanwhile. True
 * when more came.
 */
static bool peach2_shm_poll(Peach2Port *p)
{
    int64_t until = get_clock() + p->dev->shm_poll_us * SCALE_US;
    bool more = false;

    peach2_shm_ring_set_polling(p->shm.rx, true);
    do {
        if (peach2_shm_ring_readable(p->shm.rx)) {
            more = true;
            break;
        }
        cpu_relax();
    } while (get_clock() < until);
    if (p->shm.looking) { /* a vCPU's looks keep the ring marked */
        return more || peach2_shm_ring_readable(p->shm.rx);
    }
    /* Written after our last look and before the peer saw us stop? */
    return peach2_shm_ring_set_polling(p->shm.rx, false) || more;
}

/* Copy what the peer's ring holds into the core, as a socket read would. */
static void peach2_shm_receive(Peach2Port *p)
{
    Peach2Shm *m = &p->shm;
    size_t total = 0;
    bool kick = false, was, ok;

    if (p->fault.stalled) {
        return; /* read when the stall ends */
    }
    while (m->rx && total < PEACH2_SHM_RX_BUDGET) {
        bool room;
        size_t n = peach2_shm_ring_read(m->rx, m->bounce, PEACH2_RX_CHUNK,
                                        &room);

        kick |= room;
        if (n == 0) {
            if (total == 0 || !p->dev->shm_poll_us) {
                break;
            }
            /* What waits on us goes first: room for the peer, our answers. */
            if (kick) {
                peach2_shm_kick(m->peer_wake_fd);
                kick = false;
            }
            peach2_send_queued(p->dev); /* may drop the cable: m->rx NULL */
            if (!m->rx || !peach2_shm_poll(p)) {
                break;
            }
            continue;
        }
        total += n;
        trace_peach2_rx(p->dev->node_id, p->port, n);
        was = peach2_guard_enter(p->dev);
        ok = peach2_core_link_receive(p->dev->core, p->port, m->bounce, n);
        peach2_guard_leave(p->dev, was);
        if (!ok) {
            qemu_chr_fe_disconnect(&p->chr); /* corrupt stream: reported */
            return;
        }
        /* Applied: the peer's direct writes may follow these bytes now. */
        m->direct.rx_total += n;
        if (m->direct.area) {
            qatomic_store_release(&m->direct.area->applied, m->direct.rx_total);
        }
    }
    if (kick) {
        peach2_shm_kick(m->peer_wake_fd);
    }
    if (m->rx && peach2_shm_ring_error(m->rx)) {
        peach2_shm_fail(p, peach2_shm_ring_error(m->rx));
    } else if (total >= PEACH2_SHM_RX_BUDGET) {
        peach2_shm_kick(m->wake_fd); /* more: come back after the main loop */
    }
}

/* Our wake-up: the peer wrote into its ring, or made room in ours. */
static void peach2_shm_wake(void *opaque)
{
    Peach2Port *p = opaque;
    uint64_t count;

    if (read(p->shm.wake_fd, &count, sizeof(count)) < 0 && errno != EAGAIN) {
        return;
    }
    if (p->fault.deaf) {
        return; /* the wake-up is lost: only the watchdog reads */
    }
    peach2_shm_receive(p);
    peach2_send_queued(p->dev);
}

/*
 * The rings' watchdog. A wake-up that never comes (a kick lost between
 * two processes, a polled mark left set) would leave bytes in a ring, or
 * in the core's send queue behind a full ring, until the next one: a link
 * stalls while both guests wait on it, and their drivers and libraries
 * time out. Every PEACH2_SHM_WATCH_NS the main loop looks at each ring:
 * input that sat there for a whole period with nothing read, and output
 * the core held for a whole period with nothing sent, are moved now, and
 * counted (fault property: late_wakeups); stderr says so at most every
 * PEACH2_SHM_WATCH_SAY_NS, since it means a wake-up went missing.
 */
static void peach2_shm_watch_note(Peach2Port *p, uint64_t bytes)
{
    Peach2Shm *m = &p->shm;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);

    trace_peach2_shm_watch(p->dev->node_id, p->port, bytes);
    m->late_wakeups += bytes;
    m->late_unsaid += bytes;
    if (m->late_said_ns && now - m->late_said_ns < PEACH2_SHM_WATCH_SAY_NS) {
        return;
    }
    warn_report("peach2 node %u port %u: %" PRIu64 " bytes waited over %d ms "
                "in the shared-memory link with no wake-up; moved by its "
                "watchdog (%" PRIu64 " in all on this connection)",
                p->dev->node_id, p->port, m->late_unsaid,
                (int)(PEACH2_SHM_WATCH_NS / SCALE_MS), m->late_wakeups);
    m->late_unsaid = 0;
    m->late_said_ns = now;
}

static void peach2_shm_watch(void *opaque)
{
    Peach2State *s = opaque;
    unsigned pending = peach2_core_tx_pending(s->core);
    bool any = false;
    unsigned i;

    for (i = PEACH2_PORT_E; i < PEACH2_NR_PORTS; i++) {
        Peach2Port *p = &s->ports[i];
        Peach2Shm *m = &p->shm;
        bool unread, unsent;

        if (!p->shm_on || !m->rx) {
            continue;
        }
        any = true;
        unread = !p->fault.stalled && peach2_shm_ring_readable(m->rx) &&
                 m->direct.rx_total == m->watch_rx_total;
        unsent = (pending & (1u << i)) && m->tx_total == m->watch_tx_total;
        if (unread && m->watch_unread) {
            uint64_t before = m->direct.rx_total;

            peach2_shm_receive(p); /* may drop the cable: m->rx NULL */
            if (!m->rx) {
                continue;
            }
            peach2_shm_watch_note(p, m->direct.rx_total - before);
            unread = false;
        }
        if (unsent && m->watch_unsent) {
            uint64_t before = m->tx_total;

            peach2_port_drain(p); /* nothing while a 'delay' fault holds */
            if (m->tx_total != before) { /* there was room: a lost kick */
                peach2_shm_watch_note(p, m->tx_total - before);
                unsent = false;
            }
        }
        m->watch_unread = unread;
        m->watch_unsent = unsent;
        m->watch_rx_total = m->direct.rx_total;
        m->watch_tx_total = m->tx_total;
    }
    if (any) {
        peach2_send_queued(s);
        timer_mod(s->shm_watch_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + PEACH2_SHM_WATCH_NS);
    }
}

/* What the core has queued goes into our ring; the peer is kicked. */
static void peach2_shm_send(Peach2Port *p)
{
    Peach2Shm *m = &p->shm;
    peach2_core *core = p->dev->core;
    bool sent = false;

    if (!m->rx) {
        return; /* the peer has not offered yet: the core keeps the bytes */
    }
    for (;;) {
        const void *buf;
        size_t n = peach2_core_link_tx_peek(core, p->port, &buf);
        size_t done;

        if (n == 0) {
            break;
        }
        done = peach2_shm_ring_write(m->tx, buf, n);
        if (done == 0) {
            break; /* full: the peer kicks us when it has read */
        }
        trace_peach2_tx(p->dev->node_id, p->port, done);
        peach2_core_link_tx_consume(core, p->port, done);
        m->tx_total += done;
        sent = true;
    }
    if (sent && peach2_shm_ring_consumer_needs_kick(m->tx)) {
        peach2_shm_kick(m->peer_wake_fd);
    }
    if (peach2_shm_ring_error(m->tx)) {
        peach2_shm_fail(p, peach2_shm_ring_error(m->tx));
    }
}

static void peach2_shm_forget_offer(Peach2Shm *m)
{
    int i;

    for (i = 0; i < PEACH2_SHM_OFFER_FDS; i++) {
        m->offer_fds[i] = -1;
    }
    m->offer_nfds = 0;
}

/* Close the descriptors that came with the peer's offer. */
static void peach2_shm_skip_offer(Peach2Shm *m)
{
    int i;

    for (i = 0; i < PEACH2_SHM_OFFER_FDS; i++) {
        if (m->offer_fds[i] >= 0) {
            close(m->offer_fds[i]);
            m->offer_fds[i] = -1;
        }
    }
}

static void peach2_shm_close(Peach2Port *p)
{
    Peach2Shm *m = &p->shm;

    if (m->wake_fd >= 0) {
        qemu_set_fd_handler(m->wake_fd, NULL, NULL, NULL);
        close(m->wake_fd);
    }
    if (m->peer_wake_fd >= 0) {
        close(m->peer_wake_fd);
    }
    peach2_shm_ring_free(m->tx);
    peach2_shm_ring_free(m->rx);
    if (m->tx_mem) {
        munmap(m->tx_mem, m->tx_len);
    }
    if (m->rx_mem) {
        munmap(m->rx_mem, m->rx_len);
    }
    peach2_shm_skip_offer(m);
    peach2_direct_close(p);
    g_free(m->bounce);
    memset(m, 0, sizeof(*m));
    m->wake_fd = m->peer_wake_fd = -1;
    peach2_shm_forget_offer(m);
    p->shm_on = false;
}

/*
 * A new connection: make our ring and wake-up, send the offer. False when
 * this cable cannot carry file descriptors (TCP): the socket path is used.
 */
static bool peach2_shm_open(Peach2Port *p)
{
    Peach2Shm *m = &p->shm;
    Peach2State *s = p->dev;
    size_t len = peach2_shm_ring_mem_size(s->shm_ring_size);
    uint64_t offer[2] = { cpu_to_le64(PEACH2_SHM_OFFER_MAGIC),
                          cpu_to_le64(s->shm_ring_size) };
    char why[128];
    int fds[PEACH2_SHM_OFFER_FDS];
    int nfds = 2;
    int memfd = peach2_shm_memfd_new("peach2-link", len, &m->tx_mem);

    if (memfd < 0) {
        return false;
    }
    m->tx_len = len;
    m->tx = peach2_shm_ring_create(m->tx_mem, len, s->shm_ring_size, why,
                                   sizeof(why));
    m->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    fds[0] = memfd;
    fds[1] = m->wake_fd;
    if (m->tx && m->wake_fd >= 0 && s->ram && peach2_peer_same_user(p) &&
        qemu_clock_get_ns(QEMU_CLOCK_REALTIME) >= p->direct_ban_until) {
        fds[3] = peach2_direct_area_create(p);
        if (fds[3] >= 0) {
            fds[2] = memory_region_get_fd(s->ram);
            nfds = 4;
        }
    }
    if (!m->tx || m->wake_fd < 0 ||
        qemu_chr_fe_set_msgfds(&p->chr, fds, nfds) < 0) {
        close(memfd);
        if (nfds == 4) {
            close(fds[3]);
        }
        peach2_shm_close(p);
        return false; /* e.g. a TCP cable: no fd passing */
    }
    if (qemu_chr_fe_write(&p->chr, (const uint8_t *)offer, sizeof(offer)) !=
        sizeof(offer)) {
        qemu_chr_fe_set_msgfds(&p->chr, NULL, 0);
        close(memfd);
        if (nfds == 4) {
            close(fds[3]);
        }
        peach2_shm_close(p);
        return false;
    }
    close(memfd); /* our mapping and the peer's copy keep it */
    if (nfds == 4) {
        close(fds[3]); /* our area: the same */
    }
    m->bounce = g_malloc(PEACH2_RX_CHUNK);
    qemu_set_fd_handler(m->wake_fd, peach2_shm_wake, NULL, p);
    p->shm_on = true;
    trace_peach2_shm_open(s->node_id, p->port, s->shm_ring_size);
    return true;
}

/* Map the peer's ring from its offer; every field and fd is checked. */
static const char *peach2_shm_accept(Peach2Port *p, int memfd, int wakefd)
{
    Peach2Shm *m = &p->shm;
    uint64_t size;
    size_t len;
    char why[128];

    memcpy(&size, m->offer + 8, 8); /* after the magic, checked */
    len = peach2_shm_ring_mem_size(le64_to_cpu(size));
    if (len == 0) {
        return "the peer's ring size is not a power of two in 4 KiB .. 256 MiB";
    }
    if (memfd < 0 || wakefd < 0) {
        return "the peer's offer came without its two file descriptors";
    }
    if (peach2_shm_sealed_size(memfd) != len) {
        return "the peer's ring is not a sealed memfd of the size it claims";
    }
    /* A full pipe in place of an eventfd must not block this vCPU. */
    if (fcntl(wakefd, F_SETFL, O_NONBLOCK) < 0) {
        return "the peer's wake-up descriptor is unusable";
    }
    m->rx_mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    if (m->rx_mem == MAP_FAILED) {
        m->rx_mem = NULL;
        return "cannot map the peer's ring";
    }
    m->rx_len = len;
    m->rx = peach2_shm_ring_attach(m->rx_mem, len, why, sizeof(why));
    if (!m->rx) {
        return "the peer's ring header is not valid";
    }
    m->peer_wake_fd = wakefd;
    return NULL;
}

static bool peach2_socket_input(Peach2Port *p, const uint8_t *buf, size_t size);

/* The peer speaks the socket: so do we, on this connection. */
static void peach2_shm_decline(Peach2Port *p, const char *why)
{
    if (p->shm_on) {
        peach2_shm_close(p); /* the peer never maps our ring */
        info_report("peach2 node %u: port %u uses the socket transport (%s)",
                    p->dev->node_id, p->port, why);
    }
    trace_peach2_shm_socket(p->dev->node_id, p->port);
}

/* Both ends offered: map the peer's ring, send what waited for it. */
static void peach2_shm_start(Peach2Port *p)
{
    Peach2Shm *m = &p->shm;
    const char *why = peach2_shm_accept(p, m->offer_fds[0], m->offer_fds[1]);
    const char *direct = "the peer offered no RAM";
    int i;

    if (!why && m->offer_nfds == PEACH2_SHM_OFFER_FDS) {
        direct = peach2_direct_accept(p, m->offer_fds[2], m->offer_fds[3]);
    }
    if (m->offer_fds[0] >= 0) {
        close(m->offer_fds[0]); /* mapped, or refused */
    }
    if (why && m->offer_fds[1] >= 0) {
        close(m->offer_fds[1]);
    }
    for (i = 2; i < PEACH2_SHM_OFFER_FDS; i++) {
        if (m->offer_fds[i] >= 0) {
            close(m->offer_fds[i]); /* mapped, or refused */
        }
    }
    peach2_shm_forget_offer(m);
    if (why) {
        peach2_shm_fail(p, why);
        return;
    }
    peach2_core_link_shared_memory(p->dev->core, p->port, true);
    if (!direct) {
        peach2_core_link_direct(p->dev->core, p->port, true);
        info_report("peach2 node %u: port %u uses the shared-memory transport "
                    "with direct writes into the peer's memory",
                    p->dev->node_id, p->port);
    } else {
        info_report("peach2 node %u: port %u uses the shared-memory transport "
                    "(no direct writes: %s)", p->dev->node_id, p->port, direct);
    }
    trace_peach2_direct_open(p->dev->node_id, p->port, !direct);
    /*
     * Our HELLO waited in the core for the peer's eventfd; the peer may
     * have written its HELLO after we read its offer: kick it, and read.
     */
    peach2_shm_receive(p);
    peach2_send_queued(p->dev);
    peach2_shm_kick(m->peer_wake_fd);
    if (!timer_pending(p->dev->shm_watch_timer)) {
        timer_mod(p->dev->shm_watch_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                  PEACH2_SHM_WATCH_NS);
    }
}

/*
 * The peer's first bytes on a new connection say which transport it
 * speaks: an offer (link-shm on, and a cable that passes descriptors) or
 * packets (HELLO). Shared memory is used only when both ends offered;
 * otherwise both end up on the socket, whatever each end's link-shm.
 */
static void peach2_link_first_bytes(Peach2Port *p, const uint8_t *buf,
                                    size_t size)
{
    Peach2Shm *m = &p->shm;
    size_t take = MIN(size, PEACH2_SHM_OFFER_LEN - m->offer_got);
    uint8_t first[PEACH2_SHM_OFFER_LEN];
    int fds[PEACH2_SHM_OFFER_FDS] = { -1, -1, -1, -1 };
    uint64_t magic;
    size_t got;
    int i, n;

    /* The descriptors arrive with the offer's first bytes, and only then. */
    n = qemu_chr_fe_get_msgfds(&p->chr, fds, PEACH2_SHM_OFFER_FDS);
    if (n > 0 && (m->offer_got != 0 || (n != 2 && n != 4))) {
        for (i = 0; i < n; i++) {
            close(fds[i]);
        }
        peach2_shm_fail(p, "file descriptors that are not the offer's "
                        "two or four");
        return;
    }
    if (n > 0) {
        for (i = 0; i < n; i++) {
            m->offer_fds[i] = fds[i];
        }
        m->offer_nfds = n;
    }
    memcpy(m->offer + m->offer_got, buf, take);
    m->offer_got += take;
    buf += take;
    size -= take;
    if (m->offer_got < sizeof(magic)) {
        return;
    }
    memcpy(&magic, m->offer, sizeof(magic));
    if (le64_to_cpu(magic) != PEACH2_SHM_OFFER_MAGIC) {
        /* Packets: the peer uses the socket (link-shm off, or TCP). */
        got = m->offer_got;
        memcpy(first, m->offer, got);
        peach2_shm_skip_offer(m);
        p->first_bytes = false;
        peach2_shm_decline(p, "the peer did not offer shared memory");
        if (peach2_socket_input(p, first, got) && size > 0) {
            peach2_socket_input(p, buf, size);
        }
        return;
    }
    if (m->offer_got < PEACH2_SHM_OFFER_LEN) {
        return;
    }
    p->first_bytes = false;
    if (!p->shm_on) {
        /* We did not offer: skip the peer's; our HELLO tells it. */
        peach2_shm_skip_offer(m);
        peach2_shm_decline(p, "this end did not offer");
        if (size > 0) {
            peach2_socket_input(p, buf, size);
        }
        return;
    }
    if (size > 0) {
        peach2_shm_fail(p, "bytes on the socket after the offer");
        return;
    }
    peach2_shm_start(p);
}

static gboolean peach2_port_writable(void *do_not_use, GIOCondition cond,
                                     void *opaque)
{
    Peach2Port *p = opaque;

    p->watch = 0;
    peach2_port_drain(p);
    return G_SOURCE_REMOVE;
}

/*
 * Send what the core has queued without ever blocking: a peer that does
 * not read must not stall this VM (and two VMs blocking on each other
 * would deadlock). Leftovers wait for the chardev to become writable.
 */
static void peach2_port_drain(Peach2Port *p)
{
    peach2_core *core = p->dev->core;

    if (p->fault.hold_until &&
        qemu_clock_get_ns(QEMU_CLOCK_REALTIME) < p->fault.hold_until) {
        return; /* a delay injected by the host: its timer drains */
    }
    if (p->shm_on) {
        peach2_shm_send(p);
        return;
    }
    if (p->watch || !qemu_chr_fe_backend_connected(&p->chr)) {
        return;
    }
    for (;;) {
        const void *buf;
        size_t n = peach2_core_link_tx_peek(core, p->port, &buf);
        int done;

        if (n == 0) {
            return;
        }
        done = qemu_chr_fe_write(&p->chr, buf, MIN(n, (size_t)INT_MAX));
        if (done > 0) {
            trace_peach2_tx(p->dev->node_id, p->port, done);
            peach2_core_link_tx_consume(core, p->port, done);
            continue;
        }
        if (done < 0 && errno != EAGAIN) {
            return; /* the chardev reports the disconnect through its event */
        }
        p->watch = qemu_chr_fe_add_watch(&p->chr, G_IO_OUT | G_IO_HUP,
                                         peach2_port_writable, p);
        return;
    }
}

/*
 * Send what the core has queued on its links. The core's one signal for
 * packets waiting is peach2_core_tx_pending(): checked after every call
 * that can queue them, in whatever context made the call (a vCPU's store or
 * fence, a register write, the bottom half, a link's input).
 */
static void peach2_send_queued(Peach2State *s)
{
    unsigned ports = peach2_core_tx_pending(s->core);
    unsigned i;

    for (i = PEACH2_PORT_E; i < PEACH2_NR_PORTS; i++) {
        if (ports & (1u << i)) {
            peach2_port_drain(&s->ports[i]);
        }
    }
}

/*
 * A slice of the card's work: at most max_dma_bytes of DMA per channel
 * (0: the full slice, firmware loads too).
 */
static void peach2_service(Peach2State *s, uint64_t max_dma_bytes)
{
    s->dma_deferred = false;
    peach2_core_service_bounded(s->core, max_dma_bytes);
    if (!s->dma_deferred) {
        s->dma_run = false; /* done, or waiting on a link: the run ended */
    }
    peach2_send_queued(s);
}

/* The bottom half: DMA slices and firmware loads. */
static void peach2_service_bh(void *opaque)
{
    peach2_service(opaque, 0);
}

/*
 * A vCPU fenced its stores (under the BQL): send what is held back, now, in
 * this vCPU (the fence must not wait). Closing the write does no DMA work.
 */
static void peach2_wc_fence(void *opaque)
{
    Peach2State *s = opaque;

    bool was;

    trace_peach2_wc_fence(s->node_id);
    was = peach2_guard_enter(s);
    peach2_core_close_write(s->core);
    peach2_guard_leave(s, was);
    peach2_send_queued(s);
}

static void peach2_wc_timer(void *opaque)
{
    Peach2State *s = opaque;
    bool stored = qatomic_xchg(&s->stored_since_look, false);

    if (!peach2_core_write_open(s->core)) {
        /* A fence sent it: look later next time. */
        s->wc_first_look_ns = MIN(s->wc_first_look_ns * 2, PEACH2_WC_LAZY_NS);
        return;
    }
    if (stored) {
        /* Still storing: look again after an idle spell. */
        timer_mod(s->wc_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + PEACH2_WC_IDLE_NS);
        return;
    }
    trace_peach2_wc_flush(s->node_id);
    s->wc_first_look_ns = PEACH2_WC_IDLE_NS;
    /* Through the bottom half: it runs under the device's re-entrancy guard. */
    qemu_bh_schedule(s->service_bh);
}

static int peach2_port_can_receive(void *opaque)
{
    Peach2Port *p = opaque;

    return p->fault.stalled ? 0 : PEACH2_RX_CHUNK;
}

/* Bytes of the socket path; false when they broke the stream (dropped). */
static bool peach2_socket_input(Peach2Port *p, const uint8_t *buf, size_t size)
{
    bool was, ok;

    trace_peach2_rx(p->dev->node_id, p->port, size);
    was = peach2_guard_enter(p->dev);
    ok = peach2_core_link_receive(p->dev->core, p->port, buf, size);
    peach2_guard_leave(p->dev, was);
    if (!ok) {
        /* Corrupt stream: the core has reported it; start a fresh one. */
        qemu_chr_fe_disconnect(&p->chr);
    }
    /* Forwarded packets, the card's own read-proxy answers. */
    peach2_send_queued(p->dev);
    return ok;
}

static void peach2_port_receive(void *opaque, const uint8_t *buf, int size)
{
    Peach2Port *p = opaque;

    if (p->first_bytes) {
        peach2_link_first_bytes(p, buf, size);
    } else if (p->shm_on) {
        peach2_shm_fail(p, "bytes on the socket after the offer");
    } else {
        peach2_socket_input(p, buf, size);
    }
}

static void peach2_port_event(void *opaque, QEMUChrEvent event)
{
    Peach2Port *p = opaque;

    trace_peach2_link_event(p->dev->node_id, p->port, event);
    switch (event) {
    case CHR_EVENT_OPENED:
        if (p->fault.cut) {
            qemu_bh_schedule(p->fault.cut_bh); /* no link through a cut */
            break;
        }
        peach2_shm_close(p); /* a new stream: nothing of the old one */
        p->first_bytes = true;
        if (p->dev->link_shm) {
            peach2_shm_open(p); /* false: we cannot offer, say HELLO */
        }
        peach2_core_link_connected(p->dev->core, p->port, true);
        peach2_send_queued(p->dev); /* HELLO, on the socket unless we offered */
        break;
    case CHR_EVENT_CLOSED:
        if (p->watch) {
            g_source_remove(p->watch);
            p->watch = 0;
        }
        peach2_shm_close(p);
        p->first_bytes = false;
        peach2_core_link_connected(p->dev->core, p->port, false);
        break;
    default:
        break;
    }
}

/* What the "direct" property says: each port's direct writes. */
static char *peach2_direct_get(Object *obj, Error **errp)
{
    Peach2State *s = PEACH2(obj);
    GString *out = g_string_new("");
    unsigned i;

    for (i = PEACH2_PORT_E; i < PEACH2_NR_PORTS; i++) {
        Peach2Direct *d = &s->ports[i].shm.direct;

        g_string_append_printf(out, "%s%c: on=%d sent=%" PRIu64 " sent_bytes=%"
                               PRIu64 " received=%" PRIu64 " received_bytes=%"
                               PRIu64, i == PEACH2_PORT_E ? "" : "; ",
                               "NEWS"[i], d->peer_area != NULL, d->pkts,
                               d->bytes,
                               d->area ? qatomic_read(&d->area->pkts) : 0,
                               d->area ? qatomic_read(&d->area->bytes) : 0);
    }
    return g_string_free(out, false);
}

/*
 * ---- fault injection (host-driven) ---------------------------------
 *
 * Writable at run time through the string property "fault" (QMP/HMP
 * qom-set), one command per write; reading it gives every port's state.
 * docs/hardware.md §5 "Fault injection" says what each does to the cards.
 */

static void peach2_fault_cut_bh(void *opaque)
{
    Peach2Port *p = opaque;

    if (p->fault.cut) {
        qemu_chr_fe_disconnect(&p->chr);
    }
}

static void peach2_fault_hold_end(void *opaque)
{
    Peach2Port *p = opaque;

    p->fault.hold_until = 0;
    peach2_port_drain(p);
}

static char *peach2_fault_get(Object *obj, Error **errp)
{
    Peach2State *s = PEACH2(obj);
    GString *out = g_string_new("");
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    unsigned i;

    for (i = PEACH2_PORT_E; i < PEACH2_NR_PORTS; i++) {
        Peach2Port *p = &s->ports[i];
        uint32_t drop_left = 0;
        uint64_t dropped = 0;
        int64_t held = p->fault.hold_until > now ?
                       p->fault.hold_until - now : 0;

        if (s->core) {
            peach2_core_link_fault_state(s->core, i, &drop_left, &dropped);
        }
        g_string_append_printf(out, "%s%c: cut=%d stalled=%d deaf=%d "
                               "held_ms=%" PRId64 " drop_left=%u dropped=%"
                               PRIu64 " late_wakeups=%" PRIu64,
                               i == PEACH2_PORT_E ? "" : "; ", "NEWS"[i],
                               p->fault.cut, p->fault.stalled, p->fault.deaf,
                               held / SCALE_MS, drop_left, dropped,
                               p->shm.late_wakeups);
    }
    return g_string_free(out, false);
}

/*
 * "cut P", "restore P", "drop P N", "delay P MS", "stall P", "unstall P",
 * "deaf P", "hear P"; P is E, W or S.
 */
static void peach2_fault_set(Object *obj, const char *value, Error **errp)
{
    static const char usage[] = "expected 'cut P', 'restore P', 'drop P N', "
        "'delay P MS', 'stall P', 'unstall P', 'deaf P' or 'hear P' with P "
        "one of E, W, S";
    Peach2State *s = PEACH2(obj);
    g_auto(GStrv) w = g_strsplit(value, " ", 0);
    guint n = g_strv_length(w);
    const char *ports = "NEWS";
    const char *at;
    uint64_t arg = 0;
    Peach2Port *p;
    bool needs_arg;

    if (!s->core) {
        error_setg(errp, "peach2: fault injection needs a realized device");
        return;
    }
    at = n >= 2 && strlen(w[1]) == 1 ? strchr(ports + 1, w[1][0]) : NULL;
    if (!at) {
        error_setg(errp, "peach2: fault '%s': %s", value, usage);
        return;
    }
    p = &s->ports[at - ports];
    needs_arg = !strcmp(w[0], "drop") || !strcmp(w[0], "delay");
    if (n != (needs_arg ? 3u : 2u) ||
        (needs_arg && (qemu_strtou64(w[2], NULL, 10, &arg) < 0 ||
                       arg > UINT32_MAX))) {
        error_setg(errp, "peach2: fault '%s': %s (N, MS: 0 .. %u)", value,
                   usage, UINT32_MAX);
        return;
    }
    if (!qemu_chr_fe_backend_connected(&p->chr)) {
        error_setg(errp, "peach2: fault '%s': port %s has no cable", value,
                   w[1]);
        return;
    }
    if (!strcmp(w[0], "cut")) {
        p->fault.cut = true;
        qemu_bh_schedule(p->fault.cut_bh);
    } else if (!strcmp(w[0], "restore")) {
        p->fault.cut = false; /* the client end reconnects within a second */
    } else if (!strcmp(w[0], "drop")) {
        peach2_core_link_fault_drop(s->core, p->port, arg);
    } else if (!strcmp(w[0], "delay")) {
        p->fault.hold_until = qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                              arg * SCALE_MS;
        timer_mod(p->fault.hold_timer, p->fault.hold_until);
    } else if (!strcmp(w[0], "stall")) {
        p->fault.stalled = true;
        peach2_direct_publish(p); /* the peer's writes wait as packets */
    } else if (!strcmp(w[0], "deaf")) {
        p->fault.deaf = true;
    } else if (!strcmp(w[0], "hear")) {
        p->fault.deaf = false;
        peach2_shm_receive(p);
        peach2_send_queued(s);
    } else if (!strcmp(w[0], "unstall")) {
        p->fault.stalled = false;
        peach2_direct_publish(p);
        qemu_chr_fe_accept_input(&p->chr);
        peach2_shm_receive(p);
        peach2_send_queued(s);
    } else {
        error_setg(errp, "peach2: fault '%s': %s", value, usage);
        return;
    }
    info_report("peach2 node %u: fault injected: %s", s->node_id, value);
    trace_peach2_fault(s->node_id, value);
}

/* ---- MMIO -------------------------------------------------------------- */

/* A DMA channel's STATUS register (the read proxy's channel included). */
static bool peach2_is_dma_status(hwaddr addr)
{
    return addr >= PEACH2_REG_DMA_BASE &&
           addr < PEACH2_REG_DMA(PEACH2_DMA_ENGINES, 0) &&
           (addr - PEACH2_REG_DMA_BASE) % PEACH2_REG_DMA_STRIDE ==
           PEACH2_DMA_STATUS;
}

/*
 * The read proxy's serving thread looks at RP_TAIL for a while after it
 * answered (driver/rproxy.c, rp_poll_us): the next request may sit in a
 * shared-memory ring whose eventfd has not woken our main loop yet. The
 * vCPU, which waits anyway, takes in what the rings hold, as the main loop
 * would, and reads TAIL after it (docs/hardware.md §9). While it
 * looks, the rings are marked polled, so that the peers do not kick: a
 * kick would wake the main loop, whose hold of the I/O lock then makes the
 * looking vCPU sleep on it and wait for a wake-up of its own. Only reads
 * that follow each other within PEACH2_LOOK_GAP_NS are looks (the driver
 * reads TAIL once per interrupt too). The mark comes off when the driver
 * unmasks the request interrupt (its look is over), or at the latest
 * PEACH2_LOOK_HOLD_NS after the last look; what came meanwhile is read then.
 */
#define PEACH2_LOOK_GAP_NS (10 * SCALE_US)
#define PEACH2_LOOK_HOLD_NS (100 * SCALE_US)

static void peach2_link_look(Peach2State *s)
{
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    bool looks = now - s->last_look_ns < PEACH2_LOOK_GAP_NS;
    bool got = false;
    unsigned i;

    s->last_look_ns = now;
    for (i = PEACH2_PORT_E; i < PEACH2_NR_PORTS; i++) {
        Peach2Port *p = &s->ports[i];

        if (!p->shm.rx) {
            continue;
        }
        if (looks && !p->shm.looking) {
            p->shm.looking = true;
            peach2_shm_ring_set_polling(p->shm.rx, true);
        }
        if (p->shm.looking && !timer_pending(s->look_timer)) {
            timer_mod(s->look_timer, now + PEACH2_LOOK_HOLD_NS);
        }
        if (peach2_shm_ring_readable(p->shm.rx)) {
            peach2_shm_receive(p);
            got = true;
        }
    }
    if (got) {
        trace_peach2_link_look(s->node_id);
        peach2_send_queued(s);
    }
}

/* The looks ended: the peers kick again; what came meanwhile is read now. */
static void peach2_look_end(Peach2State *s)
{
    unsigned i;

    for (i = PEACH2_PORT_E; i < PEACH2_NR_PORTS; i++) {
        Peach2Port *p = &s->ports[i];

        if (p->shm.rx && p->shm.looking) {
            p->shm.looking = false;
            if (peach2_shm_ring_set_polling(p->shm.rx, false)) {
                peach2_shm_receive(p);
            }
        }
    }
    peach2_send_queued(s);
}

static void peach2_look_timer(void *opaque)
{
    Peach2State *s = opaque;
    int64_t end = s->last_look_ns + PEACH2_LOOK_HOLD_NS;

    if (qemu_clock_get_ns(QEMU_CLOCK_REALTIME) < end) {
        timer_mod(s->look_timer, end);
        return;
    }
    peach2_look_end(s);
}

static uint64_t peach2_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    Peach2State *s = opaque;
    uint64_t val;
    unsigned i;

    for (i = PEACH2_PORT_E; i < PEACH2_NR_PORTS; i++) {
        peach2_direct_fold(&s->ports[i]); /* the counters include them */
    }
    if (addr == PEACH2_REG_RP_TAIL) {
        peach2_link_look(s);
    }
    val = peach2_core_reg_read(s->core, addr, size);
    if ((val & PEACH2_DMA_ST_BUSY) && s->dma_poll_kib &&
        timer_pending(s->dma_timer) && peach2_is_dma_status(addr)) {
        /*
         * A driver polls a channel whose run sits in the pacing pause
         * (which is for the main loop's copies): its vCPU, which waits
         * anyway, moves the next slice and sees the status after it.
         * Outside the pause the main loop copies beside the vCPU, which
         * runs on (docs/hardware.md §6).
         */
        peach2_service(s, (uint64_t)s->dma_poll_kib * 1024);
        val = peach2_core_reg_read(s->core, addr, size);
        trace_peach2_dma_poll(s->node_id, addr, val);
    }

    trace_peach2_reg_read(s->node_id, addr, size, val);
    return val;
}

static void peach2_regs_write(void *opaque, hwaddr addr, uint64_t val,
                              unsigned size)
{
    Peach2State *s = opaque;

    trace_peach2_reg_write(s->node_id, addr, size, val);
    s->in_reg_write = true;
    peach2_core_reg_write(s->core, addr, val, size);
    s->in_reg_write = false;
    /* An inbound filter command: the peers' direct writes see it now. */
    peach2_direct_update(s);
    if (addr == PEACH2_REG_INT_MASK && !(val & PEACH2_INT_RP)) {
        /* The driver takes requests by interrupt again: its looks ended. */
        peach2_look_end(s);
    }
    if (s->service_after_write) {
        /* A DMA start: its first slice now, under the MMIO's guard. */
        s->service_after_write = false;
        peach2_service(s, (uint64_t)s->dma_start_kib * 1024);
    }
    /* A read-proxy request: sent from this vCPU, like a window store. */
    peach2_send_queued(s);
}

static uint64_t peach2_cardmem_read(void *opaque, hwaddr addr, unsigned size)
{
    Peach2State *s = opaque;
    uint64_t val = peach2_core_cardmem_read(s->core, addr, size);

    trace_peach2_cardmem_read(s->node_id, addr, size, val);
    return val;
}

static void peach2_cardmem_write(void *opaque, hwaddr addr, uint64_t val,
                                 unsigned size)
{
    Peach2State *s = opaque;

    trace_peach2_cardmem_write(s->node_id, addr, size, val);
    peach2_core_cardmem_write(s->core, addr, val, size);
}

/*
 * The window is lockless under TCG (memory_region_enable_lockless_io): its
 * accessors take the BQL themselves, but for the common store, which the
 * core appends to the open write-combining buffer under its own lock.
 * Without the memory core's re-entrancy guard (a lockless store must not
 * see another thread's), they refuse the card's own access to its window
 * as that guard would: the BQL already held by this thread and the device
 * engaged.
 */
static bool peach2_window_enter(Peach2State *s, bool *locked, bool *was)
{
    *locked = !qemu_mutex_iothread_locked();
    if (*locked) {
        qemu_mutex_lock_iothread();
    } else if (DEVICE(s)->mem_reentrancy_guard.engaged_in_io) {
        trace_peach2_window_reentry(s->node_id);
        return false;
    }
    *was = peach2_guard_enter(s);
    return true;
}

static void peach2_window_leave(Peach2State *s, bool locked, bool was)
{
    peach2_guard_leave(s, was);
    if (locked) {
        qemu_mutex_unlock_iothread();
    }
}

static MemTxResult peach2_window_read(void *opaque, hwaddr addr,
                                      uint64_t *data, unsigned size,
                                      MemTxAttrs attrs)
{
    Peach2State *s = opaque;
    bool locked, was;

    if (!peach2_window_enter(s, &locked, &was)) {
        *data = ~0ull;
        return MEMTX_ACCESS_ERROR;
    }
    *data = peach2_core_window_read(s->core, addr, size);
    peach2_window_leave(s, locked, was);
    return MEMTX_OK;
}

static MemTxResult peach2_window_write(void *opaque, hwaddr addr,
                                       uint64_t val, unsigned size,
                                       MemTxAttrs attrs)
{
    Peach2State *s = opaque;
    unsigned pending;
    bool locked, was;

    /* The next bytes of the open write, from a vCPU: no BQL, no timer. */
    if (!qemu_mutex_iothread_locked() &&
        peach2_core_window_append(s->core, addr, val, size)) {
        trace_peach2_window_store(s->node_id, addr, size,
                                  PEACH2_WINDOW_WC_OPEN);
        qatomic_set(&s->stored_since_look, true);
        return MEMTX_OK;
    }
    if (!peach2_window_enter(s, &locked, &was)) {
        return MEMTX_ACCESS_ERROR;
    }
    pending = peach2_core_window_write(s->core, addr, val, size);
    trace_peach2_window_store(s->node_id, addr, size, pending);
    if (pending & PEACH2_WINDOW_TX_PENDING) {
        peach2_send_queued(s);
    }
    if (pending & PEACH2_WINDOW_WC_OPEN) {
        cpu_wc_flush_mark_pending();
        if (!timer_pending(s->wc_timer)) {
            /* The first store of a write: the timer's first look. */
            qatomic_set(&s->stored_since_look, false);
            timer_mod(s->wc_timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                                   s->wc_first_look_ns);
        } else {
            qatomic_set(&s->stored_since_look, true);
        }
    }
    peach2_window_leave(s, locked, was);
    return MEMTX_OK;
}

/* The core checks sizes and alignment itself and reports bad ones. */
#define PEACH2_ANY_ACCESS \
    .valid = { .min_access_size = 1, .max_access_size = 8, \
               .unaligned = true }, \
    .impl = { .min_access_size = 1, .max_access_size = 8, .unaligned = true }

static const MemoryRegionOps peach2_regs_ops = {
    .read = peach2_regs_read,
    .write = peach2_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    PEACH2_ANY_ACCESS,
};

static const MemoryRegionOps peach2_cardmem_ops = {
    .read = peach2_cardmem_read,
    .write = peach2_cardmem_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    PEACH2_ANY_ACCESS,
};

static const MemoryRegionOps peach2_window_ops = {
    .read_with_attrs = peach2_window_read,
    .write_with_attrs = peach2_window_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    PEACH2_ANY_ACCESS,
};

/* ---- card event trace (docs/trace-format.md) ---------------------------- */

/*
 * The core records into a bounded ring that a thread of its own drains to
 * the file: a vCPU never waits for the disk, and a full ring drops events
 * and counts them (the END record has the count; we say it here too).
 */
static bool peach2_trace_open(Peach2State *s, Error **errp)
{
    char why[256];

    if (!s->trace || !*s->trace) {
        return true;
    }
    if (g_file_test(s->trace, G_FILE_TEST_IS_DIR)) {
        s->trace_file = g_strdup_printf("%s/node%u.p2trace", s->trace,
                                        s->node_id);
    } else {
        s->trace_file = g_strdup(s->trace);
    }
    if (!peach2_core_trace_open(s->core, s->trace_file, s->trace_ring, why,
                                sizeof(why))) {
        error_setg(errp, "peach2: %s (trace=%s, trace-ring=%u)", why,
                   s->trace, s->trace_ring);
        g_free(s->trace_file);
        s->trace_file = NULL;
        return false;
    }
    return true;
}

static void peach2_trace_close(Peach2State *s)
{
    uint64_t events, dropped;

    if (!s->trace_file) {
        return;
    }
    peach2_core_trace_stats(s->core, &events, &dropped);
    peach2_core_trace_close(s->core);
    if (dropped) {
        warn_report("peach2 node %u: trace %s: %" PRIu64 " of %" PRIu64
                    " events dropped (ring full); a larger trace-ring keeps "
                    "them", s->node_id, s->trace_file, dropped, events);
    } else {
        info_report("peach2 node %u: trace %s: %" PRIu64 " events",
                    s->node_id, s->trace_file, events);
    }
    g_free(s->trace_file);
    s->trace_file = NULL;
}

static void peach2_trace_exit(Notifier *n, void *data)
{
    peach2_trace_close(container_of(n, Peach2State, trace_exit));
}

/* ---- device ------------------------------------------------------------ */

static void peach2_realize(PCIDevice *pdev, Error **errp)
{
    Peach2State *s = PEACH2(pdev);
    peach2_core_config cfg = {
        .node_id = s->node_id,
        .node_count = s->node_count,
        .tx_limit = s->tx_limit,
    };
    peach2_core_host host = {
        .opaque = s,
        .dma_write = peach2_dma_write,
        .dma_read = peach2_dma_read,
        .schedule_service = peach2_core_wants_service,
        .defer_service = peach2_defer,
        .notify = peach2_notify,
        .log = peach2_log,
        .error = peach2_error,
        .now_ns = peach2_now_ns,
        .direct_write = peach2_direct_write,
        .direct_copy = peach2_direct_copy,
    };
    char why[256];
    unsigned i;

    if (s->link_shm && !peach2_shm_ring_mem_size(s->shm_ring_size)) {
        error_setg(errp, "peach2: shm-ring-size=%u is not a power of two in "
                   "%u .. %u", s->shm_ring_size, PEACH2_SHM_RING_MIN,
                   PEACH2_SHM_RING_MAX);
        return;
    }
    if (s->shm_poll_us > PEACH2_SHM_POLL_MAX_US) {
        error_setg(errp, "peach2: shm-poll-us=%u is over %u (it holds the "
                   "main loop)", s->shm_poll_us, PEACH2_SHM_POLL_MAX_US);
        return;
    }
    if (!s->dma_burst_us || s->dma_burst_us > PEACH2_DMA_PACE_MAX_US ||
        s->dma_pause_us > PEACH2_DMA_PACE_MAX_US) {
        error_setg(errp, "peach2: dma-burst-us=%u, dma-pause-us=%u: the burst "
                   "must be 1 .. %u, the pause 0 .. %u", s->dma_burst_us,
                   s->dma_pause_us, PEACH2_DMA_PACE_MAX_US,
                   PEACH2_DMA_PACE_MAX_US);
        return;
    }
    if (s->dma_start_kib > PEACH2_DMA_VCPU_SLICE_MAX_KIB) {
        error_setg(errp, "peach2: dma-start-kib=%u: the first slice of a DMA "
                   "run must be 0 .. %u KiB", s->dma_start_kib,
                   PEACH2_DMA_VCPU_SLICE_MAX_KIB);
        return;
    }
    if (s->dma_poll_kib > PEACH2_DMA_VCPU_SLICE_MAX_KIB) {
        error_setg(errp, "peach2: dma-poll-kib=%u: the slice of a DMA status "
                   "read must be 0 .. %u KiB", s->dma_poll_kib,
                   PEACH2_DMA_VCPU_SLICE_MAX_KIB);
        return;
    }
    for (i = PEACH2_PORT_E; i < PEACH2_NR_PORTS; i++) {
        Peach2Shm *m = &s->ports[i].shm;

        m->wake_fd = m->peer_wake_fd = -1;
        peach2_shm_forget_offer(m);
    }
    s->core = peach2_core_new(&cfg, &host, why, sizeof(why));
    if (!s->core) {
        error_setg(errp, "peach2: %s (node-id=%u nodes=%u)", why,
                   s->node_id, s->node_count);
        return;
    }
    if (!peach2_trace_open(s, errp)) {
        peach2_core_free(s->core);
        s->core = NULL;
        return;
    }
    if (s->trace_file) {
        s->trace_exit.notify = peach2_trace_exit;
        qemu_add_exit_notifier(&s->trace_exit);
    }
    peach2_direct_find_ram(s);
    s->direct_ranges = g_new0(Peach2DirectRange, PEACH2_IN_MAX_RANGES);
    s->direct_spare = g_new0(Peach2DirectRange, PEACH2_IN_MAX_RANGES);
    s->direct_scratch = g_new0(uint64_t, 2 * PEACH2_IN_MAX_RANGES);
    s->direct_gen = peach2_core_inbound_generation(s->core);
    s->direct_timer = timer_new_ns(QEMU_CLOCK_REALTIME,
                                   peach2_direct_publish_all, s);
    s->service_bh = qemu_bh_new_guarded(peach2_service_bh, s,
                                        &DEVICE(pdev)->mem_reentrancy_guard);
    s->wc_timer = timer_new_ns(QEMU_CLOCK_REALTIME, peach2_wc_timer, s);
    s->wc_first_look_ns = PEACH2_WC_IDLE_NS;
    s->dma_timer = timer_new_ns(QEMU_CLOCK_REALTIME, peach2_schedule_service,
                                s);
    s->look_timer = timer_new_ns(QEMU_CLOCK_REALTIME, peach2_look_timer, s);
    s->shm_watch_timer = timer_new_ns(QEMU_CLOCK_REALTIME, peach2_shm_watch,
                                      s);
    cpu_wc_flush_register(peach2_wc_fence, s);

    pci_config_set_interrupt_pin(pdev->config, 1);

    memory_region_init(&s->bar0, OBJECT(s), "peach2-bar0", PEACH2_REGS_SIZE);
    memory_region_init_io(&s->regs, OBJECT(s), &peach2_regs_ops, s,
                          "peach2-regs", PEACH2_MSIX_TABLE_OFF);
    memory_region_add_subregion(&s->bar0, 0, &s->regs);
    pci_register_bar(pdev, PEACH2_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->bar0);

    memory_region_init_io(&s->cardmem, OBJECT(s), &peach2_cardmem_ops, s,
                          "peach2-cardmem", PEACH2_CARDMEM_SIZE);
    pci_register_bar(pdev, PEACH2_BAR_CARDMEM, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->cardmem);

    memory_region_init_io(&s->window, OBJECT(s), &peach2_window_ops, s,
                          "peach2-window", PEACH2_WINDOW_SIZE);
    /* A store per 8 bytes of a PIO put: see peach2_window_enter(). */
    memory_region_enable_lockless_io(&s->window);
    s->window.disable_reentrancy_guard = true;
    pci_register_bar(pdev, PEACH2_BAR_WINDOW,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH,
                     &s->window);

    if (pci_is_express(pdev)) {
        pcie_endpoint_cap_init(pdev, 0x80);
    }
    if (msix_init(pdev, PEACH2_MSIX_VECTORS, &s->bar0, PEACH2_BAR_REGS,
                  PEACH2_MSIX_TABLE_OFF, &s->bar0, PEACH2_BAR_REGS,
                  PEACH2_MSIX_PBA_OFF, 0, errp)) {
        if (s->trace_file) {
            qemu_remove_exit_notifier(&s->trace_exit);
            peach2_trace_close(s);
        }
        peach2_core_free(s->core);
        s->core = NULL;
        qemu_bh_delete(s->service_bh);
        s->service_bh = NULL;
        timer_free(s->wc_timer);
        s->wc_timer = NULL;
        timer_free(s->dma_timer);
        s->dma_timer = NULL;
        timer_free(s->look_timer);
        s->look_timer = NULL;
        timer_free(s->shm_watch_timer);
        s->shm_watch_timer = NULL;
        cpu_wc_flush_unregister(peach2_wc_fence, s);
        peach2_direct_free(s);
        return;
    }
    for (i = 0; i < PEACH2_MSIX_VECTORS; i++) {
        msix_vector_use(pdev, i);
    }

    for (i = PEACH2_PORT_E; i < PEACH2_NR_PORTS; i++) {
        Peach2Port *p = &s->ports[i];

        p->dev = s;
        p->port = i;
        if (!qemu_chr_fe_backend_connected(&p->chr)) {
            continue;
        }
        p->fault.cut_bh = qemu_bh_new(peach2_fault_cut_bh, p);
        p->fault.hold_timer = timer_new_ns(QEMU_CLOCK_REALTIME,
                                           peach2_fault_hold_end, p);
        peach2_core_link_attach(s->core, i);
        qemu_chr_fe_set_handlers(&p->chr, peach2_port_can_receive,
                                 peach2_port_receive, peach2_port_event,
                                 NULL, p, NULL, true);
    }
}

static void peach2_exit(PCIDevice *pdev)
{
    Peach2State *s = PEACH2(pdev);
    unsigned i;

    for (i = PEACH2_PORT_E; i < PEACH2_NR_PORTS; i++) {
        if (s->ports[i].watch) {
            g_source_remove(s->ports[i].watch);
            s->ports[i].watch = 0;
        }
        peach2_shm_close(&s->ports[i]);
        qemu_chr_fe_deinit(&s->ports[i].chr, false);
        if (s->ports[i].fault.cut_bh) {
            qemu_bh_delete(s->ports[i].fault.cut_bh);
            timer_free(s->ports[i].fault.hold_timer);
            s->ports[i].fault.cut_bh = NULL;
        }
    }
    msix_uninit(pdev, &s->bar0, &s->bar0);
    if (s->service_bh) {
        qemu_bh_delete(s->service_bh);
    }
    if (s->wc_timer) {
        timer_free(s->wc_timer);
        timer_free(s->dma_timer);
        timer_free(s->look_timer);
        timer_free(s->shm_watch_timer);
        cpu_wc_flush_unregister(peach2_wc_fence, s);
    }
    if (s->trace_file) {
        qemu_remove_exit_notifier(&s->trace_exit);
        peach2_trace_close(s);
    }
    peach2_core_free(s->core);
    s->core = NULL;
    peach2_direct_free(s);
}

static void peach2_reset(DeviceState *dev)
{
    Peach2State *s = PEACH2(dev);

    if (s->core) {
        peach2_core_reset(s->core);
        peach2_direct_update(s); /* the filter is empty again */
    }
}

static Property peach2_properties[] = {
    DEFINE_PROP_UINT32("node-id", Peach2State, node_id, 0),
    DEFINE_PROP_UINT32("nodes", Peach2State, node_count, 2),
    DEFINE_PROP_CHR("port-e", Peach2State, ports[PEACH2_PORT_E].chr),
    DEFINE_PROP_CHR("port-w", Peach2State, ports[PEACH2_PORT_W].chr),
    DEFINE_PROP_CHR("port-s", Peach2State, ports[PEACH2_PORT_S].chr),
    DEFINE_PROP_UINT64("tx-limit", Peach2State, tx_limit, 0),
    DEFINE_PROP_STRING("trace", Peach2State, trace),
    DEFINE_PROP_UINT32("trace-ring", Peach2State, trace_ring, 0),
    DEFINE_PROP_BOOL("link-shm", Peach2State, link_shm, true),
    DEFINE_PROP_BOOL("link-direct", Peach2State, link_direct, true),
    DEFINE_PROP_UINT32("shm-ring-size", Peach2State, shm_ring_size, 4 << 20),
    DEFINE_PROP_UINT32("shm-poll-us", Peach2State, shm_poll_us, 0),
    DEFINE_PROP_UINT32("dma-burst-us", Peach2State, dma_burst_us, 500),
    DEFINE_PROP_UINT32("dma-pause-us", Peach2State, dma_pause_us, 500),
    DEFINE_PROP_UINT32("dma-start-kib", Peach2State, dma_start_kib, 1024),
    DEFINE_PROP_UINT32("dma-poll-kib", Peach2State, dma_poll_kib, 1024),
    DEFINE_PROP_END_OF_LIST(),
};

/* The card cannot be migrated: its peers hold link state about it. */
static const VMStateDescription peach2_vmstate = {
    .name = TYPE_PEACH2,
    .unmigratable = 1,
};

static void peach2_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = peach2_realize;
    k->exit = peach2_exit;
    k->vendor_id = PEACH2_PCI_VENDOR_ID;
    k->device_id = PEACH2_PCI_DEVICE_ID;
    k->revision = PEACH2_PCI_REVISION;
    k->class_id = PEACH2_PCI_CLASS;
    dc->desc = "PEACH2/TCA interconnect card (emulated)";
    dc->vmsd = &peach2_vmstate;
    dc->reset = peach2_reset;
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    device_class_set_props(dc, peach2_properties);

    object_class_property_set_description(klass, "node-id",
        "this card's node id in the sub-cluster (0 .. nodes-1)");
    object_class_property_set_description(klass, "nodes",
        "number of nodes in the sub-cluster (1 .. 16); all cards must agree");
    object_class_property_set_description(klass, "port-e",
        "chardev of the E port cable (ring: to the next node's W port)");
    object_class_property_set_description(klass, "port-w",
        "chardev of the W port cable (ring: to the previous node's E port)");
    object_class_property_set_description(klass, "port-s",
        "chardev of the S port cable (joins two rings)");
    object_class_property_set_description(klass, "tx-limit",
        "bytes queued per link before packets are dropped (0: 64 MiB)");
    object_class_property_set_description(klass, "trace",
        "record the card's transactions for peach2-model: a file, or a "
        "directory that gets nodeN.p2trace (docs/trace-format.md); off if unset");
    object_class_property_set_description(klass, "trace-ring",
        "records the trace keeps in memory before dropping (64 .. 4194304, "
        "64 bytes each; 0: 65536)");
    object_class_property_set_description(klass, "link-shm",
        "carry unix-socket cables through shared memory (same host); set "
        "the same at both ends of a cable; off: the socket carries all");
    object_class_property_set_description(klass, "link-direct",
        "with link-shm and guest RAM in a shared memfd, offer the peer "
        "direct writes into this guest's memory and use the peer's");
    object_class_property_add_str(klass, "direct", peach2_direct_get, NULL);
    object_class_property_set_description(klass, "direct",
        "direct writes per port (qom-get): sent and received, packets and "
        "bytes, on the current connection");
    object_class_property_add_str(klass, "fault", peach2_fault_get,
                                  peach2_fault_set);
    object_class_property_set_description(klass, "fault",
        "fault injection at run time (qom-set): 'cut P', 'restore P', "
        "'drop P N', 'delay P MS', 'stall P', 'unstall P', 'deaf P', "
        "'hear P' (P: E, W, S); "
        "reading it gives each port's state");
    object_class_property_set_description(klass, "shm-ring-size",
        "bytes of each shared-memory ring (a power of two, 4 KiB .. 256 MiB)");
    object_class_property_set_description(klass, "shm-poll-us",
        "after a shared-memory delivery, look for the next packet this many "
        "microseconds before sleeping (0: never)");
}

static const TypeInfo peach2_info = {
    .name = TYPE_PEACH2,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(Peach2State),
    .class_init = peach2_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void peach2_register_types(void)
{
    type_register_static(&peach2_info);
}

type_init(peach2_register_types)
