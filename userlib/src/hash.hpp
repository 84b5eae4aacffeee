// SPDX-License-Identifier: MIT
// A small 64-bit hash over 8-byte words, used for the handle check value and
// the mailbox record checksum. Not cryptographic: it only has to catch torn
// reads, corrupted copies and garbage, and every word change must alter it.
#pragma once

#include <cstdint>
#include <span>

namespace tca {

// splitmix64's finaliser: a bijection on 64-bit values with full avalanche,
// so two inputs differing in any bit give unrelated outputs.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

// Position-dependent: word i contributes mix64(seed ^ w ^ i·k), so swapped
// or shifted words change the result as well as changed ones.
constexpr std::uint64_t hash_words(std::span<const std::uint64_t> words,
				   std::uint64_t seed) noexcept
{
	std::uint64_t h = mix64(seed ^ words.size());
	for (std::size_t i = 0; i < words.size(); ++i)
		h = mix64(h ^ words[i] ^ (0x9e3779b97f4a7c15ull * (i + 1)));
	return h;
}

} // namespace tca
