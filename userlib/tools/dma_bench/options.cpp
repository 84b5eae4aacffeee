// SPDX-License-Identifier: MIT
#include "options.hpp"

#include "../common/cli.hpp"

#include <cstdio>

namespace dmabench {
namespace {

constexpr std::uint64_t kMaxSize = 16ull << 20;

// min, min·step, min·step², ... below max, then max itself.
std::vector<std::uint64_t> stepped_sizes(std::uint64_t min, std::uint64_t max, std::uint64_t step)
{
	std::vector<std::uint64_t> v;
	if (min == 0 || min > max || step < 2)
		return v;
	for (std::uint64_t s = min; s < max; s *= step) {
		v.push_back(s);
		if (s > max / step)
			break;
	}
	v.push_back(max);
	return v;
}

} // namespace

std::uint64_t Options::max_size() const
{
	std::uint64_t m = 0;
	for (std::uint64_t s : sizes)
		m = s > m ? s : m;
	return m;
}

std::vector<std::uint64_t> Options::sizes_for(Mode m, Test t) const
{
	std::vector<std::uint64_t> v;
	if ((t == Test::Latency && !latency) || (t == Test::Stream && (!stream || m == Mode::Pio)))
		return v;
	for (std::uint64_t s : sizes) {
		if (m == Mode::Pio && s > pio_max)
			continue;
		if (t == Test::Stream && (s < stream_min || s % 8))
			continue;
		v.push_back(s);
	}
	return v;
}

std::vector<std::uint64_t> Options::params() const
{
	return {pio_max, iters, min_iters, warmup, latency_bytes, stream_bytes, stream_min, slots,
		latency, stream};
}

void print_usage(const char *prog)
{
	std::printf(
		"usage: %s --peer NODE [--modes reg,card,host,pio] [--sizes A,B,..|--min 4 --max 8M\n"
		"          [--step 4]] [--pio-max 64K] [--iters 200] [--min-iters 5] [--warmup 5]\n"
		"          [--latency-bytes 32M] [--stream-bytes 128M] [--stream-min 4K] [--slots 4]\n"
		"          [--no-latency] [--no-stream] [--csv FILE] [--timeout-ms MS]\n"
		"          [--exchange-timeout-ms MS]\n"
		"DMA benchmark between this node and NODE; run the same command on both (the\n"
		"lower id pings). Modes: reg (register mode), card (on-card descriptors), host\n"
		"(host descriptors), pio (CPU stores, sizes up to --pio-max).\n"
		"Latency: ping-pong; each message is the payload plus a completion word the\n"
		"card writes after it; the receiver polls its own memory for the word and\n"
		"checks the payload byte for byte. Timed iterations: --iters, fewer for big\n"
		"sizes (about --latency-bytes per size, at least --min-iters).\n"
		"Stream: the ping sends about --stream-bytes per size back to back (at most\n"
		"--slots in flight); the pong checks every message (a stamp per 4 KiB block\n"
		"and a checksum of all other bytes) and returns credits; MB/s is wall clock.\n"
		"Sizes: multiples of 4 (DMA), up to 16M; default powers of 4 from 4 to 4M and 8M.\n"
		"Prints a table per mode and ends with a PASS or FAIL line; exit 0 only on PASS.\n",
		prog);
}

int parse_options(int argc, char **argv, Options *o)
{
	using tcatools::ArgReader;
	std::uint64_t min = 4, max = 8ull << 20, step = 4, peer = ~0ull, slots = o->slots;
	ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (a.is("--help") || a.is("-h")) {
			print_usage(argv[0]);
			return 2;
		} else if (a.is("--peer")) {
			a.value_u64(&peer);
		} else if (a.is("--modes")) {
			std::string_view s;
			if (a.value(&s) && !parse_modes(s, &o->modes))
				a.fail("not a list of distinct modes among reg, card, host, pio");
		} else if (a.is("--sizes")) {
			a.value_u64_list(&o->sizes);
		} else if (a.is("--min")) {
			a.value_u64(&min);
		} else if (a.is("--max")) {
			a.value_u64(&max);
		} else if (a.is("--step")) {
			a.value_u64(&step);
		} else if (a.is("--pio-max")) {
			a.value_u64(&o->pio_max);
		} else if (a.is("--iters")) {
			a.value_u64(&o->iters);
		} else if (a.is("--min-iters")) {
			a.value_u64(&o->min_iters);
		} else if (a.is("--warmup")) {
			a.value_u64(&o->warmup);
		} else if (a.is("--latency-bytes")) {
			a.value_u64(&o->latency_bytes);
		} else if (a.is("--stream-bytes")) {
			a.value_u64(&o->stream_bytes);
		} else if (a.is("--stream-min")) {
			a.value_u64(&o->stream_min);
		} else if (a.is("--slots")) {
			a.value_u64(&slots);
		} else if (a.is("--no-latency")) {
			o->latency = false;
		} else if (a.is("--no-stream")) {
			o->stream = false;
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
		o->sizes = stepped_sizes(min, max, step);
	if (o->sizes.empty())
		return bad("need 1 <= --min <= --max and --step >= 2");
	if (o->sizes.size() > 0xffff)
		return bad("too many sizes");
	for (std::uint64_t s : o->sizes)
		if (s == 0 || s > kMaxSize || s % 4)
			return bad("sizes must be multiples of 4, 4 .. 16M (the DMA length rule)");
	if (slots < 2 || slots > 16)
		return bad("--slots must be 2 .. 16");
	o->slots = static_cast<unsigned>(slots);
	if (o->iters == 0 || o->iters + o->warmup >= 0xffffffffull || o->min_iters == 0)
		return bad("--iters and --min-iters must be >= 1 (iters + warmup < 2^32)");
	if (o->timeout_ms <= 0 || o->exchange_timeout_ms <= 0)
		return bad("timeouts must be positive");
	if (!o->latency && !o->stream)
		return bad("nothing to do: --no-latency and --no-stream");
	return 0;
}

} // namespace dmabench
