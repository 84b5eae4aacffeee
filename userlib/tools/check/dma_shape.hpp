// SPDX-License-Identifier: MIT
// tca_check dma send/recv (placement.hpp): the geometry of one transfer as
// the sender draws it (where it reads, where it writes, block-stride
// included), the records both sides coordinate through, and the
// receiver's check, which predicts every destination byte from the shape
// alone. Pure, unit-tested.
//
// The receiver owns, per lane, a region [guard | data | guard] filled with
// canaries, and a control buffer with a kCtrlSlot-byte slot per lane: a
// DmaCtrl record, then (kWordOff bytes in) the lane's sequence word. The
// sender owns a source region per lane and an ack buffer with a kAckSlot-
// byte Ack per lane. Transfer k of lane l is one DMA list, on channel l:
// the data, then the DmaCtrl record describing it (copied from the
// sender's memory), then a completion word k + 1 into the lane's sequence
// word. The receiver sees the word, reads DmaCtrl, checks the lane region,
// restores the canaries and answers with an Ack (PIO). The lanes run at
// the same time, so the four channels do. The end of a lane is the word
// kEndBit | transfers.
#pragma once

#include <peach2/peach2_hw.h>

#include <cstdint>
#include <span>

#include "placement.hpp"

namespace tcacheck {

// tcaDmaXfer.stride bits (TCA_DMA_STRIDE_SRC/DST) are used as is.
struct Shape {
    std::uint64_t src_off = 0;  // in the sender's lane source
    std::uint64_t dst_off = 0;  // in the receiver's lane data
    std::uint64_t len = 0;
    std::uint32_t burst = 0, gap = 0, stride = 0;
};

// Bytes from the first to the last byte a side touches.
std::uint64_t src_span(const Shape& s);
std::uint64_t dst_span(const Shape& s);

// Calls fn(src_off + i, dst_off + j) for every byte, as the card moves it.
template <class Fn>
void for_each_byte(const Shape& s, Fn&& fn) {
    const std::uint64_t step = static_cast<std::uint64_t>(s.burst) + s.gap;
    for (std::uint64_t p = 0; p < s.len; ++p) {
        std::uint64_t src = s.src_off + p, dst = s.dst_off + p;
        if (s.burst) {
            const std::uint64_t block = p / s.burst, within = p % s.burst;
            src = s.src_off + block * ((s.stride & 1u) ? step : s.burst) + within;
            dst = s.dst_off + block * ((s.stride & 2u) ? step : s.burst) + within;
        }
        fn(src, dst);
    }
}

struct DmaCtrl {
    std::uint64_t k;     // transfer number in the lane
    std::uint64_t seed;  // source pattern: byte x of the lane source = pattern_byte(seed, x)
    std::uint64_t src_off, dst_off, len;
    std::uint32_t burst, gap, stride, mode;
};

inline constexpr std::uint64_t kCtrlSlot = 128;  // per lane: DmaCtrl, then the word at +64
inline constexpr std::uint64_t kWordOff = 64;
inline constexpr std::uint64_t kAckSlot = 64;
inline constexpr unsigned kMaxLanes = PEACH2_DMA_CHANNELS;  // one per channel
static_assert(sizeof(DmaCtrl) <= kWordOff, "a DmaCtrl record fits its half slot");

// splitmix64: small, seedable, good enough to draw test cases.
class Rng {
public:
    explicit Rng(std::uint64_t seed) : x_(seed) {}
    std::uint64_t next();
    // Uniform in [lo, hi] (hi >= lo).
    std::uint64_t range(std::uint64_t lo, std::uint64_t hi);

private:
    std::uint64_t x_;
};

// A random legal shape: lengths from min_len to max_len (log-uniform: as
// many small ones as big ones), offsets anywhere in the rooms, source and
// destination with equal low 4 bits, and in about half the cases
// block-stride on the source, the destination or both. Fits [0, src_room)
// and [0, dst_room) (shorter than min_len only if it must, to fit); rooms
// are multiples of 16, min_len and max_len multiples of 4, at least 4.
Shape random_shape(Rng& rng, std::uint64_t src_room, std::uint64_t dst_room, std::uint64_t min_len,
                   std::uint64_t max_len);

// The lane's pristine image: guard canaries, data canaries, guard canaries.
void fill_lane_pristine(std::span<std::uint8_t> region, std::uint64_t guard, unsigned lane);

// Checks `region` after transfer (shape, seed) into its data part; returns
// a Status, with *where = first bad byte (region offset) if not kOk.
std::uint64_t check_lane(std::span<const std::uint8_t> region,
                         std::span<const std::uint8_t> pristine, std::uint64_t guard,
                         const Shape& shape, std::uint64_t seed, std::uint64_t* where);

}  // namespace tcacheck
