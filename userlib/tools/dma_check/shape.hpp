// SPDX-License-Identifier: MIT
// The geometry of one DMA transfer as tca_dma_check draws and checks it:
// where it reads, where it writes, block-stride included. The receiver
// predicts every destination byte from this alone. Pure, unit-tested.
#pragma once

#include <cstdint>

namespace dmacheck {

// tcaDmaXfer.stride bits (TCA_DMA_STRIDE_SRC/DST) are used as is.
struct Shape {
	std::uint64_t src_off = 0; // in the sender's lane source
	std::uint64_t dst_off = 0; // in the receiver's lane data
	std::uint64_t len = 0;
	std::uint32_t burst = 0, gap = 0, stride = 0;
};

// Bytes from the first to the last byte a side touches.
std::uint64_t src_span(const Shape &s);
std::uint64_t dst_span(const Shape &s);

// Calls fn(src_off + i, dst_off + j) for every byte, as the card moves it.
template <class Fn>
void for_each_byte(const Shape &s, Fn &&fn)
{
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
Shape random_shape(Rng &rng, std::uint64_t src_room, std::uint64_t dst_room, std::uint64_t min_len,
		   std::uint64_t max_len);

} // namespace dmacheck
