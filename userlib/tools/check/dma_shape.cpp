// SPDX-License-Identifier: MIT
#include "dma_shape.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "../common/pattern.hpp"

namespace tcacheck {
namespace {

std::uint64_t span_of(const Shape& s, bool strided) {
    if (!s.burst || !strided || s.len == 0)
        return s.len;
    const std::uint64_t blocks = (s.len - 1) / s.burst;
    return blocks * (static_cast<std::uint64_t>(s.burst) + s.gap) + (s.len - blocks * s.burst);
}

// Log-uniform length: as many tiny transfers as big ones.
std::uint64_t draw_len(Rng& rng, std::uint64_t max_len) {
    const unsigned bits = 64 - __builtin_clzll(max_len / 4);
    const std::uint64_t cap = std::min<std::uint64_t>(max_len / 4, 1ull << rng.range(0, bits));
    return 4 * rng.range(1, cap);
}

}  // namespace

std::uint64_t src_span(const Shape& s) { return span_of(s, s.stride & 1u); }

std::uint64_t dst_span(const Shape& s) { return span_of(s, s.stride & 2u); }

std::uint64_t Rng::next() {
    std::uint64_t z = (x_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

std::uint64_t Rng::range(std::uint64_t lo, std::uint64_t hi) { return lo + next() % (hi - lo + 1); }

Shape random_shape(Rng& rng, std::uint64_t src_room, std::uint64_t dst_room, std::uint64_t min_len,
                   std::uint64_t max_len) {
    Shape s;
    const std::uint64_t kind = rng.range(0, 7);  // 0-3 contiguous, 4 src, 5 dst, 6-7 both
    if (kind >= 4) {
        s.stride = kind == 4 ? 1u : kind == 5 ? 2u : 3u;
        s.burst = static_cast<std::uint32_t>(4 * rng.range(1, 64));
        // A gap on one side only keeps the low 4 bits only in steps of 16.
        s.gap = static_cast<std::uint32_t>(s.stride == 3 ? 4 * rng.range(0, 64)
                                                         : 16 * rng.range(0, 16));
    }
    s.len = std::max(draw_len(rng, max_len), min_len);
    // Shrink until both spans fit their rooms (with room for the 16-byte
    // phase shift below).
    while (s.len > 4 && (src_span(s) + 16 > src_room || dst_span(s) + 16 > dst_room))
        s.len = std::max<std::uint64_t>(4, s.len / 2 / 4 * 4);
    s.dst_off = 4 * rng.range(0, (dst_room - dst_span(s)) / 4);
    const std::uint64_t phase = s.dst_off % 16;
    s.src_off = 16 * rng.range(0, (src_room - src_span(s) - phase) / 16) + phase;
    return s;
}

void fill_lane_pristine(std::span<std::uint8_t> region, std::uint64_t guard, unsigned lane) {
    const std::uint64_t data = region.size() - 2 * guard;
    const std::uint64_t gseed = tcatools::seed_of(0x6775617264ull /* "guard" */, lane);
    const std::uint64_t dseed = tcatools::seed_of(0x64617461ull /* "data" */, lane);
    tcatools::fill_pattern(region.subspan(0, guard), gseed);
    tcatools::fill_pattern(region.subspan(guard, data), dseed);
    tcatools::fill_pattern(region.subspan(guard + data), gseed, guard);
}

std::uint64_t check_lane(std::span<const std::uint8_t> region,
                         std::span<const std::uint8_t> pristine, std::uint64_t guard,
                         const Shape& shape, std::uint64_t seed, std::uint64_t* where) {
    std::vector<std::uint8_t> expect(pristine.begin(), pristine.end());
    std::vector<bool> written(region.size(), false);
    for_each_byte(shape, [&](std::uint64_t src, std::uint64_t dst) {
        expect[guard + dst] = tcatools::pattern_byte(seed, src);
        written[guard + dst] = true;
    });
    if (std::memcmp(expect.data(), region.data(), region.size()) == 0)
        return kOk;
    std::uint64_t b = 0;
    while (expect[b] == region[b])
        ++b;
    *where = b;
    return written[b] ? kTargetMismatch : kStrayWrite;
}

}  // namespace tcacheck
