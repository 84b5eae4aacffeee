// SPDX-License-Identifier: MIT
#include "session.hpp"

#include "../common/pattern.hpp"
#include "../common/report.hpp"
#include "../common/spin.hpp"

#include <cinttypes>
#include <cstdio>
#include <span>

namespace pingpong {
namespace {

constexpr const char *kProg = "pingpong";

class Runner {
public:
	explicit Runner(const Session &s) : s_(s), tx_(s.layout.slot_bytes) {}

	// Payload of (size index, iteration) in direction `dir` into tx_.
	void prepare(std::uint32_t si, std::uint64_t size, std::uint64_t it, Direction dir)
	{
		tcatools::fill_pattern(std::span(tx_.data(), size), payload_seed(si, size, it, dir));
	}

	bool send(std::uint64_t msg, std::uint32_t si, std::uint64_t it, std::uint64_t size)
	{
		// tcaPut ends with a store fence, so the flag cannot pass the payload.
		if (!tcatools::ok_or_report(kProg, tcaPut(&s_.remote, s_.layout.slot_offset(msg),
							  tx_.data(), size), "put payload"))
			return false;
		const std::uint64_t flag = flag_value(si, it);
		return tcatools::ok_or_report(
			kProg, tcaPut(&s_.remote, s_.layout.flag_offset(), &flag, sizeof flag), "put flag");
	}

	bool wait(std::uint32_t si, std::uint64_t size, std::uint64_t it)
	{
		const std::uint64_t expect = flag_value(si, it), prev = last_flag_;
		std::uint64_t seen = 0;
		const auto verdict = tcatools::spin_until(
			s_.local + s_.layout.flag_offset(),
			static_cast<std::uint64_t>(s_.options->timeout_ms) * 1000000ull,
			[&](std::uint64_t v) {
				if (v == expect)
					return tcatools::Spin::Done;
				return v == prev ? tcatools::Spin::Timeout : tcatools::Spin::Rejected;
			},
			&seen);
		if (verdict == tcatools::Spin::Timeout) {
			std::fprintf(stderr,
				     "%s: error: timeout: no message from node %d within %d ms "
				     "(waiting for size %" PRIu64 ", iteration %" PRIu64 "); is the "
				     "peer running the same command?\n",
				     kProg, s_.options->peer, s_.options->timeout_ms, size, it);
			return false;
		}
		if (verdict == tcatools::Spin::Rejected) {
			std::uint32_t got_si = 0;
			std::uint64_t got_it = 0;
			if (flag_decode(seen, &got_si, &got_it))
				std::fprintf(stderr,
					     "%s: error: out of step: expected size #%u iteration %" PRIu64
					     ", node %d sent size #%u iteration %" PRIu64 "\n",
					     kProg, si, it, s_.options->peer, got_si, got_it);
			else
				std::fprintf(stderr, "%s: error: garbage flag 0x%016" PRIx64 "\n", kProg, seen);
			return false;
		}
		last_flag_ = expect;
		return true;
	}

	bool verify(std::uint64_t msg, std::uint32_t si, std::uint64_t size, std::uint64_t it,
		    Direction dir) const
	{
		const std::span<const std::uint8_t> got(s_.local + s_.layout.slot_offset(msg), size);
		const std::uint64_t seed = payload_seed(si, size, it, dir);
		const std::size_t bad = tcatools::find_mismatch(got, seed);
		if (bad == tcatools::kNoMismatch)
			return true;
		std::fprintf(stderr,
			     "%s: error: message from node %d (size %" PRIu64 ", iteration %" PRIu64
			     ") differs at offset %zu: got 0x%02x, expected 0x%02x\n",
			     kProg, s_.options->peer, size, it, bad, got[bad],
			     tcatools::pattern_byte(seed, bad));
		return false;
	}

private:
	const Session &s_;
	std::vector<std::uint8_t> tx_;
	std::uint64_t last_flag_ = 0; // a fresh buffer's flag is 0
};

} // namespace

bool run_session(const Session &s, std::vector<SizeResult> *results)
{
	Runner r(s);
	const Options &o = *s.options;
	const std::uint64_t per_size = o.warmup + o.iterations;
	std::uint64_t msg = 0;
	for (std::uint32_t si = 0; si < o.sizes.size(); ++si) {
		const std::uint64_t size = o.sizes[si];
		SizeResult res;
		res.size = size;
		res.oneway_us.reserve(o.iterations);
		for (std::uint64_t it = 0; it < per_size; ++it, ++msg) {
			if (s.ping) {
				r.prepare(si, size, it, Direction::PingToPong);
				const std::uint64_t t0 = tcatools::now_ns();
				if (!r.send(msg, si, it, size) || !r.wait(si, size, it))
					return false;
				const std::uint64_t t1 = tcatools::now_ns();
				if (!r.verify(msg, si, size, it, Direction::PongToPing))
					return false;
				if (it >= o.warmup)
					res.oneway_us.push_back(static_cast<double>(t1 - t0) / 2000.0);
			} else {
				// Reply first, verify after (see protocol.hpp): the
				// check stays out of the ping's round trip.
				r.prepare(si, size, it, Direction::PongToPing);
				if (!r.wait(si, size, it) || !r.send(msg, si, it, size))
					return false;
				if (!r.verify(msg, si, size, it, Direction::PingToPong))
					return false;
			}
			++res.verified;
		}
		results->push_back(std::move(res));
	}
	return true;
}

} // namespace pingpong
