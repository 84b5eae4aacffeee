// Decoding of global window addresses (peach2_hw.h, "Global address map").
#pragma once

#include <cstdint>

#include "peach2/peach2_hw.h"

namespace peach2 {

enum class Region { Host, Mailbox, CardReserved, Gpu, Unmapped };

struct Decoded {
    uint32_t node;  // slice the address falls in
    Region region;
    uint64_t offset;  // offset inside the region (Host: the bus address)
};

// Decode a global address. `len` bytes starting there must stay inside one
// region, else the region is Unmapped (a write may not straddle regions).
constexpr Decoded decode_global(uint64_t addr, uint64_t len) {
    const uint32_t node = PEACH2_ADDR_NODE(addr);
    const uint64_t off = PEACH2_ADDR_OFFSET(addr);
    const auto inside = [&](uint64_t base, uint64_t size) {
        return off >= base && len <= size && off - base <= size - len;
    };
    if (inside(0, PEACH2_HOST_SIZE))
        return {node, Region::Host, off};
    if (inside(PEACH2_CARD_OFF + PEACH2_CARD_MAILBOX_OFF, PEACH2_MAILBOX_SIZE))
        return {node, Region::Mailbox, off - PEACH2_CARD_OFF - PEACH2_CARD_MAILBOX_OFF};
    if (inside(PEACH2_CARD_OFF, PEACH2_CARD_SIZE))
        return {node, Region::CardReserved, off - PEACH2_CARD_OFF};
    if (inside(PEACH2_GPU_OFF, PEACH2_GPU_SIZE))
        return {node, Region::Gpu, off - PEACH2_GPU_OFF};
    return {node, Region::Unmapped, off};
}

}  // namespace peach2
