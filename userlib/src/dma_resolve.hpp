// SPDX-License-Identifier: MIT
// From the public tcaDmaXfer to the driver's entries: check the arguments,
// find the memory each side names (Context), and plan the descriptors
// (dma_plan). Caller holds the library mutex (buffers must not change).
#pragma once

#include "context.hpp"

#include <tca/tca.h>

#include <peach2/peach2_uapi.h>

#include <span>
#include <vector>

namespace tca {

// Appends the entries of every transfer, in order; on error *out is
// unchanged. Errors as tcaDmaStart (before anything starts).
int plan_xfers(const Context &c, std::span<const tcaDmaXfer> xfers, std::vector<peach2_xfer> *out);

} // namespace tca
