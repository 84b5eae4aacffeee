// SPDX-License-Identifier: MIT
// tcaPutAuto's choice between PIO and DMA, and the TCA_PIO_MAX parser; the
// library's chain table.
#include <gtest/gtest.h>
#include <tca/tca.h>

#include "dma.hpp"

using namespace tca;

TEST(PutChoice, SmallGoesByPio) {
    const PutSplit s = choose_put(2048, true, 0x1000, 0x2000, 2048);
    EXPECT_EQ(2048u, s.head);
    EXPECT_EQ(0u, s.body);
    EXPECT_EQ(0u, s.tail);
}

TEST(PutChoice, LargeAlignedGoesByDma) {
    const PutSplit s = choose_put(4096, true, 0x1000, 0x2000, 2048);
    EXPECT_EQ(0u, s.head);
    EXPECT_EQ(4096u, s.body);
    EXPECT_EQ(0u, s.tail);
}

TEST(PutChoice, UnalignedEdgesGoByPio) {
    // Equal low 4 bits, 1 byte past a 4-byte boundary, odd length.
    const PutSplit s = choose_put(5003, true, 0x1005, 0x7775, 2048);
    EXPECT_EQ(3u, s.head);
    EXPECT_EQ(5000u, s.body);
    EXPECT_EQ(0u, s.tail);
    const PutSplit t = choose_put(5002, true, 0x100d, 0x200d, 2048);
    EXPECT_EQ(3u, t.head);
    EXPECT_EQ(4996u, t.body);
    EXPECT_EQ(3u, t.tail);
    EXPECT_EQ(5002u, t.head + t.body + t.tail);
}

TEST(PutChoice, DmaImpossibleFallsBackToPio) {
    // Low 4 bits differ: the card cannot do it at all.
    PutSplit s = choose_put(1 << 20, true, 0x1000, 0x2008, 2048);
    EXPECT_EQ(1u << 20, s.head);
    EXPECT_EQ(0u, s.body);
    // Source not in a tcaMalloc buffer: the card cannot read it.
    s = choose_put(1 << 20, false, 0x1000, 0x2000, 2048);
    EXPECT_EQ(0u, s.body);
    // Threshold 0: everything that can go by DMA does.
    s = choose_put(4, true, 0x1000, 0x2000, 0);
    EXPECT_EQ(4u, s.body);
    s = choose_put(3, true, 0x1001, 0x2001, 0);  // no whole word after the head
    EXPECT_EQ(0u, s.body);
    EXPECT_EQ(3u, s.head);
}

TEST(PutChoice, ThresholdFromTheEnvironment) {
    EXPECT_EQ(TCA_PIO_MAX_DEFAULT, pio_max_from(nullptr));
    EXPECT_EQ(TCA_PIO_MAX_DEFAULT, pio_max_from(""));
    EXPECT_EQ(TCA_PIO_MAX_DEFAULT, pio_max_from("lots"));
    EXPECT_EQ(TCA_PIO_MAX_DEFAULT, pio_max_from("-5"));
    EXPECT_EQ(TCA_PIO_MAX_DEFAULT, pio_max_from("12 "));
    EXPECT_EQ(TCA_PIO_MAX_DEFAULT, pio_max_from("99999999999999999999"));
    EXPECT_EQ(0u, pio_max_from("0"));
    EXPECT_EQ(4096u, pio_max_from("4096"));
    EXPECT_EQ(8192u, pio_max_from("8k"));
    EXPECT_EQ(8192u, pio_max_from("8K"));
    EXPECT_EQ(3u << 20, pio_max_from("3M"));
    EXPECT_EQ(0x1000u, pio_max_from("0x1000"));
}

TEST(ChainTable, IdsAreNeverZeroAndNotReusedAtOnce) {
    ChainTable t;
    const std::uint32_t a = t.add(LibChain{{5}, 1});
    const std::uint32_t b = t.add(LibChain{{6, 7}, 2});
    EXPECT_NE(0u, a);
    EXPECT_NE(a, b);
    LibChain c;
    ASSERT_TRUE(t.get(b, &c));
    EXPECT_EQ((std::vector<std::uint32_t>{6, 7}), c.driver_ids);
    ASSERT_TRUE(t.take(a, &c));
    EXPECT_FALSE(t.get(a, &c));
    EXPECT_FALSE(t.take(a, &c));
    const std::uint32_t d = t.add(LibChain{{8}, 1});
    EXPECT_NE(a, d) << "a destroyed chain's id is not handed out again at once";
    t.put_back(a, LibChain{{5}, 1});
    EXPECT_TRUE(t.get(a, &c));
    EXPECT_FALSE(t.get(0, &c));
}
