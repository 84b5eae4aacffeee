// The PEACH2 card model (docs/hardware.md): the units and what joins them.
//
// Units, each with its own state and file, like hw/nvme's ctrl/ns/subsys:
//   Links         links.{h,cc}          the E/W/S cables: handshake, packets, send queues
//   Router        routing.{h,cc}        route table, firmware images, the port for an address
//   DmaEngine     dma.{h,cc}            the chaining DMA controller
//   ReadProxy     rproxy.{h,cc}         request engine, doorbell and ring
//   InboundFilter inbound_filter.{h,cc} where delivered writes may land
// The Card itself (card.cc) holds the identity, scratch, interrupt and error
// registers, the host port's counters, on-card memory, the window with its
// write-combining buffer, and the two ways a packet goes: route_packet()
// (this node, or out of a link) and deliver() (host memory, the mailbox, the
// read proxy's doorbell). Units reach each other only through the Card.
//
// Every transaction passes one of few places, where trace hooks go: a
// register access (reg_read/reg_write), a CPU store (window_write), a
// packet made or forwarded (route_packet), one sent or received
// (Links::send, Links::on_packet), a write applied (deliver), an error
// (raise_error).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "card_trace.h"
#include "dma.h"
#include "inbound_filter.h"
#include "links.h"
#include "log_limit.h"
#include "peach2_core.h"
#include "routing.h"
#include "rproxy.h"
#include "util.h"

namespace peach2 {

// What goes with an error into its typed trace record (peach2_core_error),
// beyond code, address and text.
struct ErrorFacts {
    uint32_t port = PEACH2_CORE_NONE;     // the link
    uint32_t node = PEACH2_CORE_NONE;     // the other node
    uint32_t channel = PEACH2_CORE_NONE;  // the DMA channel
    uint64_t value = 0;                   // size, length, command, ... (peach2_core.h)
};

// Who made a packet: its source node, its number in the source's stream to
// the destination (peach2_pkt_hdr.number) and the port it came in by (N: made
// by this card).
struct PacketId {
    uint32_t src_node = 0;
    uint32_t number = 0;
    unsigned in_port = PEACH2_PORT_N;
};

struct Decoded;  // address_map.h

// Why this card makes a packet, as its trace record (PKT_SEND) says.
struct Made {
    trace::Origin origin = trace::Origin::Pio;
    uint8_t channel = trace::kNoPort;  // DMA
    uint64_t run = 0;                  // DMA: the run; RP_ANSWER: the request's tag
    uint32_t desc = 0;                 // DMA: the descriptor's index in its run
};

class Card {
public:
    Card(const peach2_core_config& cfg, const peach2_core_host& host);

    // ---- the C API (peach2_core.h) ----
    void reset();
    uint64_t reg_read(uint64_t off, unsigned size);
    void reg_write(uint64_t off, uint64_t val, unsigned size);
    uint64_t cardmem_read(uint64_t off, unsigned size);
    void cardmem_write(uint64_t off, uint64_t val, unsigned size);
    uint64_t window_read(uint64_t off, unsigned size);
    unsigned window_write(uint64_t off, uint64_t val, unsigned size);  // PEACH2_WINDOW_*
    // The store that continues the open write, appended (true); anything
    // else changes nothing (false: go through window_write). The one call
    // that may run beside any other (peach2_core_window_append).
    bool window_append(uint64_t off, uint64_t val, unsigned size);
    void close_write();
    // Only serialised calls open and close a write: no lock needed here.
    bool write_open() const noexcept { return wc_.open.load(std::memory_order_relaxed); }
    // max_dma_bytes: DMA per channel in this slice (0: the usual slice).
    void service(uint64_t max_dma_bytes = 0);
    unsigned tx_pending() const { return links_.tx_pending(); }
    Links& links() { return links_; }  // also the link_* calls
    const InboundFilter& inbound() const { return inbound_; }
    // The peer on `port` wrote straight into this node's memory (a direct
    // write of the shared-memory transport): count it as delivered here.
    void count_direct(unsigned port, uint64_t pkts, uint64_t bytes);

    // ---- what the units share ----
    const peach2_core_config& cfg() const { return cfg_; }
    // A packet from link `from.in_port` (`hops` counts this card) that must
    // reach the node `addr` decodes to: deliver it here or send it on out of
    // the port the route gives. Returns PEACH2_ERR_NONE, or the error it
    // raised.
    peach2_err route_packet(uint8_t type, uint64_t addr, std::span<const uint8_t> data,
                            unsigned hops, const PacketId& from);
    // A packet this card makes itself (CPU stores, DMA, the read proxy):
    // numbered in its stream to the destination node, then routed.
    peach2_err send_packet(uint8_t type, uint64_t addr, std::span<const uint8_t> data,
                           const Made& why);
    peach2_err route_write(uint64_t addr, std::span<const uint8_t> data, const Made& why) {
        return send_packet(PEACH2_PKT_WRITE, addr, data, why);
    }
    // The number the next packet to `node` will carry.
    uint32_t next_number(uint32_t node) const {
        return node < next_number_.size() ? next_number_[node] : 0;
    }
    // An error: counted, latched, logged, traced (host error()), ERROR
    // interrupt. `facts` fills the typed trace record.
    void raise_error(peach2_err code, uint64_t addr, const std::string& what,
                     ErrorFacts facts = {});
    // A condition traced (and logged) but not raised: the read proxy's own
    // answers, a refused firmware image.
    void report(const peach2_core_error& e, int level);
    void raise_interrupt(uint32_t bits);
    // A log line, rate-limited per level (LogLimiter): a peer or the guest
    // can make the card log at will. `text` (a callable returning the line)
    // runs only for a line that goes out, so that a flood of errors costs
    // no formatting beyond each error's own text (and the fuzzer runs faster).
    template <typename Text>
    void log(int level, Text&& text) {
        if (log_open(level))
            host_.log(host_.opaque, level, text().c_str());
    }
    // Host memory through the host's callbacks: false if refused.
    bool host_read(uint64_t addr, void* buf, size_t len);
    // A DMA piece this card makes (`len` bytes of this node's memory at
    // `src` for bus address `dst`, which would travel as `packets` WRITE
    // packets), copied by the transport straight into the neighbour's
    // memory when a direct write of it could go (send_direct), without
    // reading it into a packet first. True if done.
    bool copy_direct(uint64_t dst, uint64_t src, size_t len, uint64_t packets);
    bool host_write(uint64_t addr, const void* buf, size_t len);
    // Ask for service(): soon, or after a pause (a long DMA run).
    void schedule_service();
    void defer_service();
    // A link's send queue drained below the DMA backlog, or was cleared.
    void links_drained();
    // The event trace (off unless opened) and its delivery record, which
    // the read proxy's doorbell also writes.
    CardTrace& trace() { return trace_; }
    bool trace_open(const std::string& path, uint32_t ring_records, std::string* err);
    void trace_recv(trace::RecvKind kind, uint64_t addr, size_t len, const PacketId& from,
                    peach2_err error, uint8_t op = 0, uint64_t tag = 0);
    // A write to `addr` would leave by a link whose send queue is backlogged:
    // the DMA run making it waits (flow control per output port).
    bool link_backlogged_for(uint64_t addr) const;
    std::span<const uint8_t> desc_ram() const {
        return {cardmem_.data() + PEACH2_DESC_RAM_OFF, PEACH2_DESC_MAX * PEACH2_DESC_SIZE};
    }

private:
    // Write-combining buffer: contiguous stores merge into one packet. Every
    // store of a PIO stream passes through it, so it is a fixed array that
    // opening never clears, with 8 spare bytes: a store copies a whole word
    // (one move) and only its own bytes count (len). wc_lock_ guards it
    // against window_append(); only serialised calls open it, so a closed
    // write's bytes stay put until the closer has sent them.
    struct OpenWrite {
        std::atomic<bool> open{false};  // changed under wc_lock_; read bare as a hint
        uint32_t len = 0;
        uint64_t addr = 0;
        std::array<uint8_t, PEACH2_WC_MAX + 8> data;
        std::span<const uint8_t> bytes() const noexcept { return {data.data(), len}; }
    };

    uint32_t reg_read32(uint64_t off);
    void reg_write32(uint64_t off, uint32_t val);
    bool unit_reg_read(uint64_t off, uint32_t& v) const;
    bool unit_reg_write(uint64_t off, uint32_t v);
    void combine(uint64_t off, uint64_t val, unsigned size);
    // Do len bytes at addr continue the open write (wc_lock_ held)?
    bool continues_write(uint64_t addr, unsigned len) const noexcept;
    peach2_err route(uint8_t type, uint64_t addr, std::span<const uint8_t> data, unsigned hops,
                     const PacketId& from, const Made* made);
    bool send_direct(unsigned port, uint32_t node, uint64_t addr, std::span<const uint8_t> data);
    std::optional<uint64_t> direct_offset(unsigned port, uint32_t node, uint64_t addr,
                                          size_t len) const;
    peach2_err deliver(uint8_t type, uint64_t addr, std::span<const uint8_t> data,
                       const PacketId& from);
    peach2_err deliver_write(uint64_t addr, std::span<const uint8_t> data, const PacketId& from);
    peach2_err write_here(const Decoded& d, uint64_t addr, std::span<const uint8_t> data);
    void update_irq();
    // May a log line of `level` go out now? If so, the note of the lines
    // held back before it has gone out.
    bool log_open(int level);

    const peach2_core_config cfg_;
    const peach2_core_host host_;
    CardTrace trace_;

    // Identity and scratch are constants or trivial; these are the card's own.
    uint32_t scratch_ = 0;
    uint32_t int_status_ = 0;
    uint32_t int_mask_ = ~0u;
    uint32_t notified_ = 0;  // status bits already signalled, not yet cleared
    uint32_t fault_rp_int_lost_ = 0;  // PEACH2_REG_FAULT_RP_INT_LOST
    uint32_t err_status_ = 0;
    uint64_t err_addr_ = 0;
    uint32_t err_count_ = 0;
    uint32_t last_err_ = 0;
    std::array<uint32_t, PEACH2_ERR_NR_CODES> err_by_code_{};
    PortCounters host_counters_;            // port N: rx = CPU stores in, tx = writes delivered
    std::array<LogLimiter, 2> log_limits_;  // by level; a reset does not reopen them
    std::vector<uint8_t> cardmem_;
    OpenWrite wc_;
    SpinLock wc_lock_;
    // The next packet number towards each node. Kept over a guest reset, like
    // the links, so that numbers never repeat within a run.
    std::array<uint32_t, PEACH2_MAX_NODES> next_number_{};

    Links links_;
    Router router_;
    DmaEngine dma_;
    ReadProxy rproxy_;
    InboundFilter inbound_;
};

}  // namespace peach2
