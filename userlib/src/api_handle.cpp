// SPDX-License-Identifier: MIT
// C API: operations on handles alone (no device needed).
#include "handle.hpp"

#include <tca/tca.h>

#include <cerrno>
#include <span>

using namespace tca;

extern "C" {

int tcaHandleValidate(const tcaHandle *h)
{
	if (!h)
		return -EINVAL;
	return validate_handle(*h);
}

int tcaSubHandle(const tcaHandle *h, size_t offset, size_t size, tcaHandle *out)
{
	if (!h || !out)
		return -EINVAL;
	if (int rc = validate_handle(*h))
		return rc;
	tcaHandle sub;
	if (int rc = make_handle(h->node, std::span<const tcaChunk>(h->chunks, h->nr_chunks),
				 offset, size, &sub))
		return rc;
	// The export covers the whole original range, so any part of it too.
	if (h->export_id)
		attach_export(&sub, h->export_id, h->export_key);
	*out = sub;
	return 0;
}

int tcaRemoteAddress(const tcaHandle *h, size_t offset, uint64_t *global_addr)
{
	if (!h || !global_addr)
		return -EINVAL;
	if (int rc = validate_handle(*h))
		return rc;
	return handle_address(*h, offset, global_addr);
}

} // extern "C"
