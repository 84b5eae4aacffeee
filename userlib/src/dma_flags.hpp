// SPDX-License-Identifier: MIT
// The public DMA options (tca.h) in the driver's terms (peach2_uapi.h). The
// two sets of bits are kept apart on purpose: the C API must not change when
// the ABI does. Pure, unit-tested.
#pragma once

#include <tca/tca.h>

#include <peach2/peach2_uapi.h>

#include <cerrno>
#include <cstdint>

namespace tca {

inline constexpr std::uint32_t kDmaOptFlags = TCA_DMA_REG_MODE | TCA_DMA_HOST_DESC | TCA_DMA_WAIT;

// Options after checking: how the driver should run the runs.
struct DmaMode {
	std::uint32_t desc = 0;   // 0, PEACH2_DMA_REG_MODE or PEACH2_DMA_HOST_DESC
	std::uint32_t channel = PEACH2_DMA_ANY_CHANNEL;
	bool wait = false;
	int timeout_ms = 0;       // <= 0: no limit
};

// NULL means defaults. -EINVAL for undefined flags, REG_MODE with
// HOST_DESC, a channel beyond TCA_DMA_CHANNEL(3), nonzero reserved.
constexpr int dma_mode(const tcaDmaOpts *o, DmaMode *out) noexcept
{
	DmaMode m;
	if (o) {
		if (o->flags & ~kDmaOptFlags || o->reserved)
			return -EINVAL;
		if ((o->flags & TCA_DMA_REG_MODE) && (o->flags & TCA_DMA_HOST_DESC))
			return -EINVAL;
		if (o->flags & TCA_DMA_REG_MODE)
			m.desc = PEACH2_DMA_REG_MODE;
		else if (o->flags & TCA_DMA_HOST_DESC)
			m.desc = PEACH2_DMA_HOST_DESC;
		if (o->channel > TCA_DMA_CHANNELS)
			return -EINVAL;
		if (o->channel != TCA_DMA_ANY_CHANNEL)
			m.channel = o->channel - 1;
		m.wait = o->flags & TCA_DMA_WAIT;
		m.timeout_ms = o->timeout_ms;
	}
	*out = m;
	return 0;
}

// tcaDmaXfer.stride bits as peach2_xfer.flags bits.
constexpr std::uint32_t xfer_stride_flags(std::uint32_t stride) noexcept
{
	std::uint32_t f = 0;
	if (stride & TCA_DMA_STRIDE_SRC)
		f |= PEACH2_XFER_STRIDE_SRC;
	if (stride & TCA_DMA_STRIDE_DST)
		f |= PEACH2_XFER_STRIDE_DST;
	return f;
}

} // namespace tca
