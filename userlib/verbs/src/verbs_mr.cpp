// SPDX-License-Identifier: MIT
// Protection domains and memory regions.
//
// ibv_reg_mr pins the range (tcaRegister: the driver pins the pages and
// registers them with the card) and publishes it under a node-wide key
// (tcaPublish, TCA_NAME_KEY) that is both lkey and rkey. The key's flags
// follow the access flags: REMOTE_WRITE makes it TCA_NAME_WRITE (peers write
// it; the driver quarantines its pages when freed), REMOTE_READ and
// REMOTE_ATOMIC make the driver export it for the read proxy, which then
// checks every remote Read and atomic against the registration itself.
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>

#include "context.hpp"
#include "engine.hpp"
#include "log.hpp"
#include "objects.hpp"
#include "remote.hpp"

using namespace pv;

namespace {

Engine& engine_of(ibv_context* c) { return Context::of(c)->engine(); }

int errno_of(int rc) { return rc < 0 && rc > -4096 ? -rc : (rc == TCA_ENOTBUF ? EFAULT : EIO); }

constexpr unsigned kAccessKnown = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                  IBV_ACCESS_RELAXED_ORDERING;

}  // namespace

PV_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* context) {
    Engine& e = engine_of(context);
    Pd* pd = new (std::nothrow) Pd();
    if (!pd) {
        errno = ENOMEM;
        return nullptr;
    }
    std::lock_guard<EngineLock> g(e.lock());
    pd->abi.context = context;
    pd->group = e.new_group();
    pd->abi.handle = pd->group;
    ++e.pds;
    return &pd->abi;
}

PV_EXPORT int ibv_dealloc_pd(ibv_pd* abi) {
    Engine& e = engine_of(abi->context);
    Pd* pd = owner<Pd>(abi);
    std::lock_guard<EngineLock> g(e.lock());
    for (const auto& [key, mr] : e.mrs)
        if (mr->pd == pd)
            return EBUSY;
    --e.pds;
    delete pd;
    return 0;
}

PV_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* abi, void* addr, size_t length, uint64_t iova,
                                   unsigned int access) {
    Engine& e = engine_of(abi->context);
    Pd* pd = owner<Pd>(abi);
    if (!addr || length == 0 || length > (std::uint64_t{1} << 40) || (access & ~kAccessKnown)) {
        errno = (access & IBV_ACCESS_ON_DEMAND) ? EOPNOTSUPP : EINVAL;
        return nullptr;
    }
    // As in InfiniBand: remote writes and atomics need local write access.
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE)) {
        errno = EINVAL;
        return nullptr;
    }
    auto* mr = new (std::nothrow) Mr();
    if (!mr) {
        errno = ENOMEM;
        return nullptr;
    }
    // Pinned and published without the engine's lock: the driver may hold
    // the pin for seconds (the user's quarantined memory over its quota),
    // and meanwhile the progress thread must go on acknowledging peers, or
    // their Sends end with IBV_WC_RETRY_EXC_ERR.
    const std::uint64_t pin_start = now_ns();
    const int pinned = tcaRegister(addr, length);
    log_slow(now_ns() - pin_start, "ibv_reg_mr: pinning %zu bytes at %p (%s)", length, addr,
             pinned ? "failed" : "done");
    if (int rc = pinned) {
        log_error("ibv_reg_mr: cannot pin %zu bytes at %p: %s%s", length, addr, tcaErrorString(rc),
                  rc == -ENOMEM
                      ? " (over RLIMIT_MEMLOCK, see `ulimit -l`, or the driver's per-process "
                        "limit /sys/module/peach2/parameters/max_alloc_per_fd)"
                  : rc == -ENOSPC ? " (the card's table of registered ranges is full)"
                                  : "");
        delete mr;
        errno = errno_of(rc);
        return nullptr;
    }
    mr->pinned = true;
    // Published rounded out to 4-byte boundaries (the card's DMA rules; the
    // pinned pages hold them); peers check the exact range (MrInfo).
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    const std::uintptr_t start = a & ~std::uintptr_t{3};
    const std::uintptr_t end = (a + length + 3) & ~std::uintptr_t{3};
    MrInfo info{};
    info.magic = kMrMagic;
    info.access = access;
    info.iova = iova;
    info.length = length;
    info.skew = static_cast<std::uint32_t>(a - start);
    const std::uint32_t flags = ((access & IBV_ACCESS_REMOTE_WRITE) ? TCA_NAME_WRITE : 0u) |
                                ((access & IBV_ACCESS_REMOTE_READ) ? TCA_NAME_READ : 0u) |
                                ((access & IBV_ACCESS_REMOTE_ATOMIC) ? TCA_NAME_ATOMIC : 0u);
    std::uint32_t key = 0;
    if (int rc = tcaPublish(reinterpret_cast<void*>(start), end - start, TCA_NAME_KEY, flags,
                            pd->group, &info, sizeof info, &key)) {
        log_error("ibv_reg_mr: cannot give %zu bytes at %p a key: %s", length, addr,
                  tcaErrorString(rc));
        tcaDeregister(addr, length);
        delete mr;
        errno = errno_of(rc);
        return nullptr;
    }
    mr->abi.context = abi->context;
    mr->abi.pd = abi;
    mr->abi.addr = addr;
    mr->abi.length = length;
    mr->abi.handle = key;
    mr->abi.lkey = key;
    mr->abi.rkey = key;
    mr->access = access;  // local reads need no flag
    mr->iova = iova;
    mr->pd = pd;
    std::lock_guard<EngineLock> g(e.lock());
    e.mrs[key] = mr;
    return &mr->abi;
}

PV_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
    return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<std::uintptr_t>(addr),
                            static_cast<unsigned>(access));
}

PV_EXPORT ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                                  int access) {
    return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned>(access));
}

PV_EXPORT int ibv_dereg_mr(ibv_mr* abi) {
    Engine& e = engine_of(abi->context);
    Mr* mr = owner<Mr>(abi);
    const std::uint64_t start = now_ns();
    std::lock_guard<EngineLock> g(e.lock());
    e.mrs.erase(mr->abi.lkey);
    // The key first: peers looking it up from now on are refused.
    tcaUnpublish(TCA_NAME_KEY, mr->abi.lkey);
    int rc = 0;
    if (mr->pinned) {
        rc = tcaDeregister(mr->abi.addr, mr->abi.length);
        if (rc == -EBUSY) {
            // A Read still answers into it: the pages stay pinned until
            // the device is closed.
            log_debug("ibv_dereg_mr: a read into %p is still pending", mr->abi.addr);
            rc = 0;
        }
    }
    log_slow(now_ns() - start,
             "ibv_dereg_mr of %zu bytes at %p (the engine locked: no QP of "
             "this process moved)",
             mr->abi.length, mr->abi.addr);
    delete mr;
    return rc ? errno_of(rc) : 0;
}

PV_EXPORT int ibv_rereg_mr(ibv_mr*, int, ibv_pd*, void*, size_t, int) {
    errno = EOPNOTSUPP;
    return IBV_REREG_MR_ERR_INPUT;
}
