// SPDX-License-Identifier: MIT
#include "dma_rules.hpp"

#include <tca/tca.h>

#include <peach2/peach2_hw.h>

#include <cerrno>

namespace tca {

int check_alignment(std::uint64_t src_addr, std::uint64_t dst_addr, std::uint64_t len) noexcept
{
	if (src_addr % 4 || dst_addr % 4 || len % 4 || (src_addr ^ dst_addr) % 16)
		return TCA_EALIGN;
	return 0;
}

bool stride_span(std::uint64_t len, std::uint32_t burst, std::uint32_t gap,
		 std::uint64_t *span) noexcept
{
	const std::uint64_t blocks = (len - 1) / burst; // whole blocks before the last
	const std::uint64_t last = len - blocks * burst;
	std::uint64_t s = 0;
	if (__builtin_mul_overflow(blocks, static_cast<std::uint64_t>(burst) + gap, &s) ||
	    __builtin_add_overflow(s, last, &s))
		return false;
	*span = s;
	return true;
}

int check_stride(std::uint64_t len, std::uint32_t stride, std::uint32_t burst,
		 std::uint32_t gap, std::uint64_t *src_span, std::uint64_t *dst_span) noexcept
{
	if (stride & ~(TCA_DMA_STRIDE_SRC | TCA_DMA_STRIDE_DST))
		return -EINVAL;
	*src_span = *dst_span = len;
	if (burst == 0)
		return (gap || stride) ? TCA_ESTRIDE : 0;
	const bool src = stride & TCA_DMA_STRIDE_SRC, dst = stride & TCA_DMA_STRIDE_DST;
	if (!src && !dst)
		return TCA_ESTRIDE;
	if (burst % 4 || gap % 4 || (src != dst && gap % 16))
		return TCA_ESTRIDE;
	// Never split (a block pattern has no natural cut), so one descriptor.
	if (len == 0 || len > PEACH2_DMA_MAX_LEN)
		return TCA_ESTRIDE;
	std::uint64_t span = 0;
	if (!stride_span(len, burst, gap, &span))
		return TCA_ESTRIDE;
	if (src)
		*src_span = span;
	if (dst)
		*dst_span = span;
	return 0;
}

int check_notify(std::uint64_t addr, std::uint32_t len) noexcept
{
	if (len != 4 && len != 8)
		return -EINVAL;
	return addr % len ? TCA_EALIGN : 0;
}

} // namespace tca
