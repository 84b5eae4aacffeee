// SPDX-License-Identifier: MIT
// small_copy and copy_sges (small_copy.hpp): every length from 0 to past
// the inline limit, at every misalignment of 0..7, copies exactly its bytes
// and touches nothing around them.
#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "small_copy.hpp"

using namespace pv;

TEST(SmallCopy, CopiesExactlyTheBytesAtEveryLengthAndAlignment) {
    std::array<unsigned char, 256> src{}, dst{};
    for (std::size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<unsigned char>(i * 7 + 1);
    for (std::size_t n = 0; n <= 80; ++n)
        for (std::size_t so = 0; so < 8; ++so)
            for (std::size_t dof = 0; dof < 8; ++dof) {
                dst.fill(0xee);
                small_copy(dst.data() + 16 + dof, src.data() + so, n);
                for (std::size_t i = 0; i < dst.size(); ++i) {
                    const bool inside = i >= 16 + dof && i < 16 + dof + n;
                    const unsigned char want = inside ? src[so + i - 16 - dof] : 0xee;
                    ASSERT_EQ(dst[i], want) << "n " << n << ", src +" << so << ", dst +" << dof
                                            << ": byte " << i;
                }
            }
}

TEST(SmallCopy, CopiesSgeLists) {
    ibv_sge from[3] = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
    for (std::size_t n = 0; n <= 3; ++n) {
        ibv_sge to[4] = {};
        copy_sges(from, n, to);
        for (std::size_t i = 0; i < 4; ++i) {
            const ibv_sge want = i < n ? from[i] : ibv_sge{};
            EXPECT_EQ(to[i].addr, want.addr);
            EXPECT_EQ(to[i].length, want.length);
            EXPECT_EQ(to[i].lkey, want.lkey);
        }
    }
}
