// A rate limit for log lines a peer or the guest can trigger at will (the
// kernel's ratelimit: at most kBurst lines per kInterval). What is held
// back is counted and said with the next line let through; the events
// themselves are all counted (ERR_BY_CODE) and traced regardless.
#pragma once

#include <cstdint>
#include <utility>

namespace peach2 {

class LogLimiter {
public:
    static constexpr uint64_t kIntervalNs = 5'000'000'000;
    static constexpr uint32_t kBurst = 10;

    // May a line go out at `now_ns` (a monotonic clock)? If so,
    // `held_back` gets the number of lines suppressed since the last one.
    bool allow(uint64_t now_ns, uint64_t& held_back) {
        if (!started_ || now_ns - window_start_ >= kIntervalNs) {
            started_ = true;
            window_start_ = now_ns;
            lines_ = 0;
        }
        if (lines_ >= kBurst) {
            ++held_back_;
            return false;
        }
        ++lines_;
        held_back = std::exchange(held_back_, 0);
        return true;
    }

private:
    bool started_ = false;
    uint64_t window_start_ = 0;
    uint32_t lines_ = 0;
    uint64_t held_back_ = 0;
};

}  // namespace peach2
