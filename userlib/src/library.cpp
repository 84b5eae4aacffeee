// SPDX-License-Identifier: MIT
#include "library.hpp"

#include <tca/tca.h>

#include <atomic>
#include <cstdlib>
#include <memory>

namespace tca {
namespace {

constexpr const char* kDefaultDevice = "/dev/peach2-0";

struct State {
    std::mutex mutex;
    std::unique_ptr<Context> ctx;         // owner
    std::atomic<Context*> fast{nullptr};  // published copy for lock-free readers
};

// Never destroyed. Closing the card at exit() would unmap the window and
// every tcaMalloc buffer while other threads may still use them (a program's
// own, or its transport's: UCX's async thread polls Verbs CQs whose rings
// live in them), and those threads run on through exit handlers and static
// destructors. The end of the process releases all of it, as for a killed
// one (the driver's release); tcaFinalize() is the orderly close.
State& state() {
    static State& s = *new State;
    return s;
}

}  // namespace

std::mutex& library_mutex() { return state().mutex; }

int context_locked(Context** out) {
    State& s = state();
    if (!s.ctx) {
        const char* path = std::getenv("TCA_DEVICE");
        if (int rc = Context::open(path && *path ? path : kDefaultDevice, &s.ctx))
            return rc;
        s.fast.store(s.ctx.get(), std::memory_order_release);
    }
    *out = s.ctx.get();
    return 0;
}

int context_fast(Context** out) {
    Context* c = state().fast.load(std::memory_order_acquire);
    if (!c) {
        std::lock_guard<std::mutex> lock(library_mutex());
        if (int rc = context_locked(&c))
            return rc;
    }
    *out = c;
    return 0;
}

Context* context_if_open() { return state().fast.load(std::memory_order_acquire); }

void close_context() {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.fast.store(nullptr, std::memory_order_release);
    s.ctx.reset();
}

namespace {

int info_field(std::uint32_t peach2_info::*field) {
    return guarded([&] {
        return with_context([&](Context& c) { return static_cast<int>(c.info().*field); });
    });
}

}  // namespace

}  // namespace tca

using namespace tca;

namespace tca {

int malloc_buffer(void** ptr, std::size_t size, std::uint32_t alloc_flags) {
    if (!ptr)
        return -EINVAL;
    *ptr = nullptr;
    std::unique_ptr<DriverBuffer> buf;
    return guarded([&] {
        return with_context_after([&](Context& c) { return c.new_buffer(size, &buf, alloc_flags); },
                                  [&](Context& c) { return c.adopt(std::move(buf), ptr); });
    });
}

}  // namespace tca

extern "C" {

int tcaInit(void) {
    return guarded([] { return with_context([](Context&) { return 0; }); });
}

void tcaFinalize(void) { close_context(); }

int tcaNodeId(void) { return info_field(&peach2_info::node_id); }

int tcaNodeCount(void) { return info_field(&peach2_info::node_count); }

int tcaGetDeviceInfo(tcaDeviceInfo* out) {
    if (!out)
        return -EINVAL;
    return guarded([&] {
        return with_context([&](Context& c) {
            const peach2_info& i = c.info();
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

int tcaMalloc(void** ptr, size_t size) { return tca::malloc_buffer(ptr, size, 0); }

int tcaFree(void* ptr) {
    if (!ptr)
        return 0;  // like free(NULL)
    // Never opens the device: with no context there are no buffers (and a
    // free after tcaFinalize must not reopen it).
    return guarded([&] {
        std::lock_guard<std::mutex> lock(library_mutex());
        Context* c = context_if_open();
        return c ? c->free(ptr) : TCA_ENOTBUF;
    });
}

int tcaGetHandle(const void* ptr, size_t size, tcaHandle* out) {
    if (!ptr || !out)
        return -EINVAL;
    return guarded(
        [&] { return with_context([&](Context& c) { return c.handle_for(ptr, size, out); }); });
}

}  // extern "C"
