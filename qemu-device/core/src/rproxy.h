// The read proxy's card side (docs/hardware.md §9): the request engine that
// sends RPREQ packets for the driver, and the doorbell that queues arriving
// requests in the driver's ring in host memory. The card never serves a
// request itself; it only answers the ones it cannot queue (ring off or
// full, host memory refusing the entry), so that no requester waits forever.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "peach2/peach2_hw.h"
#include "peach2_core.h"

namespace peach2 {

class Card;
struct PacketId;

class ReadProxy {
public:
    explicit ReadProxy(Card& card) : card_(card) {}

    // An RPREQ packet for this node (its address: the doorbell, it says).
    void receive(uint64_t addr, const PacketId& from, std::span<const uint8_t> payload);

    // Reset: ring off, counters 0. Registers: RP_* (0x700 ...).
    void reset();
    bool reg_read(uint64_t off, uint32_t& v) const;
    bool reg_write(uint64_t off, uint32_t v);

private:
    bool ring_write(uint64_t off, uint32_t val);
    void send(uint32_t node);
    void answer(uint32_t node, uint64_t cpl, uint64_t tag, peach2_err status);

    Card& card_;
    uint32_t ctrl_ = 0;
    uint32_t size_ = 0;
    uint64_t base_ = 0;
    uint64_t tx_list_ = 0;  // RP_TX_LIST: a READ's reply pieces in host memory
    uint32_t head_ = 0;
    uint32_t tail_ = 0;
    uint32_t tx_result_ = 0;
    uint32_t tx_sent_ = 0, rx_queued_ = 0, rx_refused_ = 0, rx_dropped_ = 0;
    std::array<uint8_t, PEACH2_RP_ENTRY_SIZE> tx_req_{};
};

}  // namespace peach2
