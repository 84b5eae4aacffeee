// SPDX-License-Identifier: MIT
#include "options.hpp"

#include "../common/cli.hpp"
#include "protocol.hpp"

#include <cstdio>

namespace pingpong {

namespace {
// PIO is for small messages (DMA is the tool beyond that). 8 MiB keeps the
// receive buffer (2 slots + flag) describable by one tcaHandle even when
// the driver hands out 4 MiB chunks plus power-of-two remainders.
constexpr std::uint64_t kMaxMessage = 8ull << 20;
}

void print_usage(const char *prog)
{
	std::printf(
		"usage: %s --peer NODE [--sizes A,B,...|--min BYTES --max BYTES]\n"
		"          [--iters N] [--warmup N] [--csv FILE] [--timeout-ms MS]\n"
		"          [--exchange-timeout-ms MS]\n"
		"PIO ping-pong between this node and NODE. Run the same command on both\n"
		"nodes (each naming the other); the lower node id sends first (ping).\n"
		"Defaults: --min 4 --max 4096 (doubling), --iters 1000, --warmup 10,\n"
		"--timeout-ms 10000 per message, --exchange-timeout-ms 60000 for the start.\n"
		"Every message is verified byte for byte; exit status 0 only if all were.\n",
		prog);
}

int parse_options(int argc, char **argv, Options *o)
{
	using tcatools::ArgReader;
	std::uint64_t min = 4, max = 4096, peer = ~0ull;
	ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (a.is("--help") || a.is("-h")) {
			print_usage(argv[0]);
			return 2;
		} else if (a.is("--peer")) {
			a.value_u64(&peer);
		} else if (a.is("--sizes")) {
			a.value_u64_list(&o->sizes);
		} else if (a.is("--min")) {
			a.value_u64(&min);
		} else if (a.is("--max")) {
			a.value_u64(&max);
		} else if (a.is("--iters")) {
			a.value_u64(&o->iterations);
		} else if (a.is("--warmup")) {
			a.value_u64(&o->warmup);
		} else if (a.is("--csv")) {
			std::string_view s;
			if (a.value(&s))
				o->csv = std::string(s);
		} else if (a.is("--timeout-ms")) {
			a.value_int(&o->timeout_ms);
		} else if (a.is("--exchange-timeout-ms")) {
			a.value_int(&o->exchange_timeout_ms);
		} else {
			a.unknown();
		}
	}
	if (!a.ok())
		return 1;
	auto bad = [](const char *why) {
		std::fprintf(stderr, "error: %s (try --help)\n", why);
		return 1;
	};
	if (peer > 0xffff)
		return bad("--peer NODE is required");
	o->peer = static_cast<int>(peer);
	if (o->sizes.empty())
		o->sizes = tcatools::doubling_sizes(min, max);
	if (o->sizes.empty())
		return bad("need 1 <= --min <= --max");
	if (o->sizes.size() > kMaxSizes)
		return bad("too many sizes");
	for (std::uint64_t s : o->sizes)
		if (s == 0 || s > kMaxMessage)
			return bad("message sizes must be 1 .. 8 MiB");
	if (o->iterations == 0 || o->iterations + o->warmup > kMaxIterations)
		return bad("--iters must be >= 1 (and iters + warmup < 2^32)");
	if (o->timeout_ms <= 0 || o->exchange_timeout_ms <= 0)
		return bad("timeouts must be positive");
	return 0;
}

} // namespace pingpong
