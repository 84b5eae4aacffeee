// SPDX-License-Identifier: MIT
// C API: device context, memory and local handles.
#include "api_guard.hpp"
#include "library.hpp"

#include <tca/tca.h>

namespace tca {
namespace {

int info_field(std::uint32_t peach2_info::*field)
{
	return guarded([&] {
		return with_context([&](Context &c) { return static_cast<int>(c.info().*field); });
	});
}

} // namespace
} // namespace tca

using namespace tca;

extern "C" {

int tcaInit(void)
{
	return guarded([] { return with_context([](Context &) { return 0; }); });
}

void tcaFinalize(void)
{
	close_context();
}

int tcaNodeId(void)
{
	return info_field(&peach2_info::node_id);
}

int tcaNodeCount(void)
{
	return info_field(&peach2_info::node_count);
}

int tcaGetDeviceInfo(tcaDeviceInfo *out)
{
	if (!out)
		return -EINVAL;
	return guarded([&] {
		return with_context([&](Context &c) {
			const peach2_info &i = c.info();
			tcaDeviceInfo d{};
			d.abi_version = i.abi_version;
			d.hw_version = i.hw_version;
			d.node_id = i.node_id;
			d.node_count = i.node_count;
			for (int k = 0; k < 3; ++k)
				d.link[k] = i.link[k];
			d.window_size = i.window_size;
			d.max_alloc = i.max_alloc;
			d.max_chunk = i.max_chunk;
			*out = d;
			return 0;
		});
	});
}

int tcaMalloc(void **ptr, size_t size)
{
	if (!ptr)
		return -EINVAL;
	*ptr = nullptr;
	return guarded([&] { return with_context([&](Context &c) { return c.alloc(size, ptr); }); });
}

int tcaFree(void *ptr)
{
	if (!ptr)
		return 0; // like free(NULL)
	// Never opens the device: with no context there are no buffers (and a
	// free after tcaFinalize must not reopen it).
	return guarded([&] {
		std::lock_guard<std::mutex> lock(library_mutex());
		Context *c = context_if_open();
		return c ? c->free(ptr) : TCA_ENOTBUF;
	});
}

int tcaGetHandle(const void *ptr, size_t size, tcaHandle *out)
{
	if (!ptr || !out)
		return -EINVAL;
	return guarded([&] {
		return with_context([&](Context &c) { return c.handle_for(ptr, size, out); });
	});
}

} // extern "C"
