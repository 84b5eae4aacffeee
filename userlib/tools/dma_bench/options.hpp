// SPDX-License-Identifier: MIT
// tca_dma_bench's command line.
#pragma once

#include "protocol.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dmabench {

struct Options {
	int peer = -1;
	std::vector<Mode> modes{Mode::Reg, Mode::Card, Mode::Host, Mode::Pio};
	std::vector<std::uint64_t> sizes;          // every size of the run
	std::uint64_t pio_max = 65536;             // PIO latency only up to this size
	std::uint64_t iters = 200;                 // timed latency iterations (small sizes)
	std::uint64_t min_iters = 5;               // ... never fewer
	std::uint64_t warmup = 5;
	std::uint64_t latency_bytes = 32ull << 20; // per size: fewer iterations beyond
	std::uint64_t stream_bytes = 128ull << 20; // per size in the stream test
	std::uint64_t stream_min = 4096;           // stream sizes from
	unsigned slots = 4;                        // stream window
	bool latency = true, stream = true;
	std::string csv;
	int timeout_ms = 10000;           // one message
	int exchange_timeout_ms = 60000;  // the peer starting

	std::uint64_t max_size() const;
	// The sizes mode m runs in test t.
	std::vector<std::uint64_t> sizes_for(Mode m, Test t) const;
	// What both sides must agree on, for the exchange tag.
	std::vector<std::uint64_t> params() const;
};

void print_usage(const char *prog);

// 0: run; 1: bad arguments (printed); 2: --help printed.
int parse_options(int argc, char **argv, Options *out);

} // namespace dmabench
