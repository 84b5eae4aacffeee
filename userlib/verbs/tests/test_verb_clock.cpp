// SPDX-License-Identifier: MIT
// VerbClock (verb_clock.hpp): real readings without the counter; with it,
// calibrated after kCalibrateNs, readings that never go backwards, never
// run ahead of CLOCK_MONOTONIC and trail it by well under a microsecond.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "verb_clock.hpp"

using namespace pv;

namespace {
constexpr std::uint64_t kSlackNs = 5000;  // far above the designed ~0.1 us trail

// Reads the clock `n` times between real readings; counts what breaks the promises.
struct Check {
    std::uint64_t backwards = 0, ahead = 0, behind = 0;
};
Check read_many(VerbClock& clock, int n) {
    Check c;
    std::uint64_t last = 0;
    for (int i = 0; i < n; ++i) {
        const std::uint64_t before = now_ns();
        const std::uint64_t t = clock.now();
        const std::uint64_t after = now_ns();
        c.backwards += t < last;
        c.ahead += t > after;
        c.behind += t + kSlackNs < before;
        last = t;
    }
    return c;
}
}  // namespace

TEST(VerbClock, WithoutTheCounterEveryReadingIsReal) {
    VerbClock clock(false);
    const Check c = read_many(clock, 10000);
    EXPECT_EQ(c.backwards, 0u);
    EXPECT_EQ(c.ahead, 0u);
    EXPECT_EQ(c.behind, 0u);
    EXPECT_FALSE(clock.calibrated());
}

#if defined(__x86_64__) || defined(__i386__)
TEST(VerbClock, ExtrapolatesAfterCalibrationWithoutLeavingTheRealClock) {
    VerbClock clock(true);
    (void)clock.now();  // the first kept reading (unless interrupted: then the next)
    const Check early = read_many(clock, 1000);
    EXPECT_FALSE(clock.calibrated()) << "calibrated before kCalibrateNs";
    std::this_thread::sleep_for(std::chrono::nanoseconds(VerbClock::kCalibrateNs) +
                                std::chrono::milliseconds(20));
    for (int i = 0; i < 100 && !clock.calibrated(); ++i)
        (void)clock.now();  // an interrupted reading is not kept: try a few
    ASSERT_TRUE(clock.calibrated());
    const Check c = read_many(clock, 300000);  // ~30+ ms: hundreds of windows
    EXPECT_EQ(early.backwards + c.backwards, 0u);
    EXPECT_EQ(early.ahead + c.ahead, 0u);
    EXPECT_EQ(early.behind + c.behind, 0u);
}
#endif
