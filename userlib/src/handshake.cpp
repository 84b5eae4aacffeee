// SPDX-License-Identifier: MIT
#include "handshake.hpp"

namespace tca {

Handshake::Handshake(std::uint32_t self, std::uint32_t peer, std::uint32_t tag,
		     std::uint64_t nonce, const tcaHandle &mine,
		     const PeerHistory &history) noexcept
	: self_(self), peer_(peer), tag_(tag), nonce_(nonce), mine_(mine), history_(history)
{
}

MailboxRecord Handshake::outgoing() const noexcept
{
	MailboxRecord r{};
	r.tag = tag_;
	r.sender = self_;
	r.nonce = nonce_;
	r.ack = peer_nonce_;
	r.prev_tag = history_.tag;
	r.prev_nonce = history_.my_nonce;
	r.prev_ack = history_.peer_nonce;
	r.handle = mine_;
	seal_record(r);
	return r;
}

bool Handshake::observe(const MailboxRecord &rec) noexcept
{
	if (done_ || rec.sender != peer_ || rec.nonce == 0)
		return done_;
	// The peer already finished this exchange (it acked our nonce, and the
	// nonce it used is the one whose handle we hold) and has moved on. This
	// test comes first: a peer in its next call with the same tag may have
	// read our old record and now ack our nonce *again*, next to a new
	// handle; the direct test below would then take the wrong handle.
	if (peer_nonce_ != 0 && rec.prev_tag == tag_ && rec.prev_ack == nonce_ &&
	    rec.prev_nonce == peer_nonce_) {
		done_ = true;
		return true;
	}
	// Direct completion: the peer's current record acks our nonce.
	if (rec.tag == tag_ && rec.ack == nonce_) {
		peer_nonce_ = rec.nonce;
		theirs_ = rec.handle;
		done_ = final_write_ = true;
		return true;
	}
	// The peer's record for this tag, not yet acking us: remember its nonce
	// (acked by our next outgoing()) and the handle that came with it.
	if (rec.tag == tag_) {
		peer_nonce_ = rec.nonce;
		theirs_ = rec.handle;
	}
	return false;
}

} // namespace tca
