// The card: registers, the window and write combining, routing a packet to
// a link or delivering it here, errors and interrupts.
#include "card.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "address_map.h"
#include "util.h"

namespace peach2 {
namespace {

bool valid_size(unsigned size) { return size == 1 || size == 2 || size == 4 || size == 8; }

}  // namespace

Card::Card(const peach2_core_config& cfg, const peach2_core_host& host)
    : cfg_(cfg),
      host_(host),
      trace_(host_),
      cardmem_(PEACH2_CARDMEM_SIZE, 0),
      links_(*this, cfg),
      router_(*this),
      dma_(*this),
      rproxy_(*this),
      inbound_(*this) {}

// Guest reset: the card's own state starts over; links are cables and keep
// their state so that one node's reboot does not disturb its peers.
void Card::reset() {
    scratch_ = 0;
    int_status_ = 0;
    int_mask_ = ~0u;
    notified_ = 0;
    fault_rp_int_lost_ = 0;
    err_status_ = 0;
    err_addr_ = 0;
    err_count_ = 0;
    last_err_ = 0;
    err_by_code_.fill(0);
    host_counters_ = PortCounters{};
    // memset, not a loop: under coverage instrumentation (the fuzz build) a
    // byte loop over 64 KiB is not turned into memset and cost most of a
    // fuzz run's time (docs/notes.md, fuzz-speed).
    std::memset(cardmem_.data(), 0, cardmem_.size());
    {
        const std::lock_guard lock(wc_lock_);
        wc_.open.store(false, std::memory_order_relaxed);
    }
    links_.reset();
    router_.reset();
    dma_.reset();
    rproxy_.reset();
    inbound_.reset();
}

// ---- registers -------------------------------------------------------------

uint64_t Card::reg_read(uint64_t off, unsigned size) {
    if ((size != 4 && size != 8) || off % size != 0 || off + size > PEACH2_MSIX_TABLE_OFF) {
        raise_error(PEACH2_ERR_BAD_REG, off, "register read of size " + std::to_string(size),
                    {.value = size});
        return 0;
    }
    uint64_t v = reg_read32(off);
    if (size == 8)
        v |= static_cast<uint64_t>(reg_read32(off + 4)) << 32;
    return v;
}

void Card::reg_write(uint64_t off, uint64_t val, unsigned size) {
    if ((size != 4 && size != 8) || off % size != 0 || off + size > PEACH2_MSIX_TABLE_OFF) {
        raise_error(PEACH2_ERR_BAD_REG, off, "register write of size " + std::to_string(size),
                    {.value = size});
        return;
    }
    reg_write32(off, static_cast<uint32_t>(val));
    if (size == 8)
        reg_write32(off + 4, static_cast<uint32_t>(val >> 32));
}

// The units' registers (each claims its own offsets).
bool Card::unit_reg_read(uint64_t off, uint32_t& v) const {
    return links_.reg_read(off, v) || router_.reg_read(off, v) || dma_.reg_read(off, v) ||
           rproxy_.reg_read(off, v) || inbound_.reg_read(off, v);
}

bool Card::unit_reg_write(uint64_t off, uint32_t v) {
    return router_.reg_write(off, v) || dma_.reg_write(off, v) || rproxy_.reg_write(off, v) ||
           inbound_.reg_write(off, v);
}

uint32_t Card::reg_read32(uint64_t off) {
    if (off >= PEACH2_REG_TX_PKTS(PEACH2_PORT_N) && off < PEACH2_REG_TX_PKTS(PEACH2_PORT_E))
        return host_counters_.reg(off - PEACH2_REG_CNT_BASE);
    if (off >= PEACH2_REG_ERR_BY_CODE(0) && off < PEACH2_REG_ERR_BY_CODE(PEACH2_ERR_NR_CODES))
        return err_by_code_[(off - PEACH2_REG_ERR_BY_CODE(0)) / 4];
    if (uint32_t v = 0; unit_reg_read(off, v))
        return v;
    switch (off) {
    case PEACH2_REG_ID: return PEACH2_ID_MAGIC;
    case PEACH2_REG_VERSION: return PEACH2_VERSION_MAJOR << 16 | PEACH2_VERSION_MINOR;
    case PEACH2_REG_NODE_ID: return cfg_.node_id;
    case PEACH2_REG_NODE_COUNT: return cfg_.node_count;
    case PEACH2_REG_SLICE_SHIFT: return PEACH2_SLICE_SHIFT;
    case PEACH2_REG_HOST_SHIFT: return PEACH2_HOST_SHIFT;
    case PEACH2_REG_CAPS:
        return PEACH2_CAP_MAILBOX | PEACH2_CAP_DMA | PEACH2_CAP_ROUTING | PEACH2_CAP_READ_PROXY;
    case PEACH2_REG_SCRATCH: return scratch_;
    case PEACH2_REG_INT_STATUS: return int_status_;
    case PEACH2_REG_INT_MASK: return int_mask_;
    case PEACH2_REG_FAULT_RP_INT_LOST: return fault_rp_int_lost_;
    case PEACH2_REG_ERR_STATUS: return err_status_;
    case PEACH2_REG_ERR_COUNT: return err_count_;
    case PEACH2_REG_ERR_ADDR_LO: return lo32(err_addr_);
    case PEACH2_REG_ERR_ADDR_HI: return hi32(err_addr_);
    case PEACH2_REG_LAST_ERR: return last_err_;
    default:
        raise_error(PEACH2_ERR_BAD_REG, off, "read of undefined register " + hex(off),
                    {.value = 4});
        return 0;
    }
}

void Card::reg_write32(uint64_t off, uint32_t val) {
    if (unit_reg_write(off, val))
        return;
    switch (off) {
    case PEACH2_REG_SCRATCH: scratch_ = val; return;
    case PEACH2_REG_INT_STATUS:
        int_status_ &= ~val;
        notified_ &= int_status_;
        update_irq();
        return;
    case PEACH2_REG_INT_MASK:
        int_mask_ = val;
        update_irq();
        return;
    case PEACH2_REG_FAULT_RP_INT_LOST: fault_rp_int_lost_ = val; return;
    case PEACH2_REG_ERR_STATUS:
        if (val & PEACH2_ERR_VALID) {
            err_status_ = 0;
            err_addr_ = 0;
        }
        return;
    default:
        raise_error(PEACH2_ERR_BAD_REG, off, "write to read-only or undefined register " + hex(off),
                    {.value = 4});
    }
}

// ---- on-card memory (BAR2) ------------------------------------------------------

uint64_t Card::cardmem_read(uint64_t off, unsigned size) {
    if (!valid_size(size) || off >= cardmem_.size() || cardmem_.size() - off < size) {
        raise_error(PEACH2_ERR_BAD_REG, off, "card memory read out of range", {.value = size});
        return 0;
    }
    return load_le(cardmem_.data() + off, size);
}

void Card::cardmem_write(uint64_t off, uint64_t val, unsigned size) {
    if (!valid_size(size) || off >= cardmem_.size() || cardmem_.size() - off < size) {
        raise_error(PEACH2_ERR_BAD_REG, off, "card memory write out of range", {.value = size});
        return;
    }
    store_le(cardmem_.data() + off, val, size);
}

// ---- the window (BAR4) -------------------------------------------------------

uint64_t Card::window_read(uint64_t off, unsigned size) {
    // PEACH2 does not do remote reads (PEACH2-REFERENCE.md 3.5): the load
    // completes with all ones, as an unsupported request would.
    raise_error(PEACH2_ERR_READ_UNSUPPORTED, off, "load from the write-only window",
                {.value = size});
    return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
}

unsigned Card::window_write(uint64_t off, uint64_t val, unsigned size) {
    bool open = true;  // combine() leaves a write open
    if (!valid_size(size) || off >= PEACH2_WINDOW_SIZE || PEACH2_WINDOW_SIZE - off < size) {
        raise_error(PEACH2_ERR_BAD_TARGET, off, "window store out of range", {.value = size});
        open = write_open();
    } else {
        combine(off, val, size);
    }
    // The caller (the vCPU's store) sends what this queued itself, right
    // after the call: no bottom half, no hand-over of the I/O lock.
    return (tx_pending() ? PEACH2_WINDOW_TX_PENDING : 0u) | (open ? PEACH2_WINDOW_WC_OPEN : 0u);
}

bool Card::window_append(uint64_t off, uint64_t val, unsigned size) {
    if (!valid_size(size) || off % kPage > kPage - size)
        return false;  // not across a page: inside the window, as the open write is
    if (!wc_.open.load(std::memory_order_relaxed))
        return false;  // a hint (the first store of a write): no lock taken
    const std::lock_guard lock(wc_lock_);
    if (!continues_write(off, size))
        return false;
    store_le64(wc_.data.data() + wc_.len, val);
    wc_.len += size;
    return true;
}

bool Card::continues_write(uint64_t addr, unsigned len) const noexcept {
    return wc_.open.load(std::memory_order_relaxed) && wc_.addr + wc_.len == addr &&
           wc_.len + len <= PEACH2_WC_MAX && addr % kPage != 0;
}

// Merge contiguous stores into one packet, as a write-combining buffer and
// PCIe's max payload do: never past PEACH2_WC_MAX bytes or a 4 KiB boundary.
void Card::combine(uint64_t off, uint64_t val, unsigned size) {
    for (unsigned done = 0; done < size;) {
        const uint64_t addr = off + done;
        const unsigned piece =
            static_cast<unsigned>(std::min<uint64_t>(size - done, kPage - addr % kPage));
        std::unique_lock lock(wc_lock_);
        if (!continues_write(addr, piece)) {
            if (wc_.open.load(std::memory_order_relaxed)) {
                lock.unlock();
                close_write();
                lock.lock();
            }
            wc_.open.store(true, std::memory_order_relaxed);
            wc_.addr = addr;
            wc_.len = 0;
        }
        // The piece's bytes and those after it (done < size <= 8): a whole
        // word, of which only the piece counts (see OpenWrite).
        store_le64(wc_.data.data() + wc_.len, val >> (8 * done));
        wc_.len += piece;
        done += piece;
    }
}

void Card::close_write() {
    {
        const std::lock_guard lock(wc_lock_);
        if (!wc_.open.load(std::memory_order_relaxed))
            return;
        // window_append() leaves the bytes alone from now on.
        wc_.open.store(false, std::memory_order_relaxed);
    }
    // Nothing on the way (an error report, a direct write) stores into the
    // window, and only serialised calls open a write: the bytes stay put.
    sat_inc(host_counters_.rx_pkts);
    host_counters_.rx_bytes += wc_.len;
    route_write(wc_.addr, wc_.bytes(), {});
}

// Work that must not run inside a register write or a store: the bottom half.
void Card::service(uint64_t max_dma_bytes) {
    // A firmware image handed over: loaded in the full service only (the
    // bounded one may run in a vCPU, docs/hardware.md §5).
    if (!max_dma_bytes)
        router_.service();
    else if (router_.service_due())
        schedule_service();
    close_write();  // stores the CPU made before starting a DMA go first
    dma_.service(max_dma_bytes);
}

// ---- routing and delivery ------------------------------------------------------

peach2_err Card::send_packet(uint8_t type, uint64_t addr, std::span<const uint8_t> data,
                             const Made& why) {
    const uint32_t node = PEACH2_ADDR_NODE(addr);
    const PacketId id{cfg_.node_id, node < next_number_.size() ? next_number_[node]++ : 0,
                      PEACH2_PORT_N};
    return route(type, addr, data, 0, id, &why);
}

peach2_err Card::route_packet(uint8_t type, uint64_t addr, std::span<const uint8_t> data,
                              unsigned hops, const PacketId& from) {
    return route(type, addr, data, hops, from, nullptr);
}

// `made`: this card made the packet (PKT_SEND), else it came by a link
// (PKT_FWD when it goes on).
peach2_err Card::route(uint8_t type, uint64_t addr, std::span<const uint8_t> data, unsigned hops,
                       const PacketId& from, const Made* made) {
    const uint32_t node = PEACH2_ADDR_NODE(addr);
    const uint32_t src_node = from.src_node;
    const auto sent = [&](unsigned port) {
        trace_.record([&] {
            const auto s = static_cast<uint16_t>(src_node), d = static_cast<uint16_t>(node);
            const auto len = static_cast<uint32_t>(data.size());
            const auto out = static_cast<uint8_t>(port);
            if (!made)
                return trace::pkt_fwd(static_cast<uint8_t>(from.in_port), out, addr, len, s, d,
                                      from.number);
            return trace::pkt_send(made->origin, out, addr, len, s, d, from.number, made->channel,
                                   made->run, made->desc);
        });
    };
    if (!router_.table_enabled() && node == cfg_.node_id) {
        if (made)
            sent(PEACH2_PORT_N);
        return deliver(type, addr, data, from);
    }
    if (node >= cfg_.node_count) {
        raise_error(
            PEACH2_ERR_NO_SUCH_NODE, addr,
            "store to node " + std::to_string(node) + " of " + std::to_string(cfg_.node_count),
            {.node = node});
        return PEACH2_ERR_NO_SUCH_NODE;
    }
    if (hops >= PEACH2_PKT_HOP_LIMIT) {
        raise_error(PEACH2_ERR_HOP_LIMIT, addr, "packet from node " + std::to_string(src_node),
                    {.node = src_node});
        return PEACH2_ERR_HOP_LIMIT;
    }
    peach2_err why = PEACH2_ERR_NO_ROUTE;
    const std::optional<unsigned> port = router_.port_for(addr, why);
    if (port == PEACH2_PORT_N) {
        if (made)
            sent(PEACH2_PORT_N);
        return deliver(type, addr, data, from);
    }
    if (!port) {
        raise_error(why, addr, "no usable port towards node " + std::to_string(node),
                    {.node = node});
        return why;
    }
    if (made && type == PEACH2_PKT_WRITE && send_direct(*port, node, addr, data)) {
        sent(*port);
        return PEACH2_ERR_NONE;
    }
    peach2_pkt_hdr hdr{};
    hdr.type = type;
    hdr.hops = static_cast<uint8_t>(hops);  // < PEACH2_PKT_HOP_LIMIT: no wrap
    hdr.src_node = static_cast<uint16_t>(src_node);
    hdr.dst_node = static_cast<uint16_t>(node);
    hdr.addr = addr;
    hdr.number = from.number;
    const peach2_err e = links_.send(*port, hdr, data);
    if (e == PEACH2_ERR_NONE)
        sent(*port);
    return e;
}

// A write this card made, for the host memory of the neighbour on `port`,
// handed to the transport to apply straight there (docs/hardware.md, "Link
// transports"). Only when nothing is queued before it on the port (writes
// from one source arrive in order) and no trace is recorded (the peer would
// not see the packet arrive). Forwarded packets always travel as packets, so
// the cards between show them.
bool Card::send_direct(unsigned port, uint32_t node, uint64_t addr,
                       std::span<const uint8_t> data) {
    if (!host_.direct_write)
        return false;
    const std::optional<uint64_t> at = direct_offset(port, node, addr, data.size());
    if (!at || !host_.direct_write(host_.opaque, port, *at, data.data(), data.size()))
        return false;
    links_.count_direct_tx(port, 1, data.size());
    return true;
}

// Where a write of len bytes to addr lands in the peer's host memory, if it
// may go there directly (send_direct's conditions).
std::optional<uint64_t> Card::direct_offset(unsigned port, uint32_t node, uint64_t addr,
                                            size_t len) const {
    if (trace_.on() || !links_.direct_ready(port, node))
        return std::nullopt;
    const Decoded d = decode_global(addr, len);
    if (d.region != Region::Host)
        return std::nullopt;
    return d.offset;
}

// The DMA side of send_direct: the same route and conditions as a WRITE
// packet this card makes (route()), numbered and counted as the `packets`
// it replaces; the transport reads the source itself, so the bytes are
// copied once.
bool Card::copy_direct(uint64_t dst, uint64_t src, size_t len, uint64_t packets) {
    const uint32_t node = PEACH2_ADDR_NODE(dst);
    if (!host_.direct_copy || node >= cfg_.node_count ||
        (!router_.table_enabled() && node == cfg_.node_id))
        return false;
    peach2_err why = PEACH2_ERR_NO_ROUTE;
    const std::optional<unsigned> port = router_.port_for(dst, why);
    if (!port || *port == PEACH2_PORT_N)
        return false;
    const std::optional<uint64_t> at = direct_offset(*port, node, dst, len);
    if (!at || !host_.direct_copy(host_.opaque, *port, *at, src, len, packets))
        return false;
    next_number_[node] += static_cast<uint32_t>(packets);
    links_.count_direct_tx(*port, packets, len);
    return true;
}

void Card::count_direct(unsigned port, uint64_t pkts, uint64_t bytes) {
    if (!links_.count_direct_rx(port, pkts, bytes))
        return;
    host_counters_.tx_pkts = sat_add(host_counters_.tx_pkts, pkts);
    host_counters_.tx_bytes += bytes;
}

// A packet for this node: a read-proxy request for the doorbell, or a write.
peach2_err Card::deliver(uint8_t type, uint64_t addr, std::span<const uint8_t> data,
                         const PacketId& from) {
    if (type == PEACH2_PKT_RPREQ) {
        rproxy_.receive(addr, from, data);
        return PEACH2_ERR_NONE;
    }
    return deliver_write(addr, data, from);
}

peach2_err Card::deliver_write(uint64_t addr, std::span<const uint8_t> data, const PacketId& from) {
    const Decoded d = decode_global(addr, data.size());
    const bool mailbox = d.region == Region::Mailbox;
    const peach2_err e = write_here(d, addr, data);
    trace_recv(mailbox ? trace::RecvKind::Mailbox : trace::RecvKind::Memory, addr, data.size(),
               from, e);
    if (mailbox && e == PEACH2_ERR_NONE)
        raise_interrupt(PEACH2_INT_MAILBOX);
    return e;
}

void Card::trace_recv(trace::RecvKind kind, uint64_t addr, size_t len, const PacketId& from,
                      peach2_err error, uint8_t op, uint64_t tag) {
    trace_.record([&] {
        return trace::pkt_recv(kind, static_cast<uint8_t>(from.in_port), addr,
                               static_cast<uint32_t>(len), static_cast<uint16_t>(from.src_node),
                               static_cast<uint16_t>(cfg_.node_id), from.number,
                               static_cast<uint8_t>(error), op, tag);
    });
}

// Apply a write for this node (the mailbox's interrupt is the caller's).
peach2_err Card::write_here(const Decoded& d, uint64_t addr, std::span<const uint8_t> data) {
    switch (d.region) {
    case Region::Host:
        if (!inbound_.admits(d.offset, data.size())) {
            raise_error(PEACH2_ERR_NOT_REGISTERED, addr,
                        "write to host memory no buffer is registered for", {.value = data.size()});
            return PEACH2_ERR_NOT_REGISTERED;
        }
        if (!host_write(d.offset, data.data(), data.size())) {
            raise_error(PEACH2_ERR_DMA_WRITE, addr,
                        "host memory rejected write at " + hex(d.offset), {.value = data.size()});
            return PEACH2_ERR_DMA_WRITE;
        }
        sat_inc(host_counters_.tx_pkts);
        host_counters_.tx_bytes += data.size();
        return PEACH2_ERR_NONE;
    case Region::Mailbox:
        std::copy(data.begin(), data.end(), cardmem_.begin() + PEACH2_MAILBOX_OFF + d.offset);
        return PEACH2_ERR_NONE;
    case Region::Gpu:
        raise_error(PEACH2_ERR_NO_GPU, addr, "write to a GPU region", {.value = data.size()});
        return PEACH2_ERR_NO_GPU;
    case Region::CardReserved:
    case Region::Unmapped: break;
    }
    raise_error(PEACH2_ERR_BAD_TARGET, addr, "write to an unmapped slice offset",
                {.value = data.size()});
    return PEACH2_ERR_BAD_TARGET;
}

// ---- errors and interrupts ----------------------------------------------------

void Card::raise_error(peach2_err code, uint64_t addr, const std::string& what, ErrorFacts facts) {
    sat_inc(err_count_);
    sat_inc(err_by_code_[code]);
    last_err_ = code;
    if (!(err_status_ & PEACH2_ERR_VALID)) {
        err_status_ = PEACH2_ERR_VALID | code;
        err_addr_ = addr;
    }
    log(PEACH2_LOG_GUEST_ERROR, [&] {
        return std::string("peach2 node ") + std::to_string(cfg_.node_id) + ": " +
               peach2_err_text(code) + " (" + what + ") at " + hex(addr);
    });
    if (host_.error) {
        const peach2_core_error e{code,       PEACH2_FW_NONE, true,        addr,        facts.port,
                                  facts.node, facts.channel,  facts.value, what.c_str()};
        host_.error(host_.opaque, &e);
    }
    raise_interrupt(PEACH2_INT_ERROR);
}

void Card::report(const peach2_core_error& e, int level) {
    if (level == PEACH2_LOG_GUEST_ERROR || level == PEACH2_LOG_INFO)
        log(level, [&] { return "peach2 node " + std::to_string(cfg_.node_id) + ": " + e.what; });
    if (host_.error)
        host_.error(host_.opaque, &e);
}

void Card::raise_interrupt(uint32_t bits) {
    int_status_ |= bits;
    update_irq();
}

// Interrupts are messages (MSI-X): one per newly pending, unmasked status
// bit; nothing more until the driver clears that bit.
void Card::update_irq() {
    const uint32_t fresh = int_status_ & ~int_mask_ & ~notified_;
    if (!fresh)
        return;
    notified_ |= fresh;
    if (!host_.notify)
        return;
    const auto notify = [&](unsigned vector, uint32_t bits) {
        trace_.record([&] { return trace::irq(static_cast<uint8_t>(vector), bits); });
        host_.notify(host_.opaque, vector);
    };
    constexpr uint32_t kMisc = PEACH2_INT_ERROR | PEACH2_INT_LINK | PEACH2_INT_MAILBOX;
    if (fresh & kMisc)
        notify(PEACH2_INT_VECTOR_MISC, fresh & kMisc);
    if (fresh & PEACH2_INT_RP) {
        if (fault_rp_int_lost_ > 0)
            --fault_rp_int_lost_;  // withheld: signalled as far as the card knows
        else
            notify(PEACH2_INT_VECTOR_RP, PEACH2_INT_RP);
    }
    for (unsigned ch = 0; ch < PEACH2_DMA_ENGINES; ++ch)
        if (fresh & PEACH2_INT_DMA(ch))
            notify(PEACH2_INT_VECTOR_DMA(ch), PEACH2_INT_DMA(ch));
}

bool Card::log_open(int level) {
    if (!host_.log)
        return false;
    const auto now = std::chrono::steady_clock::now().time_since_epoch();
    uint64_t held_back = 0;
    if (!log_limits_[level == PEACH2_LOG_INFO].allow(
            static_cast<uint64_t>(std::chrono::nanoseconds(now).count()), held_back))
        return false;
    if (held_back) {
        const std::string note =
            (level == PEACH2_LOG_INFO ? "" : "peach2 node " + std::to_string(cfg_.node_id) + ": ") +
            std::to_string(held_back) +
            " log lines suppressed (rate limit; errors are still counted and traced)";
        host_.log(host_.opaque, level, note.c_str());
    }
    return true;
}

// ---- the host ------------------------------------------------------------------

// Start tracing; the links' states go first (the model's cabling).
bool Card::trace_open(const std::string& path, uint32_t ring_records, std::string* err) {
    if (!trace_.open(path, cfg_.node_id, cfg_.node_count, ring_records, err))
        return false;
    links_.trace_states();
    return true;
}

bool Card::host_read(uint64_t addr, void* buf, size_t len) {
    return host_.dma_read && host_.dma_read(host_.opaque, addr, buf, len) == 0;
}

bool Card::host_write(uint64_t addr, const void* buf, size_t len) {
    return host_.dma_write(host_.opaque, addr, buf, len) == 0;
}

void Card::schedule_service() {
    if (host_.schedule_service)
        host_.schedule_service(host_.opaque);
}

void Card::defer_service() {
    if (host_.defer_service)
        host_.defer_service(host_.opaque);
    else
        schedule_service();
}

void Card::links_drained() {
    // A DMA run paused for that link can go on (or end, if it went down).
    if (dma_.busy())
        schedule_service();
}

bool Card::link_backlogged_for(uint64_t addr) const {
    // Writes delivered here (PORT_N) and writes with no route never wait:
    // route_packet delivers or reports them.
    peach2_err why = PEACH2_ERR_NONE;
    const std::optional<unsigned> port = router_.port_for(addr, why);
    return port && *port != PEACH2_PORT_N && links_.backlogged(*port);
}

}  // namespace peach2
