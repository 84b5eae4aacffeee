// SPDX-License-Identifier: MIT
// How a node shows up in InfiniBand terms: its LID, GUID and GID, and the
// way back from what programs exchange (LID or GID) to a node id. Pure
// functions, unit-tested.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace pv {

// "PEC2" in the top 32 bits; the node id and card index below.
constexpr std::uint64_t kGuidTag = 0x5045433200000000ull;
constexpr std::uint64_t kGuidTagMask = 0xffffffff00000000ull;

// LIDs 1..16: LID 0 means "none" in InfiniBand and programs refuse it.
constexpr std::uint16_t node_lid(std::uint32_t node) noexcept {
    return static_cast<std::uint16_t>(node + 1);
}

// Host-order GUID of node `node`'s card `index`.
constexpr std::uint64_t node_guid(std::uint32_t node, std::uint32_t index = 0) noexcept {
    return kGuidTag | (static_cast<std::uint64_t>(index & 0xff) << 8) | (node & 0xff);
}

// The port's only GID: fe80::<GUID> (link-local, GUID as interface id).
ibv_gid node_gid(std::uint32_t node, std::uint32_t index = 0) noexcept;

// The node an address handle or QP attribute names: from the GID when it
// carries one of ours (is_global), else from the LID. False if neither
// names a node below node_count.
bool node_of(std::uint16_t lid, bool is_global, const ibv_gid& gid, std::uint32_t node_count,
             std::uint32_t* node) noexcept;

}  // namespace pv
