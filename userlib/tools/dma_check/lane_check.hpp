// SPDX-License-Identifier: MIT
// The receiver's check of one transfer into a lane region [guard | data |
// guard]: exactly the bytes the shape addresses changed, and each holds the
// source byte the card should have moved there. Pure (works on spans), so
// the unit tests can try wrong, missing and stray bytes.
#pragma once

#include "shape.hpp"
#include "wire.hpp"

#include <cstdint>
#include <span>

namespace dmacheck {

// The lane's pristine image: guard canaries, data canaries, guard canaries.
void fill_lane_pristine(std::span<std::uint8_t> region, std::uint64_t guard, unsigned lane);

// Checks `region` after transfer (shape, seed) into its data part; returns
// a Status, with *where = first bad byte (region offset) if not kOk.
std::uint64_t check_lane(std::span<const std::uint8_t> region, std::span<const std::uint8_t> pristine,
			 std::uint64_t guard, const Shape &shape, std::uint64_t seed,
			 std::uint64_t *where);

} // namespace dmacheck
