// SPDX-License-Identifier: MIT
// tca_pingpong: PIO ping-pong latency between two nodes, every message
// verified byte for byte. See print_usage() and protocol.hpp.
#include "../common/report.hpp"
#include "options.hpp"
#include "protocol.hpp"
#include "session.hpp"
#include "table.hpp"

#include <tca/tca.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

using namespace pingpong;
using tcatools::ok_or_report;

namespace {

constexpr const char *kProg = "pingpong";

// Frees the receive buffer and closes the device on every exit path.
struct Cleanup {
	void *buffer = nullptr;
	~Cleanup()
	{
		if (buffer)
			tcaFree(buffer);
		tcaFinalize();
	}
};

int run(const Options &o)
{
	Cleanup cleanup;
	if (!ok_or_report(kProg, tcaInit(), "opening the PEACH2 device"))
		return 1;
	const int self = tcaNodeId(), count = tcaNodeCount();
	if (!ok_or_report(kProg, self < 0 ? self : 0, "tcaNodeId") ||
	    !ok_or_report(kProg, count < 0 ? count : 0, "tcaNodeCount"))
		return 1;
	if (o.peer == self || o.peer >= count) {
		std::fprintf(stderr, "%s: error: --peer %d: must be another node below %d (this is node %d)\n",
			     kProg, o.peer, count, self);
		return 1;
	}

	std::uint64_t max_size = 0;
	for (std::uint64_t s : o.sizes)
		max_size = s > max_size ? s : max_size;
	Session s{&o, self, self < o.peer, Layout::for_max_size(max_size), nullptr, {}};
	if (!ok_or_report(kProg, tcaMalloc(&cleanup.buffer, s.layout.buffer_bytes()), "tcaMalloc"))
		return 1;
	s.local = static_cast<unsigned char *>(cleanup.buffer);
	tcaHandle mine;
	if (!ok_or_report(kProg, tcaGetHandle(s.local, 0, &mine), "tcaGetHandle"))
		return 1;

	std::printf("%s: node %d (%s) <-> node %d, %zu sizes, %" PRIu64 " iterations + %" PRIu64
		    " warm-up each; waiting for the peer\n",
		    kProg, self, s.ping ? "ping" : "pong", o.peer, o.sizes.size(), o.iterations,
		    o.warmup);
	std::fflush(stdout);
	const std::uint32_t tag = session_tag(o.sizes, o.iterations, o.warmup);
	int rc = tcaExchange(o.peer, &mine, &s.remote, o.exchange_timeout_ms, tag);
	if (rc == -ETIMEDOUT)
		std::fprintf(stderr, "%s: error: node %d did not answer within %d ms (not running, or "
			     "running with other sizes/iterations)\n", kProg, o.peer, o.exchange_timeout_ms);
	if (!ok_or_report(kProg, rc, "address exchange"))
		return 1;
	if (s.remote.size < s.layout.buffer_bytes()) {
		std::fprintf(stderr, "%s: error: peer's buffer is too small\n", kProg);
		return 1;
	}

	std::vector<SizeResult> results;
	if (!run_session(s, &results))
		return 1;

	// Barrier: neither side frees its buffer while the other may still
	// write into it, and both know the other finished cleanly.
	tcaHandle ignored;
	rc = tcaExchange(o.peer, &mine, &ignored, o.timeout_ms, done_tag(tag));
	if (!ok_or_report(kProg, rc, "final barrier with the peer"))
		return 1;

	const std::vector<Row> rows = make_rows(results, o.iterations);
	print_table(stdout, rows);
	if (!o.csv.empty() && !write_csv(o.csv, rows))
		return 1;
	std::uint64_t total = 0;
	for (const SizeResult &r : results)
		total += r.verified;
	std::printf("%s: all %" PRIu64 " messages verified byte for byte\n", kProg, total);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	switch (parse_options(argc, argv, &o)) {
	case 0: break;
	case 2: return 0;
	default: return 1;
	}
	return run(o);
}
