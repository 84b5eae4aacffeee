// SPDX-License-Identifier: MIT
// tca_get_bench: the buffers of both roles and where the words are.
//
// Server: `data` (the largest get size + 16, pattern of the seed, exported
// for reads), `ctrl` (4 KiB, exported for atomics: the CAS/FAA word), and
// `sink` (the DMA put target, --put-size + 64: the stream's last put ends
// with a completion word after the data). Client: `ctrl` (4 KiB).
//
// Phase 1 (the server takes part): PIO ping-pong of 8 bytes: payload at
// kPayload, then the flag (iteration + 1) at kFlag, into the other side's
// ctrl; then the DMA put stream into the sink, whose end the server
// acknowledges with a PIO store of the count to the client's kAck. Then the
// client stores kGetPhase into the server's kPhase: from there on the
// server only sleeps (it looks at kPhase every 50 ms) until kDone.
// Phase 2 (the server's CPU idle): gets, CAS, FAA.
#pragma once

#include <cstdint>

namespace getbench {

inline constexpr std::uint64_t kCtrlSize = 4096;
inline constexpr std::uint64_t kPayload = 0;
inline constexpr std::uint64_t kFlag = 64;
inline constexpr std::uint64_t kAck = 128;
inline constexpr std::uint64_t kPhase = 192;
inline constexpr std::uint64_t kAtomic = 256;
inline constexpr std::uint64_t kGetPhase = 0x53544547u; // "GETS"
inline constexpr std::uint64_t kDone = 0x454e4f44u;     // "DONE"

inline constexpr std::uint32_t kTagData = 0x31424742u;  // "BGB1"
inline constexpr std::uint32_t kTagCtrl = 0x32424742u;
inline constexpr std::uint32_t kTagSink = 0x33424742u;

} // namespace getbench
