// SPDX-License-Identifier: MIT
// The measured part of tca_dma_bench: both roles of the latency and the
// stream tests, after the buffers exist and the handles are exchanged.
#pragma once

#include "options.hpp"
#include "protocol.hpp"

#include <tca/tca.h>

#include <cstdint>
#include <vector>

namespace dmabench {

struct Session {
	const Options *options;
	bool ping;               // lower node id: sends first, measures
	Layout layout;
	unsigned char *rx;       // our receive buffer
	unsigned char *tx;       // our send buffer
	std::vector<tcaHandle> remote_slots; // the peer's rx slots
	tcaHandle remote_words;  // the peer's completion and credit words
};

struct Result {
	Mode mode;
	Test test;
	std::uint64_t size = 0;
	std::uint64_t count = 0;          // timed iterations / stream messages
	std::vector<double> oneway_us;    // latency, ping only: RTT/2 each
	double seconds = 0;               // stream, ping only: wall clock
	std::uint64_t verified = 0;       // messages this side checked
	std::uint64_t confirmed = 0;      // stream, ping: messages the pong's credits confirm
	bool timed = false;
};

// Runs every phase in order (per mode: latency sizes, then stream sizes).
// False after printing the first error: timeout, out-of-step peer, a
// payload that differs, a failed put or DMA.
bool run_session(const Session &s, std::vector<Result> *results);

} // namespace dmabench
