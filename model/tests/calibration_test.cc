// The calibration: the papers' experiments as synthetic traces, through the
// built-in parameters, must reproduce every figure the papers give within
// 10 % (issue 15). docs/notes.md ("Issue 15") holds the table.
#include "calibration.h"

#include <gtest/gtest.h>

#include <cmath>

namespace peach2::model {
namespace {

Params profile(const std::string& name) {
    std::string err;
    auto p = parse_params(builtin_params(), "built-in", name, &err);
    EXPECT_TRUE(p) << err;
    return p ? *p : Params{};
}

TEST(Calibration, EveryPaperFigureWithinTenPercent) {
    std::string err;
    auto figures = calibrate(builtin_params(), &err);
    ASSERT_TRUE(figures) << err;
    EXPECT_GE(figures->size(), 16u);
    for (const Figure& f : *figures) {
        EXPECT_FALSE(std::isnan(f.model)) << f.id;
        EXPECT_TRUE(f.ok()) << f.id << " (" << f.what << ", " << f.source << ", profile "
                            << f.profile << "): model " << f.model << " " << f.unit << ", paper "
                            << f.paper_text << ", accepted " << f.lo << " .. " << f.hi;
    }
}

TEST(Calibration, RegisterModeBeatsOneDescriptorAtEverySizeUpTo2KiB) {
    const Params p = profile("2013");
    for (uint32_t size = 8; size <= 2048; size *= 2) {
        const double pct = register_speedup_pct(p, size);
        EXPECT_GE(pct, 27.0) << size << " B";
        EXPECT_LE(pct, 44.0) << size << " B";
    }
}

TEST(Calibration, TwoChainedDescriptorsAreAsFastAsOneOfTheirSize) {
    // 004 §4.1.1: from 2 descriptors on, figure 6 matches figure 5's single
    // descriptor of the same total size.
    const Params p = profile("2013");
    for (uint32_t n : {2u, 4u}) {
        const double chained = local_dma_us(p, trace::DmaMode::ChainHost, n, 4096);
        const double one = local_dma_us(p, trace::DmaMode::ChainHost, 1, n * 4096);
        EXPECT_NEAR(chained / one, 1.0, 0.10) << n << " descriptors";
    }
}

TEST(Calibration, PioWinsForSmallMessagesAndRegisterDmaForKilobytes) {
    // 004 §4.2.3: PIO for a few bytes, register-mode DMA below a few KB.
    const Params p = profile("2013");
    EXPECT_LT(pio_pingpong_us(p, 8), dma_pingpong_us(p, trace::DmaMode::Register, 8, false));
    EXPECT_GT(pio_pingpong_us(p, 4096), dma_pingpong_us(p, trace::DmaMode::Register, 4096, false));
}

TEST(Calibration, CurvesRiseWithSizeAndApproachTheDmaPeak) {
    const auto points = curves(profile("2015"));
    double last_latency = 0;
    std::string last_series;
    for (const CurvePoint& c : points) {
        if (c.series != last_series)
            last_latency = 0;
        // Flat where a fixed cost hides the data (a small get), never falling.
        EXPECT_GE(c.latency_us, last_latency) << c.series << " " << c.bytes;
        last_latency = c.latency_us;
        last_series = c.series;
        if (c.series == "DMA host" && c.bytes == (4u << 20)) {
            EXPECT_NEAR(c.gbps, 3.5, 0.1);
        }
    }
}

}  // namespace
}  // namespace peach2::model
