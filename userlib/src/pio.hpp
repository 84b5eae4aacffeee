// SPDX-License-Identifier: MIT
// Programmed I/O into the window (pio.cpp: tcaPut, tcaPutRaw, tcaFence,
// and the stores they make). No lock on this path: the context pointer is
// read atomically, everything else is the caller's data. The store pattern
// matters: the window is
// device memory, and under QEMU TCG every CPU store becomes one MMIO access
// of that width. memcpy may use `rep movsb` or vector stores, which turn into
// byte-wise or oddly split device accesses, so the library issues its own
// naturally aligned 1/2/4/8-byte stores: small ones only for an unaligned
// head and tail, 8-byte ones for the body.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tca {

// Plans the stores that cover [0, len) of a destination starting at address
// `dst_addr`, calling sink(offset, width) for each, in ascending order.
// Each store is the widest of 8/4/2/1 bytes that is naturally aligned at
// its address and fits in what is left. The sink decides what a store is
// (a volatile store for the device, a record for the tests).
template <class Sink>
constexpr void plan_stores(std::uintptr_t dst_addr, std::size_t len, Sink&& sink) {
    auto width_at = [&](std::size_t off) -> unsigned {
        const std::uintptr_t a = dst_addr + off;
        const std::size_t left = len - off;
        if (a % 8 == 0 && left >= 8)
            return 8;
        if (a % 4 == 0 && left >= 4)
            return 4;
        if (a % 2 == 0 && left >= 2)
            return 2;
        return 1;
    };
    std::size_t off = 0;
    // Head: up to three narrower stores until the address is 8-aligned.
    while (off < len && (dst_addr + off) % 8 != 0) {
        const unsigned w = width_at(off);
        sink(off, w);
        off += w;
    }
    // Body: aligned 8-byte stores.
    for (; len - off >= 8; off += 8)
        sink(off, 8u);
    // Tail: at most one 4-, one 2- and one 1-byte store.
    while (off < len) {
        const unsigned w = width_at(off);
        sink(off, w);
        off += w;
    }
}

namespace detail {
template <class T>
inline void store_one(volatile unsigned char* dst, const unsigned char* src) noexcept {
    T v;
    std::memcpy(&v, src, sizeof v);  // local memory: any alignment is fine
    *reinterpret_cast<volatile T*>(dst) = v;
}
}  // namespace detail

// Copies len bytes from ordinary memory `src` to device memory `dst` with
// the stores plan_stores() chooses. `src` may have any alignment. No fence:
// callers decide (see store_fence). Inline, as store_fence: the Verbs
// library's Send makes two of each, and under TCG a call and its return
// are two translation-block lookups.
inline void pio_copy(volatile void* dst, const void* src, std::size_t len) noexcept {
    auto* d = static_cast<volatile unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    plan_stores(reinterpret_cast<std::uintptr_t>(dst), len, [&](std::size_t off, unsigned width) {
        switch (width) {
        case 8: detail::store_one<std::uint64_t>(d + off, s + off); break;
        case 4: detail::store_one<std::uint32_t>(d + off, s + off); break;
        case 2: detail::store_one<std::uint16_t>(d + off, s + off); break;
        default: detail::store_one<std::uint8_t>(d + off, s + off); break;
        }
    });
}

// Orders all earlier stores of this thread (including write-combining ones)
// before later ones: sfence on x86, a full fence elsewhere.
inline void store_fence() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_sfence();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

// Copies `len` bytes (a multiple of 8, 8-aligned source) from device memory
// with 8-byte volatile loads, for reading the mailbox: wider or narrower
// loads would be split differently by the device model.
void mmio_read64(void* dst, const volatile void* src, std::size_t len) noexcept;

}  // namespace tca
