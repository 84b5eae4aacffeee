// SPDX-License-Identifier: MIT
#include "session.hpp"

#include "../common/block_sum.hpp"
#include "../common/pattern.hpp"
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "transport.hpp"

#include <cinttypes>
#include <cstdio>
#include <span>

namespace dmabench {
namespace {

constexpr const char *kProg = "dma_bench";

class Runner {
public:
	explicit Runner(const Session &s) : s_(s), o_(*s.options), last_(s.layout.slots + 1, 0) {}

	bool latency(Mode m, unsigned si, std::uint64_t size, Result *r);
	bool stream(Mode m, unsigned si, std::uint64_t size, Result *r);

private:
	std::uint64_t timeout_ns() const { return static_cast<std::uint64_t>(o_.timeout_ms) * 1000000ull; }
	const volatile unsigned char *word_at(unsigned i) const { return s_.rx + s_.layout.word_offset(i); }

	// Waits until our word i holds `expect`. Anything but the value seen
	// last (or `expect`) means the peer is out of step.
	bool wait_word(unsigned i, std::uint64_t expect, const char *what)
	{
		std::uint64_t seen = 0;
		const std::uint64_t prev = last_[i];
		const auto v = tcatools::spin_until(
			word_at(i), timeout_ns(),
			[&](std::uint64_t x) {
				if (x == expect)
					return tcatools::Spin::Done;
				return x == prev ? tcatools::Spin::Timeout : tcatools::Spin::Rejected;
			},
			&seen);
		if (v == tcatools::Spin::Done) {
			last_[i] = expect;
			return true;
		}
		std::fprintf(stderr, "%s: error: %s: %s (word %u: expected 0x%016" PRIx64 ", saw 0x%016" PRIx64
			     "); is the peer running the same command?\n",
			     kProg, what, v == tcatools::Spin::Timeout ? "timeout" : "out of step", i, expect,
			     seen);
		return false;
	}

	// The peer's credits arrive in order (message numbers, as words of this
	// phase); waits for one >= `need`.
	bool wait_credit(unsigned phase, unsigned si, std::uint64_t need)
	{
		const unsigned i = s_.layout.credit_word();
		const std::uint64_t base = word_value(phase, si, 0) & ~0xffffffffull;
		std::uint64_t seen = 0;
		const auto v = tcatools::spin_until(
			word_at(i), timeout_ns(),
			[&](std::uint64_t x) {
				if ((x & ~0xffffffffull) == base && (x & 0xffffffffull) > need)
					return tcatools::Spin::Done;
				if (x == last_[i] || (x & ~0xffffffffull) == base)
					return tcatools::Spin::Timeout;
				return tcatools::Spin::Rejected;
			},
			&seen);
		if (v == tcatools::Spin::Done) {
			last_[i] = seen;
			return true;
		}
		std::fprintf(stderr, "%s: error: stream: %s waiting for the credit of message %" PRIu64
			     " (saw 0x%016" PRIx64 ")\n",
			     kProg, v == tcatools::Spin::Timeout ? "timeout" : "out of step", need, seen);
		return false;
	}

	// Tells the ping which message was checked last (its credit word).
	bool credit(std::uint64_t word) const
	{
		const std::uint64_t off = Layout::word_in_words(s_.layout.credit_word());
		return tcatools::ok_or_report(kProg, tcaPut(&s_.remote_words, off, &word, sizeof word),
					      "credit");
	}

	static bool collect(tcaDmaTicket *t, int timeout_ms, const char *what)
	{
		const int rc = tcaDmaWait(t, timeout_ms);
		if (rc == TCA_EDMA)
			std::fprintf(stderr, "%s: error: %s: the card reports %s (%u)\n", kProg, what,
				     tcaCardErrorName(t->status), t->status);
		else
			tcatools::ok_or_report(kProg, rc, what);
		return rc == 0;
	}

	bool verify(unsigned slot, std::uint64_t size, std::uint64_t seed, std::uint64_t it) const
	{
		const std::span<const std::uint8_t> got(s_.rx + s_.layout.slot_offset(slot), size);
		const std::size_t bad = tcatools::find_mismatch(got, seed);
		if (bad == tcatools::kNoMismatch)
			return true;
		std::fprintf(stderr, "%s: error: message from node %d (size %" PRIu64 ", iteration %" PRIu64
			     ") differs at offset %zu: got 0x%02x, expected 0x%02x\n",
			     kProg, o_.peer, size, it, bad, got[bad], tcatools::pattern_byte(seed, bad));
		return false;
	}

	const Session &s_;
	const Options &o_;
	std::vector<std::uint64_t> last_; // last value seen in each of our words
};

bool Runner::latency(Mode m, unsigned si, std::uint64_t size, Result *r)
{
	const Transport tr(m, s_);
	const unsigned phase = phase_of(m, Test::Latency);
	const std::uint64_t timed = latency_iters(size, o_.iters, o_.latency_bytes, o_.min_iters);
	const Dir out = s_.ping ? Dir::PingToPong : Dir::PongToPing;
	const Dir in = s_.ping ? Dir::PongToPing : Dir::PingToPong;
	r->count = timed;
	r->timed = s_.ping;
	r->oneway_us.reserve(timed);
	for (std::uint64_t it = 0; it < o_.warmup + timed; ++it) {
		const unsigned slot = static_cast<unsigned>(it % 2);
		const std::uint64_t off = s_.layout.slot_offset(slot), word = word_value(phase, si, it);
		tcatools::fill_pattern(std::span(s_.tx + off, size), payload_seed(phase, si, size, it, out));
		tcaDmaTicket t{};
		if (s_.ping) {
			const std::uint64_t t0 = tcatools::now_ns();
			if (!tcatools::ok_or_report(kProg, tr.send(slot, size, 0, word, &t), "send") ||
			    !wait_word(0, word, "waiting for the reply"))
				return false;
			const std::uint64_t t1 = tcatools::now_ns();
			if (it >= o_.warmup)
				r->oneway_us.push_back(static_cast<double>(t1 - t0) / 2000.0);
		} else {
			// Reply first, check after: the check stays out of the round trip.
			if (!wait_word(0, word, "waiting for the ping") ||
			    !tcatools::ok_or_report(kProg, tr.send(slot, size, 0, word, &t), "send"))
				return false;
		}
		// The reply (ping) or the next message (pong) proves our message
		// arrived; the ticket is collected off the timed path.
		if (!collect(&t, o_.timeout_ms, "DMA completion") ||
		    !verify(slot, size, payload_seed(phase, si, size, it, in), it))
			return false;
		++r->verified;
	}
	// End of the size: the pong confirms it has checked the last message,
	// which sits in a slot the next size's first message reuses.
	const std::uint64_t last = o_.warmup + timed - 1;
	if (s_.ping)
		return wait_credit(phase, si, last);
	return credit(word_value(phase, si, last));
}

bool Runner::stream(Mode m, unsigned si, std::uint64_t size, Result *r)
{
	const Transport tr(m, s_);
	const unsigned phase = phase_of(m, Test::Stream), k = s_.layout.slots;
	const std::uint64_t n = stream_messages(size, o_.stream_bytes);
	r->count = n;
	r->timed = s_.ping;
	if (s_.ping) {
		for (unsigned s = 0; s < k; ++s)
			tcatools::fill_pattern(std::span(s_.tx + s_.layout.slot_offset(s), size),
					       slot_seed(phase, size, s));
		std::vector<tcaDmaTicket> tickets(k);
		const std::uint64_t t0 = tcatools::now_ns();
		for (std::uint64_t msg = 0; msg < n; ++msg) {
			const unsigned s = static_cast<unsigned>(msg % k);
			const std::uint64_t off = s_.layout.slot_offset(s);
			if (msg >= k && !wait_credit(phase, si, msg - k))
				return false;
			if (!collect(&tickets[s], o_.timeout_ms, "DMA completion"))
				return false;
			tcatools::stamp_blocks(s_.tx + off, size, stamp_seed(phase, size, msg));
			if (!tcatools::ok_or_report(kProg, tr.send(s, size, s, word_value(phase, si, msg),
								   &tickets[s]),
						    "send"))
				return false;
		}
		if (!wait_credit(phase, si, n - 1))
			return false;
		r->seconds = static_cast<double>(tcatools::now_ns() - t0) / 1e9;
		r->confirmed = n; // credits come only for verified messages, in order
		for (tcaDmaTicket &t : tickets)
			if (!collect(&t, o_.timeout_ms, "DMA completion"))
				return false;
		return true;
	}
	std::vector<tcatools::BlockSum> expect(k);
	for (unsigned s = 0; s < k; ++s)
		expect[s] = tcatools::pattern_sum(slot_seed(phase, size, s), size);
	for (std::uint64_t msg = 0; msg < n; ++msg) {
		const unsigned s = static_cast<unsigned>(msg % k);
		const std::uint64_t word = word_value(phase, si, msg);
		if (!wait_word(s, word, "stream: waiting for a message"))
			return false;
		std::size_t bad = 0;
		if (!tcatools::check_blocks(s_.rx + s_.layout.slot_offset(s), size,
					    stamp_seed(phase, size, msg), expect[s], &bad)) {
			if (bad == static_cast<std::size_t>(-1))
				std::fprintf(stderr, "%s: error: stream message %" PRIu64 " (size %" PRIu64
					     "): checksum differs\n", kProg, msg, size);
			else
				std::fprintf(stderr, "%s: error: stream message %" PRIu64 " (size %" PRIu64
					     "): block %zu is stale or wrong (stamp differs)\n",
					     kProg, msg, size, bad);
			return false;
		}
		++r->verified;
		if (!credit(word))
			return false;
	}
	return true;
}

} // namespace

bool run_session(const Session &s, std::vector<Result> *results)
{
	Runner run(s);
	for (Mode m : s.options->modes) {
		for (Test t : {Test::Latency, Test::Stream}) {
			const std::vector<std::uint64_t> sizes = s.options->sizes_for(m, t);
			for (unsigned si = 0; si < sizes.size(); ++si) {
				Result r;
				r.mode = m;
				r.test = t;
				r.size = sizes[si];
				const bool ok = t == Test::Latency ? run.latency(m, si, sizes[si], &r)
								   : run.stream(m, si, sizes[si], &r);
				if (!ok) {
					std::fprintf(stderr, "%s: error: in mode %s, %s test, size %" PRIu64 "\n",
						     kProg, mode_name(m),
						     t == Test::Latency ? "latency" : "stream", sizes[si]);
					return false;
				}
				results->push_back(std::move(r));
			}
		}
	}
	return true;
}

} // namespace dmabench
