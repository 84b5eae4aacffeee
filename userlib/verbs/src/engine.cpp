// SPDX-License-Identifier: MIT
#include "engine.hpp"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "context.hpp"
#include "log.hpp"
#include "qp.hpp"
#include "remote.hpp"

namespace pv {
namespace {

std::uint64_t env_u64(const char* name, std::uint64_t def, std::uint64_t lo, std::uint64_t hi) {
    const char* e = std::getenv(name);
    if (!e || !*e)
        return def;
    char* end = nullptr;
    std::uint64_t v = std::strtoull(e, &end, 0);
    if (end && (*end == 'k' || *end == 'K'))
        v <<= 10;
    else if (end && (*end == 'm' || *end == 'M'))
        v <<= 20;
    if (v < lo || v > hi) {
        log_error("%s=%s out of range [%llu, %llu]; using %llu", name, e,
                  static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi),
                  static_cast<unsigned long long>(def));
        return def;
    }
    return v;
}

// Progress thread periods: short while a program waits for a completion
// event, longer while there is only background work (acks, leases) or the
// program, though it armed a CQ, keeps calling (UCX and the MPIs arm theirs
// once and then poll: a wake-up every 200 us cost them a third of their
// 8-byte latency on a guest with one vCPU).
constexpr auto kArmedPeriod = std::chrono::microseconds(200);
constexpr auto kIdlePeriod = std::chrono::milliseconds(1);
// The program called in this recently: it drives progress itself.
constexpr std::uint64_t kActiveNs = 2000000;
// While it does, the thread has nothing to do, and each look costs the
// program's vCPU a timer interrupt and two context switches: at one look a
// millisecond, ib_send_lat 8 B's mean was twice its median and its p99
// 30x; at one every 2 ms Open MPI's ranks gave the thread 7.5 % of their
// vCPU (docs/notes.md, 2026-11-29). So it looks again after kDrivenPeriod,
// or, when the program armed a CQ lately (it may be about to wait for the
// event: UCX arms before each wait, the MPIs arm once and then poll), as
// soon as the program may have stopped.
constexpr std::uint64_t kDrivenPeriodNs = 10000000;
// The progress thread does not wait for the engine lock while the program
// holds it, up to this long. On a guest with one vCPU a thread waiting for
// the lock turns every unlock of the polling program into a futex wake-up
// for the rest of its time slice: UCX's tag_lat 8 B took 21-32 us (median)
// with the thread as it was, 9.5 us without it (docs/notes.md, 2026-11-27).
// After this long it waits its turn: an armed CQ whose QPs the program never
// touches still gets its events.
constexpr std::uint64_t kLockPatienceNs = 10000000;

// Live engines, for the exit handler (never destroyed itself).
std::mutex& engines_lock() {
    static auto* m = new std::mutex;
    return *m;
}
std::vector<Engine*>& engines() {
    static auto* v = new std::vector<Engine*>;
    return *v;
}

void stop_all_at_exit() {
    std::lock_guard<std::mutex> g(engines_lock());
    for (Engine* e : engines()) {
        e->flush_acks();  // a program that exits without destroying its QPs
        e->stop_thread();
    }
}

}  // namespace

Tunables Tunables::from_env() {
    Tunables t;
    t.ll_slots = static_cast<std::uint32_t>(env_u64("PEACH2_VERBS_LL_SLOTS", t.ll_slots, 2, 4096));
    t.hb_bytes = env_u64("PEACH2_VERBS_HB_BYTES", t.hb_bytes, 4096, 64ull << 20) & ~4095ull;
    t.ud_slots = static_cast<std::uint32_t>(env_u64("PEACH2_VERBS_UD_SLOTS", t.ud_slots, 2, 4096));
    // The PIO/DMA line of tcaPutAuto (TCA_PIO_MAX, 1 KiB), unless told.
    t.pio_max = env_u64("PEACH2_VERBS_PIO_MAX", tcaPioMax(), 0, 1 << 20);
    // A peer's process can spend up to name_quarantine_ms + 1 s inside one
    // PIN or ALLOC (the driver waits for its user's quarantined memory) with
    // its library's lock held: eight silent periods (retry_cnt 7) must
    // outlast that, or a busy peer looks dead.
    if (std::FILE* f = std::fopen("/sys/module/peach2/parameters/name_quarantine_ms", "r")) {
        unsigned long q = 0;
        if (std::fscanf(f, "%lu", &q) == 1 && q <= 600000)
            t.ack_timeout_min_ms =
                std::max<std::uint64_t>(t.ack_timeout_min_ms, (q + 2000 + 7) / 8);
        std::fclose(f);
    }
    t.ack_timeout_min_ms = env_u64("PEACH2_VERBS_ACK_TIMEOUT_MS", t.ack_timeout_min_ms, 1, 600000);
    t.rp_window = env_u64("PEACH2_VERBS_RP_WINDOW", t.rp_window, 1, 4096);
    const char* ll = std::getenv("PEACH2_VERBS_LL");
    t.ll_dma = ll && !std::strcmp(ll, "dma");
    return t;
}

void signal_fd(int fd) noexcept {
    const std::uint64_t one = 1;
    while (::write(fd, &one, sizeof one) < 0 && errno == EINTR)
        ;
}

std::uint64_t Engine::now() noexcept { return now_ns(); }

Engine::Engine(Context& ctx) : ctx_(ctx), tune_(Tunables::from_env()) {
    async_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    {
        std::lock_guard<std::mutex> g(engines_lock());
        static const bool registered = [] { return std::atexit(stop_all_at_exit) == 0; }();
        (void)registered;
        engines().push_back(this);
    }
    thread_ = std::thread([this] { thread_main(); });
    // Named here, before anyone can look (top -H, gdb, test_progress_fake.cpp).
    pthread_setname_np(thread_.native_handle(), kThreadName);
    renewer_ = std::thread([this] { renewer_main(); });
    pthread_setname_np(renewer_.native_handle(), kRenewerName);
}

Engine::~Engine() {
    {
        std::lock_guard<std::mutex> g(engines_lock());
        std::erase(engines(), this);
    }
    stop_thread();
    if (async_fd_ >= 0)
        ::close(async_fd_);
}

std::unique_ptr<TcaBuffer> Engine::take_bounce(std::uint64_t bytes) noexcept {
    auto best = kept_bounces_.end();
    for (auto it = kept_bounces_.begin(); it != kept_bounces_.end(); ++it)
        if ((*it)->size >= bytes && (best == kept_bounces_.end() || (*it)->size < (*best)->size))
            best = it;
    if (best == kept_bounces_.end())
        return nullptr;
    std::unique_ptr<TcaBuffer> b = std::move(*best);
    kept_bounces_.erase(best);
    kept_bounce_bytes_ -= b->size;
    return b;
}

int Engine::alloc_nowait(TcaBuffer& b, std::uint64_t bytes) {
    const std::uint64_t t = now_ns();
    if (t < quota_retry_ns_)
        return -EDQUOT;
    const int rc = b.alloc(bytes, false);
    if (rc == -EDQUOT) {
        quota_backoff_ns_ =
            std::clamp(quota_backoff_ns_ * 2, kQuotaBackoffMinNs, kQuotaBackoffMaxNs);
        quota_retry_ns_ = t + quota_backoff_ns_;
    } else if (rc == 0) {
        quota_backoff_ns_ = 0;
    }
    return rc;
}

void Engine::keep_bounce(std::unique_ptr<TcaBuffer> b) noexcept {
    if (!b || !b->p || b->size > kKeptBounceBytes)
        return;  // freed here
    while (kept_bounce_bytes_ + b->size > kKeptBounceBytes) {
        kept_bounce_bytes_ -= kept_bounces_.front()->size;
        kept_bounces_.erase(kept_bounces_.begin());
    }
    try {
        kept_bounces_.push_back(std::move(b));
        kept_bounce_bytes_ += kept_bounces_.back()->size;
    } catch (const std::bad_alloc&) {
        // not kept: freed with b
    }
}

void Engine::stop_thread() noexcept {
    {
        std::lock_guard<std::mutex> g(wake_lock_);
        stop_ = true;
    }
    wake_.notify_all();
    renew_wake_.notify_all();
    if (thread_.joinable())
        thread_.join();
    if (renewer_.joinable())
        renewer_.join();  // after its lookup, if one is out
}

std::uint32_t Engine::node_id() const noexcept { return ctx_.card().node_id; }

std::uint32_t Engine::node_count() const noexcept { return ctx_.card().node_count; }

Mr* Engine::find_mr(std::uint32_t key) const noexcept {
    const auto it = mrs.find(key);
    return it == mrs.end() ? nullptr : it->second;
}

void Engine::push_cqe(Cq* cq, const ibv_wc& wc, bool solicited) {
    if (cq->entries.size() >= cq->capacity && !cq->overflowed) {
        // Kept all the same (nothing is lost), but the program learns of it.
        cq->overflowed = true;
        ibv_async_event ev{};
        ev.element.cq = &cq->abi;
        ev.event_type = IBV_EVENT_CQ_ERR;
        async_event(ev);
    }
    cq->entries.push_back(wc);
    if (cq->armed && cq->channel &&
        (!cq->solicited_only || solicited || wc.status != IBV_WC_SUCCESS)) {
        cq->armed = false;
        cq->channel->events.push_back(&cq->abi);
        signal_fd(cq->channel->abi.fd);
    }
}

void Engine::async_event(const ibv_async_event& ev) {
    {
        std::lock_guard<std::mutex> g(async_lock_);
        async_.push_back(ev);
    }
    signal_fd(async_fd_);
}

int Engine::get_async_event(ibv_async_event* ev) {
    std::uint64_t n;
    if (::read(async_fd_, &n, sizeof n) != sizeof n)
        return -1;  // errno: EAGAIN with O_NONBLOCK, EINTR
    std::lock_guard<std::mutex> g(async_lock_);
    if (async_.empty()) {
        errno = EAGAIN;
        return -1;
    }
    *ev = async_.front();
    async_.pop_front();
    return 0;
}

void Engine::progress_qp(Qp* qp) { qp->progress(clock_.now()); }

void Engine::progress_cq(Cq* cq, std::uint64_t now) {
    for (Qp* qp : cq->qps)
        qp->poll(now);
}

void Engine::flush_acks() {
    std::lock_guard<EngineLock> g(lock_);
    for (Qp* qp : qps)
        qp->flush_ack();
}

void Engine::kick() noexcept {
    {
        std::lock_guard<std::mutex> g(wake_lock_);
        kicked_ = true;
    }
    wake_.notify_one();
}

// Lookups for the leases that are due, made without the lock (each may take
// a read-proxy round trip), their outcomes applied under it to the QPs that
// still exist. Called and returns with `held` locked.
std::uint64_t Engine::renew_leases(std::unique_lock<EngineLock>& held) {
    struct Job {
        Qp* qp;
        Qp::Renewal r;
        std::uint64_t started;
        int rc;
        tcaNameInfo n;
    };
    std::vector<Job> jobs;
    std::vector<Qp::Renewal> due;
    const std::uint64_t t = clock_.now();
    for (Qp* qp : qps) {
        due.clear();
        qp->renewals_due(t, &due);
        for (const Qp::Renewal& r : due)
            jobs.push_back(Job{qp, r, t, 0, {}});
    }
    const auto next_due = [this] {
        std::uint64_t next = UINT64_MAX;
        for (Qp* qp : qps)
            next = std::min(next, qp->renewal_at());
        return next;
    };
    if (jobs.empty())
        return next_due();
    held.unlock();
    for (Job& j : jobs) {
        j.started = now();
        j.rc = lookup_name(j.r.node, j.r.kind, j.r.name, 0, &j.n);
        log_slow(now() - j.started, "renewing the lease on %s %#x on node %u (%s)",
                 kind_text(j.r.kind), j.r.name, j.r.node, j.rc ? tcaErrorString(j.rc) : "renewed");
    }
    held.lock();
    for (Job& j : jobs)
        if (std::find(qps.begin(), qps.end(), j.qp) != qps.end())
            j.qp->renewed(j.r, j.rc, j.n, j.started);
    return next_due();
}

// The renewer: lease renewals, each a lookup that may take as long as a
// read-proxy request can (TCA_RP_TIMEOUT_MS, 10 s) when the target or the
// links are slow. They used to run in the progress thread, which then sent
// no acknowledgement for a program that waits or computes until the lookup
// ended; a peer gives up after eight silent ack periods (~7-9 s). Stop 44's
// CI run saw lookups of 2.3-3.5 s, one after another, then a peer that gave
// up (docs/notes.md, 2026-12-02). Like the progress thread it waits for the
// engine lock only after kLockPatienceNs of a program that holds it.
void Engine::renewer_main() {
    // It sleeps until the next renewal falls due, and looks at least this
    // often for QPs connected meanwhile (a lease is 1 s; the first renewal
    // falls due half of it after the connection).
    constexpr std::uint64_t kLongestSleepNs = 250'000'000;
    std::uint64_t refused_since = 0;
    std::uint64_t next = 0;  // when a renewal falls due
    for (;;) {
        const std::uint64_t t = now();
        const std::uint64_t sleep_ns = next <= t ? 1'000'000 : std::min(next - t, kLongestSleepNs);
        {
            std::unique_lock<std::mutex> w(wake_lock_);
            renew_wake_.wait_for(w, std::chrono::nanoseconds(sleep_ns), [this] { return stop_; });
            if (stop_)
                return;
        }
        std::unique_lock<EngineLock> g = lock_patiently(&refused_since);
        if (!g.owns_lock())
            continue;
        next = renew_leases(g);
    }
}

std::unique_lock<EngineLock> Engine::lock_patiently(std::uint64_t* refused_since) {
    std::unique_lock<EngineLock> g(lock_, std::try_to_lock);
    if (!g.owns_lock()) {
        const std::uint64_t t = now();
        if (!*refused_since)
            *refused_since = t;
        if (t - *refused_since < kLockPatienceNs)
            return g;  // not owned: look again later
        g.lock();
    }
    *refused_since = 0;
    return g;
}

bool Engine::program_drives(std::uint64_t t) const noexcept {
    return t - last_call_ns_.load(std::memory_order_relaxed) < kActiveNs &&
           event_waiters_.load(std::memory_order_relaxed) == 0;
}

void Engine::thread_main() {
    constexpr std::uint64_t armed_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(kArmedPeriod).count();
    bool armed = false;
    std::uint64_t refused_since = 0;  // the first of the current run of refusals
    for (;;) {
        std::chrono::nanoseconds period = armed ? kArmedPeriod : kIdlePeriod;
        const std::uint64_t t0 = now();
        if (program_drives(t0)) {
            const std::uint64_t last = last_call_ns_.load(std::memory_order_relaxed);
            const bool arming = t0 - armed_ns_.load(std::memory_order_relaxed) < kActiveNs;
            period = std::chrono::nanoseconds(arming ? last + kActiveNs - t0 : kDrivenPeriodNs);
        }
        {
            std::unique_lock<std::mutex> w(wake_lock_);
            wake_.wait_for(w, period, [this] { return stop_ || kicked_; });
            if (stop_)
                return;
            kicked_ = false;
        }
        // Not taken: the program is in a verb, it makes progress itself.
        std::unique_lock<EngineLock> g = lock_patiently(&refused_since);
        if (!g.owns_lock())
            continue;
        armed = false;
        for (Cq* cq : cqs)
            armed |= cq->armed && cq->channel;
        const std::uint64_t t = clock_.now();
        const bool active = program_drives(t);
        if (active && !armed)
            continue;  // the program drives progress itself
        // For armed CQs: the QPs the program has not moved along lately.
        for (Qp* qp : qps)
            if (!active || t - qp->progressed_ns() >= armed_ns)
                qp->poll(t);
    }
}

}  // namespace pv
