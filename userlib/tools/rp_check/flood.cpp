// SPDX-License-Identifier: MIT
// `tca_rp_check flood`: non-blocking gets as fast as possible for
// --seconds, --inflight at a time, counting how each ended. RP_FULL answers
// are retried by the library (counted in rp_full); with --allow-refused
// refusals (the server went away) are counted, not errors.
// Output: `flood: N completed in S s: ok=A rp_full=B refused=C timeout=D other=E`.
// Exit 0 unless a request ended other than ok (or refused, if allowed).
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "../common/tca_buffer.hpp"
#include "common.hpp"

#include <cinttypes>
#include <cstdio>
#include <vector>

namespace rpcheck {
namespace {

struct FloodOptions : ClientOptions {
	std::uint64_t seconds = 10;
	std::uint64_t inflight = 64;
	std::uint64_t len = 64;
	bool allow_refused = false;
};

int parse(int argc, char **argv, FloodOptions *o)
{
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (take_client_option(a, o))
			continue;
		if (a.is("--seconds"))
			a.value_u64(&o->seconds);
		else if (a.is("--inflight"))
			a.value_u64(&o->inflight);
		else if (a.is("--len"))
			a.value_u64(&o->len);
		else if (a.is("--allow-refused"))
			o->allow_refused = true;
		else
			a.unknown();
	}
	if (a.ok() && (o->inflight < 1 || o->inflight > 4000 || o->len < 4 || o->len % 4)) {
		std::fprintf(stderr, "%s flood: error: --inflight 1..4000, --len a multiple of 4\n", kProg);
		return 1;
	}
	return a.ok() ? 0 : 1;
}

} // namespace

int cmd_flood(int argc, char **argv)
{
	FloodOptions o;
	if (parse(argc, argv, &o))
		return 1;
	Finalizer fin;
	Served s;
	if (!connect(o, &s))
		return 1;
	if (o.len > s.data.size)
		o.len = s.data.size / 4 * 4;
	const std::uint64_t stride = (o.len + 63) / 64 * 64;
	tcatools::TcaBuffer dst;
	if (!tcatools::ok_or_report(kProg, dst.allocate(stride * o.inflight), "tcaMalloc"))
		return 1;
	std::vector<tcaRequest> reqs(o.inflight);
	std::vector<bool> busy(o.inflight, false);
	std::uint64_t ok = 0, full = 0, refused = 0, timeout = 0, other = 0, started = 0;
	const std::uint64_t t0 = tcatools::now_ns(), end = t0 + o.seconds * 1000000000ull;
	auto account = [&](int rc, const tcaRequest &r) {
		full += r.retries;
		if (rc == 0)
			++ok;
		else if (rc == TCA_ENOTEXPORTED || (rc == TCA_EREMOTE && r.status == 24 /* RP_OFF */))
			++refused;
		else if (rc == -ETIMEDOUT)
			++timeout;
		else {
			if (other < 5)
				std::fprintf(stderr, "%s flood: request ended %s\n", kProg,
					     outcome_text(rc, r.status).c_str());
			++other;
		}
	};
	for (bool more = true; more;) {
		more = false;
		const bool go = tcatools::now_ns() < end;
		for (std::size_t i = 0; i < reqs.size(); ++i) {
			if (busy[i]) {
				const int rc = tcaTest(&reqs[i]);
				if (rc == 1) {
					more = true;
					continue;
				}
				busy[i] = false;
				account(rc, reqs[i]);
			}
			if (go) {
				const int rc = tcaGetNB(dst.get() + i * stride, &s.data, 0, o.len, &reqs[i]);
				++started;
				if (rc == 0) {
					busy[i] = true;
				} else {
					account(rc, reqs[i]);
				}
				more = true;
			}
		}
	}
	const double secs = static_cast<double>(tcatools::now_ns() - t0) / 1e9;
	const std::uint64_t done = ok + refused + timeout + other;
	std::printf("flood: %" PRIu64 " completed in %.1f s: ok=%" PRIu64 " rp_full=%" PRIu64
		    " refused=%" PRIu64 " timeout=%" PRIu64 " other=%" PRIu64 " (%.0f gets/s)\n",
		    done, secs, ok, full, refused, timeout, other, static_cast<double>(done) / secs);
	say_done(o, s);
	const bool pass = other == 0 && timeout == 0 && (o.allow_refused || refused == 0);
	return pass ? 0 : 1;
}

} // namespace rpcheck
