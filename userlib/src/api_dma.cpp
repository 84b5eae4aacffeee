// SPDX-License-Identifier: MIT
// C API: one-shot DMA and tickets. The library mutex is held only while the
// request is checked and planned (buffers must not change meanwhile), never
// across the driver's start or a wait.
#include "api_guard.hpp"
#include "dma_flags.hpp"
#include "dma_resolve.hpp"
#include "dma_runs.hpp"
#include "dma_ticket.hpp"
#include "library.hpp"

#include <tca/tca.h>

#include <cerrno>
#include <span>
#include <vector>

using namespace tca;

namespace {

int start(std::span<const tcaDmaXfer> xfers, const tcaDmaOpts *opts, tcaDmaTicket *ticket)
{
	DmaMode m;
	if (int rc = dma_mode(opts, &m))
		return rc;
	if (!ticket)
		m.wait = true; // nothing to wait with later: wait now
	return guarded([&] {
		std::vector<peach2_xfer> entries;
		Context *ctx = nullptr;
		if (int rc = with_context([&](Context &c) {
			    ctx = &c;
			    return plan_xfers(c, xfers, &entries);
		    }))
			return rc;
		const std::vector<DmaRun> runs = split_runs(entries, m.desc == PEACH2_DMA_REG_MODE);
		tcaDmaTicket unused{};
		DmaStarter s = ctx->dma().starter();
		return start_runs(s, runs, m, ticket ? ticket : &unused);
	});
}

// Collects a ticket; with nothing left it needs no device.
int collect(tcaDmaTicket *t, int timeout_ms, bool poll)
{
	if (!t)
		return -EINVAL;
	if (t->left == 0)
		return t->status ? TCA_EDMA : 0;
	Context *c = nullptr;
	if (int rc = context_fast(&c))
		return rc;
	return collect_ticket(c->dma().port(), t, timeout_ms, poll);
}

} // namespace

extern "C" {

int tcaDmaStart(const tcaDmaXfer *xfers, size_t count, const tcaDmaOpts *opts,
		tcaDmaTicket *ticket)
{
	if (!xfers && count)
		return -EINVAL;
	return start(std::span<const tcaDmaXfer>(xfers, count), opts, ticket);
}

int tcaDmaPut(const tcaHandle *dst, size_t dst_offset, const void *src, size_t len,
	      const tcaDmaOpts *opts, tcaDmaTicket *ticket)
{
	if (!dst || (!src && len))
		return -EINVAL;
	tcaDmaXfer x{};
	x.dst = dst;
	x.dst_offset = dst_offset;
	x.src = src;
	x.len = len;
	return start({&x, 1}, opts, ticket);
}

int tcaDmaPutNotify(const tcaHandle *dst, size_t dst_offset, const void *src, size_t len,
		    size_t notify_offset, uint64_t value, const tcaDmaOpts *opts,
		    tcaDmaTicket *ticket)
{
	if (!dst || (!src && len))
		return -EINVAL;
	tcaDmaXfer x{};
	x.dst = dst;
	x.dst_offset = dst_offset;
	x.src = src;
	x.len = len;
	x.notify = dst;
	x.notify_offset = notify_offset;
	x.notify_value = value;
	x.notify_len = 8;
	return start({&x, 1}, opts, ticket);
}

int tcaDmaWait(tcaDmaTicket *ticket, int timeout_ms)
{
	return guarded([&] { return collect(ticket, timeout_ms, false); });
}

int tcaDmaTest(tcaDmaTicket *ticket)
{
	return guarded([&] {
		const int rc = collect(ticket, 0, true);
		return rc == -ETIMEDOUT ? 1 : rc;
	});
}

} // extern "C"
