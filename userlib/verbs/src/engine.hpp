// SPDX-License-Identifier: MIT
// The data path of one open device: the lock every object of it lives
// under, the tables (QPs, CQs, MRs by key), completion delivery (CQ entries,
// completion channel events), the async event queue, and progress: the
// program's calls (poll, post) drive it while the program is active, and a
// progress thread while it is not (blocked in ibv_get_cq_event, computing,
// or sleeping), so that acknowledgements, RNR answers and completion events
// do not depend on the program calling in. InfiniBand hardware does that
// work; here software must.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "abi.hpp"
#include "engine_lock.hpp"
#include "verb_clock.hpp"
#include "objects.hpp"

namespace pv {

class Context;
class Qp;

// Tunables, from the environment (read once per device open).
struct Tunables {
    std::uint32_t ll_slots = 64;         // PEACH2_VERBS_LL_SLOTS
    std::uint64_t hb_bytes = 256 << 10;  // PEACH2_VERBS_HB_BYTES
    std::uint32_t ud_slots = 64;         // PEACH2_VERBS_UD_SLOTS
    // PEACH2_VERBS_PIO_MAX, else libtca's tcaPioMax(): RDMA Writes and HB
    // records by PIO up to this (from_env sets it).
    std::uint64_t pio_max = 0;
    std::uint64_t ack_timeout_min_ms = 500;  // PEACH2_VERBS_ACK_TIMEOUT_MS: floor of the IB timeout
    std::uint64_t rp_window = 64;  // PEACH2_VERBS_RP_WINDOW: read-proxy requests out per QP
    bool ll_dma = false;           // PEACH2_VERBS_LL=dma: small packets by prebuilt chains
    static Tunables from_env();
};

struct TcaBuffer;

class Engine {
public:
    explicit Engine(Context& ctx);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    Context& context() noexcept { return ctx_; }
    const Tunables& tune() const noexcept { return tune_; }
    EngineLock& lock() noexcept { return lock_; }
    std::uint32_t node_id() const noexcept;
    std::uint32_t node_count() const noexcept;

    // ---- tables (under lock) ----
    std::vector<Qp*> qps;
    std::vector<Cq*> cqs;
    std::unordered_map<std::uint32_t, Mr*> mrs;  // by lkey (= rkey)
    std::uint32_t pds = 0, srqs = 0, ahs = 0, channels = 0;
    Mr* find_mr(std::uint32_t key) const noexcept;
    std::uint32_t new_group() noexcept { return ++groups_; }

    // ---- bounce buffers of big misaligned RDMA operations (under lock) ----
    // A kept buffer of at least `bytes` bytes, or nullptr: then the QP
    // allocates one (an ALLOC and a FREE of the driver per operation
    // otherwise). keep_bounce takes back a buffer no request still answers
    // into, keeping up to kKeptBounceBytes.
    std::unique_ptr<TcaBuffer> take_bounce(std::uint64_t bytes) noexcept;
    void keep_bounce(std::unique_ptr<TcaBuffer> b) noexcept;
    // b.alloc(bytes) without waiting for the user's quarantined memory
    // (PEACH2_ALLOC_NOWAIT): -EDQUOT while the quota is full. A WR refused
    // so is started again on every pass of progress; after a refusal the
    // next ones are answered here, without the driver, for a while that
    // doubles from kQuotaBackoffMinNs to kQuotaBackoffMaxNs (a full quota
    // costs at most ~16 ioctls a second, not one per poll).
    int alloc_nowait(TcaBuffer& b, std::uint64_t bytes);

    // ---- completions (under lock) ----
    // Adds an entry; an armed CQ raises its channel event.
    void push_cqe(Cq* cq, const ibv_wc& wc, bool solicited);

    // ---- async events ----
    int async_fd() const noexcept { return async_fd_; }
    void async_event(const ibv_async_event& ev);
    int get_async_event(ibv_async_event* ev);  // blocking unless O_NONBLOCK

    // ---- progress ----
    // Called by verbs the program makes (under lock): progress on these QPs.
    // `now`: the clock as the verb read it (touch()).
    void progress_cq(Cq* cq, std::uint64_t now);
    void progress_qp(Qp* qp);
    // The program is active: the progress thread stays out of its way.
    // Returns the time it read, for the rest of the verb: one clock read
    // per call, from the verbs' clock (under the lock).
    std::uint64_t touch() noexcept {
        const std::uint64_t t = clock_.now();
        last_call_ns_.store(t, std::memory_order_relaxed);
        return t;
    }
    // A thread of the program blocks in ibv_get_cq_event (+1) or is back (-1):
    // it waits for the progress thread, however recently it called.
    void event_waiters(int delta) noexcept {
        event_waiters_.fetch_add(delta, std::memory_order_relaxed);
        if (delta > 0)
            kick();
    }
    // CLOCK_MONOTONIC: for waits and logs, outside the lock.
    static std::uint64_t now() noexcept;
    // The verbs' clock (verb_clock.hpp), under the lock: every time a QP
    // keeps and compares comes from here, so they never go backwards.
    std::uint64_t clock() noexcept { return clock_.now(); }
    // The progress thread's name, and the lease renewer's (at most 15
    // characters).
    static constexpr const char* kThreadName = "peach2-verbs";
    static constexpr const char* kRenewerName = "peach2-leases";

    // Wake the progress thread (a CQ was armed, a QP needs acks).
    void kick() noexcept;
    // A CQ was armed: the program may be about to wait for its event.
    void cq_armed() noexcept {
        armed_ns_.store(now(), std::memory_order_relaxed);
        kick();
    }
    // Ends the progress thread and the renewer (idempotent). At exit() every engine's
    // thread is stopped before static destructors run (programs often exit
    // with the device still open).
    void stop_thread() noexcept;
    // Sends every acknowledgement still owed (see Qp::send_ack).
    void flush_acks();

private:
    void thread_main();
    void renewer_main();
    // The engine lock for the two threads: not taken while the program holds
    // it, until it has for kLockPatienceNs (*refused_since: the first refusal
    // of the current run, 0 after the lock was taken).
    std::unique_lock<EngineLock> lock_patiently(std::uint64_t* refused_since);
    // Makes the renewals due; returns when the next one falls due.
    std::uint64_t renew_leases(std::unique_lock<EngineLock>& held);
    // The program called a verb within kActiveNs of t and no thread of it
    // waits in ibv_get_cq_event: it moves its QPs along itself.
    bool program_drives(std::uint64_t t) const noexcept;

    Context& ctx_;
    Tunables tune_;
    EngineLock lock_;
    VerbClock clock_;  // under lock_: every time a QP keeps comes from it
    std::uint32_t groups_ = 0;
    static constexpr std::uint64_t kKeptBounceBytes = 4 << 20;
    std::vector<std::unique_ptr<TcaBuffer>> kept_bounces_;  // oldest first
    std::uint64_t kept_bounce_bytes_ = 0;
    static constexpr std::uint64_t kQuotaBackoffMinNs = 1'000'000;
    static constexpr std::uint64_t kQuotaBackoffMaxNs = 64'000'000;
    std::uint64_t quota_backoff_ns_ = 0;  // 0: the last allocation succeeded
    std::uint64_t quota_retry_ns_ = 0;    // no NOWAIT allocation before this

    int async_fd_ = -1;
    std::mutex async_lock_;
    std::deque<ibv_async_event> async_;

    std::atomic<std::uint64_t> last_call_ns_{0};
    std::atomic<std::uint64_t> armed_ns_{0};  // the last ibv_req_notify_cq
    std::atomic<int> event_waiters_{0};
    std::thread thread_;
    std::thread renewer_;
    std::mutex wake_lock_;
    std::condition_variable wake_;
    std::condition_variable renew_wake_;  // stop_, for the renewer
    bool stop_ = false;
    bool kicked_ = false;
};

// Writes one event count to a completion channel's or async eventfd.
void signal_fd(int fd) noexcept;

}  // namespace pv
