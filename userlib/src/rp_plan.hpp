// SPDX-License-Identifier: MIT
// Read proxy requests from the public arguments: which node and export a
// handle names, and how a get is cut into requests. Pure functions of
// their arguments (no device), unit-tested.
//
// A get lands in this process's memory, which the driver names by buffer
// and offset; each request's reply must lie in one physically contiguous
// chunk of it and be at most PEACH2_RP_MAX_LEN bytes, so the library cuts
// there. The target's driver follows its own buffer across its chunks, so
// remote chunk boundaries need no cut; but each request's `addr` (the
// target's host bus address of its first byte) comes from the handle's
// chunk list at that request's offset.
#pragma once

#include "dma_plan.hpp"

#include <tca/tca.h>

#include <cstdint>
#include <vector>

namespace tca {

// Where a request goes: the export the handle names on its node.
struct RpTarget {
	std::uint32_t node = 0;
	std::uint32_t export_id = 0;
	std::uint32_t key = 0;
	std::uint32_t op = 0;          // enum peach2_rp_op
	std::uint64_t operand[2] = {0, 0};
};

// One request of a get: `len` bytes at target address `addr` into byte
// `reply_offset` of the local buffer.
struct RpPiece {
	std::uint64_t addr = 0;
	std::uint64_t reply_offset = 0;
	std::uint32_t len = 0;
};

// The handle's node and export (validated handle): TCA_ENOTEXPORTED without
// an export, TCA_ENODE for a node not below node_count.
int rp_target(const tcaHandle &h, std::uint32_t node_count, std::uint32_t op, RpTarget *out) noexcept;

// Cuts a get of [src_offset, src_offset + len) of a validated handle into
// `dst` (this process's buffer: its pieces and the offset of the first
// byte; the caller checked that dst holds len bytes). Errors: TCA_ERANGE
// (leaves the handle), TCA_EALIGN (len % 4, or low 4 address bits of a
// request's two ends differ). len == 0: no pieces.
int plan_get(const DmaSide &dst, const tcaHandle &src, std::uint64_t src_offset,
	     std::uint64_t len, std::vector<RpPiece> *out);

// The target address of the 8-byte word at `offset` of a validated handle:
// TCA_ERANGE, or TCA_EALIGN unless 8-byte aligned.
int plan_atomic(const tcaHandle &h, std::uint64_t offset, std::uint64_t *addr) noexcept;

} // namespace tca
