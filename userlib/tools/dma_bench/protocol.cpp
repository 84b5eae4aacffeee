// SPDX-License-Identifier: MIT
#include "protocol.hpp"

#include "../common/pattern.hpp"

#include <algorithm>

namespace dmabench {

const char *mode_name(Mode m)
{
	switch (m) {
	case Mode::Reg: return "reg";
	case Mode::Card: return "card";
	case Mode::Host: return "host";
	case Mode::Pio: return "pio";
	}
	return "?";
}

const char *mode_title(Mode m)
{
	switch (m) {
	case Mode::Reg: return "DMA, register mode (one descriptor per run)";
	case Mode::Card: return "DMA, descriptors in on-card RAM";
	case Mode::Host: return "DMA, descriptors in host memory";
	case Mode::Pio: return "PIO (CPU stores through the window), for comparison";
	}
	return "?";
}

bool parse_modes(std::string_view s, std::vector<Mode> *out)
{
	std::vector<Mode> v;
	while (true) {
		const std::size_t comma = s.find(',');
		const std::string_view name = s.substr(0, comma);
		bool found = false;
		for (unsigned i = 0; i < kModes; ++i) {
			const Mode m = static_cast<Mode>(i);
			if (name == mode_name(m)) {
				if (std::find(v.begin(), v.end(), m) != v.end())
					return false;
				v.push_back(m);
				found = true;
			}
		}
		if (!found)
			return false;
		if (comma == std::string_view::npos)
			break;
		s.remove_prefix(comma + 1);
	}
	*out = std::move(v);
	return true;
}

Layout Layout::make(std::uint64_t max_size, unsigned slots)
{
	// Whole 4 KiB blocks: stream stamps sit at the start of every page the
	// card writes into.
	return Layout{(max_size + 4095) / 4096 * 4096, slots};
}

std::uint64_t payload_seed(unsigned phase, unsigned size_index, std::uint64_t size,
			   std::uint64_t message, Dir d)
{
	return tcatools::seed_of(phase * 0x10000ull + size_index, size, message,
				 static_cast<std::uint64_t>(d));
}

std::uint64_t slot_seed(unsigned phase, std::uint64_t size, unsigned slot)
{
	return tcatools::seed_of(0x736c6f74ull /* "slot" */ + phase, size, slot);
}

std::uint64_t stamp_seed(unsigned phase, std::uint64_t size, std::uint64_t message)
{
	return tcatools::seed_of(0x7374616d70ull /* "stamp" */ + phase, size, message);
}

std::uint64_t latency_iters(std::uint64_t size, std::uint64_t iters, std::uint64_t budget,
			    std::uint64_t min_iters)
{
	const std::uint64_t by_budget = size ? budget / size : iters;
	return std::max(std::min(iters, by_budget), std::min(iters, min_iters));
}

std::uint64_t stream_messages(std::uint64_t size, std::uint64_t budget)
{
	const std::uint64_t n = size ? budget / size : 16;
	return std::clamp<std::uint64_t>(n, 16, 4096);
}

std::uint32_t session_tag(const std::vector<Mode> &modes, const std::vector<std::uint64_t> &sizes,
			  const std::vector<std::uint64_t> &params)
{
	std::uint64_t h = tcatools::seed_of(0x646d6162656e6368ull /* "dmabench" */, modes.size(),
					    sizes.size(), params.size());
	for (Mode m : modes)
		h = tcatools::mix(h ^ static_cast<std::uint64_t>(m));
	for (std::uint64_t s : sizes)
		h = tcatools::mix(h ^ s);
	for (std::uint64_t p : params)
		h = tcatools::mix(h ^ p);
	return static_cast<std::uint32_t>(h ^ (h >> 32));
}

} // namespace dmabench
