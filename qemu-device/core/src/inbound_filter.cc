// The inbound filter's ranges and registers.
#include "inbound_filter.h"

#include <iterator>
#include <string>

#include "card.h"
#include "util.h"

namespace peach2 {

void InboundFilter::reset() {
    ctrl_ = PEACH2_IN_ENABLE;
    base_ = 0;
    size_ = 0;
    result_ = 0;
    ranges_.clear();
    ++generation_;
}

size_t InboundFilter::ranges(uint64_t (*out)[2], size_t max) const {
    size_t n = 0;
    for (auto it = ranges_.begin(); it != ranges_.end() && n < max; ++it, ++n) {
        out[n][0] = it->first;
        out[n][1] = it->second;
    }
    return n;
}

bool InboundFilter::admits(uint64_t addr, uint64_t len) const {
    return !(ctrl_ & PEACH2_IN_ENABLE) || contains(addr, len);
}

peach2_err InboundFilter::add(uint64_t base, uint64_t size) {
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
    ++generation_;
    return PEACH2_ERR_NONE;
}

peach2_err InboundFilter::remove(uint64_t base) {
    if (!ranges_.erase(base))
        return PEACH2_ERR_BAD_COMMAND;
    ++generation_;
    return PEACH2_ERR_NONE;
}

bool InboundFilter::contains(uint64_t addr, uint64_t len) const {
    auto it = ranges_.upper_bound(addr);
    if (it == ranges_.begin())
        return false;
    --it;
    return addr + len >= addr && addr + len <= it->second;
}

bool InboundFilter::reg_read(uint64_t off, uint32_t& v) const {
    switch (off) {
    case PEACH2_REG_IN_CTRL: v = ctrl_; return true;
    case PEACH2_REG_IN_COUNT: v = static_cast<uint32_t>(ranges_.size()); return true;
    case PEACH2_REG_IN_BASE_LO: v = lo32(base_); return true;
    case PEACH2_REG_IN_BASE_HI: v = hi32(base_); return true;
    case PEACH2_REG_IN_SIZE_LO: v = lo32(size_); return true;
    case PEACH2_REG_IN_SIZE_HI: v = hi32(size_); return true;
    case PEACH2_REG_IN_RESULT: v = result_; return true;
    default: return false;
    }
}

bool InboundFilter::reg_write(uint64_t off, uint32_t v) {
    switch (off) {
    case PEACH2_REG_IN_CTRL:
        ctrl_ = v & PEACH2_IN_ENABLE;
        ++generation_;
        return true;
    case PEACH2_REG_IN_BASE_LO: set_lo32(base_, v); return true;
    case PEACH2_REG_IN_BASE_HI: set_hi32(base_, v); return true;
    case PEACH2_REG_IN_SIZE_LO: set_lo32(size_, v); return true;
    case PEACH2_REG_IN_SIZE_HI: set_hi32(size_, v); return true;
    case PEACH2_REG_IN_CMD: command(v); return true;
    default: return false;
    }
}

void InboundFilter::command(uint32_t cmd) {
    peach2_err r = PEACH2_ERR_BAD_COMMAND;
    switch (cmd) {
    case PEACH2_IN_CMD_ADD: r = add(base_, size_); break;
    case PEACH2_IN_CMD_REMOVE: r = remove(base_); break;
    case PEACH2_IN_CMD_CLEAR:
        clear();
        r = PEACH2_ERR_NONE;
        break;
    default: break;
    }
    result_ = r;
    if (r != PEACH2_ERR_NONE)
        card_.raise_error(r, base_,
                          "inbound filter command " + std::to_string(cmd) + " refused (base " +
                              hex(base_) + ", size " + hex(size_) + ")",
                          {.value = cmd});
}

}  // namespace peach2
