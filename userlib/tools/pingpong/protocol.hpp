// SPDX-License-Identifier: MIT
// The ping-pong wire protocol: where messages and flags live in the
// receive buffer, what the flag says, and what every payload contains.
// Pure functions, shared by both roles and unit-tested.
//
// Each node's receive buffer: two message slots, then an 8-byte flag on its
// own cache line. Message n (counted over all sizes, from 0) goes to slot
// n % 2 and is announced by storing flag_value(size index, iteration) after
// the payload (payload stores, fence, flag store: one in-order link). Two
// slots let the pong reply before it verifies: its slot for message n is
// next written by message n + 2, which the ping only sends after the pong
// has replied to n + 1, i.e. after it finished checking n.
#pragma once

#include <cstdint>
#include <vector>

namespace pingpong {

struct Layout {
	std::uint64_t slot_bytes = 0;

	static Layout for_max_size(std::uint64_t max_size)
	{
		const std::uint64_t line = 64;
		return Layout{(max_size + line - 1) / line * line};
	}
	std::uint64_t slot_offset(std::uint64_t message) const { return (message % 2) * slot_bytes; }
	std::uint64_t flag_offset() const { return 2 * slot_bytes; }
	std::uint64_t buffer_bytes() const { return 2 * slot_bytes + 64; }
};

inline constexpr std::uint64_t kFlagMarker = 0x5050ull << 48; // "PP"
inline constexpr std::uint64_t kMaxSizes = 0xffff;
inline constexpr std::uint64_t kMaxIterations = 0xfffffffeull;

// Never 0 (a fresh buffer is zero) and different for every message of a
// run, so the receiver waits for exactly the message it expects and can
// tell a peer that is out of step from one that is just slow.
constexpr std::uint64_t flag_value(std::uint32_t size_index, std::uint64_t iteration)
{
	return kFlagMarker | (static_cast<std::uint64_t>(size_index) << 32) | (iteration + 1);
}
constexpr bool flag_decode(std::uint64_t v, std::uint32_t *size_index, std::uint64_t *iteration)
{
	if ((v & (0xffffull << 48)) != kFlagMarker || (v & 0xffffffffull) == 0)
		return false;
	*size_index = static_cast<std::uint32_t>((v >> 32) & 0xffff);
	*iteration = (v & 0xffffffffull) - 1;
	return true;
}

enum class Direction : std::uint64_t { PingToPong = 1, PongToPing = 2 };

// Seed of the payload of one message.
std::uint64_t payload_seed(std::uint32_t size_index, std::uint64_t size, std::uint64_t iteration,
			   Direction dir);

// Exchange tags: both sides must run with the same sizes and counts, so
// those go into the tag; a mismatched peer never pairs and times out.
std::uint32_t session_tag(const std::vector<std::uint64_t> &sizes, std::uint64_t iterations,
			  std::uint64_t warmup);
std::uint32_t done_tag(std::uint32_t session);

} // namespace pingpong
