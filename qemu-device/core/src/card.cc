#include "card.h"
#include "util.h"

#include <algorithm>
#include <cstring>

namespace peach2 {
namespace {

constexpr uint64_t kDefaultTxLimit = 64ull << 20;
constexpr uint64_t kPage = 4096;

size_t link_limit(const peach2_core_config& cfg) {
    return cfg.tx_limit ? cfg.tx_limit : kDefaultTxLimit;
}

const char* port_name(unsigned port) {
    static constexpr const char* names[] = {"N", "E", "W", "S"};
    return port < PEACH2_NR_PORTS ? names[port] : "?";
}

bool valid_size(unsigned size) { return size == 1 || size == 2 || size == 4 || size == 8; }



}  // namespace

Card::Card(const peach2_core_config& cfg, const peach2_core_host& host)
    : cfg_(cfg),
      host_(host),
      cardmem_(PEACH2_CARDMEM_SIZE, 0),
      links_{Link(link_limit(cfg)), Link(link_limit(cfg)), Link(link_limit(cfg)),
             Link(link_limit(cfg))} {}

// Guest reset: the card's own state starts over; links are cables and keep
// their state so that one node's reboot does not disturb its peers.
void Card::reset() {
    scratch_ = 0;
    in_ctrl_ = PEACH2_IN_ENABLE;
    in_base_ = 0;
    in_size_ = 0;
    in_result_ = 0;
    inbound_.clear();
    int_status_ = 0;
    int_mask_ = ~0u;
    notified_ = 0;
    err_status_ = 0;
    err_addr_ = 0;
    err_count_ = 0;
    last_err_ = 0;
    err_by_code_.fill(0);
    counters_.fill(Counters{});
    std::fill(cardmem_.begin(), cardmem_.end(), 0);
    open_.reset();
    dma_reset();
    routing_reset();
    rp_reset();
}

// ---- registers -------------------------------------------------------------

uint64_t Card::reg_read(uint64_t off, unsigned size) {
    if ((size != 4 && size != 8) || off % size != 0 || off + size > PEACH2_MSIX_TABLE_OFF) {
        raise_error(PEACH2_ERR_BAD_REG, off, "register read of size " + std::to_string(size));
        return 0;
    }
    uint64_t v = reg_read32(off);
    if (size == 8)
        v |= static_cast<uint64_t>(reg_read32(off + 4)) << 32;
    return v;
}

uint32_t Card::link_reg(unsigned port) const {
    const Link& l = links_[port];
    uint32_t v = 0;
    if (link_usable(port))
        v |= PEACH2_LINK_UP | (l.peer_port << PEACH2_LINK_PEER_PORT_SHIFT) |
             (l.peer_node << PEACH2_LINK_PEER_NODE_SHIFT);
    if (l.connected)
        v |= PEACH2_LINK_CONNECTED;
    return v;
}

uint32_t Card::reg_read32(uint64_t off) {
    if (off >= PEACH2_REG_CNT_BASE &&
        off < PEACH2_REG_CNT_BASE + PEACH2_REG_CNT_STRIDE * PEACH2_NR_PORTS) {
        const uint64_t rel = off - PEACH2_REG_CNT_BASE;
        const Counters& c = counters_[rel / PEACH2_REG_CNT_STRIDE];
        const uint64_t fields[] = {c.tx_pkts, c.tx_bytes, c.rx_pkts, c.rx_bytes};
        const uint64_t v = fields[(rel % PEACH2_REG_CNT_STRIDE) / 8];
        return static_cast<uint32_t>((rel & 4) ? v >> 32 : v);
    }
    if (off >= PEACH2_REG_ERR_BY_CODE(0) && off < PEACH2_REG_ERR_BY_CODE(PEACH2_ERR_NR_CODES))
        return err_by_code_[(off - PEACH2_REG_ERR_BY_CODE(0)) / 4];
    if (uint32_t v = 0; routing_reg_read(off, v) || rp_reg_read(off, v))
        return v;
    if (off >= PEACH2_REG_DMA_BASE &&
        off < PEACH2_REG_DMA_BASE + PEACH2_REG_DMA_STRIDE * PEACH2_DMA_ENGINES) {
        const uint64_t rel = off - PEACH2_REG_DMA_BASE;
        return dma_reg_read(static_cast<unsigned>(rel / PEACH2_REG_DMA_STRIDE),
                            static_cast<uint32_t>(rel % PEACH2_REG_DMA_STRIDE));
    }
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
    case PEACH2_REG_LINK(0): return link_reg(PEACH2_PORT_E);
    case PEACH2_REG_LINK(1): return link_reg(PEACH2_PORT_W);
    case PEACH2_REG_LINK(2): return link_reg(PEACH2_PORT_S);
    case PEACH2_REG_IN_CTRL: return in_ctrl_;
    case PEACH2_REG_IN_COUNT: return static_cast<uint32_t>(inbound_.size());
    case PEACH2_REG_IN_BASE_LO: return static_cast<uint32_t>(in_base_);
    case PEACH2_REG_IN_BASE_HI: return static_cast<uint32_t>(in_base_ >> 32);
    case PEACH2_REG_IN_SIZE_LO: return static_cast<uint32_t>(in_size_);
    case PEACH2_REG_IN_SIZE_HI: return static_cast<uint32_t>(in_size_ >> 32);
    case PEACH2_REG_IN_RESULT: return in_result_;
    case PEACH2_REG_INT_STATUS: return int_status_;
    case PEACH2_REG_INT_MASK: return int_mask_;
    case PEACH2_REG_ERR_STATUS: return err_status_;
    case PEACH2_REG_ERR_COUNT: return err_count_;
    case PEACH2_REG_ERR_ADDR_LO: return static_cast<uint32_t>(err_addr_);
    case PEACH2_REG_ERR_ADDR_HI: return static_cast<uint32_t>(err_addr_ >> 32);
    case PEACH2_REG_LAST_ERR: return last_err_;
    default:
        raise_error(PEACH2_ERR_BAD_REG, off, "read of undefined register " + hex(off));
        return 0;
    }
}

void Card::reg_write(uint64_t off, uint64_t val, unsigned size) {
    if ((size != 4 && size != 8) || off % size != 0 || off + size > PEACH2_MSIX_TABLE_OFF) {
        raise_error(PEACH2_ERR_BAD_REG, off, "register write of size " + std::to_string(size));
        return;
    }
    reg_write32(off, static_cast<uint32_t>(val));
    if (size == 8)
        reg_write32(off + 4, static_cast<uint32_t>(val >> 32));
}

void Card::reg_write32(uint64_t off, uint32_t val) {
    if (routing_reg_write(off, val) || rp_reg_write(off, val))
        return;
    if (off >= PEACH2_REG_DMA_BASE &&
        off < PEACH2_REG_DMA_BASE + PEACH2_REG_DMA_STRIDE * PEACH2_DMA_ENGINES) {
        const uint64_t rel = off - PEACH2_REG_DMA_BASE;
        dma_reg_write(static_cast<unsigned>(rel / PEACH2_REG_DMA_STRIDE),
                      static_cast<uint32_t>(rel % PEACH2_REG_DMA_STRIDE), val);
        return;
    }
    switch (off) {
    case PEACH2_REG_SCRATCH:
        scratch_ = val;
        return;
    case PEACH2_REG_IN_CTRL:
        in_ctrl_ = val & PEACH2_IN_ENABLE;
        return;
    case PEACH2_REG_IN_BASE_LO:
        in_base_ = (in_base_ & ~0xffffffffull) | val;
        return;
    case PEACH2_REG_IN_BASE_HI:
        in_base_ = (in_base_ & 0xffffffffull) | static_cast<uint64_t>(val) << 32;
        return;
    case PEACH2_REG_IN_SIZE_LO:
        in_size_ = (in_size_ & ~0xffffffffull) | val;
        return;
    case PEACH2_REG_IN_SIZE_HI:
        in_size_ = (in_size_ & 0xffffffffull) | static_cast<uint64_t>(val) << 32;
        return;
    case PEACH2_REG_IN_CMD:
        inbound_command(val);
        return;
    case PEACH2_REG_INT_STATUS:
        int_status_ &= ~val;
        notified_ &= int_status_;
        update_irq();
        return;
    case PEACH2_REG_INT_MASK:
        int_mask_ = val;
        update_irq();
        return;
    case PEACH2_REG_ERR_STATUS:
        if (val & PEACH2_ERR_VALID) {
            err_status_ = 0;
            err_addr_ = 0;
        }
        return;
    default:
        raise_error(PEACH2_ERR_BAD_REG, off, "write to read-only or undefined register " + hex(off));
    }
}

void Card::inbound_command(uint32_t cmd) {
    peach2_err r = PEACH2_ERR_BAD_COMMAND;
    switch (cmd) {
    case PEACH2_IN_CMD_ADD: r = inbound_.add(in_base_, in_size_); break;
    case PEACH2_IN_CMD_REMOVE: r = inbound_.remove(in_base_); break;
    case PEACH2_IN_CMD_CLEAR: inbound_.clear(); r = PEACH2_ERR_NONE; break;
    default: break;
    }
    in_result_ = r;
    if (r != PEACH2_ERR_NONE)
        raise_error(r, in_base_, "inbound filter command " + std::to_string(cmd) + " refused (base " +
                                     hex(in_base_) + ", size " + hex(in_size_) + ")");
}

// ---- on-card memory (BAR2) ------------------------------------------------------

uint64_t Card::cardmem_read(uint64_t off, unsigned size) {
    if (!valid_size(size) || off >= cardmem_.size() || cardmem_.size() - off < size) {
        raise_error(PEACH2_ERR_BAD_REG, off, "card memory read out of range");
        return 0;
    }
    return load_le(cardmem_.data() + off, size);
}

void Card::cardmem_write(uint64_t off, uint64_t val, unsigned size) {
    if (!valid_size(size) || off >= cardmem_.size() || cardmem_.size() - off < size) {
        raise_error(PEACH2_ERR_BAD_REG, off, "card memory write out of range");
        return;
    }
    store_le(cardmem_.data() + off, val, size);
}

// ---- the window (BAR4) -------------------------------------------------------

uint64_t Card::window_read(uint64_t off, unsigned size) {
    // PEACH2 does not do remote reads (PEACH2-REFERENCE.md 3.5): the load
    // completes with all ones, as an unsupported request would.
    raise_error(PEACH2_ERR_READ_UNSUPPORTED, off, "load from the write-only window");
    return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
}

unsigned Card::window_write(uint64_t off, uint64_t val, unsigned size) {
    // The caller (the vCPU's store) sends what this queues itself, right
    // after the call: no bottom half, no hand-over of the I/O lock.
    quiet_ = true;
    kicked_ = false;
    window_store(off, val, size);
    quiet_ = false;
    return (kicked_ ? PEACH2_WINDOW_TX_PENDING : 0u) | (open_ ? PEACH2_WINDOW_WC_OPEN : 0u);
}

void Card::window_store(uint64_t off, uint64_t val, unsigned size) {
    if (!valid_size(size) || off >= PEACH2_WINDOW_SIZE || PEACH2_WINDOW_SIZE - off < size) {
        raise_error(PEACH2_ERR_BAD_TARGET, off, "window store out of range");
        return;
    }
    uint8_t bytes[8];
    store_le(bytes, val, size);
    // Merge contiguous stores into one packet, as a write-combining buffer
    // and PCIe's max payload do: never past PEACH2_WC_MAX bytes or a 4 KiB
    // boundary.
    for (unsigned done = 0; done < size;) {
        const uint64_t addr = off + done;
        const unsigned piece = static_cast<unsigned>(
            std::min<uint64_t>(size - done, kPage - addr % kPage));
        const bool merge = open_ && open_->addr + open_->data.size() == addr &&
                           open_->data.size() + piece <= PEACH2_WC_MAX &&
                           addr % kPage != 0;
        if (!merge) {
            flush();
            open_.emplace();
            open_->addr = addr;
            open_->data.reserve(PEACH2_WC_MAX);
        }
        open_->data.insert(open_->data.end(), bytes + done, bytes + done + piece);
        done += piece;
    }
}

void Card::flush() {
    if (fw_pending_)
        fw_load();
    if (open_) {
        OpenWrite w = std::move(*open_);
        open_.reset();
        sat_inc(counters_[PEACH2_PORT_N].rx_pkts);
        counters_[PEACH2_PORT_N].rx_bytes += w.data.size();
        route_write(w.addr, w.data, 0, cfg_.node_id);
    }
    dma_run();
}

// ---- routing and delivery ------------------------------------------------------

std::optional<unsigned> Card::port_towards(uint32_t node, peach2_err& why) const {
    // Default routing: a port whose link is up to exactly that node.
    // (Routing tables programmed from firmware come with multi-hop topologies.)
    bool some_down = false;
    for (unsigned p = PEACH2_PORT_E; p <= PEACH2_PORT_S; ++p) {
        const Link& l = links_[p];
        if (link_usable(p) && l.peer_node == node)
            return p;
        if (l.attached && !link_usable(p))
            some_down = true;
    }
    why = some_down ? PEACH2_ERR_LINK_DOWN : PEACH2_ERR_NO_ROUTE;
    return std::nullopt;
}

peach2_err Card::route_packet(uint8_t type, uint64_t addr, std::span<const uint8_t> data,
                              uint8_t hops, uint32_t src_node) {
    const uint32_t node = PEACH2_ADDR_NODE(addr);
    const bool table = route_ctrl_ & PEACH2_ROUTE_ENABLE;
    const auto deliver = [&] {
        if (type == PEACH2_PKT_RPREQ) {
            rp_receive(addr, src_node, data);
            return PEACH2_ERR_NONE;
        }
        return deliver_local(addr, data);
    };
    if (!table && node == cfg_.node_id)
        return deliver();
    if (node >= cfg_.node_count) {
        raise_error(PEACH2_ERR_NO_SUCH_NODE, addr,
                    "store to node " + std::to_string(node) + " of " +
                        std::to_string(cfg_.node_count));
        return PEACH2_ERR_NO_SUCH_NODE;
    }
    if (hops >= PEACH2_PKT_HOP_LIMIT) {
        raise_error(PEACH2_ERR_HOP_LIMIT, addr, "packet from node " + std::to_string(src_node));
        return PEACH2_ERR_HOP_LIMIT;
    }
    peach2_err why = PEACH2_ERR_NO_ROUTE;
    std::optional<unsigned> port;
    if (table) {
        port = table_port(addr);
        if (port == PEACH2_PORT_N)
            return deliver();
        if (port && !link_usable(*port)) {
            why = PEACH2_ERR_LINK_DOWN;
            port.reset();
        }
    } else {
        port = port_towards(node, why);
    }
    if (!port) {
        raise_error(why, addr, "no usable port towards node " + std::to_string(node));
        return why;
    }
    peach2_pkt_hdr hdr{};
    hdr.type = type;
    hdr.hops = hops;
    hdr.src_node = static_cast<uint16_t>(src_node);
    hdr.dst_node = static_cast<uint16_t>(node);
    hdr.addr = addr;
    return send(*port, hdr, data);
}

peach2_err Card::deliver_local(uint64_t addr, std::span<const uint8_t> data) {
    const Decoded d = decode_global(addr, data.size());
    switch (d.region) {
    case Region::Host:
        if ((in_ctrl_ & PEACH2_IN_ENABLE) && !inbound_.contains(d.offset, data.size())) {
            raise_error(PEACH2_ERR_NOT_REGISTERED, addr,
                        "write to host memory no buffer is registered for");
            return PEACH2_ERR_NOT_REGISTERED;
        }
        if (host_.dma_write(host_.opaque, d.offset, data.data(), data.size()) != 0) {
            raise_error(PEACH2_ERR_DMA_WRITE, addr, "host memory rejected write at " + hex(d.offset));
            return PEACH2_ERR_DMA_WRITE;
        }
        sat_inc(counters_[PEACH2_PORT_N].tx_pkts);
        counters_[PEACH2_PORT_N].tx_bytes += data.size();
        return PEACH2_ERR_NONE;
    case Region::Mailbox:
        std::copy(data.begin(), data.end(), cardmem_.begin() + PEACH2_MAILBOX_OFF + d.offset);
        raise_interrupt(PEACH2_INT_MAILBOX);
        return PEACH2_ERR_NONE;
    case Region::Gpu:
        raise_error(PEACH2_ERR_NO_GPU, addr, "write to a GPU region");
        return PEACH2_ERR_NO_GPU;
    case Region::CardReserved:
    case Region::Unmapped:
        break;
    }
    raise_error(PEACH2_ERR_BAD_TARGET, addr, "write to an unmapped slice offset");
    return PEACH2_ERR_BAD_TARGET;
}

// ---- links -----------------------------------------------------------------

Link* Card::link(unsigned port) {
    if (port < PEACH2_PORT_E || port > PEACH2_PORT_S)
        return nullptr;
    return &links_[port];
}

peach2_err Card::send(unsigned port, peach2_pkt_hdr hdr, std::span<const uint8_t> payload) {
    Link& l = links_[port];
    if (!l.tx.fits(kHeaderSize + payload.size())) {
        raise_error(PEACH2_ERR_TX_OVERFLOW, hdr.addr,
                    std::string("port ") + port_name(port) + " send queue full");
        return PEACH2_ERR_TX_OVERFLOW;
    }
    hdr.magic = PEACH2_PKT_MAGIC;
    hdr.version = PEACH2_PKT_VERSION;
    hdr.seq = l.tx_seq++;
    l.tx.append([&](std::vector<uint8_t>& out) { encode_packet(hdr, payload, out); });
    sat_inc(counters_[port].tx_pkts);
    counters_[port].tx_bytes += payload.size();
    kick();
    return PEACH2_ERR_NONE;
}

void Card::send_hello(unsigned port) {
    peach2_hello hello{cfg_.node_id, cfg_.node_count, port,
                       PEACH2_VERSION_MAJOR << 16 | PEACH2_VERSION_MINOR};
    peach2_pkt_hdr hdr{};
    hdr.type = PEACH2_PKT_HELLO;
    hdr.src_node = static_cast<uint16_t>(cfg_.node_id);
    hdr.dst_node = static_cast<uint16_t>(cfg_.node_id);
    send(port, hdr, encode_hello(hello));
}

void Card::link_attach(unsigned port) {
    if (Link* l = link(port))
        l->attached = true;
}

void Card::link_connected(unsigned port, bool connected) {
    Link* l = link(port);
    if (!l)
        return;
    if (!connected) {
        link_down(port, "transport closed");
        l->connected = false;
        return;
    }
    // A new connection is a new stream: forget the old one completely.
    link_down(port, "transport reconnected");
    l->connected = true;
    l->rx.reset();
    l->rx_seq = 0;
    l->tx.clear();
    l->tx_seq = 0;
    send_hello(port);
}

void Card::link_down(unsigned port, const char* why) {
    Link& l = links_[port];
    if (l.up) {
        log(PEACH2_LOG_INFO, std::string("link ") + port_name(port) + " down: " + why);
        l.up = false;
        raise_interrupt(PEACH2_INT_LINK);
    }
    if (!l.tx.empty()) {
        raise_error(PEACH2_ERR_LINK_DOWN, 0,
                    std::string("port ") + port_name(port) + ": " +
                        std::to_string(l.tx.size()) + " queued bytes lost");
        l.tx.clear();
    }
}

bool Card::link_receive(unsigned port, std::span<const uint8_t> bytes) {
    Link* l = link(port);
    if (!l || !l->connected)
        return true;  // nothing to parse into; the transport will tell us
    const bool ok = l->rx.feed(bytes, [&](const peach2_pkt_hdr& h, std::span<const uint8_t> p) {
        return on_packet(port, h, p);
    });
    if (!ok) {
        raise_error(PEACH2_ERR_BAD_PACKET, 0,
                    std::string("port ") + port_name(port) + ": " + l->rx.error() +
                        "; dropping the connection");
        link_down(port, "corrupt stream");
    }
    return ok;
}

bool Card::on_packet(unsigned port, const peach2_pkt_hdr& hdr, std::span<const uint8_t> payload) {
    Link& l = links_[port];
    sat_inc(counters_[port].rx_pkts);
    counters_[port].rx_bytes += payload.size();
    if (hdr.seq != l.rx_seq) {
        l.rx.fail("sequence " + std::to_string(hdr.seq) + ", expected " + std::to_string(l.rx_seq));
        return false;
    }
    ++l.rx_seq;
    if (hdr.type == PEACH2_PKT_HELLO) {
        const auto hello = decode_hello(payload);
        if (!hello || hello->node_id >= PEACH2_MAX_NODES || hello->port > PEACH2_PORT_S) {
            l.rx.fail("malformed HELLO");
            return false;
        }
        if (hello->node_id == cfg_.node_id || hello->node_count != cfg_.node_count ||
            (hello->version >> 16) != PEACH2_VERSION_MAJOR) {
            // A miscabled or misconfigured cluster: keep the link down and say why.
            raise_error(PEACH2_ERR_BAD_PACKET, 0,
                        std::string("port ") + port_name(port) + ": peer node " +
                            std::to_string(hello->node_id) + " of " +
                            std::to_string(hello->node_count) + " does not fit node " +
                            std::to_string(cfg_.node_id) + " of " +
                            std::to_string(cfg_.node_count));
            return true;
        }
        l.up = true;
        l.peer_node = hello->node_id;
        l.peer_port = hello->port;
        log(PEACH2_LOG_INFO, std::string("link ") + port_name(port) + " up: peer node " +
                                 std::to_string(l.peer_node) + " port " + port_name(l.peer_port));
        raise_interrupt(PEACH2_INT_LINK);
        return true;
    }
    // WRITE or RPREQ (header_problem() admitted only these types).
    if (!l.up) {
        l.rx.fail("WRITE before HELLO");
        return false;
    }
    if (links_held_) {
        raise_error(PEACH2_ERR_LINK_DOWN, hdr.addr,
                    std::string("port ") + port_name(port) + ": links held down (no valid firmware)");
        return true;
    }
    if (hdr.dst_node != PEACH2_ADDR_NODE(hdr.addr)) {
        l.rx.fail("WRITE whose dst_node does not match its address");
        return false;
    }
    // A packet that has not been forwarded comes from the neighbour itself:
    // it cannot claim another source (the read proxy answers and replay
    // state go by src_node).
    if (hdr.hops == 0 && hdr.src_node != l.peer_node) {
        l.rx.fail("packet from node " + std::to_string(l.peer_node) + " claims source node " +
                  std::to_string(hdr.src_node));
        return false;
    }
    route_packet(hdr.type, hdr.addr, payload, static_cast<uint8_t>(hdr.hops + 1), hdr.src_node);
    return true;
}

std::span<const uint8_t> Card::link_tx_peek(unsigned port) {
    Link* l = link(port);
    if (!l || !l->connected)
        return {};
    return l->tx.front();
}

void Card::link_tx_consume(unsigned port, size_t n) {
    Link* l = link(port);
    if (!l)
        return;
    l->tx.consume(n);
    // A DMA channel paused for a full link can go on once the link drains.
    if (!tx_backlogged() &&
        std::any_of(dma_.begin(), dma_.end(), [](const DmaChannel& c) { return c.busy(); }))
        kick();
}

// ---- errors and interrupts ----------------------------------------------------

void Card::raise_error(peach2_err code, uint64_t addr, const std::string& what) {
    sat_inc(err_count_);
    sat_inc(err_by_code_[code]);
    last_err_ = code;
    if (!(err_status_ & PEACH2_ERR_VALID)) {
        err_status_ = PEACH2_ERR_VALID | code;
        err_addr_ = addr;
    }
    log(PEACH2_LOG_GUEST_ERROR, std::string("peach2 node ") + std::to_string(cfg_.node_id) +
                                    ": " + peach2_err_text(code) + " (" + what + ") at " + hex(addr));
    raise_interrupt(PEACH2_INT_ERROR);
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
    if (fresh & (PEACH2_INT_ERROR | PEACH2_INT_LINK | PEACH2_INT_MAILBOX))
        host_.notify(host_.opaque, PEACH2_INT_VECTOR_MISC);
    if (fresh & PEACH2_INT_RP)
        host_.notify(host_.opaque, PEACH2_INT_VECTOR_RP);
    for (unsigned ch = 0; ch < PEACH2_DMA_ENGINES; ++ch)
        if (fresh & PEACH2_INT_DMA(ch))
            host_.notify(host_.opaque, PEACH2_INT_VECTOR_DMA(ch));
}

void Card::kick() {
    if (quiet_)
        kicked_ = true;
    else if (host_.kick)
        host_.kick(host_.opaque);
}

void Card::log(int level, const std::string& msg) {
    if (host_.log)
        host_.log(host_.opaque, level, msg.c_str());
}

}  // namespace peach2
