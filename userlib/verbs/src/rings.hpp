// SPDX-License-Identifier: MIT
// Ring and PSN bookkeeping of one QP direction, without any I/O (unit
// tested): where the next packet goes in the peer's two rings, when there
// is room, and what an acknowledgement frees.
//
// Packets of a QP are numbered 1, 2, 3, ... ("seq", 32 bits, wrapping) in
// posting order, whichever ring carries them. The receiver consumes them in
// that order and acknowledges the count it consumed; since the sender
// remembers which ring and how many bytes each packet took, one count frees
// low-latency slots and high-bandwidth bytes alike.
#pragma once

#include <cstdint>
#include <deque>

#include "wire.hpp"

namespace pv {

// Serial-number comparison of 32-bit sequence numbers (RFC 1982).
constexpr bool seq_before(std::uint32_t a, std::uint32_t b) noexcept {
    return static_cast<std::int32_t>(a - b) < 0;
}

class TxRings {
public:
    TxRings(std::uint32_t ll_slots, std::uint32_t hb_bytes) noexcept
        : ll_slots_(ll_slots), hb_bytes_(hb_bytes) {}

    // The next packet's seq (1 for the first).
    std::uint32_t next_seq() const noexcept { return sent_ + 1; }
    std::uint32_t sent() const noexcept { return sent_; }
    std::uint32_t acked() const noexcept { return acked_; }
    bool all_acked() const noexcept { return acked_ == sent_; }

    // Low-latency ring: the slot of the next LL packet, if one is free.
    bool ll_room() const noexcept { return ll_used_ < ll_slots_; }
    std::uint32_t ll_slot() const noexcept { return ll_next_ % ll_slots_; }
    // Records an LL packet as sent; returns its seq.
    std::uint32_t push_ll() noexcept;

    // High-bandwidth ring: where a record of `bytes` (a multiple of
    // kHbAlign, at most half the ring) would start. It never straddles the
    // ring's end: if it does not fit before it, a WRAP record (when at least
    // kHbAlign bytes are left) fills the rest and the record starts at 0.
    struct HbPlace {
        std::uint64_t offset;  // where the record starts
        bool wrap;             // a WRAP record at wrap_at comes first
        std::uint64_t wrap_at;
    };
    // False if the ring has no room for it now.
    bool hb_place(std::uint64_t bytes, HbPlace* out) const noexcept;
    // Records an HB packet placed by hb_place; returns its seq.
    std::uint32_t push_hb(std::uint64_t bytes, const HbPlace& at) noexcept;
    // HB records written (WRAPs included): the sender's half of the HB pair.
    std::uint32_t hb_records() const noexcept { return hb_records_; }

    // The peer consumed every packet up to seq `acked` (a count). Stale or
    // impossible values (beyond what was sent) are ignored: false. Inline:
    // every poll of every QP asks it, and it is almost always "nothing new".
    bool ack(std::uint32_t acked) noexcept {
        if (!seq_before(acked_, acked) || seq_before(sent_, acked))
            return false;
        retire(acked);
        return true;
    }

    std::uint32_t max_packet() const noexcept { return hb_bytes_ / 2; }

private:
    void retire(std::uint32_t acked) noexcept;

    struct Sent {
        bool hb;
        std::uint64_t hb_bytes;  // bytes of the ring it holds (padding and WRAP included)
    };

    std::uint32_t ll_slots_;
    std::uint64_t hb_bytes_;
    std::uint32_t sent_ = 0;
    std::uint32_t acked_ = 0;
    std::uint32_t ll_next_ = 0;
    std::uint32_t ll_used_ = 0;
    std::uint64_t hb_head_ = 0;  // next free byte (offset in the ring)
    std::uint64_t hb_used_ = 0;  // bytes held by unacknowledged records
    std::uint32_t hb_records_ = 0;
    std::deque<Sent> unacked_;  // seq acked_+1 first
};

// The receiving side's position in its own two rings.
class RxRings {
public:
    RxRings(std::uint32_t ll_slots, std::uint64_t hb_bytes) noexcept
        : ll_slots_(ll_slots), hb_bytes_(hb_bytes) {}

    // The seq of the packet it waits for (as written in pairs: n + 1 style).
    std::uint32_t expected() const noexcept { return consumed_ + 1; }
    std::uint32_t consumed() const noexcept { return consumed_; }

    std::uint32_t ll_slot() const noexcept { return ll_next_ % ll_slots_; }
    void consume_ll() noexcept {
        ++ll_next_;
        ++consumed_;
    }

    // HB: records the peer said it wrote (its pair) beyond those seen.
    bool hb_pending(std::uint32_t peer_records) const noexcept {
        return seq_before(hb_seen_, peer_records);
    }
    std::uint64_t hb_offset() const noexcept { return hb_pos_; }
    // A WRAP record was read at hb_offset(): continue at 0.
    void skip_wrap() noexcept {
        hb_pos_ = 0;
        ++hb_seen_;
    }
    // The packet at hb_offset(), `bytes` long, was consumed.
    void consume_hb(std::uint64_t bytes) noexcept {
        hb_pos_ = (hb_pos_ + bytes) % hb_bytes_;
        ++hb_seen_;
        ++consumed_;
    }

private:
    std::uint32_t ll_slots_;
    std::uint64_t hb_bytes_;
    std::uint32_t consumed_ = 0;
    std::uint32_t ll_next_ = 0;
    std::uint64_t hb_pos_ = 0;
    std::uint32_t hb_seen_ = 0;
};

}  // namespace pv
