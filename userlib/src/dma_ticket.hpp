// SPDX-License-Identifier: MIT
// Collecting a tcaDmaTicket: its runs have consecutive driver tickets and
// are waited for in order (they end in order: one channel, FIFO).
#pragma once

#include "dma_port.hpp"

#include <tca/tca.h>

namespace tca {

// Waits for the runs of *t one by one, recording progress in *t, until all
// have ended or timeout_ms (<= 0: no limit) passed; `poll` does not wait at
// all. 0, TCA_EDMA (a run ended with a card error: t->status), -ETIMEDOUT
// (some still running), or a driver error (-ENOENT: unknown ticket).
// Signals do not end the wait early.
int collect_ticket(DriverPort &port, tcaDmaTicket *t, int timeout_ms, bool poll);

} // namespace tca
