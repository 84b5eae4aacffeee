// SPDX-License-Identifier: MIT
// tca_check pio recv/send: what the receiver's buffer must contain, and the
// records the two sides coordinate through (placement.hpp).
//
// Data byte i starts as data_canary(i); write k stores written_byte(k, i),
// which differs from the canary in every byte (so a dropped byte cannot go
// unnoticed) and from write to write. Guard bytes hold guard_canary(b) and
// must never change. Both programs compute these independently; only (k,
// offset, len) travel: per write k the sender stores the data, then
// Ctrl{offset, len} and Ctrl.seq = k + 1 (a separate, fenced put, so seq is
// seen last); the receiver answers with an Ack. The end is Ctrl.seq =
// kEndBit | number of writes. Pure, unit-tested.
#pragma once

#include <cstdint>
#include <span>

#include "../common/pattern.hpp"
#include "placement.hpp"

namespace tcacheck {

// In the receiver's control buffer.
struct PioCtrl {
    std::uint64_t offset;  // data offset of the write
    std::uint64_t len;     // bytes written
    std::uint64_t seq;     // k + 1, or kEndBit | count; stored last
};

inline constexpr std::uint64_t kDataSeed = 0x64617461636e7279ull;   // "datacnry"
inline constexpr std::uint64_t kGuardSeed = 0x6775617264636e72ull;  // "guardcnr"

inline std::uint8_t data_canary(std::uint64_t i) { return tcatools::pattern_byte(kDataSeed, i); }

inline std::uint8_t guard_canary(std::uint64_t b) { return tcatools::pattern_byte(kGuardSeed, b); }

inline std::uint8_t written_byte(std::uint64_t k, std::uint64_t i) {
    const std::uint64_t seed = tcatools::seed_of(0x7772697465ull /* "write" */, k);
    return static_cast<std::uint8_t>(data_canary(i) ^ (1 + tcatools::pattern_byte(seed, i) % 255));
}

// out[j] = written_byte(k, first + j).
void fill_written(std::span<std::uint8_t> out, std::uint64_t k, std::uint64_t first);

// The receiver's pristine image: guard, data canary, guard.
void fill_pristine(std::span<std::uint8_t> buffer, std::uint64_t guard);

// Checks `buffer` (layout as fill_pristine) after write k of [offset,
// offset + len): kOk if exactly that range changed, correctly; else the
// Status, with *where = first bad position relative to the data start
// (negative: in the front guard).
std::uint64_t check_after_write(std::span<const std::uint8_t> buffer,
                                std::span<const std::uint8_t> pristine, std::uint64_t guard,
                                std::uint64_t k, std::uint64_t offset, std::uint64_t len,
                                std::int64_t* where);

}  // namespace tcacheck
