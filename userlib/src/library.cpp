// SPDX-License-Identifier: MIT
#include "library.hpp"

#include <atomic>
#include <cstdlib>
#include <memory>

namespace tca {
namespace {

constexpr const char *kDefaultDevice = "/dev/peach2-0";

struct State {
	std::mutex mutex;
	std::unique_ptr<Context> ctx;     // owner
	std::atomic<Context *> fast{nullptr}; // published copy for lock-free readers
};

State &state()
{
	static State s;
	return s;
}

} // namespace

std::mutex &library_mutex()
{
	return state().mutex;
}

int context_locked(Context **out)
{
	State &s = state();
	if (!s.ctx) {
		const char *path = std::getenv("TCA_DEVICE");
		if (int rc = Context::open(path && *path ? path : kDefaultDevice, &s.ctx))
			return rc;
		s.fast.store(s.ctx.get(), std::memory_order_release);
	}
	*out = s.ctx.get();
	return 0;
}

int context_fast(Context **out)
{
	Context *c = state().fast.load(std::memory_order_acquire);
	if (!c) {
		std::lock_guard<std::mutex> lock(library_mutex());
		if (int rc = context_locked(&c))
			return rc;
	}
	*out = c;
	return 0;
}

Context *context_if_open()
{
	return state().fast.load(std::memory_order_acquire);
}

void close_context()
{
	State &s = state();
	std::lock_guard<std::mutex> lock(s.mutex);
	s.fast.store(nullptr, std::memory_order_release);
	s.ctx.reset();
}

} // namespace tca
