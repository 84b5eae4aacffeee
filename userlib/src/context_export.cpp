// SPDX-License-Identifier: MIT
// Context: exports of this process's buffers (PEACH2_IOC_EXPORT/UNEXPORT)
// and the read proxy's state. The driver owns the exports; the context
// remembers which buffer each belongs to, so tcaUnexport can tell this
// process's exports from others, and forgets them when the buffer is freed
// (the driver ends them then).
#include "context.hpp"

#include "handle.hpp"
#include "range.hpp"

#include <cerrno>
#include <sys/ioctl.h>

namespace tca {

int Context::export_range(const void *ptr, std::size_t size, std::uint32_t peach2_flags,
			  tcaHandle *out)
{
	Located at{};
	if (int rc = locate(ptr, size, &at))
		return rc;
	const DriverBuffer &b = *at.buf;
	const std::uint64_t offset = at.offset;
	if (size == 0)
		size = b.size - offset;
	if (!range_fits(offset, size, b.size))
		return TCA_ERANGE;
	// The handle first: a range it cannot describe is refused before the
	// driver creates an export nobody could name.
	tcaHandle h;
	if (int rc = make_handle(info_.node_id, b.pieces, offset, size, &h))
		return rc;
	peach2_export e{};
	e.handle = b.id();
	e.flags = peach2_flags;
	e.offset = offset;
	e.len = size;
	if (::ioctl(fd_.get(), PEACH2_IOC_EXPORT, &e) < 0)
		return -errno;
	if (e.export_id == 0)
		return TCA_EDEVICE;
	exports_[e.export_id] = ExportRef{at.base, e.key};
	attach_export(&h, e.export_id, e.key);
	*out = h;
	return 0;
}

int Context::unexport(std::uint32_t export_id, std::uint32_t key)
{
	const auto it = exports_.find(export_id);
	if (it == exports_.end() || it->second.key != key)
		return TCA_ENOTEXPORTED;
	exports_.erase(it);
	peach2_unexport u{};
	u.export_id = export_id;
	if (::ioctl(fd_.get(), PEACH2_IOC_UNEXPORT, &u) < 0)
		return errno == ENOENT ? TCA_ENOTEXPORTED : -errno;
	return 0;
}

int Context::rp(RpState **out)
{
	if (!rp_) {
		std::unique_ptr<DriverBuffer> buf;
		if (int rc = new_buffer(CplAreas::kBytes, &buf))
			return rc;
		rp_ = std::make_unique<RpState>(dma_->port(), std::move(buf));
		rp_fast_.store(rp_.get(), std::memory_order_release);
	} else if (rp_->areas().wants_fresh()) {
		// Too many retired slots: new requests take theirs from a fresh
		// area. If it cannot be had, carry on with the current one.
		std::unique_ptr<DriverBuffer> buf;
		if (new_buffer(CplAreas::kBytes, &buf) == 0)
			rp_->areas().add(std::move(buf));
	}
	*out = rp_.get();
	return 0;
}

} // namespace tca
