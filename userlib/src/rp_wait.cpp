// SPDX-License-Identifier: MIT
#include "rp_wait.hpp"

#include <cstdlib>
#include <ctime>
#include <sched.h>

namespace tca {
namespace {

constexpr std::uint64_t kDefaultTimeoutMs = 10000;
constexpr std::uint64_t kSpinNs = 50000;    // then yield
constexpr std::uint64_t kYieldNs = 2000000; // then sleep
constexpr long kSleepNs = 50000;

inline void cpu_relax() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

std::uint64_t timeout_from_env() noexcept
{
	const char *s = std::getenv("TCA_RP_TIMEOUT_MS");
	if (!s || !*s)
		return kDefaultTimeoutMs;
	char *end = nullptr;
	const unsigned long long v = std::strtoull(s, &end, 10);
	return (*end || v == 0 || v > 86400000ull) ? kDefaultTimeoutMs : v;
}

} // namespace

std::uint64_t monotonic_ns() noexcept
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
	       static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t rp_timeout_ms() noexcept
{
	static const std::uint64_t value = timeout_from_env();
	return value;
}

int wait_op(RpOp &op, std::uint64_t limit_ns)
{
	const std::uint64_t start = monotonic_ns();
	for (unsigned n = 0;; ++n) {
		const std::uint64_t now = monotonic_ns();
		const int rc = op.poll(now);
		if (rc != 1)
			return rc;
		if (limit_ns != 0 && now >= limit_ns)
			return 1;
		const std::uint64_t waited = now - start;
		if (waited < kSpinNs) {
			for (int i = 0; i < 32; ++i)
				cpu_relax();
		} else if (waited < kYieldNs) {
			sched_yield();
		} else {
			const timespec ts{0, kSleepNs};
			nanosleep(&ts, nullptr);
		}
	}
}

} // namespace tca
