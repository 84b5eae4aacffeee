// SPDX-License-Identifier: MIT
// C API: tcaPutAuto, PIO or DMA (put_choice.hpp decides).
#include "api_guard.hpp"
#include "handle.hpp"
#include "library.hpp"
#include "put_choice.hpp"
#include "range.hpp"

#include <tca/tca.h>

#include <cerrno>
#include <cstdlib>

using namespace tca;

namespace {

std::uint64_t threshold()
{
	// Read once: the environment is not expected to change under a running
	// program, and getenv is not free on a hot path.
	static const std::uint64_t value = pio_max_from(std::getenv("TCA_PIO_MAX"));
	return value;
}

int dma_body(const tcaHandle *dst, std::uint64_t off, const unsigned char *src, std::uint64_t len)
{
	tcaDmaOpts o{};
	int rc = tcaDmaPut(dst, off, src, len, &o, nullptr);
	if (rc == TCA_ENODESC) {
		// On-card descriptor RAM is shared and may be full: host
		// descriptors have no such limit.
		o.flags = TCA_DMA_HOST_DESC;
		rc = tcaDmaPut(dst, off, src, len, &o, nullptr);
	}
	return rc;
}

} // namespace

extern "C" {

size_t tcaPioMax(void)
{
	return static_cast<size_t>(threshold());
}

int tcaPutAuto(const tcaHandle *dst, size_t dst_offset, const void *src, size_t len)
{
	if (!dst || (!src && len))
		return -EINVAL;
	if (len <= threshold())
		return tcaPut(dst, dst_offset, src, len);
	if (int rc = validate_handle(*dst))
		return rc;
	if (!range_fits(dst_offset, len, dst->size))
		return TCA_ERANGE;
	return guarded([&] {
		const int in_buffer = with_context([&](Context &c) {
			DmaSide side;
			return c.local_side(src, len, &side);
		});
		std::uint64_t dst_addr = 0;
		handle_address(*dst, dst_offset, &dst_addr);
		const auto src_addr = reinterpret_cast<std::uintptr_t>(src);
		const PutSplit s = choose_put(len, in_buffer == 0, src_addr, dst_addr, threshold());
		const auto *p = static_cast<const unsigned char *>(src);
		if (s.body == 0)
			return tcaPut(dst, dst_offset, src, len);
		if (s.head)
			if (int rc = tcaPut(dst, dst_offset, p, s.head))
				return rc;
		if (int rc = dma_body(dst, dst_offset + s.head, p + s.head, s.body))
			return rc;
		return s.tail ? tcaPut(dst, dst_offset + s.head + s.body, p + s.head + s.body, s.tail) : 0;
	});
}

} // extern "C"
