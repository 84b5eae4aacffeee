// SPDX-License-Identifier: MIT
// tca_pingpong's command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pingpong {

struct Options {
	int peer = -1;
	std::vector<std::uint64_t> sizes;
	std::uint64_t iterations = 1000;
	std::uint64_t warmup = 10;
	std::string csv;
	int timeout_ms = 10000;           // waiting for one message
	int exchange_timeout_ms = 60000;  // waiting for the peer to start
};

void print_usage(const char *prog);

// 0: run; 1: bad arguments (printed); 2: --help printed.
int parse_options(int argc, char **argv, Options *out);

} // namespace pingpong
