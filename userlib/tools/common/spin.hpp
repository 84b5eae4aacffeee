// SPDX-License-Identifier: MIT
// Waiting for a remote store to land in local memory: spin on an 8-byte
// word with acquire loads (so data stored before the flag is read after
// it), with a deadline so a dead peer gives an error instead of a hang.
#pragma once

#include <cstdint>
#include <ctime>

namespace tcatools {

inline std::uint64_t now_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

inline std::uint64_t load_acquire(const volatile void* p) noexcept {
    return __atomic_load_n(static_cast<const volatile std::uint64_t*>(p), __ATOMIC_ACQUIRE);
}

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

enum class Spin { Done, Timeout, Rejected };

// Spins until judge(value) says Done or Rejected, or timeout_ns passes
// (0 = never). judge returns Spin::Timeout to mean "keep waiting". The last
// value seen is stored in *seen.
template <class Judge>
Spin spin_until(const volatile void* word, std::uint64_t timeout_ns, Judge&& judge,
                std::uint64_t* seen) {
    const std::uint64_t start = now_ns();
    for (std::uint64_t n = 0;; ++n) {
        const std::uint64_t v = load_acquire(word);
        *seen = v;
        const Spin verdict = judge(v);
        if (verdict != Spin::Timeout)
            return verdict;
        // Reading the clock costs more than a load; do it now and then.
        if (timeout_ns != 0 && n % 256 == 255 && now_ns() - start >= timeout_ns)
            return Spin::Timeout;
        cpu_relax();
    }
}

}  // namespace tcatools
