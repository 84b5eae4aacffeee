// SPDX-License-Identifier: MIT
// tca_get_bench, server role: cooperates in phase 1, then sleeps.
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "layout.hpp"
#include "session.hpp"

#include <cinttypes>
#include <cstdio>
#include <unistd.h>

namespace getbench {
namespace {

constexpr const char *kProg = "get_bench";

bool wait_word(const Session &s, const unsigned char *word, std::uint64_t expect, const char *what)
{
	std::uint64_t seen = 0;
	const auto v = tcatools::spin_until(
		word, static_cast<std::uint64_t>(s.o->timeout_ms) * 1000000ull,
		[&](std::uint64_t x) { return x == expect ? tcatools::Spin::Done : tcatools::Spin::Timeout; },
		&seen);
	if (v == tcatools::Spin::Done)
		return true;
	std::fprintf(stderr, "%s: error: %s: timeout (expected 0x%" PRIx64 ", saw 0x%" PRIx64 ")\n", kProg,
		     what, expect, seen);
	return false;
}

} // namespace

bool run_server(const Session &s)
{
	const Options &o = *s.o;
	// PIO ping-pong: echo each 8-byte message.
	for (std::uint64_t i = 0; i < o.warmup + o.iters; ++i) {
		if (!wait_word(s, s.ctrl + kFlag, i + 1, "put ping-pong"))
			return false;
		const std::uint64_t payload = *reinterpret_cast<volatile std::uint64_t *>(s.ctrl + kPayload);
		const std::uint64_t flag = i + 1;
		if (!tcatools::ok_or_report(kProg, tcaPut(&s.peer_ctrl, kPayload, &payload, 8), "put") ||
		    !tcatools::ok_or_report(kProg, tcaPut(&s.peer_ctrl, kFlag, &flag, 8), "put flag"))
			return false;
	}
	// DMA put stream: acknowledge the completion word after the last put.
	const std::uint64_t count = o.stream_bytes / o.put_size;
	if (!wait_word(s, s.sink + o.put_size, count, "DMA put stream"))
		return false;
	if (!tcatools::ok_or_report(kProg, tcaPut(&s.peer_ctrl, kAck, &count, 8), "put ack"))
		return false;
	if (!wait_word(s, s.ctrl + kPhase, kGetPhase, "start of the get phase"))
		return false;
	// The get phase: this process does nothing but sleep.
	std::printf("%s: server: sleeping while node %d gets and does atomics\n", kProg, o.peer);
	std::fflush(stdout);
	std::uint64_t wakeups = 0;
	const std::uint64_t limit = tcatools::now_ns() + 3600ull * 1000000000ull;
	while (tcatools::load_acquire(s.ctrl + kPhase) != kDone) {
		if (tcatools::now_ns() > limit) {
			std::fprintf(stderr, "%s: error: the client never said done\n", kProg);
			return false;
		}
		usleep(50000);
		++wakeups;
	}
	std::printf("%s: server: done (%" PRIu64 " wake-ups of 50 ms sleeps, nothing served by this process)\n",
		    kProg, wakeups);
	return true;
}

} // namespace getbench
