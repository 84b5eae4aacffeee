// SPDX-License-Identifier: MIT
#include "pattern.hpp"

#include <cstring>

namespace tcatools {

void fill_pattern(std::span<std::uint8_t> out, std::uint64_t seed, std::uint64_t first) noexcept {
    std::size_t j = 0;
    for (; j < out.size() && (first + j) % 8 != 0; ++j)
        out[j] = pattern_byte(seed, first + j);
    // Whole words at once: the per-byte function is exact but does one mix
    // per byte, too slow for megabyte buffers under emulation.
    for (; j + 8 <= out.size(); j += 8) {
        const std::uint64_t w = pattern_word(seed, (first + j) / 8);
        std::memcpy(&out[j], &w, 8);  // little endian: byte k = bits 8k..8k+7
    }
    for (; j < out.size(); ++j)
        out[j] = pattern_byte(seed, first + j);
}

std::size_t find_mismatch(std::span<const std::uint8_t> got, std::uint64_t seed,
                          std::uint64_t first) noexcept {
    std::uint8_t expect[256];
    for (std::size_t j = 0; j < got.size(); j += sizeof expect) {
        const std::size_t n = got.size() - j < sizeof expect ? got.size() - j : sizeof expect;
        fill_pattern(std::span<std::uint8_t>(expect, n), seed, first + j);
        if (std::memcmp(expect, &got[j], n) != 0)
            for (std::size_t k = 0; k < n; ++k)
                if (expect[k] != got[j + k])
                    return j + k;
    }
    return kNoMismatch;
}

}  // namespace tcatools
