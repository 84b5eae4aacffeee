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
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/timer.h"
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

typedef struct Peach2Port {
    Peach2State *dev;
    unsigned port;
    CharBackend chr;
    guint watch;        /* waiting for the chardev to become writable */
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
    int64_t dma_burst_start;
    int64_t last_store_ns;
    Peach2Port ports[PEACH2_NR_PORTS]; /* E, W, S used; N is the host */

    uint32_t node_id;
    uint32_t node_count;
    uint64_t tx_limit;
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

    peach2_core_service(s->core);
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
    return PEACH2_RX_CHUNK;
}

static void peach2_port_receive(void *opaque, const uint8_t *buf, int size)
{
    Peach2Port *p = opaque;
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
}

static void peach2_port_event(void *opaque, QEMUChrEvent event)
{
    Peach2Port *p = opaque;

    trace_peach2_link_event(p->dev->node_id, p->port, event);
    switch (event) {
    case CHR_EVENT_OPENED:
        peach2_core_link_connected(p->dev->core, p->port, true);
        peach2_send_queued(p->dev); /* HELLO */
        break;
    case CHR_EVENT_CLOSED:
        if (p->watch) {
            g_source_remove(p->watch);
            p->watch = 0;
        }
        peach2_core_link_connected(p->dev->core, p->port, false);
        break;
    default:
        break;
    }
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
    };
    char why[256];
    unsigned i;

    s->core = peach2_core_new(&cfg, &host, why, sizeof(why));
    if (!s->core) {
        error_setg(errp, "peach2: %s (node-id=%u nodes=%u)", why,
                   s->node_id, s->node_count);
        return;
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
        qemu_chr_fe_deinit(&s->ports[i].chr, false);
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
