// SPDX-License-Identifier: MIT
#include "rings.hpp"

namespace pv {

std::uint32_t TxRings::push_ll() noexcept {
    ++ll_next_;
    ++ll_used_;
    unacked_.push_back(Sent{false, 0});
    return ++sent_;
}

bool TxRings::hb_place(std::uint64_t bytes, HbPlace* out) const noexcept {
    if (bytes == 0 || bytes % wire::kHbAlign || bytes > hb_bytes_ / 2)
        return false;
    const std::uint64_t free = hb_bytes_ - hb_used_;
    if (hb_head_ + bytes <= hb_bytes_) {
        if (bytes > free)
            return false;
        *out = HbPlace{hb_head_, false, 0};
        return true;
    }
    const std::uint64_t pad = hb_bytes_ - hb_head_;  // a WRAP record (>= kHbAlign)
    if (pad + bytes > free)
        return false;
    *out = HbPlace{0, true, hb_head_};
    return true;
}

std::uint32_t TxRings::push_hb(std::uint64_t bytes, const HbPlace& at) noexcept {
    std::uint64_t held = bytes;
    if (at.wrap) {
        held += hb_bytes_ - hb_head_;
        ++hb_records_;
    }
    hb_head_ = (at.offset + bytes) % hb_bytes_;
    hb_used_ += held;
    ++hb_records_;
    unacked_.push_back(Sent{true, held});
    return ++sent_;
}

void TxRings::retire(std::uint32_t acked) noexcept {
    while (acked_ != acked) {
        const Sent s = unacked_.front();
        unacked_.pop_front();
        if (s.hb)
            hb_used_ -= s.hb_bytes;
        else
            --ll_used_;
        ++acked_;
    }
}

}  // namespace pv
