// The PEACH2 card model: registers, window stores, routing, links, errors.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "address_map.h"
#include "byte_queue.h"
#include "inbound_filter.h"
#include "packet.h"
#include "peach2_core.h"

namespace peach2 {

struct Counters {
    uint64_t tx_pkts = 0, tx_bytes = 0, rx_pkts = 0, rx_bytes = 0;
};

// One DMA channel: its registers and, while busy, where it is in its work.
struct DmaChannel {
    // Registers.
    uint32_t status = 0;  // PEACH2_DMA_ST_* and the error code
    uint64_t head = 0;
    uint64_t src = 0, dst = 0;
    uint32_t len = 0, block = 0, flags = 0;
    uint32_t done_descs = 0;
    uint64_t err_desc = 0;
    uint64_t bytes = 0;
    // Run state.
    bool reg_mode = false;
    bool stalled = false;     // fault injection: no progress until aborted
    bool have_desc = false;   // `cur` is fetched and validated
    peach2_desc cur{};
    uint64_t cur_loc = 0;     // index, or host address | PEACH2_DMA_HEAD_HOST
    uint64_t progress = 0;    // bytes of `cur` done
    uint32_t fetched = 0;     // descriptors fetched in this run
    std::vector<bool> visited_card;
    std::unordered_set<uint64_t> visited_host;
    bool busy() const { return status & PEACH2_DMA_ST_BUSY; }
};

// One cabled port (E, W or S).
struct Link {
    bool attached = false;   // has a transport (chardev)
    bool connected = false;  // transport is connected
    bool up = false;         // peer said HELLO
    uint32_t peer_node = 0;
    uint32_t peer_port = 0;
    uint32_t tx_seq = 0;
    uint32_t rx_seq = 0;
    ByteQueue tx;
    PacketParser rx;
    explicit Link(size_t limit) : tx(limit) {}
};

class Card {
public:
    Card(const peach2_core_config& cfg, const peach2_core_host& host);

    void reset();

    uint64_t reg_read(uint64_t off, unsigned size);
    void reg_write(uint64_t off, uint64_t val, unsigned size);
    uint64_t cardmem_read(uint64_t off, unsigned size);
    void cardmem_write(uint64_t off, uint64_t val, unsigned size);
    uint64_t window_read(uint64_t off, unsigned size);
    unsigned window_write(uint64_t off, uint64_t val, unsigned size);  // PEACH2_WINDOW_*
    void close_write();
    void service();
    unsigned tx_pending() const;
    void dma_reset();

    void link_attach(unsigned port);
    void link_connected(unsigned port, bool connected);
    bool link_receive(unsigned port, std::span<const uint8_t> bytes);
    std::span<const uint8_t> link_tx_peek(unsigned port);
    void link_tx_consume(unsigned port, size_t n);

private:
    // Write-combining buffer: contiguous stores merge into one packet.
    struct OpenWrite {
        uint64_t addr = 0;
        std::vector<uint8_t> data;
    };

    uint32_t reg_read32(uint64_t off);
    void reg_write32(uint64_t off, uint32_t val);
    uint32_t link_reg(unsigned port) const;

    // A packet that must reach the node `addr` decodes to: deliver locally or
    // send it out of the port the route gives.
    // Returns PEACH2_ERR_NONE, or the error it raised.
    peach2_err route_write(uint64_t addr, std::span<const uint8_t> data, uint8_t hops,
                           uint32_t src_node) {
        return route_packet(PEACH2_PKT_WRITE, addr, data, hops, src_node);
    }
    // The same for any packet type that travels by address (WRITE, RPREQ).
    peach2_err route_packet(uint8_t type, uint64_t addr, std::span<const uint8_t> data,
                            uint8_t hops, uint32_t src_node);
    peach2_err deliver_local(uint64_t addr, std::span<const uint8_t> data);
    std::optional<unsigned> port_towards(uint32_t node, peach2_err& why) const;
    peach2_err send(unsigned port, peach2_pkt_hdr hdr, std::span<const uint8_t> payload);
    void send_hello(unsigned port);
    bool on_packet(unsigned port, const peach2_pkt_hdr& hdr, std::span<const uint8_t> payload);
    void link_down(unsigned port, const char* why);

    void raise_error(peach2_err code, uint64_t addr, const std::string& what);
    void raise_interrupt(uint32_t bits);
    void update_irq();
    void log(int level, const std::string& msg);
    void schedule_service();
    void combine(uint64_t off, uint64_t val, unsigned size);  // write combining
    Link* link(unsigned port);

    peach2_core_config cfg_;
    peach2_core_host host_;

    void inbound_command(uint32_t cmd);

    // Routing table and firmware (card_routing.cc).
    struct RouteEntry {
        uint64_t mask = 0, base = 0, limit = 0;
        uint32_t flags = 0;
    };
    bool routing_reg_read(uint64_t off, uint32_t& val) const;
    bool routing_reg_write(uint64_t off, uint32_t val);
    std::optional<unsigned> table_port(uint64_t addr) const;
    void fw_load();
    void routing_reset();
    bool link_usable(unsigned port) const { return links_[port].up && !links_held_; }
    uint32_t route_ctrl_ = 0;
    std::array<std::array<RouteEntry, PEACH2_ROUTE_ENTRIES>, PEACH2_NR_PORTS> routes_{};
    uint64_t fw_addr_ = 0;
    uint32_t fw_len_ = 0;
    uint32_t fw_status_ = PEACH2_FW_NONE;
    uint32_t fw_version_ = 0;
    uint32_t fw_entries_ = 0;
    std::array<uint8_t, 32> fw_topology_{};
    bool fw_pending_ = false;
    bool links_held_ = false;  // a firmware image was refused

    // DMA controller (card_dma.cc).
    uint32_t dma_reg_read(unsigned ch, uint32_t r) const;
    void dma_reg_write(unsigned ch, uint32_t r, uint32_t val);
    void dma_start(unsigned ch, bool reg_mode);
    void dma_run();                       // one bounded slice of work
    bool dma_step(unsigned ch, uint64_t& budget);  // false: stop this channel for now
    peach2_err dma_fetch(DmaChannel& c);
    peach2_err dma_validate(const peach2_desc& d) const;
    void dma_finish(unsigned ch, peach2_err code);
    bool tx_backlogged() const;
    std::array<DmaChannel, PEACH2_DMA_ENGINES> dma_{};

    // Read proxy (card_rproxy.cc).
    bool rp_reg_read(uint64_t off, uint32_t& val) const;
    bool rp_reg_write(uint64_t off, uint32_t val);
    void rp_send(uint32_t node);
    void rp_receive(uint64_t addr, uint32_t src_node, std::span<const uint8_t> payload);
    void rp_answer(uint32_t node, uint64_t cpl, uint64_t tag, peach2_err status);
    void rp_reset();
    uint32_t rp_ctrl_ = 0;
    uint32_t rp_size_ = 0;
    uint64_t rp_base_ = 0;
    uint32_t rp_head_ = 0;
    uint32_t rp_tail_ = 0;
    uint32_t rp_tx_result_ = 0;
    uint32_t rp_tx_sent_ = 0, rp_rx_queued_ = 0, rp_rx_refused_ = 0, rp_rx_dropped_ = 0;
    uint32_t fault_proxy_stall_ = 0;  // PEACH2_REG_FAULT_PROXY_STALL
    std::array<uint8_t, PEACH2_RP_ENTRY_SIZE> rp_tx_req_{};

    uint32_t scratch_ = 0;
    uint32_t in_ctrl_ = PEACH2_IN_ENABLE;
    uint64_t in_base_ = 0;
    uint64_t in_size_ = 0;
    uint32_t in_result_ = 0;
    InboundFilter inbound_;
    uint32_t int_status_ = 0;
    uint32_t int_mask_ = ~0u;
    uint32_t notified_ = 0;  // status bits already signalled, not yet cleared
    uint32_t err_status_ = 0;
    uint64_t err_addr_ = 0;
    uint32_t err_count_ = 0;
    uint32_t last_err_ = 0;
    std::array<uint32_t, PEACH2_ERR_NR_CODES> err_by_code_{};
    std::array<Counters, PEACH2_NR_PORTS> counters_{};
    std::vector<uint8_t> cardmem_;
    std::array<Link, PEACH2_NR_PORTS> links_;  // index by port; N unused
    std::optional<OpenWrite> open_;
};

}  // namespace peach2
