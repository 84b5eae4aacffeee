// SPDX-License-Identifier: MIT
#include "chain_table.hpp"

namespace tca {

std::uint32_t ChainTable::add(LibChain c)
{
	// Cyclic ids: a destroyed chain's id is not handed out again at once, so
	// a stale tcaChain fails instead of starting someone else's chain.
	for (std::uint64_t tries = 0; tries < 0xffffffffull; ++tries) {
		if (++last_ == 0)
			last_ = 1;
		if (chains_.find(last_) == chains_.end()) {
			chains_.emplace(last_, std::move(c));
			return last_;
		}
	}
	return 0;
}

bool ChainTable::get(std::uint32_t id, LibChain *out) const
{
	const auto it = chains_.find(id);
	if (it == chains_.end())
		return false;
	*out = it->second;
	return true;
}

bool ChainTable::take(std::uint32_t id, LibChain *out)
{
	const auto it = chains_.find(id);
	if (it == chains_.end())
		return false;
	*out = std::move(it->second);
	chains_.erase(it);
	return true;
}

} // namespace tca
