// SPDX-License-Identifier: MIT
#include "dma_ticket.hpp"

#include <peach2/peach2_uapi.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace tca {
namespace {

using Clock = std::chrono::steady_clock;

// The driver's DMA_WAIT has no "forever" (0 means "just check"): an
// unlimited wait is a loop of long waits.
constexpr std::uint32_t kSliceMs = 60000;

} // namespace

int collect_ticket(DriverPort &port, tcaDmaTicket *t, int timeout_ms, bool poll)
{
	const bool forever = !poll && timeout_ms <= 0;
	const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 0);
	while (t->left > 0) {
		std::uint32_t slice = 0;
		if (forever) {
			slice = kSliceMs;
		} else if (!poll) {
			const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
			slice = static_cast<std::uint32_t>(std::clamp<long long>(left.count(), 0, kSliceMs));
		}
		peach2_dma_wait w{};
		w.ticket = t->next;
		w.timeout_ms = slice;
		const int rc = port.call(PEACH2_IOC_DMA_WAIT, &w);
		if (rc == 0) {
			if (t->status == 0)
				t->status = w.status;
			++t->next;
			--t->left;
			continue;
		}
		if (rc == -EINTR)
			continue; // a signal: the run goes on, so does the wait
		if (rc != -ETIMEDOUT)
			return rc;
		if (poll || (!forever && Clock::now() >= deadline))
			return -ETIMEDOUT;
	}
	return t->status ? TCA_EDMA : 0;
}

} // namespace tca
