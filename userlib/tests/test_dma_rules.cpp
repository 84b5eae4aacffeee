// SPDX-License-Identifier: MIT
// The DMA restrictions as the library checks them, and the option mapping.
#include <gtest/gtest.h>
#include <peach2/peach2_hw.h>
#include <tca/tca.h>

#include <cerrno>

#include "dma.hpp"

using namespace tca;

TEST(DmaRules, Alignment) {
    EXPECT_EQ(0, check_alignment(0x1000, 0x2000, 4));
    EXPECT_EQ(0, check_alignment(0x1004, 0x2004, 8));
    EXPECT_EQ(0, check_alignment(0x100c, 0x7777710c, 64));
    EXPECT_EQ(TCA_EALIGN, check_alignment(0x1001, 0x2001, 4));  // equal low bits, unaligned
    EXPECT_EQ(TCA_EALIGN, check_alignment(0x1000, 0x2002, 4));
    EXPECT_EQ(TCA_EALIGN, check_alignment(0x1000, 0x2004, 4));  // low 4 bits differ
    EXPECT_EQ(TCA_EALIGN, check_alignment(0x1008, 0x2000, 4));
    EXPECT_EQ(TCA_EALIGN, check_alignment(0x1000, 0x2000, 6));  // length
    EXPECT_EQ(TCA_EALIGN, check_alignment(0x1000, 0x2000, 1));
    // Every combination of low 4 bits: allowed exactly when equal and 4-aligned.
    for (unsigned s = 0; s < 16; ++s)
        for (unsigned d = 0; d < 16; ++d)
            EXPECT_EQ(s == d && s % 4 == 0 ? 0 : TCA_EALIGN,
                      check_alignment(0x40000 + s, 0x90000 + d, 16))
                << s << " " << d;
}

TEST(DmaRules, StrideSpan) {
    std::uint64_t span = 0;
    ASSERT_TRUE(stride_span(64, 16, 48, &span));
    EXPECT_EQ(3u * 64 + 16, span);  // 4 blocks, 3 gaps
    ASSERT_TRUE(stride_span(72, 16, 48, &span));
    EXPECT_EQ(4u * 64 + 8, span);  // partial last block
    ASSERT_TRUE(stride_span(16, 16, 48, &span));
    EXPECT_EQ(16u, span);  // one block: no gap
    ASSERT_TRUE(stride_span(4, 64, 0, &span));
    EXPECT_EQ(4u, span);
    EXPECT_FALSE(stride_span(UINT64_MAX, 4, 0xffff, &span));  // overflow
}

TEST(DmaRules, StrideParameters) {
    std::uint64_t s = 0, d = 0;
    const std::uint32_t S = TCA_DMA_STRIDE_SRC, D = TCA_DMA_STRIDE_DST;
    EXPECT_EQ(0, check_stride(256, 0, 0, 0, &s, &d));  // contiguous
    EXPECT_EQ(256u, s);
    EXPECT_EQ(256u, d);
    ASSERT_EQ(0, check_stride(256, D, 64, 64, &s, &d));
    EXPECT_EQ(256u, s);
    EXPECT_EQ(3u * 128 + 64, d);
    ASSERT_EQ(0, check_stride(256, S, 64, 16, &s, &d));
    EXPECT_EQ(3u * 80 + 64, s);
    EXPECT_EQ(256u, d);
    ASSERT_EQ(0, check_stride(256, S | D, 8, 4, &s, &d));  // both sides: gap x4 is enough
    EXPECT_EQ(s, d);
    EXPECT_EQ(TCA_ESTRIDE, check_stride(256, D, 64, 4, &s, &d));  // one side: gap x16
    EXPECT_EQ(TCA_ESTRIDE, check_stride(256, S, 64, 8, &s, &d));
    EXPECT_EQ(TCA_ESTRIDE, check_stride(256, D, 6, 16, &s, &d));     // burst x4
    EXPECT_EQ(TCA_ESTRIDE, check_stride(256, S | D, 8, 2, &s, &d));  // gap x4
    EXPECT_EQ(TCA_ESTRIDE, check_stride(256, 0, 64, 0, &s, &d));     // burst, no side
    EXPECT_EQ(TCA_ESTRIDE, check_stride(256, D, 0, 0, &s, &d));      // side, no burst
    EXPECT_EQ(TCA_ESTRIDE, check_stride(256, 0, 0, 16, &s, &d));     // gap, no burst
    EXPECT_EQ(TCA_ESTRIDE, check_stride(PEACH2_DMA_MAX_LEN + 4ull, D, 64, 64, &s, &d));
    EXPECT_EQ(-EINVAL, check_stride(256, 4, 64, 64, &s, &d));  // undefined bit
}

TEST(DmaRules, Notify) {
    EXPECT_EQ(0, check_notify(0x1008, 8));
    EXPECT_EQ(0, check_notify(0x1004, 4));
    EXPECT_EQ(TCA_EALIGN, check_notify(0x1004, 8));
    EXPECT_EQ(TCA_EALIGN, check_notify(0x1002, 4));
    EXPECT_EQ(-EINVAL, check_notify(0x1000, 2));
}

TEST(DmaFlags, OptionsMapToTheDriver) {
    DmaMode m;
    ASSERT_EQ(0, dma_mode(nullptr, &m));
    EXPECT_EQ(0u, m.desc);
    EXPECT_EQ(PEACH2_DMA_ANY_CHANNEL, m.channel);
    EXPECT_FALSE(m.wait);

    tcaDmaOpts o{};
    o.flags = TCA_DMA_REG_MODE | TCA_DMA_WAIT;
    o.channel = TCA_DMA_CHANNEL(3);
    o.timeout_ms = 250;
    ASSERT_EQ(0, dma_mode(&o, &m));
    EXPECT_EQ(PEACH2_DMA_REG_MODE, m.desc);
    EXPECT_EQ(3u, m.channel);
    EXPECT_TRUE(m.wait);
    EXPECT_EQ(250, m.timeout_ms);

    o = tcaDmaOpts{};
    o.flags = TCA_DMA_HOST_DESC;
    o.channel = TCA_DMA_CHANNEL(0);
    ASSERT_EQ(0, dma_mode(&o, &m));
    EXPECT_EQ(PEACH2_DMA_HOST_DESC, m.desc);
    EXPECT_EQ(0u, m.channel);

    o.flags = TCA_DMA_HOST_DESC | TCA_DMA_REG_MODE;
    EXPECT_EQ(-EINVAL, dma_mode(&o, &m));
    o.flags = 1u << 7;
    EXPECT_EQ(-EINVAL, dma_mode(&o, &m));
    o = tcaDmaOpts{};
    o.channel = TCA_DMA_CHANNEL(4);
    EXPECT_EQ(-EINVAL, dma_mode(&o, &m));
    o = tcaDmaOpts{};
    o.reserved = 1;
    EXPECT_EQ(-EINVAL, dma_mode(&o, &m));

    EXPECT_EQ(0u, xfer_stride_flags(0));
    EXPECT_EQ(PEACH2_XFER_STRIDE_SRC, xfer_stride_flags(TCA_DMA_STRIDE_SRC));
    EXPECT_EQ(PEACH2_XFER_STRIDE_DST, xfer_stride_flags(TCA_DMA_STRIDE_DST));
    EXPECT_EQ(PEACH2_XFER_STRIDE_SRC | PEACH2_XFER_STRIDE_DST,
              xfer_stride_flags(TCA_DMA_STRIDE_SRC | TCA_DMA_STRIDE_DST));
}
