// SPDX-License-Identifier: MIT
// Two-node test programs: the --peer options, opening the device with a
// check of the peer, and a handle exchange with error text naming the step.
#pragma once

#include "cli.hpp"

#include <tca/tca.h>

#include <cstdint>

namespace tcatools {

// Options every two-node subcommand takes.
struct PeerOptions {
	int peer = -1;
	int timeout_ms = 10000;          // one step
	int exchange_timeout_ms = 60000; // the peer starting
};

// Consumes the option at the reader's position if it is a PeerOptions one.
bool take_peer_option(ArgReader &a, PeerOptions *o);

// Opens the device and checks o.peer: prints (as `prog`) and returns false on error.
bool open_and_check_peer(const char *prog, const PeerOptions &o, int *self);

// tcaExchange with error text naming the step.
bool exchange(const char *prog, const PeerOptions &o, const tcaHandle &mine, tcaHandle *theirs,
	      std::uint32_t tag, int timeout_ms, const char *step);

} // namespace tcatools
