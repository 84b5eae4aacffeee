// The cabled ports: handshake, packets in and out, send queues, counters.
#include "links.h"

#include <string>

#include "card.h"
#include "util.h"

namespace peach2 {
namespace {

constexpr uint64_t kDefaultTxLimit = 64ull << 20;
// A DMA run whose next write leaves by a link with this much queued pauses
// (flow control instead of dropping packets); other runs go on.
constexpr size_t kTxBacklog = 4u << 20;

size_t tx_limit(const peach2_core_config& cfg) {
    return cfg.tx_limit ? cfg.tx_limit : kDefaultTxLimit;
}

}  // namespace

const char* port_name(unsigned port) {
    static constexpr const char* names[] = {"N", "E", "W", "S"};
    return port < PEACH2_NR_PORTS ? names[port] : "?";
}

uint32_t PortCounters::reg(uint64_t rel) const {
    const uint64_t fields[] = {tx_pkts, tx_bytes, rx_pkts, rx_bytes};
    const uint64_t v = fields[rel / 8];
    return static_cast<uint32_t>((rel & 4) ? v >> 32 : v);
}

Links::Links(Card& card, const peach2_core_config& cfg)
    : card_(card),
      links_{Link(tx_limit(cfg)), Link(tx_limit(cfg)), Link(tx_limit(cfg)), Link(tx_limit(cfg))} {}

void Links::reset() {
    for (Link& l : links_)
        l.counters = PortCounters{};
    held_ = false;
    cabling_.reset();  // the firmware is gone with the reset
}

Link* Links::link(unsigned port) {
    if (port < PEACH2_PORT_E || port > PEACH2_PORT_S)
        return nullptr;
    return &links_[port];
}

// ---- registers -----------------------------------------------------------------

uint32_t Links::link_reg(unsigned port) const {
    const Link& l = links_[port];
    uint32_t v = 0;
    if (usable(port))
        v |= PEACH2_LINK_UP | (l.peer_port << PEACH2_LINK_PEER_PORT_SHIFT) |
             (l.peer_node << PEACH2_LINK_PEER_NODE_SHIFT);
    if (l.connected)
        v |= PEACH2_LINK_CONNECTED | (l.shm ? PEACH2_LINK_SHM : 0) |
             (l.shm && l.direct ? PEACH2_LINK_DIRECT : 0);
    return v;
}

bool Links::reg_read(uint64_t off, uint32_t& v) const {
    if (off >= PEACH2_REG_TX_PKTS(PEACH2_PORT_E) && off < PEACH2_REG_TX_PKTS(PEACH2_NR_PORTS)) {
        const uint64_t rel = off - PEACH2_REG_CNT_BASE;
        v = links_[rel / PEACH2_REG_CNT_STRIDE].counters.reg(rel % PEACH2_REG_CNT_STRIDE);
        return true;
    }
    for (unsigned p = PEACH2_PORT_E; p <= PEACH2_PORT_S; ++p) {
        if (off == PEACH2_REG_LINK(p - 1)) {
            v = link_reg(p);
            return true;
        }
    }
    return false;
}

// ---- sending ---------------------------------------------------------------------

peach2_err Links::send(unsigned port, peach2_pkt_hdr hdr, std::span<const uint8_t> payload) {
    Link& l = links_[port];
    if (!l.tx.fits(kHeaderSize + payload.size())) {
        card_.raise_error(PEACH2_ERR_TX_OVERFLOW, hdr.addr,
                          std::string("port ") + port_name(port) + " send queue full",
                          {.port = port, .node = hdr.dst_node, .value = payload.size()});
        return PEACH2_ERR_TX_OVERFLOW;
    }
    hdr.magic = PEACH2_PKT_MAGIC;
    hdr.version = PEACH2_PKT_VERSION;
    hdr.seq = l.tx_seq++;
    sat_inc(l.counters.tx_pkts);
    l.counters.tx_bytes += payload.size();
    if (l.fault_drop) {  // lost on the wire: the peer sees the sequence gap
        --l.fault_drop;
        sat_inc(l.fault_dropped);
        return PEACH2_ERR_NONE;
    }
    l.tx.append([&](std::vector<uint8_t>& out) { encode_packet(hdr, payload, out); });
    return PEACH2_ERR_NONE;
}

void Links::send_hello(unsigned port) {
    peach2_hello hello{card_.cfg().node_id, card_.cfg().node_count, port,
                       PEACH2_VERSION_MAJOR << 16 | PEACH2_VERSION_MINOR};
    peach2_pkt_hdr hdr{};
    hdr.type = PEACH2_PKT_HELLO;
    hdr.src_node = static_cast<uint16_t>(card_.cfg().node_id);
    hdr.dst_node = static_cast<uint16_t>(card_.cfg().node_id);
    send(port, hdr, encode_hello(hello));
}

unsigned Links::tx_pending() const {
    unsigned ports = 0;
    for (unsigned p = PEACH2_PORT_E; p <= PEACH2_PORT_S; ++p)
        if (links_[p].connected && !links_[p].tx.empty())
            ports |= 1u << p;
    return ports;
}

bool Links::backlogged(unsigned port) const {
    return port < PEACH2_NR_PORTS && links_[port].tx.size() > kTxBacklog;
}

std::span<const uint8_t> Links::tx_peek(unsigned port) {
    Link* l = link(port);
    if (!l || !l->connected)
        return {};
    return l->tx.front();
}

void Links::tx_consume(unsigned port, size_t n) {
    Link* l = link(port);
    if (!l)
        return;
    const bool was_backlogged = backlogged(port);
    l->tx.consume(n);
    if (was_backlogged && !backlogged(port))
        card_.links_drained();
}

void Links::fault_drop(unsigned port, uint32_t n) {
    if (Link* l = link(port))
        l->fault_drop = n;
}

void Links::fault_state(unsigned port, uint32_t& drop_left, uint64_t& dropped) const {
    drop_left = 0;
    dropped = 0;
    if (port >= PEACH2_PORT_E && port <= PEACH2_PORT_S) {
        drop_left = links_[port].fault_drop;
        dropped = links_[port].fault_dropped;
    }
}

// ---- routing help ----------------------------------------------------------------

std::optional<unsigned> Links::port_to_neighbour(uint32_t node, peach2_err& why) const {
    bool some_down = false;
    for (unsigned p = PEACH2_PORT_E; p <= PEACH2_PORT_S; ++p) {
        const Link& l = links_[p];
        if (usable(p) && l.peer_node == node)
            return p;
        if (l.attached && !usable(p))
            some_down = true;
    }
    why = some_down ? PEACH2_ERR_LINK_DOWN : PEACH2_ERR_NO_ROUTE;
    return std::nullopt;
}

void Links::set_cabling(const std::optional<Cabling>& cabling) {
    cabling_ = cabling;
    for (unsigned p = PEACH2_PORT_E; p <= PEACH2_PORT_S; ++p) {
        const Link& l = links_[p];
        if (!l.up)
            continue;
        const auto why = hello_misfit(p, peach2_hello{l.peer_node, card_.cfg().node_count,
                                                      l.peer_port,
                                                      PEACH2_VERSION_MAJOR << 16});
        if (!why)
            continue;
        card_.raise_error(PEACH2_ERR_BAD_PACKET, 0,
                          std::string("port ") + port_name(p) + ": " + *why + "; link down",
                          {.port = p, .node = l.peer_node});
        down(p, "peer is not the one the firmware cables here");
    }
}

void Links::hold(bool held) {
    if (held == held_)
        return;
    held_ = held;
    card_.raise_interrupt(PEACH2_INT_LINK);
}

// ---- the transport's events --------------------------------------------------------

void Links::attach(unsigned port) {
    if (Link* l = link(port))
        l->attached = true;
}

void Links::connected(unsigned port, bool up) {
    Link* l = link(port);
    if (!l)
        return;
    if (!up) {
        down(port, "transport closed");
        l->connected = false;
        l->shm = false;
        l->direct = false;
        return;
    }
    // A new connection is a new stream: forget the old one completely.
    down(port, "transport reconnected");
    l->connected = true;
    l->shm = false;  // the host says so once both ends agreed
    l->direct = false;
    l->rx.reset();
    l->rx_seq = 0;
    l->tx.clear();
    l->tx_seq = 0;
    send_hello(port);
}

void Links::shared_memory(unsigned port, bool shm) {
    if (Link* l = link(port); l && l->connected)
        l->shm = shm;
}

void Links::direct(unsigned port, bool direct) {
    if (Link* l = link(port); l && l->connected)
        l->direct = direct;
}

bool Links::direct_ready(unsigned port, uint32_t node) const {
    if (port == PEACH2_PORT_N || port >= PEACH2_NR_PORTS)
        return false;
    const Link& l = links_[port];
    return usable(port) && l.shm && l.direct && l.peer_node == node && l.tx.empty() &&
           !l.fault_drop;
}

void Links::count_direct_tx(unsigned port, uint64_t pkts, uint64_t bytes) {
    Link& l = links_[port];
    l.counters.tx_pkts = sat_add(l.counters.tx_pkts, pkts);
    l.counters.tx_bytes += bytes;
}

bool Links::count_direct_rx(unsigned port, uint64_t pkts, uint64_t bytes) {
    Link* l = link(port);
    if (!l)
        return false;
    l->counters.rx_pkts = sat_add(l->counters.rx_pkts, pkts);
    l->counters.rx_bytes += bytes;
    return true;
}

void Links::down(unsigned port, const char* why) {
    Link& l = links_[port];
    if (l.up) {
        card_.log(PEACH2_LOG_INFO,
                  [&] { return std::string("link ") + port_name(port) + " down: " + why; });
        l.up = false;
        trace_state(port);
        card_.raise_interrupt(PEACH2_INT_LINK);
    }
    if (!l.tx.empty()) {
        card_.raise_error(PEACH2_ERR_LINK_DOWN, 0,
                          std::string("port ") + port_name(port) + ": " +
                              std::to_string(l.tx.size()) + " queued bytes lost",
                          {.port = port, .value = l.tx.size()});
        l.tx.clear();
        card_.links_drained();  // runs waiting for this link end now (LINK_DOWN)
    }
}

// ---- tracing -----------------------------------------------------------------------

void Links::trace_state(unsigned port) {
    const Link& l = links_[port];
    if (l.peer_port < PEACH2_PORT_E || l.peer_port > PEACH2_PORT_S)
        return;  // no peer yet (or one that claimed port N): nothing to cable
    card_.trace().record([&] {
        return trace::link_state(
            static_cast<uint8_t>(port), l.up, static_cast<uint16_t>(card_.cfg().node_id),
            static_cast<uint16_t>(l.peer_node), static_cast<uint8_t>(l.peer_port));
    });
}

void Links::trace_states() {
    for (unsigned p = PEACH2_PORT_E; p <= PEACH2_PORT_S; ++p)
        trace_state(p);
}

// ---- receiving ---------------------------------------------------------------------

bool Links::receive(unsigned port, std::span<const uint8_t> bytes) {
    Link* l = link(port);
    if (!l || !l->connected)
        return true;  // nothing to parse into; the transport will tell us
    const bool ok = l->rx.feed(bytes, [&](const peach2_pkt_hdr& h, std::span<const uint8_t> p) {
        return on_packet(port, h, p);
    });
    if (!ok) {
        card_.raise_error(PEACH2_ERR_BAD_PACKET, 0,
                          std::string("port ") + port_name(port) + ": " + l->rx.error() +
                              "; dropping the connection",
                          {.port = port, .node = l->up ? l->peer_node : PEACH2_CORE_NONE});
        down(port, "corrupt stream");
    }
    return ok;
}

// Why a well-formed HELLO cannot be taken on `port`, or nullopt.
std::optional<std::string> Links::hello_misfit(unsigned port, const peach2_hello& hello) const {
    const peach2_core_config& cfg = card_.cfg();
    if (hello.node_id == cfg.node_id || hello.node_id >= cfg.node_count ||
        hello.node_count != cfg.node_count || (hello.version >> 16) != PEACH2_VERSION_MAJOR)
        // A miscabled or misconfigured cluster, or a peer lying about itself.
        return "peer node " + std::to_string(hello.node_id) + " of " +
               std::to_string(hello.node_count) + " (version " +
               std::to_string(hello.version >> 16) + ") does not fit node " +
               std::to_string(cfg.node_id) + " of " + std::to_string(cfg.node_count);
    // The firmware knows the cabling: only the peer cabled here. (Without
    // it, a peer could claim an unused port of an existing node and, under
    // default routing, attract that node's traffic.)
    if (cabling_) {
        const auto& want = (*cabling_)[port];
        if (!want)
            return std::string("peer node ") + std::to_string(hello.node_id) + " port " +
                   port_name(hello.port) + " on port " + port_name(port) +
                   ", which the firmware's topology leaves uncabled";
        if (want->node != hello.node_id || want->port != hello.port)
            return std::string("peer claims node ") + std::to_string(hello.node_id) + " port " +
                   port_name(hello.port) + "; the firmware's topology cables port " +
                   port_name(port) + " to node " + std::to_string(want->node) + " port " +
                   port_name(want->port);
    }
    // A port has one cable: a second link claiming the same peer port is a
    // spoof that would attract that node's traffic. (Two cables between the
    // same two nodes, as in ring:2, are two different peer ports.)
    for (unsigned p = PEACH2_PORT_E; p <= PEACH2_PORT_S; ++p)
        if (p != port && links_[p].up && links_[p].peer_node == hello.node_id &&
            links_[p].peer_port == hello.port)
            return "peer claims node " + std::to_string(hello.node_id) + " port " +
                   port_name(hello.port) + ", which is already the peer on port " + port_name(p);
    return std::nullopt;
}

bool Links::on_hello(unsigned port, std::span<const uint8_t> payload) {
    Link& l = links_[port];
    const auto hello = decode_hello(payload);
    if (!hello || hello->node_id >= PEACH2_MAX_NODES || hello->port > PEACH2_PORT_S) {
        l.rx.fail("malformed HELLO");
        return false;
    }
    if (const auto why = hello_misfit(port, *hello)) {
        // Keep the link down and say why; the stream itself is well formed,
        // so a corrected HELLO may follow on it (and our HELLO still goes
        // out, so that the peer can say what it thinks of us).
        card_.raise_error(PEACH2_ERR_BAD_PACKET, 0,
                          std::string("port ") + port_name(port) + ": " + *why + "; link down",
                          {.port = port, .node = hello->node_id});
        if (l.up)  // a peer that changes its identity is not the one we knew
            down(port, "peer's HELLO refused");
        return true;
    }
    // A repeat from the peer we know changes nothing: nothing to say.
    if (l.up && l.peer_node == hello->node_id && l.peer_port == hello->port)
        return true;
    l.up = true;
    l.peer_node = hello->node_id;
    l.peer_port = hello->port;
    card_.log(PEACH2_LOG_INFO, [&] {
        return std::string("link ") + port_name(port) + " up: peer node " +
               std::to_string(l.peer_node) + " port " + port_name(l.peer_port);
    });
    trace_state(port);
    card_.raise_interrupt(PEACH2_INT_LINK);
    return true;
}

// A well-formed packet from the stream; false fails the stream.
bool Links::on_packet(unsigned port, const peach2_pkt_hdr& hdr, std::span<const uint8_t> payload) {
    Link& l = links_[port];
    sat_inc(l.counters.rx_pkts);
    l.counters.rx_bytes += payload.size();
    if (hdr.seq != l.rx_seq) {
        l.rx.fail("sequence " + std::to_string(hdr.seq) + ", expected " + std::to_string(l.rx_seq));
        return false;
    }
    ++l.rx_seq;
    if (hdr.type == PEACH2_PKT_HELLO)
        return on_hello(port, payload);
    // WRITE or RPREQ (header_problem() admitted only these types).
    if (!l.up) {
        l.rx.fail("WRITE before HELLO");
        return false;
    }
    if (held_) {
        card_.raise_error(
            PEACH2_ERR_LINK_DOWN, hdr.addr,
            std::string("port ") + port_name(port) + ": links held down (no valid firmware)",
            {.port = port, .node = hdr.dst_node});
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
    // No honest card sends a packet that has passed the hop limit already
    // (route_packet refuses to): drop it here, counted, and keep the stream,
    // so that it is neither forwarded (the 8-bit field would wrap) nor
    // delivered. Forwarding adds one hop in full width.
    if (hdr.hops >= PEACH2_PKT_HOP_LIMIT) {
        card_.raise_error(PEACH2_ERR_HOP_LIMIT, hdr.addr,
                          std::string("port ") + port_name(port) + ": packet from node " +
                              std::to_string(hdr.src_node) + " arrived with " +
                              std::to_string(hdr.hops) + " hops; dropped",
                          {.port = port, .node = hdr.src_node, .value = hdr.hops});
        return true;
    }
    card_.route_packet(hdr.type, hdr.addr, payload, hdr.hops + 1u,
                       {hdr.src_node, hdr.number, port});
    return true;
}

}  // namespace peach2
