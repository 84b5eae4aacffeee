// SPDX-License-Identifier: MIT
// Starting runs and collecting tickets, against a scripted driver: blocking
// starts, several-run starts on one channel with consecutive tickets, a
// start failing half-way, timeouts, signals, card errors, errno mapping;
// the start cache (lists that come again started as chains).
#include <gtest/gtest.h>
#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>
#include <tca/tca.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <shared_mutex>
#include <vector>

#include "dma.hpp"

using namespace tca;

namespace {

// Plays the driver: tickets count up from 1; a run is done when the test
// says so (or at once with auto_done: then, with reaps, a start that asks
// PEACH2_DMA_REAP collects it); DMA_WAIT collects a done ticket once.
class ScriptedDriver final : public DriverPort {
public:
    struct Start {
        std::uint32_t chain, count, flags, channel, timeout_ms;
    };
    std::vector<Start> starts;
    std::vector<std::uint64_t> waits;             // tickets asked for, in order
    std::map<std::uint64_t, std::uint32_t> done;  // ticket -> status, uncollected
    bool auto_done = true;                        // runs end as soon as they start
    bool reaps = false;  // ... and a start with PEACH2_DMA_REAP collects them (ENDED)
    std::uint32_t auto_status = 0;
    int fail_start = 0;     // the n-th start (1-based) fails ...
    int fail_rc = -ENOSPC;  // ... with this
    int eintr_waits = 0;    // this many DMA_WAITs return -EINTR first
    std::uint64_t last = 0;

    void finish(std::uint64_t t, std::uint32_t status = 0) { done[t] = status; }

    // Chains: id -> busy (a run of it has not ended). A start of a busy or
    // unknown chain fails as the driver's does; runs of chains end when the
    // test clears busy.
    std::map<std::uint32_t, bool> chains;
    std::vector<std::vector<peach2_xfer>> created;  // each CHAIN_CREATE's entries
    std::vector<std::uint32_t> destroyed;
    std::uint32_t next_chain = 0;
    int fail_create = 0;  // CHAIN_CREATE fails with this (0: succeeds)
    bool chain_runs_stay_busy = false;

    int chain_call(unsigned long req, void* arg) {
        if (req == PEACH2_IOC_CHAIN_CREATE) {
            auto* c = static_cast<peach2_chain_create*>(arg);
            if (fail_create)
                return fail_create;
            const auto* x = reinterpret_cast<const peach2_xfer*>(c->xfers);
            created.emplace_back(x, x + c->count);
            c->chain = ++next_chain;
            chains[c->chain] = false;
            return 0;
        }
        auto* d = static_cast<peach2_chain_destroy*>(arg);
        const auto it = chains.find(d->chain);
        if (it == chains.end())
            return -ENOENT;
        if (it->second)
            return -EBUSY;
        chains.erase(it);
        destroyed.push_back(d->chain);
        return 0;
    }

    int call(unsigned long req, void* arg) noexcept override {
        if (req == PEACH2_IOC_CHAIN_CREATE || req == PEACH2_IOC_CHAIN_DESTROY)
            return chain_call(req, arg);
        if (req == PEACH2_IOC_DMA_START) {
            auto* s = static_cast<peach2_dma_start*>(arg);
            starts.push_back({s->chain, s->count, s->flags, s->channel, s->timeout_ms});
            if (fail_start && static_cast<int>(starts.size()) == fail_start)
                return fail_rc;
            if (s->chain) {
                const auto it = chains.find(s->chain);
                if (it == chains.end())
                    return -ENOENT;
                if (it->second)
                    return -EBUSY;
                it->second = chain_runs_stay_busy;
            }
            s->ticket = ++last;
            if (auto_done && reaps && s->flags & PEACH2_DMA_REAP) {
                s->flags |= PEACH2_DMA_ENDED;
                s->status = auto_status;
            } else if (auto_done) {
                done[s->ticket] = auto_status;
            }
            return 0;
        }
        if (req == PEACH2_IOC_DMA_WAIT) {
            auto* w = static_cast<peach2_dma_wait*>(arg);
            waits.push_back(w->ticket);
            if (eintr_waits > 0) {
                --eintr_waits;
                return -EINTR;
            }
            const auto it = done.find(w->ticket);
            if (it == done.end())
                return w->ticket > last ? -ENOENT : -ETIMEDOUT;
            w->status = it->second;
            done.erase(it);
            return 0;
        }
        return -ENOTTY;
    }
};

struct Fixture {
    ScriptedDriver drv;
    std::shared_mutex order;
    std::atomic<unsigned> rr{0};
    DmaStarter starter{drv, order, rr};
};

std::vector<peach2_xfer> entries(unsigned n) {
    std::vector<peach2_xfer> v(n);
    for (unsigned i = 0; i < n; ++i)
        v[i].len = 4 * (i + 1);
    return v;
}

}  // namespace

TEST(DmaRuns, SplitIntoRuns) {
    const auto v = entries(5);
    std::vector<DmaRun> runs;
    split_runs(v, false, &runs);
    ASSERT_EQ(1u, runs.size());
    EXPECT_EQ(5u, runs[0].xfers.size());
    split_runs(v, true, &runs);  // register mode: one descriptor per run
    ASSERT_EQ(5u, runs.size());
    for (unsigned i = 0; i < 5; ++i)
        EXPECT_EQ(&v[i], runs[i].xfers.data());
    const auto many = entries(PEACH2_DMA_MAX_XFERS * 2 + 3);
    split_runs(many, false, &runs);
    ASSERT_EQ(3u, runs.size());
    EXPECT_EQ(PEACH2_DMA_MAX_XFERS, runs[1].xfers.size());
    EXPECT_EQ(3u, runs[2].xfers.size());
    split_runs({}, false, &runs);
    EXPECT_TRUE(runs.empty());
}

TEST(DmaRuns, OneRunNonBlocking) {
    Fixture f;
    f.drv.auto_done = false;
    const auto v = entries(3);
    std::vector<DmaRun> runs;
    split_runs(v, false, &runs);
    DmaMode m;
    m.desc = PEACH2_DMA_HOST_DESC;
    m.channel = 2;
    tcaDmaTicket t{};
    ASSERT_EQ(0, start_runs(f.starter, runs, m, &t));
    ASSERT_EQ(1u, f.drv.starts.size());
    EXPECT_EQ(PEACH2_DMA_HOST_DESC | PEACH2_DMA_REAP, f.drv.starts[0].flags)
        << "a single run asks to be collected if it ends in its start";
    EXPECT_EQ(2u, f.drv.starts[0].channel);
    EXPECT_EQ(3u, f.drv.starts[0].count);
    EXPECT_EQ(1u, t.next);
    EXPECT_EQ(1u, t.left);
    EXPECT_EQ(-ETIMEDOUT, collect_ticket(f.drv, &t, 0, true));  // still running
    EXPECT_EQ(1u, t.left);
    f.drv.finish(1, PEACH2_ERR_LINK_DOWN);
    EXPECT_EQ(TCA_EDMA, collect_ticket(f.drv, &t, 0, true));
    EXPECT_EQ(0u, t.left);
    EXPECT_EQ(static_cast<std::uint32_t>(PEACH2_ERR_LINK_DOWN), t.status);
    // Collected: answering again needs no driver.
    const std::size_t n = f.drv.waits.size();
    EXPECT_EQ(TCA_EDMA, collect_ticket(f.drv, &t, 0, false));
    EXPECT_EQ(n, f.drv.waits.size());
}

TEST(DmaRuns, OneRunBlockingStartsThenWaits) {
    Fixture f;
    const auto v = entries(1);
    std::vector<DmaRun> runs;
    split_runs(v, false, &runs);
    DmaMode m;
    m.wait = true;
    m.timeout_ms = 500;
    tcaDmaTicket t{};
    ASSERT_EQ(0, start_runs(f.starter, runs, m, &t));
    ASSERT_EQ(1u, f.drv.starts.size());
    EXPECT_EQ(0u, f.drv.starts[0].flags & PEACH2_DMA_WAIT)
        << "no inline wait: it would hold the start-order lock while waiting";
    EXPECT_EQ(0u, f.drv.starts[0].timeout_ms);
    EXPECT_EQ((std::vector<std::uint64_t>{1}), f.drv.waits);
    EXPECT_EQ(0u, t.left);

    f.drv.auto_status = PEACH2_ERR_DMA_ABORTED;
    EXPECT_EQ(TCA_EDMA, start_runs(f.starter, runs, m, &t));
    EXPECT_EQ(static_cast<std::uint32_t>(PEACH2_ERR_DMA_ABORTED), t.status);
}

TEST(DmaRuns, RunEndedInItsStartNeedsNoWait) {
    Fixture f;
    f.drv.reaps = true;
    const auto v = entries(1);
    std::vector<DmaRun> runs;
    split_runs(v, false, &runs);
    DmaMode m;
    tcaDmaTicket t{};
    ASSERT_EQ(0, start_runs(f.starter, runs, m, &t));  // non-blocking
    EXPECT_EQ(1u, t.next);
    EXPECT_EQ(0u, t.left) << "collected by the start";
    EXPECT_EQ(0, collect_ticket(f.drv, &t, 0, true));
    m.wait = true;
    ASSERT_EQ(0, start_runs(f.starter, runs, m, &t));  // blocking
    EXPECT_EQ(0u, t.left);
    EXPECT_TRUE(f.drv.waits.empty()) << "no DMA_WAIT for a run the start collected";

    // A card error travels in the ticket: at once when blocking, at the wait if not.
    f.drv.auto_status = PEACH2_ERR_LINK_DOWN;
    EXPECT_EQ(TCA_EDMA, start_runs(f.starter, runs, m, &t));
    EXPECT_EQ(static_cast<std::uint32_t>(PEACH2_ERR_LINK_DOWN), t.status);
    m.wait = false;
    ASSERT_EQ(0, start_runs(f.starter, runs, m, &t));
    EXPECT_EQ(0u, t.left);
    EXPECT_EQ(TCA_EDMA, collect_ticket(f.drv, &t, 0, true));
    EXPECT_EQ(static_cast<std::uint32_t>(PEACH2_ERR_LINK_DOWN), t.status);
    EXPECT_TRUE(f.drv.waits.empty());

    // Several runs keep consecutive tickets: none is collected by its start.
    f.drv.auto_status = 0;
    const auto v3 = entries(3);
    std::vector<DmaRun> runs3;
    split_runs(v3, true, &runs3);
    ASSERT_EQ(0, start_runs(f.starter, runs3, m, &t));
    for (std::size_t i = 4; i < f.drv.starts.size(); ++i)
        EXPECT_EQ(0u, f.drv.starts[i].flags & PEACH2_DMA_REAP);
    EXPECT_EQ(3u, t.left);
    EXPECT_EQ(0, collect_ticket(f.drv, &t, 0, true));
}

TEST(DmaRuns, BlockingTimeoutLeavesAValidTicket) {
    Fixture f;
    f.drv.auto_done = false;
    const auto v = entries(1);
    std::vector<DmaRun> runs;
    split_runs(v, false, &runs);
    DmaMode m;
    m.wait = true;
    m.timeout_ms = 5;
    tcaDmaTicket t{};
    EXPECT_EQ(-ETIMEDOUT, start_runs(f.starter, runs, m, &t));
    EXPECT_EQ(1u, t.next);
    EXPECT_EQ(1u, t.left);
    f.drv.finish(1);
    EXPECT_EQ(0, collect_ticket(f.drv, &t, 100, false));
}

TEST(DmaRuns, SignalsDoNotEndTheWait) {
    Fixture f;
    f.drv.eintr_waits = 2;
    const auto v = entries(1);
    std::vector<DmaRun> runs;
    split_runs(v, false, &runs);
    DmaMode m;
    m.wait = true;
    tcaDmaTicket t{};
    EXPECT_EQ(0, start_runs(f.starter, runs, m, &t));
    EXPECT_EQ(0u, t.left);
    EXPECT_EQ(3u, f.drv.waits.size());  // two interrupted, one collected
}

TEST(DmaRuns, StartErrorsAreMapped) {
    Fixture f;
    f.drv.fail_start = 1;
    const auto v = entries(1);
    std::vector<DmaRun> runs;
    split_runs(v, false, &runs);
    DmaMode m;
    tcaDmaTicket t{7, 7, 7};
    EXPECT_EQ(TCA_ENODESC, start_runs(f.starter, runs, m, &t));  // -ENOSPC
    EXPECT_EQ(0u, t.left);
    f.drv.starts.clear();
    f.drv.fail_rc = -EAGAIN;
    EXPECT_EQ(-EAGAIN, start_runs(f.starter, runs, m, &t));
    EXPECT_EQ(TCA_ENODESC, driver_error(-ENOSPC));
    EXPECT_EQ(-EINVAL, driver_error(-EINVAL));
    EXPECT_EQ(-EBUSY, driver_error(-EBUSY));
}

TEST(DmaRuns, SeveralRunsShareOneChannelAndConsecutiveTickets) {
    Fixture f;
    f.drv.auto_done = false;
    f.drv.last = 40;
    const auto v = entries(4);
    std::vector<DmaRun> runs;
    split_runs(v, true, &runs);
    DmaMode m;
    m.desc = PEACH2_DMA_REG_MODE;  // any channel: the library picks one
    tcaDmaTicket t{};
    ASSERT_EQ(0, start_runs(f.starter, runs, m, &t));
    ASSERT_EQ(4u, f.drv.starts.size());
    for (const auto& s : f.drv.starts) {
        EXPECT_EQ(f.drv.starts[0].channel, s.channel);
        EXPECT_LT(s.channel, PEACH2_DMA_CHANNELS);
        EXPECT_EQ(PEACH2_DMA_REG_MODE, s.flags);
        EXPECT_EQ(1u, s.count);
    }
    EXPECT_EQ(41u, t.next);
    EXPECT_EQ(4u, t.left);
    // The next several-run start goes to another channel.
    tcaDmaTicket t2{};
    ASSERT_EQ(0, start_runs(f.starter, runs, m, &t2));
    EXPECT_NE(f.drv.starts[0].channel, f.drv.starts[4].channel);

    // Collected in order; progress survives a timeout; first error wins.
    f.drv.finish(41);
    f.drv.finish(42, PEACH2_ERR_DMA_READ);
    EXPECT_EQ(-ETIMEDOUT, collect_ticket(f.drv, &t, 0, true));
    EXPECT_EQ(43u, t.next);
    EXPECT_EQ(2u, t.left);
    f.drv.finish(43, PEACH2_ERR_LINK_DOWN);
    f.drv.finish(44);
    EXPECT_EQ(TCA_EDMA, collect_ticket(f.drv, &t, 50, false));
    EXPECT_EQ(static_cast<std::uint32_t>(PEACH2_ERR_DMA_READ), t.status);
    EXPECT_EQ(0u, t.left);
}

TEST(DmaRuns, SeveralRunsFixedChannelAndBlocking) {
    Fixture f;
    const auto v = entries(3);
    std::vector<DmaRun> runs;
    split_runs(v, true, &runs);
    DmaMode m;
    m.desc = PEACH2_DMA_REG_MODE;
    m.channel = 1;
    m.wait = true;
    tcaDmaTicket t{};
    ASSERT_EQ(0, start_runs(f.starter, runs, m, &t));
    for (const auto& s : f.drv.starts) {
        EXPECT_EQ(1u, s.channel);
        EXPECT_EQ(0u, s.flags & PEACH2_DMA_WAIT) << "waits after the last start, not inline";
    }
    EXPECT_EQ(0u, t.left);
    EXPECT_EQ((std::vector<std::uint64_t>{1, 2, 3}), f.drv.waits);
}

TEST(DmaRuns, FailureHalfWayWaitsForTheStartedRuns) {
    Fixture f;
    f.drv.fail_start = 3;
    f.drv.fail_rc = -EAGAIN;
    const auto v = entries(5);
    std::vector<DmaRun> runs;
    split_runs(v, true, &runs);
    DmaMode m;
    m.desc = PEACH2_DMA_REG_MODE;
    tcaDmaTicket t{};
    EXPECT_EQ(-EAGAIN, start_runs(f.starter, runs, m, &t));
    EXPECT_EQ(3u, f.drv.starts.size()) << "no start after the failed one";
    EXPECT_EQ((std::vector<std::uint64_t>{1, 2}), f.drv.waits) << "the started runs were collected";
    EXPECT_EQ(0u, t.left);
    EXPECT_TRUE(f.drv.done.empty());
}

TEST(DmaRuns, ChainRunsCarryOnlyTheChain) {
    Fixture f;
    f.drv.chains[11] = f.drv.chains[12] = false;  // created earlier
    std::vector<DmaRun> runs{DmaRun{{}, 11}, DmaRun{{}, 12}};
    DmaMode m;
    m.desc = PEACH2_DMA_HOST_DESC;  // ignored for chains: fixed at creation
    tcaDmaTicket t{};
    ASSERT_EQ(0, start_runs(f.starter, runs, m, &t));
    ASSERT_EQ(2u, f.drv.starts.size());
    EXPECT_EQ(11u, f.drv.starts[0].chain);
    EXPECT_EQ(12u, f.drv.starts[1].chain);
    EXPECT_EQ(0u, f.drv.starts[0].flags) << "several runs: no REAP, no descriptor mode";
    EXPECT_EQ(0u, f.drv.starts[0].count);
}

TEST(DmaTicket, UnknownTicketAndDeadline) {
    ScriptedDriver d;
    tcaDmaTicket t{99, 1, 0};
    EXPECT_EQ(-ENOENT, collect_ticket(d, &t, 10, false));
    d.last = 5;
    t = tcaDmaTicket{5, 1, 0};
    EXPECT_EQ(-ETIMEDOUT, collect_ticket(d, &t, 20, false));
    EXPECT_GE(d.waits.size(), 1u);
    tcaDmaTicket empty{};
    EXPECT_EQ(0, collect_ticket(d, &empty, 0, true));
}

// ---- the start cache -------------------------------------------------------------

namespace {

// A list naming buffer `src` (and buffer `dst`), `n` entries, told apart by `tag`.
std::vector<peach2_xfer> list(std::uint32_t src, std::uint32_t dst, unsigned n,
                              std::uint64_t tag = 0) {
    std::vector<peach2_xfer> v(n);
    for (unsigned i = 0; i < n; ++i) {
        v[i].src_handle = src;
        v[i].dst_handle = dst;
        v[i].src_offset = 4096 * i;
        v[i].dst = tag + 4096 * i;
        v[i].len = 4096;
    }
    return v;
}

struct CacheFixture : Fixture {
    StartCache cache{drv};
    DmaMode m;
    CacheFixture() {
        m.desc = PEACH2_DMA_HOST_DESC;
        drv.reaps = true;  // runs end inside their start, as 1 MiB ones do
    }
    // start() of dma.cpp for one run: 0, and the start's chain id (0: one-shot).
    std::uint32_t start(const std::vector<peach2_xfer>& v) {
        tcaDmaTicket t{};
        EXPECT_EQ(0, start_cached(cache, starter, DmaRun{v, 0}, m, &t));
        EXPECT_EQ(0u, t.left) << "ended in its start";
        return drv.starts.empty() ? 0 : drv.starts.back().chain;
    }
};

}  // namespace

TEST(StartCache, AListSeenTwiceBecomesAChainStartedFromThenOn) {
    CacheFixture f;
    const auto v = list(1, 2, 3);
    EXPECT_EQ(0u, f.start(v)) << "first sighting: one-shot";
    EXPECT_EQ(3u, f.drv.starts[0].count);
    EXPECT_TRUE(f.drv.created.empty());
    const std::uint32_t chain = f.start(v);
    ASSERT_NE(0u, chain) << "second sighting: built and started as a chain";
    ASSERT_EQ(1u, f.drv.created.size());
    EXPECT_EQ(0, std::memcmp(v.data(), f.drv.created[0].data(), v.size() * sizeof v[0]));
    EXPECT_EQ(PEACH2_DMA_REAP, f.drv.starts[1].flags) << "a chain start carries no entries";
    EXPECT_EQ(0u, f.drv.starts[1].count);
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(chain, f.start(v));
    EXPECT_EQ(1u, f.drv.created.size()) << "built once";
    const StartCache::Stats st = f.cache.stats();
    EXPECT_EQ(3u, st.hits) << "the start that built it is no hit";
    EXPECT_EQ(1u, st.built);
}

TEST(StartCache, ListsDifferingInOneByteAreDifferentChains) {
    CacheFixture f;
    const auto a = list(1, 2, 5), b = list(1, 2, 5, 16);
    auto c = a;
    c[2].len = 2048;  // same ends and count: the same hash, not the same list
    const std::vector<peach2_xfer>* lists[] = {&a, &b, &c};
    for (const auto* v : lists) {
        f.start(*v);
        f.start(*v);
    }
    ASSERT_EQ(3u, f.drv.created.size());
    EXPECT_EQ(2048u, f.drv.created[2][2].len);
    EXPECT_EQ(3u, f.cache.size());
}

TEST(StartCache, TheLeastRecentlyUsedChainGoesWhenFull) {
    CacheFixture f;
    std::vector<std::vector<peach2_xfer>> lists;
    for (unsigned i = 0; i <= StartCache::kChains; ++i)
        lists.push_back(list(1, 2, 2, 0x100000ull * i));
    for (std::size_t i = 0; i < StartCache::kChains; ++i) {
        f.start(lists[i]);
        f.start(lists[i]);
    }
    f.start(lists[0]);  // list 0 is now more recent than list 1
    EXPECT_TRUE(f.drv.destroyed.empty());
    f.start(lists.back());
    f.start(lists.back());
    ASSERT_EQ(1u, f.drv.destroyed.size());
    EXPECT_EQ(2u, f.drv.destroyed[0]) << "list 1's chain (the second built)";
    EXPECT_EQ(StartCache::kChains, f.cache.size());
    EXPECT_NE(0u, f.start(lists[0])) << "still kept";
}

TEST(StartCache, ForgettingABufferDestroysEveryChainNamingIt) {
    CacheFixture f;
    const auto by_src = list(7, 0, 2), by_dst = list(1, 7, 2), other = list(1, 2, 2);
    for (const auto* v : {&by_src, &by_dst, &other}) {
        f.start(*v);
        f.start(*v);
    }
    f.cache.forget(7);
    EXPECT_EQ((std::vector<std::uint32_t>{1, 2}), f.drv.destroyed);
    EXPECT_EQ(1u, f.cache.size());
    EXPECT_EQ(0u, f.start(by_src)) << "a forgotten list starts over: seen once";
    EXPECT_NE(0u, f.start(other));
}

TEST(StartCache, ABusyChainIsStartedOneShotAndNotLost) {
    CacheFixture f;
    const auto v = list(1, 2, 2);
    f.start(v);
    const std::uint32_t chain = f.start(v);
    ASSERT_NE(0u, chain);
    f.drv.chains[chain] = true;  // its run goes on
    const std::size_t before = f.drv.starts.size();
    EXPECT_EQ(0u, f.start(v)) << "refused as busy, then one-shot";
    ASSERT_EQ(before + 2, f.drv.starts.size());
    EXPECT_EQ(chain, f.drv.starts[before].chain);
    EXPECT_EQ(2u, f.drv.starts[before + 1].count);
    EXPECT_EQ(1u, f.cache.stats().busy);
    f.drv.chains[chain] = false;
    EXPECT_EQ(chain, f.start(v)) << "kept: used again once idle";
}

TEST(StartCache, AChainInUseOrRunningDiesWhenItIsDone) {
    CacheFixture f;
    const auto v = list(3, 2, 2);
    f.start(v);
    f.start(v);
    const std::uint32_t held = f.cache.acquire(v);  // a start in another thread
    ASSERT_NE(0u, held);
    f.cache.forget(3);
    EXPECT_TRUE(f.drv.destroyed.empty()) << "held: not destroyed under its starter";
    EXPECT_EQ(0u, f.cache.size());
    f.drv.chains[held] = true;  // its start went ahead and runs
    f.cache.release(held, false);
    EXPECT_TRUE(f.drv.destroyed.empty()) << "running: the driver says EBUSY";
    f.drv.chains[held] = false;
    f.start(list(1, 2, 1));  // any later call tries again
    EXPECT_EQ((std::vector<std::uint32_t>{held}), f.drv.destroyed);
    EXPECT_EQ(0u, f.drv.chains.count(held));
}

TEST(StartCache, RefusedCreationsAndOddListsStayOneShot) {
    CacheFixture f;
    f.drv.fail_create = -ENOMEM;
    const auto v = list(1, 2, 2);
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(0u, f.start(v));
    EXPECT_EQ(0u, f.cache.size());
    f.drv.fail_create = 0;
    const auto big = list(1, 2, StartCache::kMaxEntries + 1);
    EXPECT_EQ(0u, f.cache.acquire(big));
    EXPECT_EQ(0u, f.cache.acquire(big)) << "too long: never cached";
    const auto longest = list(1, 2, StartCache::kMaxEntries);
    f.cache.acquire(longest);
    const std::uint32_t chain = f.cache.acquire(longest);
    EXPECT_NE(0u, chain) << "as long as may be kept";
    f.cache.release(chain, false);
    EXPECT_EQ(0u, f.cache.acquire({}));
}
