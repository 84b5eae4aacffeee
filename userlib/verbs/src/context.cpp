// SPDX-License-Identifier: MIT
#include "context.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "engine.hpp"
#include "log.hpp"
#include "qp.hpp"

namespace pv {

void fill_device_ops(verbs_context* v);
void fill_object_ops(verbs_context* v);

namespace {

std::mutex g_session_lock;
int g_session_users = 0;
// Never destroyed: a context left open at exit() stays usable by the threads
// still running then (libtca's state() says why).
std::string& g_session_path = *new std::string;

}  // namespace

int session_acquire(const Device& dev) {
    std::lock_guard<std::mutex> g(g_session_lock);
    if (g_session_users > 0) {
        if (dev.path != g_session_path)
            return -EBUSY;  // libtca drives one card per process
        ++g_session_users;
        return 0;
    }
    // libtca opens $TCA_DEVICE (default /dev/peach2-0): point it at this one.
    if (const char* env = std::getenv("TCA_DEVICE"); !env || dev.path != env)
        ::setenv("TCA_DEVICE", dev.path.c_str(), 1);
    const int rc = tcaInit();
    if (rc != 0)
        return rc;
    g_session_path = dev.path;
    ++g_session_users;
    return 0;
}

void session_release() {
    std::lock_guard<std::mutex> g(g_session_lock);
    if (g_session_users > 0 && --g_session_users == 0)
        tcaFinalize();
}

Context* Context::open(Device* dev) {
    if (const int rc = session_acquire(*dev); rc != 0) {
        if (rc == -EBUSY)
            log_error("cannot open %s: this process already uses %s (one PEACH2 card per process)",
                      dev->abi.name, g_session_path.c_str());
        else
            log_error("cannot open %s (%s): %s", dev->abi.name, dev->path.c_str(),
                      tcaErrorString(rc));
        errno = rc < 0 && rc > -4096 ? -rc : ENODEV;
        return nullptr;
    }
    Context* c = new (std::nothrow) Context();
    if (!c) {
        session_release();
        errno = ENOMEM;
        return nullptr;
    }
    c->dev_ = dev;
    c->refresh_card();

    c->engine_ = new (std::nothrow) Engine(*c);
    if (!c->engine_ || c->engine_->async_fd() < 0) {
        delete c;
        session_release();
        errno = ENOMEM;
        return nullptr;
    }
    ibv_context& ctx = c->vctx_.context;
    ctx.device = &dev->abi;
    ctx.cmd_fd = -1;
    ctx.async_fd = c->engine_->async_fd();
    ctx.num_comp_vectors = 1;
    pthread_mutex_init(&ctx.mutex, nullptr);
    ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
    c->vctx_.sz = sizeof(verbs_context);
    fill_device_ops(&c->vctx_);
    fill_object_ops(&c->vctx_);
    return c;
}

int Context::close(Context* c) {
    if (!c) {
        errno = EINVAL;
        return -1;
    }
    delete c;
    session_release();
    return 0;
}

Context::~Context() {
    if (engine_) {
        // Objects the program did not destroy go with the device (QPs
        // first: their names and areas).
        std::vector<Qp*> qps;
        {
            std::lock_guard<EngineLock> g(engine_->lock());
            qps.swap(engine_->qps);
            for (Qp* qp : qps)
                delete qp;
            for (auto& [key, mr] : engine_->mrs) {
                tcaUnpublish(TCA_NAME_KEY, key);
                if (mr->pinned)
                    tcaDeregister(mr->abi.addr, mr->abi.length);
            }
        }
        delete engine_;
    }
    pthread_mutex_destroy(&vctx_.context.mutex);
}

void Context::refresh_card() {
    tcaDeviceInfo info{};
    if (tcaGetDeviceInfo(&info) != 0)
        return;
    card_.node_id = info.node_id;
    card_.node_count = info.node_count;
    card_.hw_version = info.hw_version;
    card_.max_alloc = info.max_alloc;
    card_.port_active = port_up(info.link, info.node_count);
}

}  // namespace pv
