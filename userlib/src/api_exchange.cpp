// SPDX-License-Identifier: MIT
// C API: tcaExchange. The context lock is held only to claim the peer and to
// record the outcome, not while waiting: an exchange can take seconds and
// must not stall other threads' tcaMalloc or tcaGetHandle.
#include "api_guard.hpp"
#include "card_mailbox.hpp"
#include "exchange.hpp"
#include "handle.hpp"
#include "handshake.hpp"
#include "library.hpp"
#include "nonce.hpp"

#include <tca/tca.h>

#include <optional>

using namespace tca;

namespace {

struct Claim {
	std::uint32_t self = 0;
	PeerHistory history;
	std::optional<CardMailbox> io;
};

int claim_peer(int peer, Claim *out)
{
	return with_context([&](Context &c) {
		if (peer < 0 || static_cast<std::uint32_t>(peer) >= c.node_count() ||
		    static_cast<std::uint32_t>(peer) == c.node_id())
			return TCA_ENODE;
		const auto p = static_cast<std::uint32_t>(peer);
		if (c.exchange_busy(p))
			return -EBUSY;
		c.exchange_busy(p) = true;
		out->self = c.node_id();
		out->history = c.history(p);
		out->io.emplace(c.window(), c.mailbox(), c.node_id(), p);
		return 0;
	});
}

// Gives the peer back on every path out of tcaExchange, recording the
// completed exchange (if any) for the next one's `prev` fields.
class PeerRelease {
public:
	explicit PeerRelease(std::uint32_t peer) noexcept : peer_(peer) {}
	PeerRelease(const PeerRelease &) = delete;
	PeerRelease &operator=(const PeerRelease &) = delete;
	void completed(const Handshake &hs) noexcept { history_ = hs.completed(); }
	~PeerRelease()
	{
		std::lock_guard<std::mutex> lock(library_mutex());
		// Only gone if tcaFinalize raced with us, which the API forbids.
		if (Context *c = context_if_open()) {
			c->exchange_busy(peer_) = false;
			if (history_)
				c->history(peer_) = *history_;
		}
	}

private:
	std::uint32_t peer_;
	std::optional<PeerHistory> history_;
};

} // namespace

extern "C" int tcaExchange(int peer, const tcaHandle *mine, tcaHandle *theirs,
			   int timeout_ms, uint32_t tag)
{
	if (!mine || !theirs)
		return -EINVAL;
	if (int rc = validate_handle(*mine))
		return rc;
	return guarded([&] {
		Claim claim;
		if (int rc = claim_peer(peer, &claim))
			return rc;
		const auto p = static_cast<std::uint32_t>(peer);
		PeerRelease release(p);
		Handshake hs(claim.self, p, tag, fresh_nonce(), *mine, claim.history);
		ExchangeTiming timing;
		timing.timeout_ms = timeout_ms;
		if (int rc = run_exchange(*claim.io, hs, timing))
			return rc;
		release.completed(hs);
		// The record's checksum proved it arrived intact; this checks that
		// the peer sent a well-formed handle in the first place.
		if (int bad = validate_handle(hs.theirs()))
			return bad;
		*theirs = hs.theirs();
		return 0;
	});
}
