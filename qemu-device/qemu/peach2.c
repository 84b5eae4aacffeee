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
 */
#define PEACH2_WC_IDLE_NS 50000

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
 */
#define PEACH2_SHM_OFFER_MAGIC 0x31764d4853325050ull /* "PP2SHMv1" */
#define PEACH2_SHM_OFFER_LEN 16                       /* magic, ring size */
#define PEACH2_SHM_RX_BUDGET (4u << 20) /* bytes per wake-up, then yield */
#define PEACH2_SHM_POLL_MAX_US 1000

typedef struct Peach2Shm {
    peach2_shm_ring *tx, *rx;   /* ours (we write), the peer's (we read) */
    void *tx_mem, *rx_mem;
    size_t tx_len, rx_len;
    int wake_fd;                /* ours: the peer kicks it */
    int peer_wake_fd;           /* the peer's; -1 until its offer came */
    uint8_t offer[PEACH2_SHM_OFFER_LEN];
    size_t offer_got;
    int offer_fds[2];           /* came with the offer's first bytes */
    uint8_t *bounce;            /* the peer's bytes, copied out of its ring */
} Peach2Shm;

/* Faults the host injects with qom-set (docs/hardware.md §5). */
typedef struct Peach2Fault {
    bool cut;           /* the cable is cut: every connection is dropped */
    bool stalled;       /* this card does not read the port */
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
    int64_t dma_burst_start; /* when the current burst of slices began */
    bool dma_run;            /* slices follow each other (a deferral chain) */
    bool dma_deferred;       /* the last service asked for more */
    int64_t last_store_ns;
    Peach2Port ports[PEACH2_NR_PORTS]; /* E, W, S used; N is the host */

    uint32_t node_id;
    uint32_t node_count;
    uint64_t tx_limit;
    char *trace;            /* a file, or a directory for nodeN.p2trace */
    uint32_t trace_ring;    /* records in the ring; 0: the core's default */
    char *trace_file;       /* the file being written, NULL when off */
    Notifier trace_exit;    /* QEMU exits without unrealizing: close then */
    bool link_shm;
    uint32_t shm_ring_size;
    uint32_t shm_poll_us;   /* after a delivery, look for more this long */
};

/* ---- core callbacks ---------------------------------------------------- */

static int peach2_dma_write(void *opaque, uint64_t addr, const void *buf,
                            size_t len)
{
    Peach2State *s = opaque;

    return pci_dma_write(PCI_DEVICE(s), addr, buf, len) == MEMTX_OK ? 0 : -1;
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
 * Pause between slices of a long DMA run. The run goes on in the main loop;
 * without a pause, slice after slice would keep the BQL and the vCPU could
 * not take its timer and device interrupts until the whole copy was done.
 * The timer only schedules the bottom half, which runs under the device's
 * re-entrancy guard (a DMA aimed at this device's own BARs must not re-enter
 * the model).
 */
/*
 * The main loop may run at real-time priority (scripts/cluster.py), so the
 * pause must also leave the vCPU a fair share of the host CPU: half of it.
 */
#define PEACH2_DMA_BURST_NS 500000 /* slices back to back for this long */
#define PEACH2_DMA_PAUSE_NS 500000 /* then the BQL and the CPU are free */

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
    if (now - s->dma_burst_start < PEACH2_DMA_BURST_NS) {
        qemu_bh_schedule(s->service_bh);
        return;
    }
    s->dma_burst_start = now + PEACH2_DMA_PAUSE_NS;
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
    peach2_shm_receive(p);
    peach2_send_queued(p->dev);
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
        sent = true;
    }
    if (sent && peach2_shm_ring_consumer_needs_kick(m->tx)) {
        peach2_shm_kick(m->peer_wake_fd);
    }
    if (peach2_shm_ring_error(m->tx)) {
        peach2_shm_fail(p, peach2_shm_ring_error(m->tx));
    }
}

/* Close the descriptors that came with the peer's offer. */
static void peach2_shm_skip_offer(Peach2Shm *m)
{
    int i;

    for (i = 0; i < 2; i++) {
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
    g_free(m->bounce);
    memset(m, 0, sizeof(*m));
    m->wake_fd = m->peer_wake_fd = -1;
    m->offer_fds[0] = m->offer_fds[1] = -1;
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
    Error *err = NULL;
    int fds[2];
    int memfd;

    memfd = qemu_memfd_create("peach2-link", len, false, 0,
                              F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL, &err);
    if (memfd < 0) {
        warn_report_err(err);
        return false;
    }
    m->tx_mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    if (m->tx_mem == MAP_FAILED) {
        m->tx_mem = NULL;
        close(memfd);
        return false;
    }
    m->tx_len = len;
    m->tx = peach2_shm_ring_create(m->tx_mem, len, s->shm_ring_size, why,
                                   sizeof(why));
    m->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    fds[0] = memfd;
    fds[1] = m->wake_fd;
    if (!m->tx || m->wake_fd < 0 ||
        qemu_chr_fe_set_msgfds(&p->chr, fds, 2) < 0) {
        close(memfd);
        peach2_shm_close(p);
        return false; /* e.g. a TCP cable: no fd passing */
    }
    if (qemu_chr_fe_write(&p->chr, (const uint8_t *)offer, sizeof(offer)) !=
        sizeof(offer)) {
        qemu_chr_fe_set_msgfds(&p->chr, NULL, 0);
        close(memfd);
        peach2_shm_close(p);
        return false;
    }
    close(memfd); /* our mapping and the peer's copy keep it */
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
    struct stat st;
    int seals;
    char why[128];

    memcpy(&size, m->offer + 8, 8); /* after the magic, checked */
    len = peach2_shm_ring_mem_size(le64_to_cpu(size));
    if (len == 0) {
        return "the peer's ring size is not a power of two in 4 KiB .. 256 MiB";
    }
    if (memfd < 0 || wakefd < 0) {
        return "the peer's offer came without its two file descriptors";
    }
    /* Sealed against shrinking: the mapping can never turn into SIGBUS. */
    seals = fcntl(memfd, F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(memfd, &st) < 0 ||
        (uint64_t)st.st_size != len) {
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

    if (m->offer_fds[0] >= 0) {
        close(m->offer_fds[0]); /* mapped, or refused */
    }
    if (why && m->offer_fds[1] >= 0) {
        close(m->offer_fds[1]);
    }
    m->offer_fds[0] = m->offer_fds[1] = -1;
    if (why) {
        peach2_shm_fail(p, why);
        return;
    }
    peach2_core_link_shared_memory(p->dev->core, p->port, true);
    info_report("peach2 node %u: port %u uses the shared-memory transport",
                p->dev->node_id, p->port);
    /*
     * Our HELLO waited in the core for the peer's eventfd; the peer may
     * have written its HELLO after we read its offer: kick it, and read.
     */
    peach2_shm_receive(p);
    peach2_send_queued(p->dev);
    peach2_shm_kick(m->peer_wake_fd);
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
    int fds[2] = { -1, -1 };
    uint64_t magic;
    size_t got;
    int i, n;

    /* The descriptors arrive with the offer's first bytes, and only then. */
    n = qemu_chr_fe_get_msgfds(&p->chr, fds, 2);
    if (n > 0 && (m->offer_got != 0 || n != 2)) {
        for (i = 0; i < n; i++) {
            close(fds[i]);
        }
        peach2_shm_fail(p, "file descriptors that are not the offer's two");
        return;
    }
    if (n == 2) {
        m->offer_fds[0] = fds[0];
        m->offer_fds[1] = fds[1];
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

/* The bottom half: DMA slices and firmware loads, never in a vCPU. */
static void peach2_service_bh(void *opaque)
{
    Peach2State *s = opaque;

    s->dma_deferred = false;
    peach2_core_service(s->core);
    if (!s->dma_deferred) {
        s->dma_run = false; /* done, or waiting on a link: the run ended */
    }
    peach2_send_queued(s);
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
    int64_t idle_at = s->last_store_ns + PEACH2_WC_IDLE_NS;

    if (qemu_clock_get_ns(QEMU_CLOCK_REALTIME) < idle_at) {
        timer_mod(s->wc_timer, idle_at); /* still storing: wait on */
        return;
    }
    trace_peach2_wc_flush(s->node_id);
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

/* ---- fault injection (host-driven) ------------------------------------
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
        int64_t held = p->fault.hold_until > now ? p->fault.hold_until - now : 0;

        if (s->core) {
            peach2_core_link_fault_state(s->core, i, &drop_left, &dropped);
        }
        g_string_append_printf(out, "%s%c: cut=%d stalled=%d held_ms=%" PRId64
                               " drop_left=%u dropped=%" PRIu64,
                               i == PEACH2_PORT_E ? "" : "; ", "NEWS"[i],
                               p->fault.cut, p->fault.stalled,
                               held / SCALE_MS, drop_left, dropped);
    }
    return g_string_free(out, false);
}

/*
 * "cut P", "restore P", "drop P N", "delay P MS", "stall P", "unstall P";
 * P is E, W or S.
 */
static void peach2_fault_set(Object *obj, const char *value, Error **errp)
{
    static const char usage[] = "expected 'cut P', 'restore P', 'drop P N', "
        "'delay P MS', 'stall P' or 'unstall P' with P one of E, W, S";
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
    if (n < 2 || strlen(w[1]) != 1 || !(at = strchr(ports + 1, w[1][0]))) {
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
    } else if (!strcmp(w[0], "unstall")) {
        p->fault.stalled = false;
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

static uint64_t peach2_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    Peach2State *s = opaque;
    uint64_t val = peach2_core_reg_read(s->core, addr, size);

    trace_peach2_reg_read(s->node_id, addr, size, val);
    return val;
}

static void peach2_regs_write(void *opaque, hwaddr addr, uint64_t val,
                              unsigned size)
{
    Peach2State *s = opaque;

    trace_peach2_reg_write(s->node_id, addr, size, val);
    peach2_core_reg_write(s->core, addr, val, size);
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

static uint64_t peach2_window_read(void *opaque, hwaddr addr, unsigned size)
{
    Peach2State *s = opaque;

    return peach2_core_window_read(s->core, addr, size);
}

static void peach2_window_write(void *opaque, hwaddr addr, uint64_t val,
                                unsigned size)
{
    Peach2State *s = opaque;
    unsigned pending = peach2_core_window_write(s->core, addr, val, size);

    trace_peach2_window_store(s->node_id, addr, size, pending);
    if (pending & PEACH2_WINDOW_TX_PENDING) {
        peach2_send_queued(s);
    }
    if (pending & PEACH2_WINDOW_WC_OPEN) {
        cpu_wc_flush_mark_pending();
        s->last_store_ns = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
        if (!timer_pending(s->wc_timer)) {
            timer_mod(s->wc_timer, s->last_store_ns + PEACH2_WC_IDLE_NS);
        }
    }
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
    .read = peach2_window_read,
    .write = peach2_window_write,
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
        .schedule_service = peach2_schedule_service,
        .defer_service = peach2_defer,
        .notify = peach2_notify,
        .log = peach2_log,
        .error = peach2_error,
        .now_ns = peach2_now_ns,
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
    for (i = PEACH2_PORT_E; i < PEACH2_NR_PORTS; i++) {
        Peach2Shm *m = &s->ports[i].shm;

        m->wake_fd = m->peer_wake_fd = -1;
        m->offer_fds[0] = m->offer_fds[1] = -1;
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
    s->service_bh = qemu_bh_new_guarded(peach2_service_bh, s,
                                        &DEVICE(pdev)->mem_reentrancy_guard);
    s->wc_timer = timer_new_ns(QEMU_CLOCK_REALTIME, peach2_wc_timer, s);
    s->dma_timer = timer_new_ns(QEMU_CLOCK_REALTIME, peach2_schedule_service,
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
        cpu_wc_flush_unregister(peach2_wc_fence, s);
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
        cpu_wc_flush_unregister(peach2_wc_fence, s);
    }
    if (s->trace_file) {
        qemu_remove_exit_notifier(&s->trace_exit);
        peach2_trace_close(s);
    }
    peach2_core_free(s->core);
    s->core = NULL;
}

static void peach2_reset(DeviceState *dev)
{
    Peach2State *s = PEACH2(dev);

    if (s->core) {
        peach2_core_reset(s->core);
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
    DEFINE_PROP_UINT32("shm-ring-size", Peach2State, shm_ring_size, 4 << 20),
    DEFINE_PROP_UINT32("shm-poll-us", Peach2State, shm_poll_us, 0),
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
    object_class_property_add_str(klass, "fault", peach2_fault_get,
                                  peach2_fault_set);
    object_class_property_set_description(klass, "fault",
        "fault injection at run time (qom-set): 'cut P', 'restore P', "
        "'drop P N', 'delay P MS', 'stall P', 'unstall P' (P: E, W, S); "
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
