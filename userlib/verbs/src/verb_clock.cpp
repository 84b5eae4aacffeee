// SPDX-License-Identifier: MIT
// VerbClock's real readings and calibration (verb_clock.hpp).
#include "verb_clock.hpp"

#include <cstdio>
#include <cstring>

namespace pv {

bool VerbClock::counter_keeps_time() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    std::FILE* f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
    if (!f)
        return false;
    char name[32] = {};
    const bool ok = std::fgets(name, sizeof name, f) != nullptr;
    std::fclose(f);
    return ok && std::strcmp(name, "tsc\n") == 0;
#else
    return false;
#endif
}

std::uint64_t VerbClock::resync() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    if (!use_counter_)
        return now_ns();
    const std::uint64_t before = __rdtsc();
    const std::uint64_t ns = now_ns();
    const std::uint64_t after = __rdtsc();
    if (after - before > kTightTicks)
        return ns;  // interrupted between the reads (or the counter went back)
    if (!first_tsc_) {
        first_tsc_ = after;
        first_ns_ = ns;
        return ns;
    }
    if (after <= first_tsc_ || ns - first_ns_ < kCalibrateNs)
        return ns;
    // The counter's rate over everything since the first kept reading
    // (each end known to kTightTicks), 1/1024 low.
    const auto scale = static_cast<std::uint64_t>(
        (static_cast<unsigned __int128>(ns - first_ns_) << 32) / (after - first_tsc_));
    if (scale == 0)
        return ns;
    scale_ = scale - (scale >> 10);
    window_ticks_ = static_cast<std::uint64_t>(
        (static_cast<unsigned __int128>(kWindowNs) << 32) / scale_);
    // The anchor: `ns` was read before `after`, so it is no later than the
    // real time at `after`.
    base_tsc_ = after;
    base_ns_ = ns;
    return ns;
#else
    return now_ns();
#endif
}

}  // namespace pv
