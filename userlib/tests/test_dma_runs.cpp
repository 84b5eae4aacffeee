// SPDX-License-Identifier: MIT
// Starting runs and collecting tickets, against a scripted driver: blocking
// starts, several-run starts on one channel with consecutive tickets, a
// start failing half-way, timeouts, signals, card errors, errno mapping.
#include <gtest/gtest.h>
#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>
#include <tca/tca.h>

#include <atomic>
#include <cerrno>
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

    int call(unsigned long req, void* arg) noexcept override {
        if (req == PEACH2_IOC_DMA_START) {
            auto* s = static_cast<peach2_dma_start*>(arg);
            starts.push_back({s->chain, s->count, s->flags, s->channel, s->timeout_ms});
            if (fail_start && static_cast<int>(starts.size()) == fail_start)
                return fail_rc;
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
