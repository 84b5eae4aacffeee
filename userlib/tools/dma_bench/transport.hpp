// SPDX-License-Identifier: MIT
// Sending one message in a mode: payload from our tx slot s into the peer's
// rx slot s, then an 8-byte completion word that arrives after it.
#pragma once

#include "protocol.hpp"
#include "session.hpp"

#include <tca/tca.h>

#include <cstdint>

namespace dmabench {

class Transport {
public:
	Transport(Mode m, const Session &s);

	// Message of `size` bytes from slot `slot`, then `value` into word
	// `word`. DMA: starts and fills *t (wait for it before changing the
	// source). PIO: done on return (*t empty). 0 or a libtca error.
	int send(unsigned slot, std::uint64_t size, unsigned word, std::uint64_t value,
		 tcaDmaTicket *t) const;

private:
	Mode mode_;
	const Session &s_;
	tcaDmaOpts opts_{};
};

} // namespace dmabench
