// SPDX-License-Identifier: MIT
// Context: names (PEACH2_IOC_PUBLISH/UNPUBLISH) and the buffer lookup
// answers land in. The driver owns the names and ends them with their
// buffer or the file.
#include "context.hpp"

#include "range.hpp"

#include <cerrno>
#include <sys/ioctl.h>

namespace tca {

int Context::publish(const void *ptr, std::size_t size, peach2_publish *req)
{
	Located at{};
	if (int rc = locate(ptr, size, &at))
		return rc;
	if (!range_fits(at.offset, size, at.buf->size))
		return TCA_ERANGE;
	req->handle = at.buf->id();
	req->offset = at.offset;
	req->len = size;
	if (::ioctl(fd_.get(), PEACH2_IOC_PUBLISH, req) < 0)
		return errno == ENOTTY ? -EOPNOTSUPP : -errno;
	return req->name ? 0 : TCA_EDEVICE;
}

int Context::unpublish(std::uint32_t kind, std::uint32_t name)
{
	peach2_unpublish u{};
	u.kind = kind;
	u.name = name;
	if (::ioctl(fd_.get(), PEACH2_IOC_UNPUBLISH, &u) < 0)
		return errno == ENOTTY ? -EOPNOTSUPP : -errno;
	return 0;
}

int Context::lookup_buffer(DriverBuffer **out)
{
	if (!lookup_buf_) {
		std::unique_ptr<DriverBuffer> buf;
		if (int rc = new_buffer(PEACH2_LOOKUP_MAX, &buf))
			return rc;
		lookup_buf_ = std::move(buf);
	}
	*out = lookup_buf_.get();
	return 0;
}

} // namespace tca
