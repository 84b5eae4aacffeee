// SPDX-License-Identifier: MIT
#include "pattern.hpp"

#include <cstring>

namespace tcatools {
namespace {

// Whole 8-byte words of the pattern at once: the per-byte function is
// exact but does one mix per byte, too slow for megabyte buffers under
// emulation.
inline std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t word) noexcept
{
	return mix(seed ^ word * 0x9e3779b97f4a7c15ull);
}

} // namespace

void fill_pattern(std::span<std::uint8_t> out, std::uint64_t seed, std::uint64_t first) noexcept
{
	std::size_t j = 0;
	for (; j < out.size() && (first + j) % 8 != 0; ++j)
		out[j] = pattern_byte(seed, first + j);
	for (; j + 8 <= out.size(); j += 8) {
		const std::uint64_t w = pattern_word(seed, (first + j) / 8);
		std::memcpy(&out[j], &w, 8); // little endian: byte k = bits 8k..8k+7
	}
	for (; j < out.size(); ++j)
		out[j] = pattern_byte(seed, first + j);
}

std::size_t find_mismatch(std::span<const std::uint8_t> got, std::uint64_t seed,
			  std::uint64_t first) noexcept
{
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

} // namespace tcatools
