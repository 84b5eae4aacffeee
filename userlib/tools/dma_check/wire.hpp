// SPDX-License-Identifier: MIT
// tca_dma_check recv/send: buffers, records and tags.
//
// The receiver owns, per lane, a region [guard | data | guard] filled with
// canaries, and a control buffer with a 128-byte slot per lane: a Ctrl
// record, then (64 bytes in) the lane's sequence word. The sender owns a
// source region per lane and an ack buffer with a 64-byte Ack per lane.
//
// Transfer k of lane l is one DMA list, on channel l: the data (any shape,
// shape.hpp), then the Ctrl record describing it (copied from the sender's
// memory), then a completion word k + 1 into the lane's sequence word. The
// receiver sees the word, reads Ctrl, checks that exactly the addressed
// bytes of the lane changed and hold the source's bytes, restores the
// canaries and answers with Ack{status, detail} then Ack.seq = k + 1 (PIO).
// The sender starts the lane's next transfer only after that answer. The
// lanes run at the same time, so the four channels do. The end of a lane is
// the word kEndBit | transfers.
#pragma once

#include <cstdint>

namespace dmacheck {

struct Ctrl {
	std::uint64_t k;        // transfer number in the lane
	std::uint64_t seed;     // source pattern: byte x of the lane source = pattern_byte(seed, x)
	std::uint64_t src_off, dst_off, len;
	std::uint32_t burst, gap, stride, mode;
};
static_assert(sizeof(Ctrl) <= 64, "a Ctrl record fits its half slot");

struct Ack {
	std::uint64_t status; // Status
	std::uint64_t detail; // first bad position in the lane region (two's complement)
	std::uint64_t seq;    // k + 1, stored last
};

inline constexpr std::uint64_t kCtrlSlot = 128; // per lane: Ctrl, then the word at +64
inline constexpr std::uint64_t kWordOff = 64;
inline constexpr std::uint64_t kAckSlot = 64;
inline constexpr std::uint64_t kEndBit = 1ull << 63;
inline constexpr unsigned kMaxLanes = 4; // one per DMA channel

enum Status : std::uint64_t {
	kOk = 0,
	kTargetMismatch = 1, // a byte that should have been written is wrong
	kStrayWrite = 2,     // a byte outside the transfer (data or guard) changed
	kBadRequest = 3,     // Ctrl does not describe transfer k, or leaves the lane
};

inline constexpr std::uint32_t kTagCtrl = 0x31434d44u; // "DMC1": ctrl <-> ack handles
inline constexpr std::uint32_t kTagLane = 0x32434d44u; // "DMC2" + lane: lane handles
inline constexpr std::uint32_t kTagDone = 0x33434d44u; // "DMC3": final barrier
inline constexpr std::uint32_t kTagSink = 0x34434d44u; // "DMC4": a sink's memory (hold, crossover)

} // namespace dmacheck
