// SPDX-License-Identifier: MIT
#include "common.hpp"

#include "../common/report.hpp"

#include <cerrno>
#include <cstdio>

namespace piocheck {

bool take_peer_option(tcatools::ArgReader &a, PeerOptions *o)
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

bool open_and_check_peer(const PeerOptions &o, int *self)
{
	if (!tcatools::ok_or_report(kProg, tcaInit(), "opening the PEACH2 device"))
		return false;
	*self = tcaNodeId();
	const int count = tcaNodeCount();
	if (*self < 0 || count < 0) {
		tcatools::ok_or_report(kProg, *self < 0 ? *self : count, "device info");
		return false;
	}
	if (o.peer < 0 || o.peer == *self || o.peer >= count) {
		std::fprintf(stderr, "%s: error: --peer must name another node below %d (this is node %d)\n",
			     kProg, count, *self);
		return false;
	}
	if (o.timeout_ms <= 0 || o.exchange_timeout_ms <= 0) {
		std::fprintf(stderr, "%s: error: timeouts must be positive\n", kProg);
		return false;
	}
	return true;
}

bool exchange(const PeerOptions &o, const tcaHandle &mine, tcaHandle *theirs, std::uint32_t tag,
	      int timeout_ms, const char *step)
{
	const int rc = tcaExchange(o.peer, &mine, theirs, timeout_ms, tag);
	if (rc == -ETIMEDOUT) {
		std::fprintf(stderr, "%s: error: %s: node %d did not answer within %d ms\n", kProg, step,
			     o.peer, timeout_ms);
		return false;
	}
	return tcatools::ok_or_report(kProg, rc, step);
}

bool put_u64(const tcaHandle &h, std::uint64_t offset, std::uint64_t v, const char *what)
{
	return tcatools::ok_or_report(kProg, tcaPut(&h, offset, &v, sizeof v), what);
}

bool TcaBuffer::allocate(std::size_t size, const char *what)
{
	return tcatools::ok_or_report(kProg, tcaMalloc(&p_, size), what);
}

} // namespace piocheck
