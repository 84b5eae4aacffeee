// SPDX-License-Identifier: MIT
// Copies on the message path (a Send's payload into the slot, into the
// receive buffer, inline data, a WR's SGEs) without a call for the small
// sizes a ping-pong moves. In an emulated (TCG) guest a call to glibc's
// memcpy (through the PLT, and its return) costs ~27 ns for 8 bytes, the
// same 8 bytes copied inline ~3 ns (docs/notes.md, thirty-seventh session).
// Straight-line code: GCC turns copy loops back into memcpy calls.
#pragma once

#include <infiniband/verbs.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pv {

namespace detail {
template <std::size_t N>
inline void copy_block(unsigned char* d, const unsigned char* s) noexcept {
    static_assert(N == 1 || N == 2 || N == 4 || N == 8 || N == 16);
    if constexpr (N == 16) {
        copy_block<8>(d, s);
        copy_block<8>(d + 8, s + 8);
    } else {
        unsigned char w[N];  // one load and one store of N bytes
        std::memcpy(w, s, N);
        std::memcpy(d, w, N);
    }
}
}  // namespace detail

// memcpy(to, from, n) for buffers that do not overlap: up to 64 bytes inline
// (overlapping blocks, the last ending at n, as glibc does), memcpy beyond.
inline void small_copy(void* to, const void* from, std::size_t n) noexcept {
    using detail::copy_block;
    auto* d = static_cast<unsigned char*>(to);
    const auto* s = static_cast<const unsigned char*>(from);
    if (n > 64) {
        std::memcpy(d, s, n);
    } else if (n >= 16) {
        copy_block<16>(d, s);
        if (n > 32) {
            copy_block<16>(d + 16, s + 16);
            if (n > 48)
                copy_block<16>(d + 32, s + 32);
        }
        copy_block<16>(d + n - 16, s + n - 16);
    } else if (n >= 8) {
        copy_block<8>(d, s);
        copy_block<8>(d + n - 8, s + n - 8);
    } else if (n >= 4) {
        copy_block<4>(d, s);
        copy_block<4>(d + n - 4, s + n - 4);
    } else if (n > 0) {
        d[0] = s[0];
        if (n > 1) {
            d[n - 1] = s[n - 1];
            d[1] = s[1];  // n == 2: the same byte twice
        }
    }
}

// A WR's SGEs into ours: the usual single one by assignment.
inline void copy_sges(const ibv_sge* from, std::size_t n, ibv_sge* to) noexcept {
    if (n == 1)
        to[0] = from[0];
    else
        std::copy(from, from + n, to);
}

}  // namespace pv
