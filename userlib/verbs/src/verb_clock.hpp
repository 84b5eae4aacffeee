// SPDX-License-Identifier: MIT
// The clock verbs read (Engine::touch, the progress thread under the engine
// lock): CLOCK_MONOTONIC, extrapolated from the CPU's time-stamp counter
// between real readings.
//
// Why: every verb reads the clock once (timers: delayed acknowledgements,
// RNR retries, transport timeouts, lease renewals), and a ping-pong makes
// several verbs per message. In an emulated (TCG) guest clock_gettime costs
// ~105 ns (a call into the vDSO, its sequence lock, an emulated rdtsc), a
// bare rdtsc ~12 ns (docs/notes.md, thirty-seventh session).
//
// How: a real reading (clock_gettime bracketed by two rdtsc; a reading whose
// brackets are far apart was interrupted and is used but not kept) anchors
// an extrapolation for the next kWindowNs. The rate is measured over
// everything since the first kept reading once that spans kCalibrateNs, and
// taken 1/1024 low, so that an extrapolated time trails the real clock
// (by at most ~0.1 us over a window) rather than runs ahead of it. Readings
// never go backwards (the last one returned is a floor): the Qp timers
// subtract earlier readings from later ones. The counter is used only when
// the kernel keeps time with it (clocksource "tsc": then it judged the
// counter invariant and synchronised across CPUs); otherwise, and until
// calibrated, every reading is real. Not thread-safe: the engine lock
// serialises its callers.
#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace pv {

std::uint64_t now_ns() noexcept;  // CLOCK_MONOTONIC (remote.cpp)

class VerbClock {
public:
    // use_counter: whether the counter may be used at all (see
    // counter_keeps_time()); false makes every reading real.
    explicit VerbClock(bool use_counter = counter_keeps_time()) noexcept
        : use_counter_(use_counter) {}

    std::uint64_t now() noexcept {
#if defined(__x86_64__) || defined(__i386__)
        if (scale_) {
            const std::uint64_t d = __rdtsc() - base_tsc_;
            if (d < window_ticks_) {
                const std::uint64_t t =
                    base_ns_ +
                    static_cast<std::uint64_t>((static_cast<unsigned __int128>(d) * scale_) >> 32);
                return floor(t);
            }
        }
#endif
        return floor(resync());
    }

    // Whether the counter has been calibrated (readings may be extrapolated).
    bool calibrated() const noexcept { return scale_ != 0; }

    // The kernel's current clocksource is "tsc".
    static bool counter_keeps_time() noexcept;

    static constexpr std::uint64_t kWindowNs = 100'000;        // extrapolated at most this long
    static constexpr std::uint64_t kCalibrateNs = 200'000'000;  // rate measured over at least this
    // A real reading whose brackets are further apart was interrupted.
    static constexpr std::uint64_t kTightTicks = 1u << 17;

private:
    std::uint64_t floor(std::uint64_t t) noexcept {
        if (t < last_)
            return last_;
        last_ = t;
        return t;
    }
    // A real reading; anchors the extrapolation (and calibrates) when tight.
    std::uint64_t resync() noexcept;

    bool use_counter_;
    std::uint64_t last_ = 0;                      // the latest reading returned
    std::uint64_t base_tsc_ = 0, base_ns_ = 0;    // the anchor: a real reading
    std::uint64_t scale_ = 0;                     // ns per tick << 32 (low); 0: none yet
    std::uint64_t window_ticks_ = 0;              // kWindowNs in ticks
    std::uint64_t first_tsc_ = 0, first_ns_ = 0;  // the first kept reading (first_tsc_ 0: none)
};

}  // namespace pv
