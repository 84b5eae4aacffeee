// SPDX-License-Identifier: MIT
// Deterministic test data. Byte i of the pattern for `seed` is a pure
// function of (seed, i), so a receiver can check any sub-range without
// having the sender's buffer, and every message (seeded by iteration, size,
// direction) differs from the one before it in the same memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tcatools {

inline constexpr std::size_t kNoMismatch = static_cast<std::size_t>(-1);

// splitmix64 finaliser (full avalanche).
constexpr std::uint64_t mix(std::uint64_t x) noexcept {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Combines values into one seed (order matters).
constexpr std::uint64_t seed_of(std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0,
                                std::uint64_t d = 0) noexcept {
    return mix(mix(mix(mix(a) ^ b) ^ c) ^ d);
}

// Bytes 8·word .. 8·word + 7 of the pattern as one little-endian word.
constexpr std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t word) noexcept {
    return mix(seed ^ word * 0x9e3779b97f4a7c15ull);
}

// Byte `index` of the pattern: counter-based, one mix per 8 bytes.
constexpr std::uint8_t pattern_byte(std::uint64_t seed, std::uint64_t index) noexcept {
    return static_cast<std::uint8_t>(pattern_word(seed, index / 8) >> (8 * (index % 8)));
}

// out[j] = pattern_byte(seed, first + j).
void fill_pattern(std::span<std::uint8_t> out, std::uint64_t seed,
                  std::uint64_t first = 0) noexcept;

// First j with got[j] != pattern_byte(seed, first + j), or kNoMismatch.
std::size_t find_mismatch(std::span<const std::uint8_t> got, std::uint64_t seed,
                          std::uint64_t first = 0) noexcept;

}  // namespace tcatools
