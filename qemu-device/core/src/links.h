// The card's cabled ports E, W and S (docs/hardware.md §5): each a byte
// stream the host carries (QEMU: a chardev), with the HELLO handshake,
// in-order packets with sequence numbers, a bounded send queue and the
// port's counters. N, the host side, is not a link: the Card counts it.
//
// Flow control is per output port: backlogged(port) says a DMA run whose
// next write leaves by `port` must wait; every path that empties a queue
// (tx_consume, down) tells the card, which restarts waiting runs. Where
// later work goes: credits or pause frames belong to Link too; another
// transport (shared memory between QEMUs) replaces what the host does with
// tx_peek/tx_consume/receive and needs nothing here but those calls; a trace
// hook for packets goes in send() and on_packet(), the only ways in and out.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "byte_queue.h"
#include "packet.h"
#include "peach2_core.h"

namespace peach2 {

class Card;

struct PortCounters {
    uint64_t tx_pkts = 0, tx_bytes = 0, rx_pkts = 0, rx_bytes = 0;
    // The counter registers (PEACH2_REG_CNT_BASE + stride * port + 8 * i).
    uint32_t reg(uint64_t rel) const;
};

// Who a port is cabled to, as the firmware's topology says.
struct CabledPeer {
    uint32_t node = 0, port = 0;
};
// Index by port (N unused); nullopt: nothing is cabled there.
using Cabling = std::array<std::optional<CabledPeer>, PEACH2_NR_PORTS>;

struct Link {
    bool attached = false;   // has a transport (chardev)
    bool connected = false;  // transport is connected
    bool shm = false;        // ... and its bytes go through shared memory
    bool direct = false;     // ... and our writes can go straight into the peer's memory
    bool up = false;         // peer said HELLO
    uint32_t peer_node = 0;
    uint32_t peer_port = 0;
    uint32_t tx_seq = 0;
    uint32_t rx_seq = 0;
    ByteQueue tx;
    PacketParser rx;
    PortCounters counters;
    // Host-driven fault injection: the next fault_drop packets queued here
    // are lost on the wire (after taking their sequence numbers).
    uint32_t fault_drop = 0;
    uint64_t fault_dropped = 0;
    explicit Link(size_t limit) : tx(limit) {}
};

class Links {
public:
    Links(Card& card, const peach2_core_config& cfg);

    // Device reset: counters and the firmware hold; the cables keep their
    // state, so that one node's reboot does not disturb its peers.
    void reset();

    // The host's side of the cables (peach2_core.h).
    void attach(unsigned port);
    void connected(unsigned port, bool up);
    void shared_memory(unsigned port, bool shm);
    void direct(unsigned port, bool direct);
    bool receive(unsigned port, std::span<const uint8_t> bytes);
    std::span<const uint8_t> tx_peek(unsigned port);
    void tx_consume(unsigned port, size_t n);
    unsigned tx_pending() const;  // bit (1 << port): bytes to send
    // Fault injection (peach2_core.h): lose the next n packets of `port`.
    void fault_drop(unsigned port, uint32_t n);
    void fault_state(unsigned port, uint32_t& drop_left, uint64_t& dropped) const;

    // The card's side.
    // Queue a packet on `port` (filled in: magic, version, seq). Returns
    // PEACH2_ERR_NONE or TX_OVERFLOW (raised).
    peach2_err send(unsigned port, peach2_pkt_hdr hdr, std::span<const uint8_t> payload);
    bool usable(unsigned port) const { return links_[port].up && !held_; }
    // A write this card made for `node` may leave by `port` as a direct
    // write (peach2_core_host.direct_write): the link is up to that very
    // node, offers direct writes, has nothing queued (order) and no fault
    // waiting for its packets.
    bool direct_ready(unsigned port, uint32_t node) const;
    // Count a direct write as the packets it replaces: sent here, received
    // (count_direct_rx: false if `port` is no link) at the peer.
    void count_direct_tx(unsigned port, uint64_t pkts, uint64_t bytes);
    bool count_direct_rx(unsigned port, uint64_t pkts, uint64_t bytes);
    // Default routing: the port whose link is up to exactly `node`; else
    // nullopt with LINK_DOWN (some link is down) or NO_ROUTE in `why`.
    std::optional<unsigned> port_to_neighbour(uint32_t node, peach2_err& why) const;
    // A refused firmware image holds every link down (LINK interrupt on a
    // change); a good one releases them.
    void hold(bool held);
    // The cabling the applied firmware describes (nullopt: none known, e.g.
    // default routing): from then on a HELLO must name the peer cabled to
    // its port; links up to another peer go down.
    void set_cabling(const std::optional<Cabling>& cabling);
    // The send queue of `port` is so full that DMA through it should wait.
    bool backlogged(unsigned port) const;
    // LINK(E/W/S) and the counters of E, W, S.
    bool reg_read(uint64_t off, uint32_t& v) const;
    // A LINK trace record for every link that has known a peer.
    void trace_states();

private:
    Link* link(unsigned port);  // nullptr unless E, W or S
    void send_hello(unsigned port);
    void down(unsigned port, const char* why);
    bool on_packet(unsigned port, const peach2_pkt_hdr& hdr, std::span<const uint8_t> payload);
    bool on_hello(unsigned port, std::span<const uint8_t> payload);
    std::optional<std::string> hello_misfit(unsigned port, const peach2_hello& hello) const;
    uint32_t link_reg(unsigned port) const;
    void trace_state(unsigned port);

    Card& card_;
    bool held_ = false;
    std::optional<Cabling> cabling_;
    std::array<Link, PEACH2_NR_PORTS> links_;  // index by port; N unused
};

const char* port_name(unsigned port);

}  // namespace peach2
