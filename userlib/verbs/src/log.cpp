// SPDX-License-Identifier: MIT
#include "log.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace pv {
namespace {

void vlog(const char* fmt, va_list ap) {
    char line[512];
    std::vsnprintf(line, sizeof line, fmt, ap);
    std::fprintf(stderr, "peach2-verbs: %s\n", line);
}

}  // namespace

bool debug_enabled() noexcept {
    static const bool on = [] {
        const char* e = std::getenv("PEACH2_VERBS_DEBUG");
        return e && *e && *e != '0';
    }();
    return on;
}

void log_error(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
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
