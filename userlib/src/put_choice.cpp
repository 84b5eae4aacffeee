// SPDX-License-Identifier: MIT
#include "put_choice.hpp"

#include <tca/tca.h>

#include <string_view>

namespace tca {

PutSplit choose_put(std::uint64_t len, bool src_dma, std::uint64_t src_addr,
		    std::uint64_t dst_addr, std::uint64_t pio_max) noexcept
{
	PutSplit all_pio{len, 0, 0};
	if (len <= pio_max || !src_dma || (src_addr ^ dst_addr) % 16)
		return all_pio;
	// Equal low 4 bits: once the source is 4-aligned, so is the destination.
	PutSplit s;
	s.head = (4 - src_addr % 4) % 4;
	if (s.head >= len)
		return all_pio;
	s.body = (len - s.head) / 4 * 4;
	s.tail = len - s.head - s.body;
	return s.body ? s : all_pio;
}

std::uint64_t pio_max_from(const char *text) noexcept
{
	if (!text)
		return TCA_PIO_MAX_DEFAULT;
	std::string_view s(text);
	unsigned base = 10;
	if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s.remove_prefix(2);
	}
	std::uint64_t mult = 1;
	if (!s.empty() && base == 10 && (s.back() == 'k' || s.back() == 'K'))
		mult = 1024;
	else if (!s.empty() && base == 10 && (s.back() == 'm' || s.back() == 'M'))
		mult = 1024 * 1024;
	if (mult != 1)
		s.remove_suffix(1);
	if (s.empty())
		return TCA_PIO_MAX_DEFAULT;
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
			return TCA_PIO_MAX_DEFAULT;
		if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v))
			return TCA_PIO_MAX_DEFAULT;
	}
	if (__builtin_mul_overflow(v, mult, &v))
		return TCA_PIO_MAX_DEFAULT;
	return v;
}

} // namespace tca
