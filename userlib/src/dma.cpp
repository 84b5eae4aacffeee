// SPDX-License-Identifier: MIT
// DMA: the C API (one-shot transfers, tickets, persistent chains, tcaPutAuto)
// and what it does with the driver: runs, tickets, chains (and, for lists
// that come again, the start cache of dma_cache.cpp). The library
// mutex is held only while a request is checked and planned (buffers must
// not change meanwhile), never across the driver's start or a wait. The
// planning itself is dma_plan.cpp; dma.hpp has the map.
#include "dma.hpp"

#include <sys/ioctl.h>
#include <tca/tca.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <span>
#include <vector>

#include "context.hpp"
#include "handle.hpp"
#include "library.hpp"
#include "range.hpp"

namespace tca {

// ---- the driver ----------------------------------------------------------------

int FdPort::call(unsigned long req, void* arg) noexcept {
    return ::ioctl(fd_, req, arg) < 0 ? -errno : 0;
}

int driver_error(int rc) noexcept { return rc == -ENOSPC ? TCA_ENODESC : rc; }

// ---- tickets -------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

// The driver's DMA_WAIT has no "forever" (0 means "just check"): an
// unlimited wait is a loop of long waits.
constexpr std::uint32_t kSliceMs = 60000;

}  // namespace

int collect_ticket(DriverPort& port, tcaDmaTicket* t, int timeout_ms, bool poll) {
    const bool forever = !poll && timeout_ms <= 0;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 0);
    while (t->left > 0) {
        std::uint32_t slice = 0;
        if (forever) {
            slice = kSliceMs;
        } else if (!poll) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
            slice = static_cast<std::uint32_t>(std::clamp<long long>(left.count(), 0, kSliceMs));
        }
        peach2_dma_wait w{};
        w.ticket = t->next;
        w.timeout_ms = slice;
        const int rc = port.call(PEACH2_IOC_DMA_WAIT, &w);
        if (rc == 0) {
            if (t->status == 0)
                t->status = w.status;
            ++t->next;
            --t->left;
            continue;
        }
        if (rc == -EINTR)
            continue;  // a signal: the run goes on, so does the wait
        if (rc != -ETIMEDOUT)
            return rc;
        if (poll || (!forever && Clock::now() >= deadline))
            return -ETIMEDOUT;
    }
    return t->status ? TCA_EDMA : 0;
}

// ---- runs ----------------------------------------------------------------------

namespace {

peach2_dma_start start_request(const DmaRun& r, const DmaMode& m, std::uint32_t channel) {
    peach2_dma_start req{};
    req.chain = r.chain;
    if (!r.chain) {
        req.count = static_cast<__u32>(r.xfers.size());
        req.xfers = reinterpret_cast<std::uintptr_t>(r.xfers.data());
        req.flags = m.desc;
    }
    req.channel = channel;
    return req;
}

// One run. A run that ended inside the start (a short one on an idle
// channel, usually) comes back collected (PEACH2_DMA_REAP -> ENDED): no
// DMA_WAIT at all. Otherwise waiting is a separate DMA_WAIT, not the
// driver's inline PEACH2_DMA_WAIT: that would hold `order` for the whole
// wait and stall every several-run start meanwhile.
int start_one(DmaStarter& s, const DmaRun& r, const DmaMode& m, tcaDmaTicket* t) {
    peach2_dma_start req = start_request(r, m, m.channel);
    req.flags |= PEACH2_DMA_REAP;
    int rc;
    {
        std::shared_lock<std::shared_mutex> lock(s.order);
        rc = s.port.call(PEACH2_IOC_DMA_START, &req);
    }
    if (rc) {
        *t = tcaDmaTicket{};
        return driver_error(refusal_error(rc, req.refusal));
    }
    if (req.flags & PEACH2_DMA_ENDED) {
        *t = tcaDmaTicket{req.ticket, 0, req.status};
        return m.wait && t->status ? TCA_EDMA : 0;
    }
    *t = tcaDmaTicket{req.ticket, 1, 0};
    return m.wait ? collect_ticket(s.port, t, m.timeout_ms, false) : 0;
}

int start_several(DmaStarter& s, std::span<const DmaRun> runs, const DmaMode& m, tcaDmaTicket* t) {
    // One channel keeps them in order.
    const std::uint32_t channel = m.channel != PEACH2_DMA_ANY_CHANNEL
                                      ? m.channel
                                      : s.next_channel.fetch_add(1) % PEACH2_DMA_CHANNELS;
    tcaDmaTicket started{};
    int rc = 0;
    {
        std::unique_lock<std::shared_mutex> lock(s.order);
        for (const DmaRun& r : runs) {
            peach2_dma_start req = start_request(r, m, channel);
            rc = s.port.call(PEACH2_IOC_DMA_START, &req);
            if (rc) {
                rc = driver_error(refusal_error(rc, req.refusal));
                break;
            }
            if (started.left == 0)
                started.next = req.ticket;
            else if (req.ticket != started.next + started.left)
                rc = TCA_EDEVICE;  // cannot happen while we hold `order`
            ++started.left;
            if (rc)
                break;
        }
    }
    if (rc) {
        // The started runs read the caller's memory: let them end first.
        collect_ticket(s.port, &started, 0, false);
        *t = tcaDmaTicket{};
        return rc;
    }
    *t = started;
    return m.wait ? collect_ticket(s.port, t, m.timeout_ms, false) : 0;
}

}  // namespace

void split_runs(std::span<const peach2_xfer> xfers, bool reg_mode, std::vector<DmaRun>* runs) {
    const std::size_t per_run = reg_mode ? 1 : PEACH2_DMA_MAX_XFERS;
    runs->clear();
    for (std::size_t i = 0; i < xfers.size(); i += per_run)
        runs->push_back(DmaRun{xfers.subspan(i, std::min(per_run, xfers.size() - i))});
}

int start_runs(DmaStarter& s, std::span<const DmaRun> runs, const DmaMode& m, tcaDmaTicket* t) {
    if (runs.empty()) {
        *t = tcaDmaTicket{};
        return 0;
    }
    return runs.size() == 1 ? start_one(s, runs[0], m, t) : start_several(s, runs, m, t);
}

int start_cached(StartCache& cache, DmaStarter& s, const DmaRun& run, const DmaMode& m,
                 tcaDmaTicket* t) {
    if (const std::uint32_t chain = cache.acquire(run.xfers)) {
        const int rc = start_one(s, DmaRun{{}, chain}, m, t);
        // Busy (its last run goes on) or gone: nothing started, go one-shot.
        const bool refused = (rc == -EBUSY || rc == -ENOENT) && t->left == 0 && t->next == 0;
        cache.release(chain, rc == -EBUSY && refused);
        if (!refused)
            return rc;
    }
    return start_one(s, run, m, t);
}

// ---- the chain table -----------------------------------------------------------

std::uint32_t ChainTable::add(LibChain c) {
    // Cyclic ids: a destroyed chain's id is not handed out again at once, so
    // a stale tcaChain fails instead of starting someone else's chain.
    for (std::uint64_t tries = 0; tries < 0xffffffffull; ++tries) {
        if (++last_ == 0)
            last_ = 1;
        if (chains_.find(last_) == chains_.end()) {
            chains_.emplace(last_, std::move(c));
            return last_;
        }
    }
    return 0;
}

bool ChainTable::get(std::uint32_t id, LibChain* out) const {
    const auto it = chains_.find(id);
    if (it == chains_.end())
        return false;
    *out = it->second;
    return true;
}

bool ChainTable::take(std::uint32_t id, LibChain* out) {
    const auto it = chains_.find(id);
    if (it == chains_.end())
        return false;
    *out = std::move(it->second);
    chains_.erase(it);
    return true;
}

// ---- resolving a request -------------------------------------------------------

namespace {

// The source: a pointer into our buffers, or a handle of our memory.
int source_side(const Context& c, const tcaDmaXfer& x, std::uint64_t span, DmaSide* out) {
    if (x.src)
        return c.local_side(x.src, span, out);
    if (!x.src_handle)
        return -EINVAL;
    if (int rc = validate_handle(*x.src_handle))
        return rc;
    if (x.src_handle->node != c.node_id())
        return TCA_ENOTBUF;  // the card reads only this node's memory
    return c.handle_side(*x.src_handle, x.src_offset, span, out);
}

int resolve(const Context& c, const tcaDmaXfer& x, DmaRequest* r) {
    if (x.reserved)
        return -EINVAL;
    r->len = x.len;
    if (x.len) {
        std::uint64_t sspan = 0, dspan = 0;
        if (int rc = check_stride(x.len, x.stride, x.burst, x.gap, &sspan, &dspan))
            return rc;
        r->stride = x.stride;
        r->burst = x.burst;
        r->gap = x.gap;
        if (!x.dst)
            return -EINVAL;
        if (int rc = validate_handle(*x.dst))
            return rc;
        if (int rc = c.handle_side(*x.dst, x.dst_offset, dspan, &r->dst))
            return rc;
        if (int rc = source_side(c, x, sspan, &r->src))
            return rc;
    }
    if (x.notify) {
        const std::uint32_t len = x.notify_len ? x.notify_len : 8;
        if (len != 4 && len != 8)
            return -EINVAL;
        if (int rc = validate_handle(*x.notify))
            return rc;
        if (int rc = c.handle_side(*x.notify, x.notify_offset, len, &r->notify_at))
            return rc;
        r->notify = true;
        r->notify_value = x.notify_value;
        r->notify_len = len;
    }
    return 0;
}

}  // namespace

int plan_xfers(const Context& c, std::span<const tcaDmaXfer> xfers, std::vector<peach2_xfer>* out) {
    const std::size_t before = out->size();
    PlanMemo memo;
    for (const tcaDmaXfer& x : xfers) {
        DmaRequest r;
        int rc = resolve(c, x, &r);
        if (rc == 0)
            rc = plan_request(r, out, &memo);
        if (rc) {
            out->resize(before);
            return rc;
        }
    }
    return 0;
}

// plan_xfers under the library mutex (opening the device if needed); the
// context, valid until tcaFinalize, for the start that follows outside it.
int plan_locked(std::span<const tcaDmaXfer> xfers, std::vector<peach2_xfer>* entries,
                Context** ctx, std::uint64_t* generation = nullptr) {
    return with_context([&](Context& c) {
        *ctx = &c;
        if (generation)
            *generation = Context::generation();
        return plan_xfers(c, xfers, entries);
    });
}

}  // namespace tca

// ---- the C API: one-shot DMA and tickets ---------------------------------------

using namespace tca;

namespace {

int start(std::span<const tcaDmaXfer> xfers, const tcaDmaOpts* opts, tcaDmaTicket* ticket) {
    DmaMode m;
    if (int rc = dma_mode(opts, &m))
        return rc;
    if (!ticket)
        m.wait = true;  // nothing to wait with later: wait now
    return guarded([&] {
        // Kept by each thread: a start allocates nothing once they have
        // grown (a program's SIGALRM handler that calls fopen(), as
        // perftest's does, deadlocks in malloc's lock if it fires in one).
        thread_local std::vector<peach2_xfer> entries;
        thread_local std::vector<DmaRun> runs;
        thread_local RepeatPlan last;
        Context* ctx = context_if_open();
        std::span<const peach2_xfer> planned;
        if (ctx && last.holds(ctx, Context::generation(), xfers)) {
            planned = last.entries();
        } else {
            entries.clear();
            std::uint64_t generation = 0;
            if (int rc = plan_locked(xfers, &entries, &ctx, &generation))
                return rc;
            planned = last.keep(ctx, generation, xfers, &entries) ? last.entries()
                                                                   : std::span(entries);
        }
        split_runs(planned, m.desc == PEACH2_DMA_REG_MODE, &runs);
        tcaDmaTicket unused{};
        DmaStarter s = ctx->dma().starter();
        if (runs.size() == 1 && m.desc == PEACH2_DMA_HOST_DESC)
            return start_cached(ctx->dma().cache(), s, runs[0], m, ticket ? ticket : &unused);
        return start_runs(s, runs, m, ticket ? ticket : &unused);
    });
}

// The one transfer of tcaDmaPut and tcaDmaPutNotify.
tcaDmaXfer put_xfer(const tcaHandle* dst, size_t dst_offset, const void* src, size_t len) {
    tcaDmaXfer x{};
    x.dst = dst;
    x.dst_offset = dst_offset;
    x.src = src;
    x.len = len;
    return x;
}

// Collects a ticket; with nothing left it needs no device.
int collect(tcaDmaTicket* t, int timeout_ms, bool poll) {
    if (!t)
        return -EINVAL;
    if (t->left == 0)
        return t->status ? TCA_EDMA : 0;
    Context* c = nullptr;
    if (int rc = context_fast(&c))
        return rc;
    return collect_ticket(c->dma().port(), t, timeout_ms, poll);
}

}  // namespace

extern "C" {

int tcaDmaStart(const tcaDmaXfer* xfers, size_t count, const tcaDmaOpts* opts,
                tcaDmaTicket* ticket) {
    if (!xfers && count)
        return -EINVAL;
    return start(std::span<const tcaDmaXfer>(xfers, count), opts, ticket);
}

int tcaDmaPut(const tcaHandle* dst, size_t dst_offset, const void* src, size_t len,
              const tcaDmaOpts* opts, tcaDmaTicket* ticket) {
    if (!dst || (!src && len))
        return -EINVAL;
    tcaDmaXfer x = put_xfer(dst, dst_offset, src, len);
    return start({&x, 1}, opts, ticket);
}

int tcaDmaPutNotify(const tcaHandle* dst, size_t dst_offset, const void* src, size_t len,
                    size_t notify_offset, uint64_t value, const tcaDmaOpts* opts,
                    tcaDmaTicket* ticket) {
    if (!dst || (!src && len))
        return -EINVAL;
    tcaDmaXfer x = put_xfer(dst, dst_offset, src, len);
    x.notify = dst;
    x.notify_offset = notify_offset;
    x.notify_value = value;
    x.notify_len = 8;
    return start({&x, 1}, opts, ticket);
}

int tcaDmaWait(tcaDmaTicket* ticket, int timeout_ms) {
    return guarded([&] { return collect(ticket, timeout_ms, false); });
}

int tcaDmaTest(tcaDmaTicket* ticket) {
    return guarded([&] {
        const int rc = collect(ticket, 0, true);
        return rc == -ETIMEDOUT ? 1 : rc;
    });
}

}  // extern "C"

// ---- the C API: persistent chains (a tcaChain names one or more driver chains) -

namespace {

// Destroys driver chains last to first: runs of one tcaChain end in start
// order, so once the last is idle all are. On failure the ones not yet
// destroyed remain in *ids.
int destroy_driver_chains(DriverPort& port, std::vector<std::uint32_t>* ids) {
    while (!ids->empty()) {
        peach2_chain_destroy d{};
        d.chain = ids->back();
        if (int rc = port.call(PEACH2_IOC_CHAIN_DESTROY, &d))
            return rc;
        ids->pop_back();
    }
    return 0;
}

int create(std::span<const tcaDmaXfer> xfers, const DmaMode& m, tcaChain* out) {
    std::vector<peach2_xfer> entries;
    Context* ctx = nullptr;
    if (int rc = plan_locked(xfers, &entries, &ctx))
        return rc;
    if (entries.empty())
        return -EINVAL;  // a chain must do something
    LibChain chain;
    DriverPort& port = ctx->dma().port();
    std::vector<DmaRun> runs;
    split_runs(entries, m.desc == PEACH2_DMA_REG_MODE, &runs);
    for (const DmaRun& r : runs) {
        peach2_chain_create req{};
        req.xfers = reinterpret_cast<std::uintptr_t>(r.xfers.data());
        req.count = static_cast<__u32>(r.xfers.size());
        req.flags = m.desc;
        if (int rc = port.call(PEACH2_IOC_CHAIN_CREATE, &req)) {
            destroy_driver_chains(port, &chain.driver_ids);
            return driver_error(refusal_error(rc, req.refusal));
        }
        chain.driver_ids.push_back(req.chain);
        chain.descriptors += req.nr_desc;
    }
    const std::uint32_t descriptors = chain.descriptors;
    std::vector<std::uint32_t> ids = chain.driver_ids;
    std::uint32_t id = 0;
    with_context([&](Context& c) {
        id = c.dma().chains().add(std::move(chain));
        return 0;
    });
    if (id == 0) {
        destroy_driver_chains(port, &ids);
        return -ENOSPC;
    }
    *out = tcaChain{id, descriptors};
    return 0;
}

}  // namespace

extern "C" {

int tcaChainCreate(const tcaDmaXfer* xfers, size_t count, const tcaDmaOpts* opts, tcaChain* chain) {
    if (!xfers || count == 0 || !chain)
        return -EINVAL;
    DmaMode m;
    if (int rc = dma_mode(opts, &m))
        return rc;
    if (m.wait)
        return -EINVAL;  // nothing runs at creation
    *chain = tcaChain{};
    return guarded([&] { return create({xfers, count}, m, chain); });
}

int tcaChainStart(tcaChain chain, const tcaDmaOpts* opts, tcaDmaTicket* ticket) {
    DmaMode m;
    if (int rc = dma_mode(opts, &m))
        return rc;
    if (m.desc)
        return -EINVAL;  // fixed at creation
    if (!ticket)
        m.wait = true;
    return guarded([&] {
        LibChain c;
        Context* ctx = nullptr;
        if (int rc = with_context([&](Context& cx) {
                ctx = &cx;
                return cx.dma().chains().get(chain.id, &c) ? 0 : -ENOENT;
            }))
            return rc;
        std::vector<DmaRun> runs;
        for (std::uint32_t id : c.driver_ids)
            runs.push_back(DmaRun{{}, id});
        tcaDmaTicket unused{};
        DmaStarter s = ctx->dma().starter();
        return start_runs(s, runs, m, ticket ? ticket : &unused);
    });
}

int tcaChainDestroy(tcaChain chain) {
    return guarded([&] {
        return with_context([&](Context& c) {
            LibChain lc;
            if (!c.dma().chains().take(chain.id, &lc))
                return -ENOENT;
            // Under the mutex: a concurrent start cannot find it half gone.
            const int rc = destroy_driver_chains(c.dma().port(), &lc.driver_ids);
            if (rc)
                c.dma().chains().put_back(chain.id, std::move(lc));
            return rc;
        });
    });
}

}  // extern "C"

// ---- the C API: tcaPutAuto, PIO or DMA (choose_put decides) --------------------

namespace {

std::uint64_t threshold() {
    // Read once: the environment is not expected to change under a running
    // program, and getenv is not free on a hot path.
    static const std::uint64_t value = pio_max_from(std::getenv("TCA_PIO_MAX"));
    return value;
}

int dma_body(const tcaHandle* dst, std::uint64_t off, const unsigned char* src, std::uint64_t len) {
    tcaDmaOpts o{};
    int rc = tcaDmaPut(dst, off, src, len, &o, nullptr);
    if (rc == TCA_ENODESC) {
        // On-card descriptor RAM is shared and may be full: host
        // descriptors have no such limit.
        o.flags = TCA_DMA_HOST_DESC;
        rc = tcaDmaPut(dst, off, src, len, &o, nullptr);
    }
    return rc;
}

}  // namespace

extern "C" {

size_t tcaPioMax(void) { return static_cast<size_t>(threshold()); }

int tcaPutAuto(const tcaHandle* dst, size_t dst_offset, const void* src, size_t len) {
    if (!dst || (!src && len))
        return -EINVAL;
    if (len <= threshold())
        return tcaPut(dst, dst_offset, src, len);
    if (int rc = validate_handle(*dst))
        return rc;
    if (!range_fits(dst_offset, len, dst->size))
        return TCA_ERANGE;
    return guarded([&] {
        const int in_buffer = with_context([&](Context& c) {
            DmaSide side;
            return c.local_side(src, len, &side);
        });
        std::uint64_t dst_addr = 0;
        handle_address(*dst, dst_offset, &dst_addr);
        const auto src_addr = reinterpret_cast<std::uintptr_t>(src);
        const PutSplit s = choose_put(len, in_buffer == 0, src_addr, dst_addr, threshold());
        const auto* p = static_cast<const unsigned char*>(src);
        if (s.body == 0)
            return tcaPut(dst, dst_offset, src, len);
        if (s.head)
            if (int rc = tcaPut(dst, dst_offset, p, s.head))
                return rc;
        if (int rc = dma_body(dst, dst_offset + s.head, p + s.head, s.body))
            return rc;
        return s.tail ? tcaPut(dst, dst_offset + s.head + s.body, p + s.head + s.body, s.tail) : 0;
    });
}

}  // extern "C"
