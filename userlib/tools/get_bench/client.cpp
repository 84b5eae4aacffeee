// SPDX-License-Identifier: MIT
// tca_get_bench, client role: every measurement.
#include "../common/pattern.hpp"
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "../common/stats.hpp"
#include "layout.hpp"
#include "session.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <span>

namespace getbench {
namespace {

constexpr const char *kProg = "get_bench";

class Client {
public:
	explicit Client(const Session &s) : s_(s), o_(*s.o) {}

	bool put_latency(std::vector<Row> *rows);
	bool put_stream(std::vector<Row> *rows);
	bool get_latency(std::uint64_t size, std::vector<Row> *rows);
	bool get_stream(std::vector<Row> *rows);
	bool atomics(std::vector<Row> *rows);
	bool phase(std::uint64_t v)
	{
		return tcatools::ok_or_report(kProg, tcaPut(&s_.peer_ctrl, kPhase, &v, 8), "phase word");
	}

private:
	std::uint64_t timeout_ns() const { return static_cast<std::uint64_t>(o_.timeout_ms) * 1000000ull; }
	bool wait_word(std::uint64_t off, std::uint64_t expect, const char *what)
	{
		std::uint64_t seen = 0;
		const auto v = tcatools::spin_until(
			s_.ctrl + off, timeout_ns(),
			[&](std::uint64_t x) { return x == expect ? tcatools::Spin::Done : tcatools::Spin::Timeout; },
			&seen);
		if (v == tcatools::Spin::Done)
			return true;
		std::fprintf(stderr, "%s: error: %s: timeout (expected 0x%" PRIx64 ", saw 0x%" PRIx64
			     "); is the peer running the same command?\n", kProg, what, expect, seen);
		return false;
	}
	bool verify(const unsigned char *p, std::uint64_t off, std::uint64_t len, const char *what)
	{
		const std::size_t bad = tcatools::find_mismatch(std::span(p, len), o_.seed, off);
		if (bad == tcatools::kNoMismatch)
			return true;
		std::fprintf(stderr, "%s: error: %s of %" PRIu64 " bytes differs at byte %zu\n", kProg, what,
			     len, bad);
		return false;
	}
	static Row latency_row(const char *test, std::uint64_t size, const std::vector<double> &us)
	{
		const tcatools::Summary m = tcatools::summarize(us);
		Row r;
		r.test = test;
		r.size = size;
		r.count = us.size();
		r.min_us = m.min;
		r.median_us = m.median;
		r.p99_us = m.p99;
		r.mb_per_s = m.median > 0 ? static_cast<double>(size) / m.median : 0;
		return r;
	}

	const Session &s_;
	const Options &o_;
};

bool Client::put_latency(std::vector<Row> *rows)
{
	std::vector<double> us;
	for (std::uint64_t i = 0; i < o_.warmup + o_.iters; ++i) {
		const std::uint64_t payload = tcatools::seed_of(o_.seed, i), flag = i + 1;
		const std::uint64_t t0 = tcatools::now_ns();
		if (!tcatools::ok_or_report(kProg, tcaPut(&s_.peer_ctrl, kPayload, &payload, 8), "put") ||
		    !tcatools::ok_or_report(kProg, tcaPut(&s_.peer_ctrl, kFlag, &flag, 8), "put flag") ||
		    !wait_word(kFlag, flag, "put ping-pong"))
			return false;
		const std::uint64_t t1 = tcatools::now_ns();
		if (*reinterpret_cast<volatile std::uint64_t *>(s_.ctrl + kPayload) != payload) {
			std::fprintf(stderr, "%s: error: ping-pong payload %" PRIu64 " differs\n", kProg, i);
			return false;
		}
		if (i >= o_.warmup)
			us.push_back(static_cast<double>(t1 - t0) / 2000.0);
	}
	rows->push_back(latency_row("put_pio", 8, us));
	return true;
}

bool Client::put_stream(std::vector<Row> *rows)
{
	const std::uint64_t count = o_.stream_bytes / o_.put_size;
	tcaDmaOpts opts{};
	opts.flags = TCA_DMA_HOST_DESC;
	std::vector<tcaDmaTicket> t(4);
	const std::uint64_t t0 = tcatools::now_ns();
	for (std::uint64_t k = 0; k < count; ++k) {
		tcaDmaTicket &tk = t[k % t.size()];
		if (k >= t.size() && !tcatools::ok_or_report(kProg, tcaDmaWait(&tk, o_.timeout_ms), "DMA wait"))
			return false;
		const int rc = k + 1 < count
				       ? tcaDmaPut(&s_.peer_sink, 0, s_.sink, o_.put_size, &opts, &tk)
				       : tcaDmaPutNotify(&s_.peer_sink, 0, s_.sink, o_.put_size, o_.put_size, count,
							 &opts, &tk);
		if (!tcatools::ok_or_report(kProg, rc, "DMA put"))
			return false;
	}
	if (!wait_word(kAck, count, "DMA put stream acknowledgement"))
		return false;
	const double secs = static_cast<double>(tcatools::now_ns() - t0) / 1e9;
	for (tcaDmaTicket &tk : t)
		tcaDmaWait(&tk, o_.timeout_ms);
	Row r;
	r.test = "dma_put_stream";
	r.size = o_.put_size;
	r.count = count;
	r.mb_per_s = static_cast<double>(count * o_.put_size) / secs / 1e6;
	r.latency = false;
	rows->push_back(r);
	return true;
}

bool Client::get_latency(std::uint64_t size, std::vector<Row> *rows)
{
	const std::uint64_t iters = std::min(o_.iters, std::max(o_.min_iters, o_.latency_bytes / size));
	std::vector<double> us;
	for (std::uint64_t i = 0; i < o_.warmup + iters; ++i) {
		const bool check = i == 0 || i + 1 == o_.warmup + iters;
		if (check)
			std::memset(s_.data, 0x5a, size);
		const std::uint64_t t0 = tcatools::now_ns();
		const int rc = tcaGet(s_.data, &s_.peer_data, 0, size);
		const std::uint64_t t1 = tcatools::now_ns();
		if (!tcatools::ok_or_report(kProg, rc, "tcaGet"))
			return false;
		if (check && !verify(s_.data, 0, size, "get"))
			return false;
		if (i >= o_.warmup)
			us.push_back(static_cast<double>(t1 - t0) / 1000.0);
	}
	rows->push_back(latency_row("get", size, us));
	return true;
}

bool Client::get_stream(std::vector<Row> *rows)
{
	const std::uint64_t size = std::min<std::uint64_t>(o_.put_size, s_.peer_data.size / 16 * 16);
	const std::uint64_t count = o_.stream_bytes / o_.put_size;
	std::vector<tcaRequest> reqs(o_.inflight);
	std::vector<bool> busy(o_.inflight, false);
	std::uint64_t started = 0, done = 0;
	std::memset(s_.data, 0x5a, size * o_.inflight);
	const std::uint64_t t0 = tcatools::now_ns();
	while (done < count) {
		for (std::size_t i = 0; i < reqs.size(); ++i) {
			if (busy[i]) {
				const int rc = tcaTest(&reqs[i]);
				if (rc == 1)
					continue;
				busy[i] = false;
				if (!tcatools::ok_or_report(kProg, rc, "get stream"))
					return false;
				++done;
			}
			if (started < count) {
				if (!tcatools::ok_or_report(kProg, tcaGetNB(s_.data + i * size, &s_.peer_data, 0,
									    size, &reqs[i]),
							    "tcaGetNB"))
					return false;
				busy[i] = true;
				++started;
			}
		}
	}
	const double secs = static_cast<double>(tcatools::now_ns() - t0) / 1e9;
	for (std::uint64_t i = 0; i < std::min(count, o_.inflight); ++i)
		if (!verify(s_.data + i * size, 0, size, "streamed get"))
			return false;
	Row r;
	r.test = "get_stream";
	r.size = size;
	r.count = count;
	r.mb_per_s = static_cast<double>(count * size) / secs / 1e6;
	r.latency = false;
	rows->push_back(r);
	return true;
}

bool Client::atomics(std::vector<Row> *rows)
{
	std::uint64_t old = 0;
	if (!tcatools::ok_or_report(kProg, tcaFaa(&s_.peer_ctrl, kAtomic, 0, &old), "tcaFaa"))
		return false;
	std::vector<double> cas, faa;
	std::uint64_t v = old;
	for (std::uint64_t i = 0; i < o_.warmup + o_.iters; ++i) {
		const std::uint64_t t0 = tcatools::now_ns();
		const int rc = tcaCas(&s_.peer_ctrl, kAtomic, v, v + 1, &old);
		const std::uint64_t t1 = tcatools::now_ns();
		if (!tcatools::ok_or_report(kProg, rc, "tcaCas"))
			return false;
		if (old != v) {
			std::fprintf(stderr, "%s: error: CAS saw %" PRIu64 ", expected %" PRIu64 "\n", kProg, old, v);
			return false;
		}
		++v;
		if (i >= o_.warmup)
			cas.push_back(static_cast<double>(t1 - t0) / 1000.0);
	}
	for (std::uint64_t i = 0; i < o_.warmup + o_.iters; ++i) {
		const std::uint64_t t0 = tcatools::now_ns();
		const int rc = tcaFaa(&s_.peer_ctrl, kAtomic, 1, &old);
		const std::uint64_t t1 = tcatools::now_ns();
		if (!tcatools::ok_or_report(kProg, rc, "tcaFaa"))
			return false;
		if (old != v) {
			std::fprintf(stderr, "%s: error: FAA saw %" PRIu64 ", expected %" PRIu64 "\n", kProg, old, v);
			return false;
		}
		++v;
		if (i >= o_.warmup)
			faa.push_back(static_cast<double>(t1 - t0) / 1000.0);
	}
	rows->push_back(latency_row("cas", 8, cas));
	rows->push_back(latency_row("faa", 8, faa));
	return true;
}

} // namespace

bool run_client(const Session &s, std::vector<Row> *rows)
{
	Client c(s);
	if (!c.put_latency(rows) || !c.put_stream(rows) || !c.phase(kGetPhase))
		return false;
	for (std::uint64_t size : s.o->sizes)
		if (!c.get_latency(size, rows))
			return false;
	if (!c.get_stream(rows) || !c.atomics(rows))
		return false;
	return c.phase(kDone);
}

} // namespace getbench
