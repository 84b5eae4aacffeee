// SPDX-License-Identifier: MIT
#include "pio.hpp"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tca {
namespace {

template <class T>
inline void store_one(volatile unsigned char *dst, const unsigned char *src) noexcept
{
	T v;
	std::memcpy(&v, src, sizeof v); // local memory: any alignment is fine
	*reinterpret_cast<volatile T *>(dst) = v;
}

} // namespace

void pio_copy(volatile void *dst, const void *src, std::size_t len) noexcept
{
	auto *d = static_cast<volatile unsigned char *>(dst);
	const auto *s = static_cast<const unsigned char *>(src);
	plan_stores(reinterpret_cast<std::uintptr_t>(dst), len,
		    [&](std::size_t off, unsigned width) {
			    switch (width) {
			    case 8: store_one<std::uint64_t>(d + off, s + off); break;
			    case 4: store_one<std::uint32_t>(d + off, s + off); break;
			    case 2: store_one<std::uint16_t>(d + off, s + off); break;
			    default: store_one<std::uint8_t>(d + off, s + off); break;
			    }
		    });
}

void store_fence() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
	_mm_sfence();
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

void mmio_read64(void *dst, const volatile void *src, std::size_t len) noexcept
{
	const auto *s = static_cast<const volatile std::uint64_t *>(src);
	auto *d = static_cast<unsigned char *>(dst);
	for (std::size_t i = 0; i < len / 8; ++i) {
		const std::uint64_t v = s[i];
		std::memcpy(d + 8 * i, &v, 8);
	}
}

} // namespace tca
