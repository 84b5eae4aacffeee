// SPDX-License-Identifier: MIT
// The start cache: one-shot lists that come again become driver chains
// (dma.hpp says why and when). Used by dma.cpp's start of a one-run list;
// Context::release_buffer() calls forget() before a buffer is freed.
#include <peach2/peach2_uapi.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string_view>

#include "dma.hpp"

namespace tca {
namespace {

// peach2_xfer has no padding (uapi layout), so its bytes are its value.
static_assert(sizeof(peach2_xfer) == 48);
// A kept list is one run.
static_assert(StartCache::kMaxEntries <= PEACH2_DMA_MAX_XFERS);

std::string_view bytes_of(std::span<const peach2_xfer> entries) noexcept {
    return {reinterpret_cast<const char*>(entries.data()), entries.size_bytes()};
}

// Of the count and the first and last entries only: a hit compares all of
// them anyway, and hashing a MiB of scattered pages' entries (12 KiB) cost
// more guest time than the comparison. Never 0 (an empty slot of seen_).
std::uint64_t hash_of(std::span<const peach2_xfer> entries) noexcept {
    const peach2_xfer ends[2] = {entries.front(), entries.back()};
    const std::uint64_t h = std::hash<std::string_view>{}(bytes_of(ends));
    return (h ^ (entries.size() * 0x9e3779b97f4a7c15ull)) | 1;
}

}  // namespace

std::uint32_t StartCache::acquire(std::span<const peach2_xfer> entries) {
    if (entries.empty() || entries.size() > kMaxEntries)
        return 0;
    const std::uint64_t hash = hash_of(entries);
    std::lock_guard<std::mutex> lock(mu_);
    if (!dying_.empty())
        destroy_idle();
    for (Entry& e : kept_) {
        if (e.hash != hash || bytes_of(e.key) != bytes_of(entries))
            continue;
        if (e.users) {
            ++stats_.busy;  // another thread is starting it
            return 0;
        }
        ++e.users;
        e.used = ++clock_;
        ++stats_.hits;
        return e.chain;
    }
    const auto seen = std::find(seen_.begin(), seen_.end(), hash);
    if (seen == seen_.end()) {
        seen_[seen_next_++ % kSeen] = hash;
        return 0;
    }
    *seen = 0;
    return build(entries, hash);
}

// A chain for `entries`, kept and held for one start; 0 if the driver
// refuses (the one-shot start then says why).
std::uint32_t StartCache::build(std::span<const peach2_xfer> entries, std::uint64_t hash) {
    peach2_chain_create req{};
    req.xfers = reinterpret_cast<std::uintptr_t>(entries.data());
    req.count = static_cast<__u32>(entries.size());
    req.flags = PEACH2_DMA_HOST_DESC;
    if (port_.call(PEACH2_IOC_CHAIN_CREATE, &req))
        return 0;
    ++stats_.built;
    if (kept_.size() >= kChains) {
        // The least recently used goes (held ones last; they die when released).
        auto lru = std::min_element(kept_.begin(), kept_.end(), [](const Entry& a, const Entry& b) {
            return (a.users != 0) != (b.users != 0) ? a.users == 0 : a.used < b.used;
        });
        retire(lru);
        destroy_idle();
    }
    Entry e;
    e.key.assign(entries.begin(), entries.end());
    e.hash = hash;
    e.chain = req.chain;
    e.users = 1;
    e.used = ++clock_;
    kept_.push_back(std::move(e));
    return req.chain;
}

void StartCache::release(std::uint32_t chain, bool busy) {
    std::lock_guard<std::mutex> lock(mu_);
    if (busy)
        ++stats_.busy;
    for (std::vector<Entry>* list : {&kept_, &dying_})
        for (Entry& e : *list)
            if (e.chain == chain && e.users)
                --e.users;
    if (!dying_.empty())
        destroy_idle();
}

bool StartCache::names(const Entry& e, std::uint32_t handle) const noexcept {
    return std::any_of(e.key.begin(), e.key.end(), [&](const peach2_xfer& x) {
        return x.src_handle == handle || x.dst_handle == handle;
    });
}

void StartCache::forget(std::uint32_t handle) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = kept_.begin(); it != kept_.end();)
        it = names(*it, handle) ? retire(it) : it + 1;
    destroy_idle();
}

// Moves a kept chain to the dying ones; the next kept one.
std::vector<StartCache::Entry>::iterator StartCache::retire(std::vector<Entry>::iterator it) {
    dying_.push_back(std::move(*it));
    return kept_.erase(it);
}

// Destroys the dying chains nobody holds; one still running (-EBUSY) is
// tried again at the next call.
void StartCache::destroy_idle() {
    std::erase_if(dying_, [&](const Entry& e) {
        if (e.users)
            return false;
        peach2_chain_destroy d{};
        d.chain = e.chain;
        const int rc = port_.call(PEACH2_IOC_CHAIN_DESTROY, &d);
        if (rc == -EBUSY)
            return false;
        ++stats_.dropped;
        return true;  // gone (or already gone: -ENOENT)
    });
}

StartCache::Stats StartCache::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
}

std::size_t StartCache::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return kept_.size();
}

}  // namespace tca
