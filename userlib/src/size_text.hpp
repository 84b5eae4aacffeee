// SPDX-License-Identifier: MIT
// Byte counts written by people: decimal with an optional k/K or m/M suffix
// (KiB, MiB), or 0x-prefixed hex. Shared by the library (TCA_PIO_MAX) and
// the test programs' options, so both read "64K" the same way.
#pragma once

#include <cstdint>
#include <string_view>

namespace tca {

// Fills *out and returns true, or returns false for empty text, other
// characters, or a value that does not fit 64 bits.
constexpr bool parse_size(std::string_view s, std::uint64_t* out) noexcept {
    unsigned base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    }
    std::uint64_t mult = 1;
    if (!s.empty() && base == 10) {
        const char c = s.back();
        if (c == 'k' || c == 'K')
            mult = 1024;
        else if (c == 'm' || c == 'M')
            mult = 1024 * 1024;
        if (mult != 1)
            s.remove_suffix(1);
    }
    if (s.empty())
        return false;
    std::uint64_t v = 0;
    for (char c : s) {
        unsigned d;
        if (c >= '0' && c <= '9')
            d = static_cast<unsigned>(c - '0');
        else if (base == 16 && c >= 'a' && c <= 'f')
            d = static_cast<unsigned>(c - 'a' + 10);
        else if (base == 16 && c >= 'A' && c <= 'F')
            d = static_cast<unsigned>(c - 'A' + 10);
        else
            return false;
        if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v))
            return false;
    }
    if (__builtin_mul_overflow(v, mult, &v))
        return false;
    *out = v;
    return true;
}

}  // namespace tca
