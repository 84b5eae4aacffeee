// SPDX-License-Identifier: MIT
// Messages to stderr, prefixed with the library's name. Errors that a
// program would only report as "failed" (it cannot know why) are printed
// so that the user learns the cause, at most ErrorBudget::kBurst per
// ErrorBudget::kIntervalNs (a program may retry a failing call forever: UCX
// does so with ibv_reg_mr), with a line saying how many were left out;
// $PEACH2_VERBS_DEBUG=1 adds a trace of connection set-up and error paths.
#pragma once

#include <cstdint>

namespace pv {

void log_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
bool debug_enabled() noexcept;

// A verb that blocked longer than this says so (log_slow): while a process waits
// in the driver (a pin over the user's quota waits for quarantined memory, a
// lookup for a late answer), QPs that depend on it may send no acknowledgement,
// and a peer that gives up after a few seconds reports only "stopped answering".
constexpr std::uint64_t kSlowCallNs = 1'000'000'000ull;
// "<what> took N.N s" through log_error if took_ns > kSlowCallNs; true if so.
bool log_slow(std::uint64_t took_ns, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The error lines' rate limit, as the kernel's printk_ratelimit: a burst
// per interval. Not thread-safe by itself (log_error holds a lock).
class ErrorBudget {
public:
    static constexpr unsigned kBurst = 10;
    static constexpr std::uint64_t kIntervalNs = 5'000'000'000ull;

    // May a line go out at now_ns? *suppressed: lines refused in the
    // interval that has just ended (to be reported first), else 0.
    bool admit(std::uint64_t now_ns, std::uint64_t* suppressed) noexcept;

private:
    std::uint64_t start_ns_ = 0;
    unsigned printed_ = 0;
    std::uint64_t refused_ = 0;
    bool started_ = false;
};

}  // namespace pv
