// SPDX-License-Identifier: MIT
// The PIO store routine: which stores it issues (head/body/tail split) and
// what they write, against a fake window in ordinary memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "pio.hpp"

using tca::plan_stores;

namespace {

struct Store {
    std::size_t off;
    unsigned width;
};

std::vector<Store> plan(std::uintptr_t addr, std::size_t len) {
    std::vector<Store> v;
    plan_stores(addr, len, [&](std::size_t off, unsigned w) { v.push_back({off, w}); });
    return v;
}

}  // namespace

// For every start alignment and many lengths: the stores tile [0, len) in
// ascending order, each naturally aligned, 8 bytes wherever an aligned
// 8-byte word fits, and at most three narrow stores at each end.
TEST(PioPlan, TilesRangeWithAlignedStores) {
    for (std::uintptr_t base : {0x10000ul, 0x7fff0000ul}) {
        for (unsigned mis = 0; mis < 16; ++mis) {
            for (std::size_t len = 0; len < 200; ++len) {
                const std::uintptr_t addr = base + mis;
                const auto v = plan(addr, len);
                // Head: before the first 8-aligned address; tail: the rest.
                const std::uintptr_t first_word = (addr + 7) / 8 * 8;
                std::size_t pos = 0, narrow_head = 0, narrow_tail = 0;
                for (const Store& s : v) {
                    ASSERT_EQ(pos, s.off) << "gap/overlap mis=" << mis << " len=" << len;
                    ASSERT_TRUE(s.width == 1 || s.width == 2 || s.width == 4 || s.width == 8);
                    ASSERT_EQ(0u, (addr + s.off) % s.width) << "unaligned store";
                    if (s.width != 8)
                        ++(addr + s.off < first_word ? narrow_head : narrow_tail);
                    pos += s.width;
                }
                ASSERT_EQ(len, pos);
                // A range inside one word may need 4 (1+2+2+1 at offset 1, len 6);
                // one that reaches an aligned address: at most 3 per end.
                if (addr + len >= first_word) {
                    EXPECT_LE(narrow_head, 3u) << "mis=" << mis << " len=" << len;
                    EXPECT_LE(narrow_tail, 3u) << "mis=" << mis << " len=" << len;
                }
                EXPECT_LE(narrow_head + narrow_tail, 6u);
                // Every aligned 8-byte word inside the range is one store.
                const std::size_t words =
                    addr + len >= first_word ? (addr + len - first_word) / 8 : 0;
                std::size_t eights = 0;
                for (const Store& s : v)
                    eights += s.width == 8;
                EXPECT_EQ(words, eights) << "mis=" << mis << " len=" << len;
            }
        }
    }
}

TEST(PioPlan, Examples) {
    // 13 bytes at ...1: 1 (@1) 2 (@2) 4 (@4) 4 (@8) 2 (@12): no 8 fits.
    auto v = plan(0x1001, 13);
    ASSERT_EQ(5u, v.size());
    EXPECT_EQ(1u, v[0].width);
    EXPECT_EQ(2u, v[1].width);
    EXPECT_EQ(4u, v[2].width);
    EXPECT_EQ(4u, v[3].width);
    EXPECT_EQ(2u, v[4].width);
    // 8 aligned bytes: exactly one store.
    v = plan(0x1000, 8);
    ASSERT_EQ(1u, v.size());
    EXPECT_EQ(8u, v[0].width);
    // Empty: nothing.
    EXPECT_TRUE(plan(0x1003, 0).empty());
}

// pio_copy into a fake window: right bytes at every alignment, nothing
// written outside the range, any source alignment.
TEST(PioCopy, FakeWindow) {
    constexpr std::size_t kGuard = 32, kMax = 300;
    alignas(64) static unsigned char window[kGuard + 16 + kMax + kGuard];
    std::vector<unsigned char> src(kMax + 16);
    for (std::size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<unsigned char>(i * 37 + 11);
    for (unsigned mis = 0; mis < 16; ++mis)
        for (unsigned src_mis = 0; src_mis < 8; src_mis += 3)
            for (std::size_t len = 0; len <= kMax; len += (len < 40 ? 1 : 13)) {
                std::memset(window, 0xee, sizeof window);
                tca::pio_copy(window + kGuard + mis, src.data() + src_mis, len);
                for (std::size_t i = 0; i < sizeof window; ++i) {
                    const std::size_t lo = kGuard + mis;
                    if (i >= lo && i < lo + len)
                        ASSERT_EQ(src[src_mis + i - lo], window[i])
                            << "mis " << mis << " len " << len;
                    else
                        ASSERT_EQ(0xee, window[i]) << "stray store at " << i;
                }
            }
    tca::store_fence();  // links and runs
}

TEST(PioCopy, MmioRead64) {
    alignas(8) std::uint64_t dev[4] = {1, 0x1122334455667788ull, ~0ull, 0};
    std::uint64_t out[4] = {};
    tca::mmio_read64(out, dev, sizeof dev);
    EXPECT_EQ(0, std::memcmp(out, dev, sizeof dev));
}
