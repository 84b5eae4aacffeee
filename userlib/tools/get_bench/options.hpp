// SPDX-License-Identifier: MIT
// tca_get_bench's command line.
#pragma once

#include "../common/peer.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace getbench {

struct Options : tcatools::PeerOptions {
	std::vector<std::uint64_t> sizes; // get sizes
	std::uint64_t iters = 200;        // per latency test
	std::uint64_t min_iters = 10;     // big get sizes: at least this many
	std::uint64_t latency_bytes = 32ull << 20; // big get sizes: about this much per size
	std::uint64_t warmup = 5;
	std::uint64_t put_size = 1ull << 20;      // DMA put stream message
	std::uint64_t stream_bytes = 64ull << 20; // DMA put stream and get stream, each
	std::uint64_t inflight = 4;               // get stream: gets in flight
	std::uint64_t seed = 1;
	std::string csv;
};

void print_usage(const char *prog);

// 0: run; 1: bad arguments (printed); 2: --help printed.
int parse_options(int argc, char **argv, Options *o);

// Both sides must agree on these (the exchange tags hash them).
std::uint32_t session_tag(const Options &o);

} // namespace getbench
