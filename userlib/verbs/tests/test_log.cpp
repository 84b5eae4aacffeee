// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

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
