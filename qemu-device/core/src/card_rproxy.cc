// The read proxy's card side (docs/hardware.md, "Read proxy"): the request
// engine that sends RPREQ packets, and the doorbell that queues arriving
// requests in the driver's ring. The card never serves a request itself; it
// only answers the ones it cannot queue, so that no requester waits forever.
#include <algorithm>
#include <cstring>

#include "card.h"
#include "util.h"

namespace peach2 {
namespace {

constexpr uint64_t kTxReqEnd = PEACH2_REG_RP_TX_REQ + PEACH2_RP_ENTRY_SIZE;
constexpr uint64_t kDoorbell = PEACH2_CARD_OFF + PEACH2_CARD_DOORBELL_OFF;
constexpr uint64_t kCplBody = offsetof(peach2_rp_cpl, tag);  // bytes before the tag

bool ring_size_ok(uint32_t n) {
    return n >= 1 && n <= PEACH2_RP_RING_MAX && (n & (n - 1)) == 0;
}

}  // namespace

void Card::rp_reset() {
    rp_ctrl_ = 0;
    rp_size_ = 0;
    rp_base_ = 0;
    rp_head_ = 0;
    rp_tail_ = 0;
    rp_tx_result_ = 0;
    rp_tx_sent_ = rp_rx_queued_ = rp_rx_refused_ = rp_rx_dropped_ = 0;
    rp_tx_req_.fill(0);
    fault_proxy_stall_ = 0;
}

bool Card::rp_reg_read(uint64_t off, uint32_t& v) const {
    if (off >= PEACH2_REG_RP_TX_REQ && off < kTxReqEnd) {
        v = static_cast<uint32_t>(load_le(rp_tx_req_.data() + (off - PEACH2_REG_RP_TX_REQ), 4));
        return true;
    }
    switch (off) {
    case PEACH2_REG_RP_CTRL: v = rp_ctrl_; return true;
    case PEACH2_REG_RP_RING_SIZE: v = rp_size_; return true;
    case PEACH2_REG_RP_BASE_LO: v = static_cast<uint32_t>(rp_base_); return true;
    case PEACH2_REG_RP_BASE_HI: v = static_cast<uint32_t>(rp_base_ >> 32); return true;
    case PEACH2_REG_RP_HEAD: v = rp_head_; return true;
    case PEACH2_REG_RP_TAIL: v = rp_tail_; return true;
    case PEACH2_REG_RP_TX_RESULT: v = rp_tx_result_; return true;
    case PEACH2_REG_RP_TX_SENT: v = rp_tx_sent_; return true;
    case PEACH2_REG_RP_RX_QUEUED: v = rp_rx_queued_; return true;
    case PEACH2_REG_RP_RX_REFUSED: v = rp_rx_refused_; return true;
    case PEACH2_REG_RP_RX_DROPPED: v = rp_rx_dropped_; return true;
    case PEACH2_REG_FAULT_PROXY_STALL: v = fault_proxy_stall_; return true;
    default: return false;
    }
}

bool Card::rp_reg_write(uint64_t off, uint32_t val) {
    if (off >= PEACH2_REG_RP_TX_REQ && off < kTxReqEnd) {
        store_le(rp_tx_req_.data() + (off - PEACH2_REG_RP_TX_REQ), val, 4);
        return true;
    }
    const bool enabled = rp_ctrl_ & PEACH2_RP_ENABLE;
    switch (off) {
    case PEACH2_REG_RP_CTRL:
        if (val & ~PEACH2_RP_ENABLE) {
            raise_error(PEACH2_ERR_BAD_COMMAND, off, "read-proxy control value " + hex(val));
            return true;
        }
        if ((val & PEACH2_RP_ENABLE) && !enabled) {
            // The ring must be usable before a single request is written.
            if (!ring_size_ok(rp_size_) || rp_base_ % PEACH2_RP_ENTRY_SIZE ||
                rp_base_ + static_cast<uint64_t>(rp_size_) * PEACH2_RP_ENTRY_SIZE < rp_base_) {
                raise_error(PEACH2_ERR_BAD_COMMAND, off,
                            "read-proxy ring of " + std::to_string(rp_size_) + " entries at " +
                                hex(rp_base_) + " refused");
                return true;
            }
            rp_head_ = rp_tail_ = 0;
        }
        rp_ctrl_ = val;
        return true;
    case PEACH2_REG_RP_RING_SIZE:
    case PEACH2_REG_RP_BASE_LO:
    case PEACH2_REG_RP_BASE_HI:
        if (enabled) {
            raise_error(PEACH2_ERR_BAD_COMMAND, off, "read-proxy ring changed while enabled");
            return true;
        }
        if (off == PEACH2_REG_RP_RING_SIZE)
            rp_size_ = val;
        else if (off == PEACH2_REG_RP_BASE_LO)
            rp_base_ = (rp_base_ & ~0xffffffffull) | val;
        else
            rp_base_ = (rp_base_ & 0xffffffffull) | static_cast<uint64_t>(val) << 32;
        return true;
    case PEACH2_REG_RP_HEAD:
        // HEAD may only move forward, and only over entries the card produced.
        if (!enabled || val - rp_head_ > rp_tail_ - rp_head_) {
            raise_error(PEACH2_ERR_BAD_COMMAND, off,
                        "read-proxy HEAD " + std::to_string(val) + " with TAIL " +
                            std::to_string(rp_tail_));
            return true;
        }
        rp_head_ = val;
        if (rp_head_ != rp_tail_)
            raise_interrupt(PEACH2_INT_RP);  // the driver stopped early: call it back
        return true;
    case PEACH2_REG_RP_TX_SEND:
        rp_send(val);
        return true;
    case PEACH2_REG_FAULT_PROXY_STALL:
        fault_proxy_stall_ = val;
        return true;
    case PEACH2_REG_RP_TAIL:
    case PEACH2_REG_RP_TX_RESULT:
    case PEACH2_REG_RP_TX_SENT:
    case PEACH2_REG_RP_RX_QUEUED:
    case PEACH2_REG_RP_RX_REFUSED:
    case PEACH2_REG_RP_RX_DROPPED:
        raise_error(PEACH2_ERR_BAD_REG, off, "write to read-only read-proxy register " + hex(off));
        return true;
    default:
        return false;
    }
}

// The request engine: one RPREQ to the target's doorbell, routed like a write.
void Card::rp_send(uint32_t node) {
    const uint64_t addr = PEACH2_NODE_BASE(std::min<uint32_t>(node, PEACH2_MAX_NODES)) + kDoorbell;
    if (node >= cfg_.node_count) {
        raise_error(PEACH2_ERR_NO_SUCH_NODE, addr,
                    "read-proxy request to node " + std::to_string(node) + " of " +
                        std::to_string(cfg_.node_count));
        rp_tx_result_ = PEACH2_ERR_NO_SUCH_NODE;
        return;
    }
    rp_tx_result_ = route_packet(PEACH2_PKT_RPREQ, addr, rp_tx_req_, 0, cfg_.node_id);
    if (rp_tx_result_ == PEACH2_ERR_NONE)
        sat_inc(rp_tx_sent_);
}

// The doorbell: queue the request for the driver, or answer it right here.
void Card::rp_receive(uint64_t addr, uint32_t src_node, std::span<const uint8_t> payload) {
    peach2_rp_req req{};
    if (PEACH2_ADDR_OFFSET(addr) != kDoorbell || payload.size() != sizeof(req)) {
        sat_inc(rp_rx_dropped_);
        raise_error(PEACH2_ERR_RP_BAD_PACKET, addr,
                    "read-proxy request of " + std::to_string(payload.size()) +
                        " bytes not at the doorbell");
        return;
    }
    std::memcpy(&req, payload.data(), sizeof(req));
    // Where the answer goes is all the card needs to trust; the driver checks
    // the rest.
    if (req.cpl % 32 || req.cpl >= PEACH2_HOST_SIZE || PEACH2_HOST_SIZE - req.cpl < 32 ||
        src_node >= cfg_.node_count) {
        sat_inc(rp_rx_dropped_);
        raise_error(PEACH2_ERR_RP_BAD_PACKET, addr,
                    "read-proxy request from node " + std::to_string(src_node) +
                        " with completion address " + hex(req.cpl));
        return;
    }
    req.src_node = static_cast<uint16_t>(src_node);
    if (!(rp_ctrl_ & PEACH2_RP_ENABLE)) {
        rp_answer(src_node, req.cpl, req.seq, PEACH2_ERR_RP_OFF);
        return;
    }
    if (rp_tail_ - rp_head_ >= rp_size_) {
        rp_answer(src_node, req.cpl, req.seq, PEACH2_ERR_RP_FULL);
        return;
    }
    const uint64_t entry =
        rp_base_ + static_cast<uint64_t>(rp_tail_ % rp_size_) * PEACH2_RP_ENTRY_SIZE;
    uint8_t raw[sizeof(req)];
    std::memcpy(raw, &req, sizeof(req));
    if (host_.dma_write(host_.opaque, entry, raw, sizeof(raw)) != 0) {
        raise_error(PEACH2_ERR_DMA_WRITE, entry, "host memory rejected a read-proxy ring entry");
        rp_answer(src_node, req.cpl, req.seq, PEACH2_ERR_DMA_WRITE);
        return;
    }
    ++rp_tail_;
    sat_inc(rp_rx_queued_);
    raise_interrupt(PEACH2_INT_RP);
}

// A completion record from the card itself: the body, then the tag. RP_FULL
// and RP_OFF are flow control, counted in RP_RX_REFUSED but not raised as
// errors: a flood must not also cost the target an error interrupt per
// request.
void Card::rp_answer(uint32_t node, uint64_t cpl, uint64_t tag, peach2_err status) {
    sat_inc(rp_rx_refused_);
    uint8_t body[kCplBody] = {};
    store_le(body + offsetof(peach2_rp_cpl, status), status, 4);
    uint8_t tag_le[8];
    store_le(tag_le, tag, 8);
    const uint64_t at = PEACH2_NODE_BASE(node) + cpl;
    if (route_write(at, body, 0, cfg_.node_id) == PEACH2_ERR_NONE)
        route_write(at + kCplBody, tag_le, 0, cfg_.node_id);
}

}  // namespace peach2
