// SPDX-License-Identifier: MIT
#include "dma_resolve.hpp"

#include "dma_rules.hpp"
#include "handle.hpp"

#include <cerrno>

namespace tca {
namespace {

// The source: a pointer into our buffers, or a handle of our memory.
int source_side(const Context &c, const tcaDmaXfer &x, std::uint64_t span, DmaSide *out)
{
	if (x.src)
		return c.local_side(x.src, span, out);
	if (!x.src_handle)
		return -EINVAL;
	if (int rc = validate_handle(*x.src_handle))
		return rc;
	if (x.src_handle->node != c.node_id())
		return TCA_ENOTBUF; // the card reads only this node's memory
	return c.handle_side(*x.src_handle, x.src_offset, span, out);
}

int resolve(const Context &c, const tcaDmaXfer &x, DmaRequest *r)
{
	if (x.reserved)
		return -EINVAL;
	r->len = x.len;
	if (x.len) {
		std::uint64_t sspan = 0, dspan = 0;
		if (int rc = check_stride(x.len, x.stride, x.burst, x.gap, &sspan, &dspan))
			return rc;
		r->stride = x.stride;
		r->burst = x.burst;
		r->gap = x.gap;
		if (!x.dst)
			return -EINVAL;
		if (int rc = validate_handle(*x.dst))
			return rc;
		if (int rc = c.handle_side(*x.dst, x.dst_offset, dspan, &r->dst))
			return rc;
		if (int rc = source_side(c, x, sspan, &r->src))
			return rc;
	}
	if (x.notify) {
		const std::uint32_t len = x.notify_len ? x.notify_len : 8;
		if (len != 4 && len != 8)
			return -EINVAL;
		if (int rc = validate_handle(*x.notify))
			return rc;
		if (int rc = c.handle_side(*x.notify, x.notify_offset, len, &r->notify_at))
			return rc;
		r->notify = true;
		r->notify_value = x.notify_value;
		r->notify_len = len;
	}
	return 0;
}

} // namespace

int plan_xfers(const Context &c, std::span<const tcaDmaXfer> xfers, std::vector<peach2_xfer> *out)
{
	const std::size_t before = out->size();
	for (const tcaDmaXfer &x : xfers) {
		DmaRequest r;
		int rc = resolve(c, x, &r);
		if (rc == 0)
			rc = plan_request(r, out);
		if (rc) {
			out->resize(before);
			return rc;
		}
	}
	return 0;
}

} // namespace tca
