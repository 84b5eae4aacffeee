// SPDX-License-Identifier: MIT
// Fresh 64-bit nonces for tcaExchange: each call must use a value no earlier
// call or run could have used, so that stale mailbox data never matches.
#pragma once

#include <cstdint>

namespace tca {

// Non-zero, random (getrandom), with a time/pid/counter fallback for a guest
// whose entropy pool is not ready yet (GRND_NONBLOCK: never stall at boot).
std::uint64_t fresh_nonce() noexcept;

} // namespace tca
