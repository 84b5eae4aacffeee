// SPDX-License-Identifier: MIT
#include "put_choice.hpp"

#include "size_text.hpp"

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
	std::uint64_t v = 0;
	return text && parse_size(text, &v) ? v : TCA_PIO_MAX_DEFAULT;
}

} // namespace tca
