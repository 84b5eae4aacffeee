// The set of host-memory ranges remote (and loopback) writes may land in.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>

#include "peach2/peach2_hw.h"

namespace peach2 {

class InboundFilter {
public:
    // Returns PEACH2_ERR_NONE or why the range was refused.
    peach2_err add(uint64_t base, uint64_t size) {
        if (size == 0 || base + size < base)
            return PEACH2_ERR_BAD_COMMAND;
        if (ranges_.size() >= PEACH2_IN_MAX_RANGES)
            return PEACH2_ERR_BAD_COMMAND;
        const uint64_t end = base + size;
        auto next = ranges_.lower_bound(base);
        if (next != ranges_.end() && next->first < end)
            return PEACH2_ERR_BAD_COMMAND;  // overlaps the following range
        if (next != ranges_.begin() && std::prev(next)->second > base)
            return PEACH2_ERR_BAD_COMMAND;  // overlaps the preceding range
        ranges_.emplace(base, end);
        return PEACH2_ERR_NONE;
    }
    peach2_err remove(uint64_t base) {
        return ranges_.erase(base) ? PEACH2_ERR_NONE : PEACH2_ERR_BAD_COMMAND;
    }
    void clear() { ranges_.clear(); }
    size_t size() const { return ranges_.size(); }

    // True if [addr, addr+len) lies inside one registered range.
    bool contains(uint64_t addr, uint64_t len) const {
        auto it = ranges_.upper_bound(addr);
        if (it == ranges_.begin())
            return false;
        --it;
        return addr + len >= addr && addr + len <= it->second;
    }

private:
    std::map<uint64_t, uint64_t> ranges_;  // base -> end (exclusive)
};

}  // namespace peach2
