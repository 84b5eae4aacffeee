// SPDX-License-Identifier: MIT
// An open device (ibv_open_device): the extended verbs context programs
// hold, the libtca session under it, and every object created through it.
#pragma once

#include <cstdint>
#include <mutex>

#include "abi.hpp"
#include "device.hpp"

namespace pv {

class Engine;

class Context {
public:
    // Opens libtca on `dev` and fills the verbs context; nullptr with errno.
    static Context* open(Device* dev);
    // Closes it: -1/EBUSY while objects made through it are alive.
    static int close(Context* ctx);

    static Context* of(ibv_context* c) noexcept {
        return reinterpret_cast<Context*>(reinterpret_cast<unsigned char*>(c) -
                                          offsetof(verbs_context, context));
    }
    ibv_context* abi() noexcept { return &vctx_.context; }

    Device& device() noexcept { return *dev_; }
    const CardInfo& card() const noexcept { return card_; }
    // Re-reads the link state (the port goes ACTIVE when a link comes up).
    void refresh_card();

    // The data path of this context (engine.hpp).
    Engine& engine() noexcept { return *engine_; }

private:
    Context() = default;
    ~Context();

    verbs_context vctx_{};  // first: the pointer we hand out is &vctx_.context
    Device* dev_ = nullptr;
    CardInfo card_;
    Engine* engine_ = nullptr;
};

// libtca is one session per process; contexts share it.
int session_acquire(const Device& dev);
void session_release();

}  // namespace pv
