// SPDX-License-Identifier: MIT
// Overflow-safe range arithmetic: every "offset + len <= size" check in the
// library goes through here so that huge values cannot wrap around.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tca {

// True when [offset, offset + len) lies inside [0, size). len == 0 is
// accepted for any offset <= size (an empty range at the end is fine).
constexpr bool range_fits(std::uint64_t offset, std::uint64_t len, std::uint64_t size) noexcept {
    std::uint64_t end = 0;
    if (__builtin_add_overflow(offset, len, &end))
        return false;
    return end <= size;
}

// Stores a + b in *out; false on overflow.
constexpr bool checked_add(std::uint64_t a, std::uint64_t b, std::uint64_t* out) noexcept {
    return !__builtin_add_overflow(a, b, out);
}

}  // namespace tca
