// SPDX-License-Identifier: MIT
#include "dma_runs.hpp"

#include "dma_rules.hpp"
#include "dma_ticket.hpp"

#include <algorithm>
#include <cerrno>
#include <mutex>

namespace tca {
namespace {

peach2_dma_start start_request(const DmaRun &r, const DmaMode &m, std::uint32_t channel)
{
	peach2_dma_start req{};
	req.chain = r.chain;
	if (!r.chain) {
		req.count = static_cast<__u32>(r.xfers.size());
		req.xfers = reinterpret_cast<std::uintptr_t>(r.xfers.data());
		req.flags = m.desc;
	}
	req.channel = channel;
	return req;
}

// One run. Waiting is a separate DMA_WAIT, not the driver's inline
// PEACH2_DMA_WAIT: that would hold `order` for the whole wait and stall
// every several-run start meanwhile. It costs one more system call.
int start_one(DmaStarter &s, const DmaRun &r, const DmaMode &m, tcaDmaTicket *t)
{
	peach2_dma_start req = start_request(r, m, m.channel);
	int rc;
	{
		std::shared_lock<std::shared_mutex> lock(s.order);
		rc = s.port.call(PEACH2_IOC_DMA_START, &req);
	}
	if (rc) {
		*t = tcaDmaTicket{};
		return driver_error(refusal_error(rc, req.refusal));
	}
	*t = tcaDmaTicket{req.ticket, 1, 0};
	return m.wait ? collect_ticket(s.port, t, m.timeout_ms, false) : 0;
}

int start_several(DmaStarter &s, std::span<const DmaRun> runs, const DmaMode &m, tcaDmaTicket *t)
{
	// One channel keeps them in order.
	const std::uint32_t channel = m.channel != PEACH2_DMA_ANY_CHANNEL
					      ? m.channel
					      : s.next_channel.fetch_add(1) % PEACH2_DMA_CHANNELS;
	tcaDmaTicket started{};
	int rc = 0;
	{
		std::unique_lock<std::shared_mutex> lock(s.order);
		for (const DmaRun &r : runs) {
			peach2_dma_start req = start_request(r, m, channel);
			rc = s.port.call(PEACH2_IOC_DMA_START, &req);
			if (rc) {
				rc = driver_error(refusal_error(rc, req.refusal));
				break;
			}
			if (started.left == 0)
				started.next = req.ticket;
			else if (req.ticket != started.next + started.left)
				rc = TCA_EDEVICE; // cannot happen while we hold `order`
			++started.left;
			if (rc)
				break;
		}
	}
	if (rc) {
		// The started runs read the caller's memory: let them end first.
		collect_ticket(s.port, &started, 0, false);
		*t = tcaDmaTicket{};
		return rc;
	}
	*t = started;
	return m.wait ? collect_ticket(s.port, t, m.timeout_ms, false) : 0;
}

} // namespace

std::vector<DmaRun> split_runs(std::span<const peach2_xfer> xfers, bool reg_mode)
{
	const std::size_t per_run = reg_mode ? 1 : PEACH2_DMA_MAX_XFERS;
	std::vector<DmaRun> runs;
	for (std::size_t i = 0; i < xfers.size(); i += per_run)
		runs.push_back(DmaRun{xfers.subspan(i, std::min(per_run, xfers.size() - i))});
	return runs;
}

int start_runs(DmaStarter &s, std::span<const DmaRun> runs, const DmaMode &m, tcaDmaTicket *t)
{
	if (runs.empty()) {
		*t = tcaDmaTicket{};
		return 0;
	}
	return runs.size() == 1 ? start_one(s, runs[0], m, t) : start_several(s, runs, m, t);
}

} // namespace tca
