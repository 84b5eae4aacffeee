// SPDX-License-Identifier: MIT
// tca_pio_check's coordination records and exchange tags.
//
// The receiver owns a data buffer [guard | data | guard] and a small control
// buffer; the sender owns an ack buffer. Per write k the sender stores the
// data, then Ctrl{offset, len} and Ctrl.seq = k + 1 (a separate, fenced put,
// so seq is seen last); the receiver checks its whole buffer, restores the
// canary, and answers with Ack{status, detail} then Ack.seq = k + 1. The
// sender waits for that ack before the next write, so each check sees
// exactly one write. The end is Ctrl.seq = kEndBit | number of writes.
#pragma once

#include <cstdint>

namespace piocheck {

struct Ctrl {
	std::uint64_t offset; // data offset of the write
	std::uint64_t len;    // bytes written
	std::uint64_t seq;    // k + 1, or kEndBit | count; stored last
};

struct Ack {
	std::uint64_t status; // Status
	std::uint64_t detail; // first bad position (data-relative, two's complement)
	std::uint64_t seq;    // echo of Ctrl.seq; stored last
};

inline constexpr std::uint64_t kEndBit = 1ull << 63;

enum Status : std::uint64_t {
	kOk = 0,
	kTargetMismatch = 1, // a byte inside the written range is wrong
	kStrayWrite = 2,     // a byte outside it (data or guard) changed
	kBadRequest = 3,     // Ctrl out of range or out of sequence
};

inline constexpr std::uint32_t kTagData = 0x31434950u; // "PIC1": data and ack handles
inline constexpr std::uint32_t kTagCtrl = 0x32434950u; // "PIC2": control handle
inline constexpr std::uint32_t kTagDone = 0x33434950u; // "PIC3": final barrier

} // namespace piocheck
