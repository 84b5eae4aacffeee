// The inbound filter (docs/hardware.md §5, "Inbound filter"): the host-memory
// ranges the driver registered, the only places delivered writes (remote or
// loopback) may land in, and the IN_* registers that edit them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include "peach2/peach2_hw.h"

namespace peach2 {

class Card;

class InboundFilter {
public:
    explicit InboundFilter(Card& card) : card_(card) {}

    // May a write of `len` bytes at host bus address `addr` land? (Always,
    // while the filter is disabled.)
    bool admits(uint64_t addr, uint64_t len) const;

    // The range set itself (IN_CMD ADD/REMOVE/CLEAR). PEACH2_ERR_NONE or why
    // the command was refused.
    peach2_err add(uint64_t base, uint64_t size);
    peach2_err remove(uint64_t base);
    void clear() {
        ranges_.clear();
        ++generation_;
    }
    size_t size() const { return ranges_.size(); }
    bool enabled() const { return ctrl_ & PEACH2_IN_ENABLE; }
    // Changes whenever the filter may have: a transport that applies it
    // elsewhere (direct writes) copies the ranges again.
    uint64_t generation() const { return generation_; }
    // Up to `max` ranges as [base, end) pairs, ascending; returns how many.
    size_t ranges(uint64_t (*out)[2], size_t max) const;
    // True if [addr, addr+len) lies inside one registered range.
    bool contains(uint64_t addr, uint64_t len) const;

    // Reset: enabled and empty. Registers: IN_CTRL ... IN_RESULT.
    void reset();
    bool reg_read(uint64_t off, uint32_t& v) const;
    bool reg_write(uint64_t off, uint32_t v);

private:
    void command(uint32_t cmd);

    Card& card_;
    uint32_t ctrl_ = PEACH2_IN_ENABLE;
    uint64_t base_ = 0;
    uint64_t size_ = 0;
    uint32_t result_ = 0;
    uint64_t generation_ = 0;
    std::map<uint64_t, uint64_t> ranges_;  // base -> end (exclusive)
};

}  // namespace peach2
