// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <string>

#include "log.hpp"

using namespace pv;

namespace {
constexpr std::uint64_t kSec = 1'000'000'000ull;
}

TEST(ErrorBudget, ABurstGoesOutThenLinesAreRefused) {
    ErrorBudget b;
    std::uint64_t suppressed = 1;
    for (unsigned i = 0; i < ErrorBudget::kBurst; ++i) {
        EXPECT_TRUE(b.admit(100 * kSec + i, &suppressed)) << i;
        EXPECT_EQ(suppressed, 0u);
    }
    EXPECT_FALSE(b.admit(101 * kSec, &suppressed));
    EXPECT_FALSE(b.admit(104 * kSec, &suppressed));
    EXPECT_EQ(suppressed, 0u);
}

TEST(ErrorBudget, TheNextIntervalReportsWhatWasLeftOut) {
    ErrorBudget b;
    std::uint64_t suppressed = 0;
    for (unsigned i = 0; i < ErrorBudget::kBurst + 7; ++i)
        b.admit(kSec, &suppressed);
    EXPECT_TRUE(b.admit(kSec + ErrorBudget::kIntervalNs, &suppressed));
    EXPECT_EQ(suppressed, 7u);
    // Reported once.
    EXPECT_TRUE(b.admit(kSec + ErrorBudget::kIntervalNs + 1, &suppressed));
    EXPECT_EQ(suppressed, 0u);
}

TEST(ErrorBudget, AQuietIntervalReportsNothing) {
    ErrorBudget b;
    std::uint64_t suppressed = 9;
    EXPECT_TRUE(b.admit(0, &suppressed));
    EXPECT_EQ(suppressed, 0u);
    EXPECT_TRUE(b.admit(3 * ErrorBudget::kIntervalNs, &suppressed));
    EXPECT_EQ(suppressed, 0u);
}

TEST(SlowCalls, OnlyThoseOverTheLimitAreReported) {
    testing::internal::CaptureStderr();
    EXPECT_FALSE(log_slow(kSlowCallNs, "ibv_reg_mr: pinning %d bytes", 4096));
    EXPECT_TRUE(log_slow(kSlowCallNs + kSec / 2, "ibv_reg_mr: pinning %d bytes", 8192));
    const std::string out = testing::internal::GetCapturedStderr();
    EXPECT_EQ(out, "peach2-verbs: ibv_reg_mr: pinning 8192 bytes took 1.5 s\n");
}
