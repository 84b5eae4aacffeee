// SPDX-License-Identifier: MIT
// The read proxy's memory on the requesting side: completion records (a
// pool of 32-byte slots per driver buffer; retired slots never reused), the
// areas that hold them, and the pins that keep a pending get's destination
// buffer from tcaFree. Thread-safe, no device calls (the Context allocates
// the areas' buffers).
#include <limits>
#include <utility>

#include "rp.hpp"

namespace tca {

SlotPool::SlotPool(std::uint32_t count) : count_(count) {
    free_.reserve(count);
    for (std::uint32_t i = count; i > 0; --i)
        free_.push_back(i - 1);  // slot 0 on top
    free_count_.store(count, std::memory_order_relaxed);
}

bool SlotPool::take(std::uint32_t* slot) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty())
        return false;
    *slot = free_.back();
    free_.pop_back();
    free_count_.store(static_cast<std::uint32_t>(free_.size()), std::memory_order_relaxed);
    return true;
}

void SlotPool::give(std::uint32_t slot) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(slot);
    free_count_.store(static_cast<std::uint32_t>(free_.size()), std::memory_order_relaxed);
}

void SlotPool::retire(std::uint32_t) {
    retired_.fetch_add(1, std::memory_order_relaxed);
}

peach2_rp_cpl CplArea::read(std::uint32_t slot) const noexcept {
    // The card's DMA wrote it; volatile loads so the compiler reads it now,
    // after the acquire load of the tag.
    const volatile peach2_rp_cpl* r = reinterpret_cast<const volatile peach2_rp_cpl*>(record(slot));
    peach2_rp_cpl c{};
    c.value = r->value;
    c.status = r->status;
    c.len = r->len;
    c.reserved = r->reserved;
    c.tag = r->tag;
    return c;
}

bool CplAreas::take(SlotRef* out) {
    CplArea& a = current();
    if (!a.slots().take(&out->slot))
        return false;
    out->area = &a;
    return true;
}

bool CplAreas::wants_fresh() {
    SlotPool& p = current().slots();
    const std::uint32_t retired = p.retired_count();
    return retired >= p.count() / 2 || (retired > 0 && p.free_count() == 0);
}

void CplAreas::add(std::unique_ptr<DriverBuffer> buffer) {
    void* base = buffer->map.get();
    const std::uint32_t id = buffer->id();
    // Owned holds a mutex (in the pool): built in place, never moved.
    std::unique_ptr<Owned> owned(new Owned{std::move(buffer), CplArea(base, id, 0, kSlots)});
    std::lock_guard<std::mutex> lock(mutex_);
    areas_.push_back(std::move(owned));
    current_.store(&areas_.back()->area, std::memory_order_release);
}

std::size_t CplAreas::count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return areas_.size();
}

RpPin& RpPin::operator=(RpPin&& o) noexcept {
    if (this != &o) {
        release();
        pins_ = std::exchange(o.pins_, nullptr);
        id_ = o.id_;
    }
    return *this;
}

void RpPin::release() noexcept {
    if (!pins_)
        return;
    std::lock_guard<std::mutex> lock(pins_->mutex_);
    if (RpPins::Entry* e = pins_->find(id_)) {
        *e = pins_->pins_.back();
        pins_->pins_.pop_back();
    }
    pins_ = nullptr;
}

void RpPin::set_deadline(std::uint64_t deadline_ns) noexcept {
    if (!pins_)
        return;
    std::lock_guard<std::mutex> lock(pins_->mutex_);
    if (RpPins::Entry* e = pins_->find(id_))
        e->deadline_ns = deadline_ns;
}

RpPins::Entry* RpPins::find(std::uint64_t id) noexcept {
    for (Entry& e : pins_)
        if (e.id == id)
            return &e;
    return nullptr;
}

RpPin RpPins::pin(std::uint32_t buffer) {
    std::lock_guard<std::mutex> lock(mutex_);
    pins_.push_back(Entry{++next_id_, buffer, std::numeric_limits<std::uint64_t>::max()});
    return RpPin(this, next_id_);
}

bool RpPins::busy(std::uint32_t buffer, std::uint64_t now_ns) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Entry& e : pins_)
        if (e.buffer == buffer && e.deadline_ns > now_ns)
            return true;
    return false;
}

}  // namespace tca
