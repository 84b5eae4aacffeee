// SPDX-License-Identifier: MIT
#include "options.hpp"

#include "../common/pattern.hpp"

#include <cstdio>

namespace getbench {

void print_usage(const char *prog)
{
	std::printf(
		"usage: %s --peer NODE [--sizes A,B,..|--min 4 --max 1M] [--iters 200] [--warmup 5]\n"
		"          [--min-iters 10] [--latency-bytes 32M] [--put-size 1M] [--stream-bytes 64M]\n"
		"          [--inflight 4] [--seed S] [--csv FILE] [--timeout-ms 10000]\n"
		"          [--exchange-timeout-ms 60000]\n"
		"Remote get (read proxy) against puts, between this node and NODE. Run it on both\n"
		"nodes; the lower id is the client and measures, the other serves. First, with the\n"
		"server taking part: PIO put latency for 8 bytes (ping-pong, one-way = RTT/2) and\n"
		"DMA put bandwidth (--put-size messages, --stream-bytes in all). Then the server\n"
		"only sleeps while the client measures get latency per size (median, p99; MB/s =\n"
		"size / median), streaming get bandwidth (--put-size gets, --inflight at a time),\n"
		"and CAS and FAA latency. Every get is checked against the server's pattern. The\n"
		"last lines give get 8 B / put 8 B latency and get / DMA put bandwidth.\n",
		prog);
}

int parse_options(int argc, char **argv, Options *o)
{
	using tcatools::ArgReader;
	std::uint64_t min = 4, max = 1ull << 20;
	ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (a.is("--help") || a.is("-h")) {
			print_usage(argv[0]);
			return 2;
		}
		if (tcatools::take_peer_option(a, o))
			continue;
		if (a.is("--sizes"))
			a.value_u64_list(&o->sizes);
		else if (a.is("--min"))
			a.value_u64(&min);
		else if (a.is("--max"))
			a.value_u64(&max);
		else if (a.is("--iters"))
			a.value_u64(&o->iters);
		else if (a.is("--min-iters"))
			a.value_u64(&o->min_iters);
		else if (a.is("--latency-bytes"))
			a.value_u64(&o->latency_bytes);
		else if (a.is("--warmup"))
			a.value_u64(&o->warmup);
		else if (a.is("--put-size"))
			a.value_u64(&o->put_size);
		else if (a.is("--stream-bytes"))
			a.value_u64(&o->stream_bytes);
		else if (a.is("--inflight"))
			a.value_u64(&o->inflight);
		else if (a.is("--seed"))
			a.value_u64(&o->seed);
		else if (a.is("--csv")) {
			std::string_view s;
			if (a.value(&s))
				o->csv = std::string(s);
		} else
			a.unknown();
	}
	if (!a.ok())
		return 1;
	if (o->sizes.empty())
		o->sizes = tcatools::doubling_sizes(min, max);
	auto bad = [](const char *why) {
		std::fprintf(stderr, "error: %s (try --help)\n", why);
		return 1;
	};
	if (o->peer < 0)
		return bad("--peer NODE is required");
	if (o->sizes.empty())
		return bad("need 4 <= --min <= --max");
	for (std::uint64_t s : o->sizes)
		if (s < 4 || s % 4 || s > (16ull << 20))
			return bad("get sizes must be multiples of 4, 4 .. 16 MiB");
	if (o->iters == 0 || o->min_iters == 0 || o->inflight == 0 || o->inflight > 64)
		return bad("--iters, --min-iters >= 1, --inflight 1..64");
	if (o->put_size < 4 || o->put_size % 4 || o->put_size > (16ull << 20) ||
	    o->stream_bytes < o->put_size)
		return bad("--put-size a multiple of 4 up to 16M, --stream-bytes >= --put-size");
	return 0;
}

std::uint32_t session_tag(const Options &o)
{
	std::uint64_t h = tcatools::seed_of(0x6765746265ull /* "getbe" */, o.iters, o.warmup, o.seed);
	h = tcatools::mix(h ^ o.put_size) ^ o.stream_bytes;
	for (std::uint64_t s : o.sizes)
		h = tcatools::mix(h ^ s);
	return static_cast<std::uint32_t>(h ^ (h >> 32));
}

} // namespace getbench
