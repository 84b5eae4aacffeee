// The request engine (RP_TX_*), the doorbell and the ring (RP_*), and the
// card's own answers.
#include "rproxy.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "card.h"
#include "util.h"

namespace peach2 {
namespace {

constexpr uint64_t kTxReqEnd = PEACH2_REG_RP_TX_REQ + PEACH2_RP_ENTRY_SIZE;
constexpr uint64_t kDoorbell = PEACH2_CARD_OFF + PEACH2_CARD_DOORBELL_OFF;
constexpr uint64_t kCplBody = offsetof(peach2_rp_cpl, tag);  // bytes before the tag

bool ring_size_ok(uint32_t n) { return n >= 1 && n <= PEACH2_RP_RING_MAX && (n & (n - 1)) == 0; }

// The reply pieces a request says follow it: a READ's operand[0], clamped
// past the maximum (such a request fits no packet).
uint64_t listed_pieces(const peach2_rp_req& r) {
    return r.op == PEACH2_RP_OP_READ ? std::min<uint64_t>(r.operand[0], PEACH2_RP_MAX_PIECES + 1)
                                     : 0;
}

}  // namespace

void ReadProxy::reset() {
    ctrl_ = 0;
    size_ = 0;
    base_ = 0;
    head_ = 0;
    tail_ = 0;
    tx_result_ = 0;
    tx_list_ = 0;
    tx_sent_ = rx_queued_ = rx_refused_ = rx_dropped_ = 0;
    tx_req_.fill(0);
}

bool ReadProxy::reg_read(uint64_t off, uint32_t& v) const {
    if (off >= PEACH2_REG_RP_TX_REQ && off < kTxReqEnd) {
        v = static_cast<uint32_t>(load_le(tx_req_.data() + (off - PEACH2_REG_RP_TX_REQ), 4));
        return true;
    }
    switch (off) {
    case PEACH2_REG_RP_CTRL: v = ctrl_; return true;
    case PEACH2_REG_RP_RING_SIZE: v = size_; return true;
    case PEACH2_REG_RP_BASE_LO: v = lo32(base_); return true;
    case PEACH2_REG_RP_BASE_HI: v = hi32(base_); return true;
    case PEACH2_REG_RP_HEAD: v = head_; return true;
    case PEACH2_REG_RP_TAIL: v = tail_; return true;
    case PEACH2_REG_RP_TX_RESULT: v = tx_result_; return true;
    case PEACH2_REG_RP_TX_LIST_LO: v = lo32(tx_list_); return true;
    case PEACH2_REG_RP_TX_LIST_HI: v = hi32(tx_list_); return true;
    case PEACH2_REG_RP_TX_SENT: v = tx_sent_; return true;
    case PEACH2_REG_RP_RX_QUEUED: v = rx_queued_; return true;
    case PEACH2_REG_RP_RX_REFUSED: v = rx_refused_; return true;
    case PEACH2_REG_RP_RX_DROPPED: v = rx_dropped_; return true;
    default: return false;
    }
}

// CTRL, RING_SIZE, BASE, HEAD: the ring the driver consumes.
bool ReadProxy::ring_write(uint64_t off, uint32_t val) {
    const bool enabled = ctrl_ & PEACH2_RP_ENABLE;
    switch (off) {
    case PEACH2_REG_RP_CTRL:
        if (val & ~PEACH2_RP_ENABLE) {
            card_.raise_error(PEACH2_ERR_BAD_COMMAND, off, "read-proxy control value " + hex(val),
                              {.value = val});
            return true;
        }
        if ((val & PEACH2_RP_ENABLE) && !enabled) {
            // The ring must be usable before a single request is written.
            if (!ring_size_ok(size_) || base_ % PEACH2_RP_ENTRY_SIZE ||
                base_ + static_cast<uint64_t>(size_) * PEACH2_RP_ENTRY_SIZE < base_) {
                card_.raise_error(PEACH2_ERR_BAD_COMMAND, off,
                                  "read-proxy ring of " + std::to_string(size_) + " entries at " +
                                      hex(base_) + " refused",
                                  {.value = val});
                return true;
            }
            head_ = tail_ = 0;
        }
        ctrl_ = val;
        return true;
    case PEACH2_REG_RP_RING_SIZE:
    case PEACH2_REG_RP_BASE_LO:
    case PEACH2_REG_RP_BASE_HI:
        if (enabled) {
            card_.raise_error(PEACH2_ERR_BAD_COMMAND, off, "read-proxy ring changed while enabled",
                              {.value = val});
            return true;
        }
        if (off == PEACH2_REG_RP_RING_SIZE)
            size_ = val;
        else if (off == PEACH2_REG_RP_BASE_LO)
            set_lo32(base_, val);
        else
            set_hi32(base_, val);
        return true;
    case PEACH2_REG_RP_HEAD:
        // HEAD may only move forward, and only over entries the card produced.
        if (!enabled || val - head_ > tail_ - head_) {
            card_.raise_error(
                PEACH2_ERR_BAD_COMMAND, off,
                "read-proxy HEAD " + std::to_string(val) + " with TAIL " + std::to_string(tail_),
                {.value = val});
            return true;
        }
        head_ = val;
        if (head_ != tail_)
            card_.raise_interrupt(PEACH2_INT_RP);  // the driver stopped early: call it back
        return true;
    default: return false;
    }
}

bool ReadProxy::reg_write(uint64_t off, uint32_t val) {
    if (off >= PEACH2_REG_RP_TX_REQ && off < kTxReqEnd) {
        store_le(tx_req_.data() + (off - PEACH2_REG_RP_TX_REQ), val, 4);
        return true;
    }
    if (ring_write(off, val))
        return true;
    switch (off) {
    case PEACH2_REG_RP_TX_SEND: send(val); return true;
    case PEACH2_REG_RP_TX_LIST_LO: set_lo32(tx_list_, val); return true;
    case PEACH2_REG_RP_TX_LIST_HI: set_hi32(tx_list_, val); return true;
    case PEACH2_REG_RP_TAIL:
    case PEACH2_REG_RP_TX_RESULT:
    case PEACH2_REG_RP_TX_SENT:
    case PEACH2_REG_RP_RX_QUEUED:
    case PEACH2_REG_RP_RX_REFUSED:
    case PEACH2_REG_RP_RX_DROPPED:
        card_.raise_error(PEACH2_ERR_BAD_REG, off,
                          "write to read-only read-proxy register " + hex(off), {.value = 4});
        return true;
    default: return false;
    }
}

// The request engine: one RPREQ to the target's doorbell, routed like a write.
void ReadProxy::send(uint32_t node) {
    const uint64_t addr = PEACH2_NODE_BASE(std::min<uint32_t>(node, PEACH2_MAX_NODES)) + kDoorbell;
    if (node >= card_.cfg().node_count) {
        card_.raise_error(PEACH2_ERR_NO_SUCH_NODE, addr,
                          "read-proxy request to node " + std::to_string(node) + " of " +
                              std::to_string(card_.cfg().node_count),
                          {.node = node});
        tx_result_ = PEACH2_ERR_NO_SUCH_NODE;
        return;
    }
    peach2_rp_req req{};
    std::memcpy(&req, tx_req_.data(), sizeof(req));
    // A request of another version (0: the registers as a reset left them)
    // is not sent: a driver that writes only the words it changed learns
    // here that the card forgot the others.
    if (req.version != PEACH2_RP_VERSION) {
        card_.raise_error(PEACH2_ERR_BAD_COMMAND, PEACH2_REG_RP_TX_SEND,
                          "read-proxy request of version " + std::to_string(req.version) +
                              " (the card sends version " + std::to_string(PEACH2_RP_VERSION) + ")",
                          {.node = node, .value = req.version});
        tx_result_ = PEACH2_ERR_BAD_COMMAND;
        return;
    }
    // A READ's reply list goes after the request, read from host memory now.
    const uint64_t pieces = listed_pieces(req);
    std::vector<uint8_t> payload(tx_req_.begin(), tx_req_.end());
    if (pieces > PEACH2_RP_MAX_PIECES) {
        card_.raise_error(PEACH2_ERR_BAD_COMMAND, PEACH2_REG_RP_TX_SEND,
                          "read-proxy request with " + std::to_string(req.operand[0]) +
                              " reply pieces (at most " + std::to_string(PEACH2_RP_MAX_PIECES) +
                              ")",
                          {.node = node, .value = req.operand[0]});
        tx_result_ = PEACH2_ERR_BAD_COMMAND;
        return;
    }
    payload.resize(payload.size() + pieces * sizeof(peach2_rp_piece));
    if (pieces && !card_.host_read(tx_list_, payload.data() + sizeof(req),
                                   pieces * sizeof(peach2_rp_piece))) {
        card_.raise_error(PEACH2_ERR_DMA_READ, tx_list_,
                          "read-proxy reply list of " + std::to_string(pieces) +
                              " pieces not readable at " + hex(tx_list_),
                          {.node = node, .value = pieces});
        tx_result_ = PEACH2_ERR_DMA_READ;
        return;
    }
    card_.trace().record([&] {
        return trace::rp_request(req.op, static_cast<uint16_t>(card_.cfg().node_id),
                                 static_cast<uint16_t>(node), req.addr, req.len, req.seq,
                                 card_.next_number(node));
    });
    tx_result_ = card_.send_packet(PEACH2_PKT_RPREQ, addr, payload, {trace::Origin::RpRequest});
    if (tx_result_ == PEACH2_ERR_NONE)
        sat_inc(tx_sent_);
}

// The doorbell: queue the request for the driver, or answer it right here.
void ReadProxy::receive(uint64_t addr, const PacketId& from, std::span<const uint8_t> payload) {
    const uint32_t src_node = from.src_node;
    peach2_rp_req req{};
    const auto received = [&](peach2_err e) {
        card_.trace_recv(trace::RecvKind::RpRing, addr, payload.size(), from, e, req.op, req.seq);
    };
    if (PEACH2_ADDR_OFFSET(addr) != kDoorbell || payload.size() < sizeof(req) ||
        (payload.size() - sizeof(req)) % sizeof(peach2_rp_piece)) {
        received(PEACH2_ERR_RP_BAD_PACKET);
        sat_inc(rx_dropped_);
        card_.raise_error(PEACH2_ERR_RP_BAD_PACKET, addr,
                          "read-proxy request of " + std::to_string(payload.size()) +
                              " bytes not at the doorbell",
                          {.node = src_node, .value = payload.size()});
        return;
    }
    std::memcpy(&req, payload.data(), sizeof(req));
    const std::span<const uint8_t> list = payload.subspan(sizeof(req));
    // Where the answer goes is all the card needs to trust; the driver checks
    // the rest.
    if (req.cpl % 32 || req.cpl >= PEACH2_HOST_SIZE || PEACH2_HOST_SIZE - req.cpl < 32 ||
        src_node >= card_.cfg().node_count) {
        received(PEACH2_ERR_RP_BAD_PACKET);
        sat_inc(rx_dropped_);
        card_.raise_error(PEACH2_ERR_RP_BAD_PACKET, addr,
                          "read-proxy request from node " + std::to_string(src_node) +
                              " with completion address " + hex(req.cpl),
                          {.node = src_node, .value = payload.size()});
        return;
    }
    req.src_node = static_cast<uint16_t>(src_node);
    if (!(ctrl_ & PEACH2_RP_ENABLE)) {
        received(PEACH2_ERR_RP_OFF);
        answer(src_node, req.cpl, req.seq, PEACH2_ERR_RP_OFF);
        return;
    }
    // The list must be the one the request announces, so that the driver
    // can tell how many entries follow it.
    const uint64_t pieces = list.size() / sizeof(peach2_rp_piece);
    if (pieces != listed_pieces(req)) {
        received(PEACH2_ERR_RP_BAD_REQUEST);
        answer(src_node, req.cpl, req.seq, PEACH2_ERR_RP_BAD_REQUEST);
        return;
    }
    const uint32_t entries = 1 + PEACH2_RP_LIST_ENTRIES(static_cast<uint32_t>(pieces));
    if (tail_ - head_ + entries > size_) {
        received(PEACH2_ERR_RP_FULL);
        answer(src_node, req.cpl, req.seq, PEACH2_ERR_RP_FULL);
        return;
    }
    // The request, then its list, padded to whole entries.
    std::vector<uint8_t> raw(static_cast<size_t>(entries) * PEACH2_RP_ENTRY_SIZE, 0);
    std::memcpy(raw.data(), &req, sizeof(req));
    std::copy(list.begin(), list.end(), raw.begin() + sizeof(req));
    for (uint32_t i = 0; i < entries; ++i) {
        const uint64_t entry =
            base_ + static_cast<uint64_t>((tail_ + i) % size_) * PEACH2_RP_ENTRY_SIZE;
        if (!card_.host_write(entry, raw.data() + i * PEACH2_RP_ENTRY_SIZE, PEACH2_RP_ENTRY_SIZE)) {
            card_.raise_error(PEACH2_ERR_DMA_WRITE, entry,
                              "host memory rejected a read-proxy ring entry",
                              {.node = src_node, .value = PEACH2_RP_ENTRY_SIZE});
            received(PEACH2_ERR_DMA_WRITE);
            answer(src_node, req.cpl, req.seq, PEACH2_ERR_DMA_WRITE);
            return;
        }
    }
    received(PEACH2_ERR_NONE);
    tail_ += entries;
    sat_inc(rx_queued_);
    card_.raise_interrupt(PEACH2_INT_RP);
}

// A completion record from the card itself: the body, then the tag. RP_FULL
// and RP_OFF are flow control, counted in RP_RX_REFUSED but not raised as
// errors: a flood must not also cost the target an error interrupt per
// request.
void ReadProxy::answer(uint32_t node, uint64_t cpl, uint64_t tag, peach2_err status) {
    sat_inc(rx_refused_);
    const std::string what = std::string("read-proxy request from node ") + std::to_string(node) +
                             " answered " + peach2_err_name(status);
    card_.report({status, PEACH2_FW_NONE, false, PEACH2_NODE_BASE(node) + cpl, PEACH2_CORE_NONE,
                  node, PEACH2_CORE_NONE, tag, what.c_str()},
                 -1);
    uint8_t body[kCplBody] = {};
    store_le(body + offsetof(peach2_rp_cpl, status), status, 4);
    uint8_t tag_le[8];
    store_le(tag_le, tag, 8);
    const uint64_t at = PEACH2_NODE_BASE(node) + cpl;
    const Made why{trace::Origin::RpAnswer, trace::kNoPort, tag};
    if (card_.route_write(at, body, why) == PEACH2_ERR_NONE)
        card_.route_write(at + kCplBody, tag_le, why);
}

}  // namespace peach2
