// SPDX-License-Identifier: MIT
// The tcaExchange() handshake as a pure state machine: it decides what to
// write and interprets what was read, but does no I/O and keeps no clock, so
// tests can run two of them against in-memory mailboxes in any interleaving.
//
// Protocol. Node i's mailbox has one slot per source node; only node j ever
// writes slot j (a PIO store into node i's card), and only node i reads it.
// In one call each side picks a fresh random nonce and keeps rewriting its
// record {tag, nonce, ack, prev, handle, checksum} into its slot on the peer,
// where ack is the nonce it last read from the peer (0 before that). It
// finishes when it reads, in its own mailbox, a valid record from the peer
// with the same tag whose ack equals its own nonce: the peer has then seen
// this call's record, so the handle that came with that reply is current. On
// finishing it writes its record once more, now acking the peer's nonce.
//
// Why stale data cannot fool it: a record left over from an earlier run or an
// earlier call carries an ack made before this call's nonce existed; with
// 64-bit random nonces it cannot equal the new one. A stale record may make
// this side ack an old nonce and remember an old handle, but that is
// replaced as soon as the peer's current record arrives (the slot only ever
// holds the peer's latest write), and completion needs the peer's current
// record anyway. Torn reads fail the checksum and are ignored.
//
// Why both sides terminate. Both keep rewriting, so each eventually reads the
// other's current record and acks its nonce; the first to read an ack of its
// own nonce (say A) knows B's nonce, writes its final ack of it and returns.
// That final record stays in B's slot until A writes again, so B reads it and
// returns too. The catch: A may start its next exchange with B at once and
// overwrite that final record before B has read it. Therefore every record
// also carries the writer's last completed exchange with this peer (tag,
// own nonce, peer nonce): B, still in the old call, reads A's new record,
// sees "A completed tag T acking your nonce", and finishes with the handle
// it already has. (That test is made before the direct one: A's new call may
// have read B's old record and ack B's old nonce once more, beside A's new
// handle.) A cannot get two calls ahead: finishing the new call needs
// B's ack of A's new nonce, which B only writes from its own new call. So
// the n-th call on each side pairs with the n-th on the other.
#pragma once

#include "record.hpp"

#include <tca/tca.h>

#include <cstdint>

namespace tca {

// What a node remembers about its last completed exchange with one peer.
struct PeerHistory {
	std::uint32_t tag = 0;
	std::uint64_t my_nonce = 0;   // 0: no exchange completed yet
	std::uint64_t peer_nonce = 0;
};

class Handshake {
public:
	Handshake(std::uint32_t self, std::uint32_t peer, std::uint32_t tag,
		  std::uint64_t nonce, const tcaHandle &mine, const PeerHistory &history) noexcept;

	// The record to write into our slot on the peer (sealed).
	MailboxRecord outgoing() const noexcept;

	// Feeds a record read from the peer's slot in our mailbox. It must have
	// passed record_valid(). Returns true once the exchange is complete.
	bool observe(const MailboxRecord &rec) noexcept;

	bool done() const noexcept { return done_; }
	// After completion: must outgoing() be written once more? (Yes when we
	// finished on the peer's direct ack: it still needs to see ours.)
	bool needs_final_write() const noexcept { return final_write_; }
	const tcaHandle &theirs() const noexcept { return theirs_; }
	// After completion: what to remember for the next exchange with the peer.
	PeerHistory completed() const noexcept { return {tag_, nonce_, peer_nonce_}; }

private:
	std::uint32_t self_, peer_, tag_;
	std::uint64_t nonce_;
	tcaHandle mine_;
	PeerHistory history_;
	std::uint64_t peer_nonce_ = 0; // latest nonce read from the peer, same tag
	tcaHandle theirs_{};           // the handle that came with peer_nonce_
	bool done_ = false;
	bool final_write_ = false;
};

} // namespace tca
