// SPDX-License-Identifier: MIT
// One library request (a get, CAS or FAA) in flight: its pieces, each one
// PEACH2_IOC_RP_SUBMIT with its own completion slot, and the progress
// function that tcaTest/tcaWait drive. No thread of its own: nothing moves
// unless the owner polls.
//
// A piece is answered when its slot's tag equals the tag the driver gave
// at submission. Status RP_FULL (the target's queue was full) resubmits the
// piece after a backoff (20 µs doubling to 2 ms) in the same slot; any other
// error ends the request once the pieces already sent have answered (no new
// ones are sent). At most kWindow pieces are in flight per request; the
// rest go out as earlier ones complete. At the deadline every piece still
// in flight has its slot retired and the request ends with -ETIMEDOUT.
#pragma once

#include "dma_port.hpp"
#include "rp_plan.hpp"
#include "rp_slots.hpp"

#include <cstdint>
#include <vector>

namespace tca {

// How a request ended (tcaRequest's fields).
struct RpOutcome {
	int result = 0;
	std::uint32_t status = 0;  // first failing piece's card/driver code
	std::uint64_t value = 0;   // CAS/FAA: old value
	std::uint64_t bytes = 0;   // READ: bytes delivered
	std::uint32_t retries = 0; // RP_FULL resubmissions
	std::uint32_t pieces = 0;
};

class RpOp {
public:
	static constexpr std::uint32_t kWindow = 256;
	static constexpr std::uint64_t kFirstBackoffNs = 20000;
	static constexpr std::uint64_t kMaxBackoffNs = 2000000;

	// reply_buffer: the driver's name of the buffer the READ pieces' data
	// lands in (0 for atomics). deadline_ns: CLOCK_MONOTONIC.
	RpOp(DriverPort &port, CplArea &area, const RpTarget &t, std::uint32_t reply_buffer,
	     std::vector<RpPiece> pieces, std::uint64_t deadline_ns);
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

private:
	enum class State : std::uint8_t { Unsent, InFlight, Backoff, Done };
	struct Piece {
		RpPiece p;
		State state = State::Unsent;
		std::uint32_t slot = 0;
		std::uint64_t tag = 0;
		std::uint64_t resend_ns = 0;  // Backoff: when
		std::uint64_t backoff_ns = 0; // the next backoff
	};

	// One RP_SUBMIT for piece i (in its slot): false if the driver refused.
	bool submit(Piece &pc);
	// The answer in a piece's slot.
	void answered(Piece &pc, std::uint64_t now_ns);
	void fail(int rc, std::uint32_t status);
	void send_more();
	int finish_if_done();
	// Ends the request with rc: slots in flight retired, the others freed.
	void abandon(int rc);
	void end(int rc);

	DriverPort &port_;
	CplArea &area_;
	RpTarget target_;
	std::uint32_t reply_buffer_;
	std::vector<Piece> pieces_;
	std::uint64_t deadline_ns_;
	std::size_t next_unsent_ = 0;
	std::uint32_t in_flight_ = 0; // InFlight or Backoff (holding a slot)
	int error_ = 0;               // first error; no new pieces after it
	bool ended_ = false;
	bool sent_any_ = false;
	RpOutcome out_;
};

} // namespace tca
