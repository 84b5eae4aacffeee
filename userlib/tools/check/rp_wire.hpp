// SPDX-License-Identifier: MIT
// tca_check rp serve <-> its clients (get-verify, faa, ...): what the
// server offers and how a client says it is done.
//
// The server fills a data buffer with pattern_byte(seed, i) at byte i,
// exports it (flags as asked) and sends its handle (exchange tag kTagData ^
// seed, so client and server must agree on the seed). Then it sends the
// handle of a 4 KiB control buffer (tag kTagCtrl): a 64-bit counter at 0
// (exported for atomics with --counter, else not exported) and, at
// done_offset(node), a word each client sets (PIO) when it has finished.
// The server sleeps (it checks the words every 10 ms), serving nothing.
#pragma once

#include <cstdint>

namespace tcacheck::rp {

inline constexpr std::uint32_t kTagData = 0x31435052u;  // "RPC1"
inline constexpr std::uint32_t kTagCtrl = 0x32435052u;  // "RPC2"
inline constexpr std::uint64_t kCtrlSize = 4096;
inline constexpr std::uint64_t kCounterOff = 0;
inline constexpr std::uint64_t kDoneValue = 0x454e4f44u;  // "DONE"

constexpr std::uint64_t done_offset(std::uint32_t node) { return 64 + 8 * std::uint64_t{node}; }

constexpr std::uint32_t data_tag(std::uint64_t seed) {
    return kTagData ^ static_cast<std::uint32_t>(seed * 0x9e3779b1u);
}

}  // namespace tcacheck::rp
