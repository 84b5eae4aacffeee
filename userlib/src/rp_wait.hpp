// SPDX-License-Identifier: MIT
// Waiting for a read-proxy request: poll it, spinning briefly (an answer
// from a neighbour takes microseconds on real hardware), then yielding the
// CPU (a get from this node itself needs the driver's interrupt thread to
// run here), then sleeping in short steps. And the request timeout.
#pragma once

#include "rp_op.hpp"

#include <cstdint>

namespace tca {

std::uint64_t monotonic_ns() noexcept;

// The request timeout: $TCA_RP_TIMEOUT_MS (read once; a positive decimal
// number) or 10000.
std::uint64_t rp_timeout_ms() noexcept;

// Polls `op` until it ends or `limit_ns` (CLOCK_MONOTONIC; 0: none) passes:
// its outcome, or 1 if still pending at the limit.
int wait_op(RpOp &op, std::uint64_t limit_ns);

} // namespace tca
