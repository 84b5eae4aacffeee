// SPDX-License-Identifier: MIT
// The library's view of the PEACH2 DMA rules: peach2_dma_rules.h (shared
// with the card model and the driver) answered in TCA_E* codes.
#include "dma_rules.hpp"

#include <tca/tca.h>

#include <peach2/peach2_dma_rules.h>

#include <cerrno>

namespace tca {

int check_alignment(std::uint64_t src_addr, std::uint64_t dst_addr, std::uint64_t len) noexcept
{
	return peach2_dma_align_rule(src_addr, dst_addr, len) ? TCA_EALIGN : 0;
}

bool stride_span(std::uint64_t len, std::uint32_t burst, std::uint32_t gap,
		 std::uint64_t *span) noexcept
{
	return peach2_stride_span(len, burst, gap, span) == 0;
}

int check_stride(std::uint64_t len, std::uint32_t stride, std::uint32_t burst,
		 std::uint32_t gap, std::uint64_t *src_span, std::uint64_t *dst_span) noexcept
{
	if (stride & ~(TCA_DMA_STRIDE_SRC | TCA_DMA_STRIDE_DST))
		return -EINVAL;
	*src_span = *dst_span = len;
	const bool src = stride & TCA_DMA_STRIDE_SRC, dst = stride & TCA_DMA_STRIDE_DST;
	const std::uint32_t flags = (src ? PEACH2_DESC_STRIDE_SRC : 0u) |
				    (dst ? PEACH2_DESC_STRIDE_DST : 0u);
	if (peach2_dma_block_rule(burst, gap, flags))
		return TCA_ESTRIDE;
	if (burst == 0)
		return 0;
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

int refusal_error(int rc, const peach2_xfer_refusal &why) noexcept
{
	switch (why.bad_rule) {
	case PEACH2_DMA_RULE_OK:
	case PEACH2_DMA_RULE_NO_BUFFER:
		return rc; // nothing named, or -ENOENT for a handle: the driver's errno says it
	case PEACH2_DMA_RULE_SRC_RANGE:
	case PEACH2_DMA_RULE_DST_RANGE:
	case PEACH2_DMA_RULE_REMOTE:
		return TCA_ERANGE;
	case PEACH2_DMA_RULE_BLOCK_FIELDS:
	case PEACH2_DMA_RULE_BLOCK_ALIGN:
	case PEACH2_DMA_RULE_BLOCK_GAP16:
	case PEACH2_DMA_RULE_TOO_LONG:
	case PEACH2_DMA_RULE_CHUNK:
		return TCA_ESTRIDE;
	default:
		return peach2_dma_rule_err(static_cast<peach2_dma_rule>(why.bad_rule)) ==
				       PEACH2_ERR_DMA_ALIGN
			       ? TCA_EALIGN
			       : rc;
	}
}

} // namespace tca
