// SPDX-License-Identifier: MIT
// C API: tcaExport / tcaUnexport.
#include "api_guard.hpp"
#include "handle.hpp"
#include "library.hpp"

#include <tca/tca.h>

#include <peach2/peach2_uapi.h>

#include <cerrno>

using namespace tca;

namespace {

// The public flags in the driver's terms (kept apart: the C API must not
// change when the ABI does).
int export_flags(std::uint32_t flags, std::uint32_t *out)
{
	if (flags == 0 || flags & ~(TCA_EXPORT_READ | TCA_EXPORT_ATOMIC))
		return -EINVAL;
	*out = ((flags & TCA_EXPORT_READ) ? PEACH2_EXPORT_READ : 0u) |
	       ((flags & TCA_EXPORT_ATOMIC) ? PEACH2_EXPORT_ATOMIC : 0u);
	return 0;
}

} // namespace

extern "C" {

int tcaExport(const void *ptr, size_t size, uint32_t flags, tcaHandle *out)
{
	if (!ptr || !out)
		return -EINVAL;
	std::uint32_t f = 0;
	if (int rc = export_flags(flags, &f))
		return rc;
	return guarded([&] {
		return with_context([&](Context &c) { return c.export_range(ptr, size, f, out); });
	});
}

int tcaUnexport(const tcaHandle *h)
{
	if (!h)
		return -EINVAL;
	if (int rc = validate_handle(*h))
		return rc;
	if (h->export_id == 0)
		return TCA_ENOTEXPORTED;
	return guarded([&] {
		return with_context([&](Context &c) {
			if (h->node != c.node_id())
				return TCA_ENOTEXPORTED;
			return c.unexport(h->export_id, h->export_key);
		});
	});
}

} // extern "C"
