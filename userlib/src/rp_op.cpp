// SPDX-License-Identifier: MIT
#include "rp_op.hpp"

#include <tca/tca.h>

#include <peach2/peach2_uapi.h>

#include <algorithm>
#include <cerrno>

namespace tca {

RpOp::RpOp(DriverPort &port, CplAreas &areas, const RpTarget &t, std::uint32_t reply_buffer,
	   std::vector<RpPiece> pieces, std::uint64_t deadline_ns, RpPin pin)
	: port_(port), areas_(areas), target_(t), reply_buffer_(reply_buffer), deadline_ns_(deadline_ns),
	  pin_(std::move(pin))
{
	pieces_.reserve(pieces.size());
	for (const RpPiece &p : pieces) {
		Piece pc;
		pc.p = p;
		pieces_.push_back(pc);
	}
	out_.pieces = static_cast<std::uint32_t>(pieces_.size());
	pin_.set_deadline(deadline_ns);
}

void RpOp::back_off(Piece &pc, std::uint64_t now_ns)
{
	++out_.retries;
	pc.state = State::Backoff;
	pc.resend_ns = now_ns + pc.backoff_ns;
	pc.backoff_ns = std::min(pc.backoff_ns * 2, kMaxBackoffNs);
}

RpOp::Sent RpOp::submit(Piece &pc, std::uint64_t now_ns)
{
	peach2_rp_submit s{};
	s.node = target_.node;
	s.op = target_.op;
	s.export_id = target_.export_id;
	s.key = target_.key;
	s.addr = pc.p.addr;
	const bool reply = target_.op == PEACH2_RP_OP_READ || target_.op == PEACH2_RP_OP_LOOKUP;
	s.len = reply ? pc.p.len : 8;
	if (reply) {
		s.reply_handle = reply_buffer_;
		s.reply_offset = pc.p.reply_offset;
	}
	s.cpl_handle = pc.slot.area->buffer();
	s.cpl_offset = pc.slot.area->offset_of(pc.slot.slot);
	s.operand[0] = target_.operand[0];
	s.operand[1] = target_.operand[1];
	int rc;
	do
		rc = port_.call(PEACH2_IOC_RP_SUBMIT, &s);
	while (rc == -EINTR);
	if (rc == 0) {
		pc.tag = s.tag;
		pc.state = State::InFlight;
		sent_any_ = true;
		return Sent::Yes;
	}
	if (rc == -EAGAIN) {
		// The link's send queue was full: nothing was sent. Keep the
		// slot and try again after a backoff, until the deadline.
		back_off(pc, now_ns);
		link_free_ns_ = pc.resend_ns; // no new pieces before then either
		return Sent::Retry;
	}
	if (rc == -EFAULT) {
		// Copying the tag back failed: the request may be out, and its
		// answer will come to this slot under a tag we do not know.
		sent_any_ = true;
		pc.slot.area->slots().retire(pc.slot.slot);
	} else {
		pc.slot.area->slots().give(pc.slot.slot); // never sent
	}
	pc.state = State::Done;
	fail(rc, 0);
	return Sent::Failed;
}

void RpOp::fail(int rc, std::uint32_t status)
{
	if (error_ == 0) {
		error_ = rc;
		out_.status = status;
	}
}

void RpOp::send_more(std::uint64_t now_ns)
{
	if (now_ns < link_free_ns_)
		return; // the link's send queue was full: wait for the backoff
	while (error_ == 0 && next_unsent_ < pieces_.size() && in_flight_ < kWindow) {
		Piece &pc = pieces_[next_unsent_];
		if (!areas_.take(&pc.slot)) {
			// Nothing of ours in flight to wait for: give up now rather
			// than spin until the deadline.
			if (in_flight_ == 0)
				fail(-EAGAIN, 0);
			return;
		}
		pc.backoff_ns = kFirstBackoffNs;
		const Sent r = submit(pc, now_ns);
		++next_unsent_;
		if (r == Sent::Failed)
			return;
		++in_flight_; // InFlight, or Backoff holding its slot
		if (r == Sent::Retry)
			return; // the link is busy: no more now
	}
}

void RpOp::answered(Piece &pc, std::uint64_t now_ns)
{
	const peach2_rp_cpl c = pc.slot.area->read(pc.slot.slot);
	if (c.status == PEACH2_ERR_RP_FULL && error_ == 0) {
		// The target's queue was full; the card answered by itself. The
		// slot is ours again: resubmit into it after a backoff.
		back_off(pc, now_ns);
		return;
	}
	pc.slot.area->slots().give(pc.slot.slot);
	pc.state = State::Done;
	--in_flight_;
	if (c.status == PEACH2_ERR_RP_NOT_EXPORTED) {
		fail(TCA_ENOTEXPORTED, c.status);
	} else if (c.status != 0) {
		fail(TCA_EREMOTE, c.status);
	} else if (target_.op == PEACH2_RP_OP_READ || target_.op == PEACH2_RP_OP_LOOKUP) {
		if (c.len != pc.p.len)
			fail(TCA_EDEVICE, 0); // success must deliver everything
		else
			out_.bytes += c.len;
	} else {
		out_.value = c.value;
	}
}

int RpOp::start(std::uint64_t now_ns)
{
	send_more(now_ns);
	return poll(now_ns);
}

int RpOp::poll(std::uint64_t now_ns)
{
	if (ended_)
		return out_.result;
	for (Piece &pc : pieces_) {
		if (pc.state == State::InFlight && pc.slot.area->tag(pc.slot.slot) == pc.tag) {
			answered(pc, now_ns);
		} else if (pc.state == State::Backoff) {
			if (error_ != 0) { // not resent after an error
				pc.slot.area->slots().give(pc.slot.slot);
				pc.state = State::Done;
				--in_flight_;
			} else if (now_ns >= pc.resend_ns && now_ns < deadline_ns_ &&
				   submit(pc, now_ns) == Sent::Failed) {
				--in_flight_; // submit() dealt with the slot
			}
		}
	}
	send_more(now_ns);
	if (const int rc = finish_if_done(); rc != 1)
		return rc;
	if (now_ns >= deadline_ns_) {
		fail(-ETIMEDOUT, 0);
		abandon(error_);
		return out_.result;
	}
	return 1;
}

int RpOp::finish_if_done()
{
	if (in_flight_ != 0)
		return 1;
	if (error_ == 0 && next_unsent_ < pieces_.size())
		return 1;
	end(error_);
	return out_.result;
}

void RpOp::end(int rc)
{
	ended_ = true;
	out_.result = rc;
	pin_.release();
}

void RpOp::abandon(int rc)
{
	for (Piece &pc : pieces_) {
		if (pc.state == State::InFlight)
			pc.slot.area->slots().retire(pc.slot.slot); // a late answer may still come
		else if (pc.state == State::Backoff)
			pc.slot.area->slots().give(pc.slot.slot);   // nothing in flight in it
		pc.state = State::Done;
	}
	in_flight_ = 0;
	end(rc);
}

void RpOp::cancel()
{
	if (!ended_)
		abandon(-ECANCELED);
}

} // namespace tca
