// SPDX-License-Identifier: MIT
// Starting DMA runs. A run is what the driver starts with one DMA_START: a
// one-shot list of transfer entries or a chain. Most requests are one run.
// Register mode takes one descriptor per run and the driver takes at most
// PEACH2_DMA_MAX_XFERS entries per run, so a larger request becomes several
// runs, all on one channel (which runs them in order). Their driver tickets
// must be consecutive for a tcaDmaTicket to name them all, so several-run
// starts exclude every other start for their duration (a shared lock).
#pragma once

#include "dma_flags.hpp"
#include "dma_port.hpp"

#include <tca/tca.h>

#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>

#include <atomic>
#include <cstdint>
#include <shared_mutex>
#include <span>
#include <vector>

namespace tca {

struct DmaRun {
	std::span<const peach2_xfer> xfers; // one-shot entries, or
	std::uint32_t chain = 0;            // a chain id (then xfers is empty)
};

// The runs for `xfers` (one entry per run in register mode, else slices of
// at most PEACH2_DMA_MAX_XFERS). Empty input: no runs.
std::vector<DmaRun> split_runs(std::span<const peach2_xfer> xfers, bool reg_mode);

// What starting needs besides the runs: the device, the lock that keeps
// several-run starts' tickets consecutive, and the round-robin counter that
// picks their channel when the caller lets the driver choose.
struct DmaStarter {
	DriverPort &port;
	std::shared_mutex &order;
	std::atomic<unsigned> &next_channel;
};

// Starts `runs` with mode `m` (m.desc is ignored for chain runs) and, if
// m.wait, waits up to m.timeout_ms (never holding `order` while waiting).
// *t receives what is left to collect.
// If a later run of several fails to start, the earlier ones are waited for
// (they read the caller's memory) and the start error is returned.
// 0, TCA_EDMA, -ETIMEDOUT (with m.wait: *t still valid), or start errors.
int start_runs(DmaStarter &s, std::span<const DmaRun> runs, const DmaMode &m, tcaDmaTicket *t);

} // namespace tca
