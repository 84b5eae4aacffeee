// SPDX-License-Identifier: MIT
// Messages to stderr, prefixed with the library's name. Errors that a
// program would only report as "failed" (it cannot know why) are printed
// once each so that the user learns the cause; $PEACH2_VERBS_DEBUG=1 adds
// a trace of connection set-up and error paths.
#pragma once

namespace pv {

void log_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
bool debug_enabled() noexcept;

}  // namespace pv
