// SPDX-License-Identifier: MIT
#include "draw.hpp"

#include <cmath>

namespace rpcheck {

GetShape draw_get(std::mt19937_64 &rng, std::uint64_t src_size, std::uint64_t dst_size,
		  std::uint64_t min_len, std::uint64_t max_len)
{
	std::uniform_real_distribution<double> lg(std::log2(static_cast<double>(min_len)),
						  std::log2(static_cast<double>(max_len)));
	GetShape g;
	g.len = static_cast<std::uint64_t>(std::exp2(lg(rng))) / 4 * 4;
	if (g.len < min_len)
		g.len = (min_len + 3) / 4 * 4;
	if (g.len > max_len)
		g.len = max_len / 4 * 4;
	g.src_off = std::uniform_int_distribution<std::uint64_t>(0, (src_size - g.len) / 4)(rng) * 4;
	// dst_off = 16 k + src_off % 16, inside [0, dst_size - len].
	const std::uint64_t low = g.src_off % 16;
	const std::uint64_t kmax = (dst_size - g.len - low) / 16;
	g.dst_off = std::uniform_int_distribution<std::uint64_t>(0, kmax)(rng) * 16 + low;
	return g;
}

} // namespace rpcheck
