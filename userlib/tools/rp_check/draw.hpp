// SPDX-License-Identifier: MIT
// Random gets for get-verify: a length (multiple of 4, log-uniform between
// min and max), a source offset in the served buffer (multiple of 4) and a
// destination offset with the source's low 4 address bits (the DMA rule;
// both buffers are page aligned, so offsets stand for addresses). Pure.
#pragma once

#include <cstdint>
#include <random>

namespace rpcheck {

struct GetShape {
	std::uint64_t src_off = 0, dst_off = 0, len = 0;
};

// src_size: the served range; dst_size: the local buffer. Requires
// 4 <= min_len <= max_len <= min(src_size, dst_size - 16).
GetShape draw_get(std::mt19937_64 &rng, std::uint64_t src_size, std::uint64_t dst_size,
		  std::uint64_t min_len, std::uint64_t max_len);

} // namespace rpcheck
