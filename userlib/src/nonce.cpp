// SPDX-License-Identifier: MIT
#include "nonce.hpp"

#include "hash.hpp"

#include <atomic>
#include <ctime>
#include <sys/random.h>
#include <unistd.h>

namespace tca {
namespace {

std::uint64_t clock_ns(clockid_t id) noexcept
{
	timespec ts{};
	clock_gettime(id, &ts);
	return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
	       static_cast<std::uint64_t>(ts.tv_nsec);
}

} // namespace

std::uint64_t fresh_nonce() noexcept
{
	static std::atomic<std::uint64_t> counter{0};
	std::uint64_t r = 0;
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r))
		r = 0;
	// Mixing in time, pid and a counter keeps nonces distinct even when
	// getrandom is unavailable; with it they only add nothing harmful.
	std::uint64_t x = mix64(r ^ clock_ns(CLOCK_REALTIME));
	x = mix64(x ^ clock_ns(CLOCK_MONOTONIC) ^ (static_cast<std::uint64_t>(getpid()) << 40));
	x = mix64(x ^ counter.fetch_add(1, std::memory_order_relaxed));
	return x != 0 ? x : 1;
}

} // namespace tca
