// SPDX-License-Identifier: MIT
#include "log.hpp"

#include <time.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace pv {
namespace {

void vlog(const char* fmt, va_list ap) {
    char line[512];
    std::vsnprintf(line, sizeof line, fmt, ap);
    std::fprintf(stderr, "peach2-verbs: %s\n", line);
}

std::uint64_t monotonic_ns() noexcept {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

bool ErrorBudget::admit(std::uint64_t now_ns, std::uint64_t* suppressed) noexcept {
    *suppressed = 0;
    if (!started_ || now_ns - start_ns_ >= kIntervalNs) {
        *suppressed = refused_;
        started_ = true;
        start_ns_ = now_ns;
        printed_ = 0;
        refused_ = 0;
    }
    if (printed_ >= kBurst) {
        ++refused_;
        return false;
    }
    ++printed_;
    return true;
}

bool debug_enabled() noexcept {
    static const bool on = [] {
        const char* e = std::getenv("PEACH2_VERBS_DEBUG");
        return e && *e && *e != '0';
    }();
    return on;
}

void log_error(const char* fmt, ...) {
    static std::mutex lock;
    static ErrorBudget budget;
    std::uint64_t suppressed = 0;
    {
        std::lock_guard<std::mutex> g(lock);
        const bool admitted = budget.admit(monotonic_ns(), &suppressed);
        if (suppressed)
            std::fprintf(stderr, "peach2-verbs: %llu error messages suppressed\n",
                         static_cast<unsigned long long>(suppressed));
        if (!admitted)
            return;
    }
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

bool log_slow(std::uint64_t took_ns, const char* fmt, ...) {
    if (took_ns <= kSlowCallNs)
        return false;
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    log_error("%s took %.1f s", what, static_cast<double>(took_ns) / 1e9);
    return true;
}

void log_debug(const char* fmt, ...) {
    if (!debug_enabled())
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

}  // namespace pv
