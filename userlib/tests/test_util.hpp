// SPDX-License-Identifier: MIT
// Helpers shared by the unit tests.
#pragma once

#include <gtest/gtest.h>
#include <peach2/peach2_hw.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "handle.hpp"

namespace tcatest {

// Points libtca at the fake driver (libfake_peach2.so, LD_PRELOADed by
// ctest): node 0 of 2, state in a fresh directory named after `name`.
// Returns the directory; remove it with remove_fake_device().
inline std::string use_fake_device(const char* name) {
    std::string tmpl = std::string("/tmp/tca-fake-") + name + "-XXXXXX";
    EXPECT_NE(nullptr, mkdtemp(tmpl.data()));
    setenv("TCA_FAKE_DIR", tmpl.c_str(), 1);
    setenv("TCA_DEVICE", "/fake/peach2-0", 1);
    setenv("TCA_FAKE_NODE", "0", 1);
    setenv("TCA_FAKE_NODES", "2", 1);
    return tmpl;
}

inline void remove_fake_device(const std::string& dir) { std::system(("rm -rf " + dir).c_str()); }

// A valid one-piece handle for `size` bytes at host offset `at` on `node`.
inline tcaHandle one_piece(std::uint32_t node, std::uint64_t at, std::uint64_t size) {
    const tcaChunk c{PEACH2_NODE_BASE(node) + at, size};
    tcaHandle h{};
    EXPECT_EQ(0, tca::make_handle(node, {&c, 1}, 0, 0, &h));
    return h;
}

// Pieces of `len` bytes each, 1 MiB apart (never adjacent, never merged).
inline std::vector<tcaChunk> scattered(std::uint32_t node, unsigned count, std::uint64_t len) {
    std::vector<tcaChunk> v;
    for (unsigned i = 0; i < count; ++i)
        v.push_back({PEACH2_NODE_BASE(node) + 0x100000ull * (i + 1), len});
    return v;
}

}  // namespace tcatest
