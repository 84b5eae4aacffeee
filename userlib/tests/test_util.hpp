// SPDX-License-Identifier: MIT
// Helpers shared by the unit tests.
#pragma once

#include "handle.hpp"

#include <peach2/peach2_hw.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tcatest {

// A valid one-piece handle for `size` bytes at host offset `at` on `node`.
inline tcaHandle one_piece(std::uint32_t node, std::uint64_t at, std::uint64_t size)
{
	const tcaChunk c{PEACH2_NODE_BASE(node) + at, size};
	tcaHandle h{};
	EXPECT_EQ(0, tca::make_handle(node, {&c, 1}, 0, 0, &h));
	return h;
}

// Pieces of `len` bytes each, 1 MiB apart (never adjacent, never merged).
inline std::vector<tcaChunk> scattered(std::uint32_t node, unsigned count, std::uint64_t len)
{
	std::vector<tcaChunk> v;
	for (unsigned i = 0; i < count; ++i)
		v.push_back({PEACH2_NODE_BASE(node) + 0x100000ull * (i + 1), len});
	return v;
}

} // namespace tcatest
