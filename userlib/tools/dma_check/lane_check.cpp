// SPDX-License-Identifier: MIT
#include "lane_check.hpp"

#include "../common/pattern.hpp"

#include <cstring>
#include <vector>

namespace dmacheck {

void fill_lane_pristine(std::span<std::uint8_t> region, std::uint64_t guard, unsigned lane)
{
	const std::uint64_t data = region.size() - 2 * guard;
	const std::uint64_t gseed = tcatools::seed_of(0x6775617264ull /* "guard" */, lane);
	const std::uint64_t dseed = tcatools::seed_of(0x64617461ull /* "data" */, lane);
	tcatools::fill_pattern(region.subspan(0, guard), gseed);
	tcatools::fill_pattern(region.subspan(guard, data), dseed);
	tcatools::fill_pattern(region.subspan(guard + data), gseed, guard);
}

std::uint64_t check_lane(std::span<const std::uint8_t> region, std::span<const std::uint8_t> pristine,
			 std::uint64_t guard, const Shape &shape, std::uint64_t seed,
			 std::uint64_t *where)
{
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

} // namespace dmacheck
