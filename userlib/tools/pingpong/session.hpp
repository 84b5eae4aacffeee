// SPDX-License-Identifier: MIT
// The measured part of tca_pingpong: both roles' message loops, after the
// buffers exist and the handles have been exchanged.
#pragma once

#include "options.hpp"
#include "protocol.hpp"

#include <tca/tca.h>

#include <cstdint>
#include <vector>

namespace pingpong {

struct Session {
	const Options *options;
	int self;
	bool ping;               // lower node id: sends first, measures
	Layout layout;
	unsigned char *local;    // our receive buffer (tcaMalloc)
	tcaHandle remote;        // the peer's receive buffer
};

struct SizeResult {
	std::uint64_t size = 0;
	std::vector<double> oneway_us; // ping only: RTT/2 of the timed iterations
	std::uint64_t verified = 0;    // messages received and checked at this size
};

// Runs every size in order; false after printing the first error (timeout,
// out-of-step peer, payload mismatch, failed put).
bool run_session(const Session &s, std::vector<SizeResult> *results);

} // namespace pingpong
