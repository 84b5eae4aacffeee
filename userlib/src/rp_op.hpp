// SPDX-License-Identifier: MIT
// One library request (a get, CAS or FAA) in flight: its pieces, each one
// PEACH2_IOC_RP_SUBMIT with its own completion slot, and the progress
// function that tcaTest/tcaWait drive. No thread of its own: nothing moves
// unless the owner polls.
//
// A piece is answered when its slot's tag equals the tag the driver gave
// at submission. Status RP_FULL (the target's queue was full) resubmits the
// piece after a backoff (20 µs doubling to 2 ms) in the same slot; so does
// an RP_SUBMIT that returned -EAGAIN (the link's send queue was full:
// nothing was sent). Such a piece keeps its slot and counts as pending, and
// no new piece of the request goes out before its backoff ends.
// Any other error ends the request once the pieces already sent have
// answered (no new ones are sent); -EFAULT from RP_SUBMIT (the request may
// have gone out, only its tag was lost) retires the piece's slot. At most
// kWindow pieces are in flight per request; the rest go out as earlier ones
// complete. At the deadline every piece still in flight has its slot
// retired (one waiting to be resent gives it back) and the request ends
// with -ETIMEDOUT.
//
// One thread at a time may poll a request: claim() guards tcaTest, tcaWait
// and tcaCancel of a parked request against a concurrent second caller.
#pragma once

#include "dma_port.hpp"
#include "rp_areas.hpp"
#include "rp_pins.hpp"
#include "rp_plan.hpp"

#include <atomic>
#include <cstdint>
#include <vector>

namespace tca {

// How a request ended (tcaRequest's fields).
struct RpOutcome {
	int result = 0;
	std::uint32_t status = 0;  // first failing piece's card/driver code
	std::uint64_t value = 0;   // CAS/FAA: old value
	std::uint64_t bytes = 0;   // READ: bytes delivered
	std::uint32_t retries = 0; // resubmissions (RP_FULL, RP_SUBMIT -EAGAIN)
	std::uint32_t pieces = 0;
};

class RpOp {
public:
	static constexpr std::uint32_t kWindow = 256;
	static constexpr std::uint64_t kFirstBackoffNs = 20000;
	static constexpr std::uint64_t kMaxBackoffNs = 2000000;

	// reply_buffer: the driver's name of the buffer the READ pieces' data
	// lands in (0 for atomics), pinned by `pin` until the request ends.
	// deadline_ns: CLOCK_MONOTONIC.
	RpOp(DriverPort &port, CplAreas &areas, const RpTarget &t, std::uint32_t reply_buffer,
	     std::vector<RpPiece> pieces, std::uint64_t deadline_ns, RpPin pin);
	RpOp(const RpOp &) = delete;
	RpOp &operator=(const RpOp &) = delete;
	// A request destroyed while pending is cancelled.
	~RpOp() { cancel(); }

	// Submits the first pieces: 1 (pending) or the final code. With no
	// slot free at all and nothing sent: -EAGAIN.
	int start(std::uint64_t now_ns);
	// Checks the completions, resubmits, sends more: 1 or the final code.
	int poll(std::uint64_t now_ns);
	// Ends a pending request with -ECANCELED; slots of pieces in flight are
	// retired.
	void cancel();

	bool pending() const noexcept { return !ended_; }
	// Did any piece reach the driver?
	bool sent_any() const noexcept { return sent_any_; }
	const RpOutcome &outcome() const noexcept { return out_; }
	std::uint64_t deadline() const noexcept { return deadline_ns_; }

	// Exclusive right to poll or cancel: false if another thread has it.
	bool claim() noexcept { return !busy_.exchange(true, std::memory_order_acquire); }
	void unclaim() noexcept { busy_.store(false, std::memory_order_release); }

private:
	enum class State : std::uint8_t { Unsent, InFlight, Backoff, Done };
	struct Piece {
		RpPiece p;
		State state = State::Unsent;
		SlotRef slot;
		std::uint64_t tag = 0;
		std::uint64_t resend_ns = 0;  // Backoff: when
		std::uint64_t backoff_ns = 0; // the next backoff
	};

	enum class Sent : std::uint8_t { Yes, Retry, Failed };
	// One RP_SUBMIT for a piece (in its slot). Retry: -EAGAIN, the piece
	// waits in Backoff. Failed: the request fails, the piece is Done and its
	// slot given back (or retired after -EFAULT).
	Sent submit(Piece &pc, std::uint64_t now_ns);
	void back_off(Piece &pc, std::uint64_t now_ns);
	// The answer in a piece's slot.
	void answered(Piece &pc, std::uint64_t now_ns);
	void fail(int rc, std::uint32_t status);
	void send_more(std::uint64_t now_ns);
	int finish_if_done();
	// Ends the request with rc: slots in flight retired, the others freed.
	void abandon(int rc);
	void end(int rc);

	DriverPort &port_;
	CplAreas &areas_;
	RpTarget target_;
	std::uint32_t reply_buffer_;
	std::vector<Piece> pieces_;
	std::uint64_t deadline_ns_;
	std::size_t next_unsent_ = 0;
	std::uint32_t in_flight_ = 0; // InFlight or Backoff (holding a slot)
	std::uint64_t link_free_ns_ = 0; // after RP_SUBMIT -EAGAIN: no new piece before
	int error_ = 0;               // first error; no new pieces after it
	bool ended_ = false;
	bool sent_any_ = false;
	RpOutcome out_;
	RpPin pin_;
	std::atomic<bool> busy_{false};
};

} // namespace tca
