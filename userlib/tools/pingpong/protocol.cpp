// SPDX-License-Identifier: MIT
#include "protocol.hpp"

#include "../common/pattern.hpp"

namespace pingpong {

std::uint64_t payload_seed(std::uint32_t size_index, std::uint64_t size, std::uint64_t iteration,
			   Direction dir)
{
	return tcatools::seed_of(size_index, size, iteration, static_cast<std::uint64_t>(dir));
}

std::uint32_t session_tag(const std::vector<std::uint64_t> &sizes, std::uint64_t iterations,
			  std::uint64_t warmup)
{
	std::uint64_t h = tcatools::seed_of(0x70696e67706f6e67ull /* "pingpong" */, iterations, warmup,
					    sizes.size());
	for (std::uint64_t s : sizes)
		h = tcatools::mix(h ^ s);
	return static_cast<std::uint32_t>(h ^ (h >> 32));
}

std::uint32_t done_tag(std::uint32_t session)
{
	return session ^ 0x444f4e45u; // "DONE": differs from the session tag
}

} // namespace pingpong
