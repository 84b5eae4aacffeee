// SPDX-License-Identifier: MIT
#include "protocol.hpp"

#include <algorithm>

#include "../common/pattern.hpp"

namespace tcabench {

Layout Layout::make(std::uint64_t max_size, unsigned slots) {
    // Whole 4 KiB blocks: stream stamps sit at the start of every page the
    // card writes into.
    return Layout{(max_size + 4095) / 4096 * 4096, slots};
}

std::uint64_t payload_seed(unsigned phase, unsigned size_index, std::uint64_t size,
                           std::uint64_t message, Dir d) {
    return tcatools::seed_of(phase * 0x10000ull + size_index, size, message,
                             static_cast<std::uint64_t>(d));
}

std::uint64_t slot_seed(unsigned phase, std::uint64_t size, unsigned slot) {
    return tcatools::seed_of(0x736c6f74ull /* "slot" */ + phase, size, slot);
}

std::uint64_t stamp_seed(unsigned phase, std::uint64_t size, std::uint64_t message) {
    return tcatools::seed_of(0x7374616d70ull /* "stamp" */ + phase, size, message);
}

std::uint64_t latency_iters(std::uint64_t size, std::uint64_t iters, std::uint64_t budget,
                            std::uint64_t min_iters) {
    const std::uint64_t by_budget = size ? budget / size : iters;
    return std::max(std::min(iters, by_budget), std::min(iters, min_iters));
}

std::uint64_t stream_messages(std::uint64_t size, std::uint64_t budget) {
    const std::uint64_t n = size ? budget / size : 16;
    return std::clamp<std::uint64_t>(n, 16, 4096);
}

}  // namespace tcabench
