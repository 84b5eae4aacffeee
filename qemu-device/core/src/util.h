// Small helpers shared by the core's files.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace peach2 {

// No packet crosses a 4 KiB boundary (as no PCIe request does), and a WRITE
// packet carries at most PEACH2_PKT_MAX_PAYLOAD, one such page.
inline constexpr uint64_t kPage = 4096;

inline uint64_t load_le(const uint8_t* p, unsigned size) {
    uint64_t v = 0;
    for (unsigned i = 0; i < size; ++i)
        v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
}

inline void store_le(uint8_t* p, uint64_t v, unsigned size) {
    for (unsigned i = 0; i < size; ++i)
        p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// A whole little-endian word in one move on a little-endian host (a byte
// loop is not always merged, and bytes read back as a word stall the CPU).
inline void store_le64(uint8_t* p, uint64_t v) {
    if constexpr (std::endian::native == std::endian::little)
        std::memcpy(p, &v, sizeof v);
    else
        store_le(p, v, sizeof v);
}

// A lock for a few instructions' worth of work (a store appended to a
// buffer): one atomic exchange to take, a plain release store to give back,
// where a mutex pays an atomic operation for each. A holder that lost its
// CPU is waited for politely.
class SpinLock {
public:
    void lock() noexcept {
        for (unsigned spins = 0; locked_.exchange(true, std::memory_order_acquire);) {
            while (locked_.load(std::memory_order_relaxed)) {
                if (++spins % 1024 == 0)
                    std::this_thread::yield();
            }
        }
    }
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

private:
    std::atomic<bool> locked_{false};
};

inline std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

// 64-bit registers as LO/HI pairs of 32-bit ones.
inline uint32_t lo32(uint64_t v) { return static_cast<uint32_t>(v); }
inline uint32_t hi32(uint64_t v) { return static_cast<uint32_t>(v >> 32); }
inline void set_lo32(uint64_t& v, uint32_t x) { v = (v & ~0xffffffffull) | x; }
inline void set_hi32(uint64_t& v, uint32_t x) {
    v = (v & 0xffffffffull) | static_cast<uint64_t>(x) << 32;
}

template <typename T>
T sat_add(T a, T b) {
    return a > static_cast<T>(~T{0}) - b ? static_cast<T>(~T{0}) : a + b;
}

template <typename T>
void sat_inc(T& v) {
    if (v != static_cast<T>(~T{0}))
        ++v;
}

}  // namespace peach2
