// SPDX-License-Identifier: MIT
#include "common.hpp"

#include "../common/report.hpp"

#include <cerrno>
#include <cstdio>

namespace dmacheck {

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

bool mode_flags(std::string_view name, std::uint32_t *flags)
{
	if (name == "card")
		*flags = 0;
	else if (name == "host")
		*flags = TCA_DMA_HOST_DESC;
	else if (name == "reg")
		*flags = TCA_DMA_REG_MODE;
	else
		return false;
	return true;
}

const char *mode_name(std::uint32_t flags)
{
	if (flags & TCA_DMA_REG_MODE)
		return "reg";
	return flags & TCA_DMA_HOST_DESC ? "host" : "card";
}

bool dma_ok(int rc, const tcaDmaTicket *t, const char *what)
{
	if (rc == TCA_EDMA && t) {
		std::fprintf(stderr, "%s: error: %s: the card reports %s (%u)\n", kProg, what,
			     tcaCardErrorName(t->status), t->status);
		return false;
	}
	return tcatools::ok_or_report(kProg, rc, what);
}

} // namespace dmacheck
