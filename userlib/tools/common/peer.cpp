// SPDX-License-Identifier: MIT
#include "peer.hpp"

#include "report.hpp"

#include <cerrno>
#include <cstdio>

namespace tcatools {

bool take_peer_option(ArgReader &a, PeerOptions *o)
{
	if (a.is("--peer"))
		a.value_int(&o->peer);
	else if (a.is("--timeout-ms"))
		a.value_int(&o->timeout_ms);
	else if (a.is("--exchange-timeout-ms"))
		a.value_int(&o->exchange_timeout_ms);
	else
		return false;
	return true;
}

bool open_and_check_peer(const char *prog, const PeerOptions &o, int *self)
{
	if (!ok_or_report(prog, tcaInit(), "opening the PEACH2 device"))
		return false;
	*self = tcaNodeId();
	const int count = tcaNodeCount();
	if (*self < 0 || count < 0) {
		ok_or_report(prog, *self < 0 ? *self : count, "device info");
		return false;
	}
	if (o.peer < 0 || o.peer == *self || o.peer >= count) {
		std::fprintf(stderr, "%s: error: --peer must name another node below %d (this is node %d)\n",
			     prog, count, *self);
		return false;
	}
	if (o.timeout_ms <= 0 || o.exchange_timeout_ms <= 0) {
		std::fprintf(stderr, "%s: error: timeouts must be positive\n", prog);
		return false;
	}
	return true;
}

bool exchange(const char *prog, const PeerOptions &o, const tcaHandle &mine, tcaHandle *theirs,
	      std::uint32_t tag, int timeout_ms, const char *step)
{
	const int rc = tcaExchange(o.peer, &mine, theirs, timeout_ms, tag);
	if (rc == -ETIMEDOUT) {
		std::fprintf(stderr, "%s: error: %s: node %d did not answer within %d ms\n", prog, step,
			     o.peer, timeout_ms);
		return false;
	}
	return ok_or_report(prog, rc, step);
}

} // namespace tcatools
