// SPDX-License-Identifier: MIT
// The library's chains: a tcaChain id names one or more driver chains (more
// than one in register mode, where each holds one descriptor, or beyond
// PEACH2_DMA_MAX_XFERS entries). Caller holds the library mutex.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace tca {

struct LibChain {
	std::vector<std::uint32_t> driver_ids; // started in this order, on one channel
	std::uint32_t descriptors = 0;
};

class ChainTable {
public:
	// A new id (never 0, not in use) for `c`; 0 if the table is full.
	std::uint32_t add(LibChain c);
	// Copy of chain `id`; false if unknown.
	bool get(std::uint32_t id, LibChain *out) const;
	// Removes `id`; false if unknown.
	bool take(std::uint32_t id, LibChain *out);
	// Puts a taken chain back under its id.
	void put_back(std::uint32_t id, LibChain c) { chains_[id] = std::move(c); }

private:
	std::map<std::uint32_t, LibChain> chains_;
	std::uint32_t last_ = 0;
};

} // namespace tca
