// SPDX-License-Identifier: MIT
// Drives a Handshake over a mailbox with a clock: write, poll, rewrite
// periodically, give up at the deadline. The I/O is behind MailboxIo so the
// loop runs against the card in the library and against shared memory in
// the tests.
#pragma once

#include "handshake.hpp"
#include "record.hpp"

#include <chrono>

namespace tca {

class MailboxIo {
public:
	virtual ~MailboxIo() = default;
	// Writes our record into our slot of the peer's mailbox (and fences).
	virtual void write(const MailboxRecord &rec) noexcept = 0;
	// Reads the peer's slot of our mailbox; false if it holds no valid
	// record right now (empty, garbage, or torn by a concurrent write).
	virtual bool read(MailboxRecord *rec) noexcept = 0;
};

struct ExchangeTiming {
	// How often to look at the mailbox. Reads are uncached MMIO: cheap on
	// hardware, a VM exit each under emulation, hence not a busy loop.
	std::chrono::microseconds poll{100};
	// How often to rewrite an unchanged record: first after `rewrite`, then
	// doubling up to `rewrite_max`. The rewrite is what reaches a peer whose
	// card was not up (or was reset) when we first wrote. The backoff matters
	// because every store to an absent peer is an error the local card counts
	// (link down / no route): a long wait must not flood the counters or the
	// link. A changed record (new ack) is written at once and resets it.
	std::chrono::microseconds rewrite{1000};
	std::chrono::microseconds rewrite_max{64000};
	// <= 0: no deadline.
	int timeout_ms = 10000;
};

// 0 when hs completed, -ETIMEDOUT at the deadline.
int run_exchange(MailboxIo &io, Handshake &hs, const ExchangeTiming &timing);

} // namespace tca
