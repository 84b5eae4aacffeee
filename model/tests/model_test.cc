// Behaviour of the timing model beyond the calibration points: link sharing,
// dependencies inside and across nodes, hops, host time, determinism, and
// traces with missing parts or bad fields.
#include <gtest/gtest.h>

#include <algorithm>

#include "simulator.h"
#include "synthetic.h"
#include "workload.h"

namespace peach2::model {
namespace {

using trace::DmaMode;

Params params(const std::string& profile = "") {
    std::string err;
    auto p = parse_params(builtin_params(), "built-in", profile, &err);
    EXPECT_TRUE(p) << err;
    return p ? *p : Params{};
}

struct Result {
    Workload w;
    Prediction p;
    // Predicted time of operation i, µs.
    double op_us(size_t i) const { return us(p.ops.at(i).end - p.ops.at(i).begin); }
    const ResourceUse* resource(const std::string& name) const {
        for (const auto& r : p.resources)
            if (r.name == name)
                return &r;
        return nullptr;
    }
};

Result replay(const std::vector<trace::TraceFile>& traces, SimOptions opt = {}) {
    std::string err;
    auto w = build_workload(traces, &err);
    EXPECT_TRUE(w) << err;
    Result r{w ? std::move(*w) : Workload{}, {}};
    r.p = simulate(r.w, params(), opt);
    return r;
}

Result replay(const SyntheticRun& run, SimOptions opt = {}) { return replay(run.traces(), opt); }

SyntheticRun make(const std::string& topology) {
    std::string err;
    auto run = SyntheticRun::create(topology, &err);
    EXPECT_TRUE(run) << err;
    return std::move(*run);
}

constexpr uint32_t kMiB = 1 << 20;

TEST(Model, FlowsSharingALinkDivideIt) {
    // ring:4: 0 -> 2 goes 0E -> 1E, 1 -> 3 goes 1E -> 2E: both use node 1's E.
    auto solo = make("ring:4");
    solo.dma(0, 0, DmaMode::ChainHost, {{2, 0, kMiB}});
    const Result alone = replay(solo);
    ASSERT_EQ(alone.w.ops.size(), 1u);

    auto both = make("ring:4");
    both.dma(0, 0, DmaMode::ChainHost, {{2, 0, kMiB}});
    both.dma(1, 0, DmaMode::ChainHost, {{3, 0, kMiB}});
    const Result shared = replay(both);
    ASSERT_EQ(shared.w.ops.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        const double ratio = shared.op_us(i) / alone.op_us(0);
        EXPECT_GT(ratio, 1.7) << "flow " << i;
        EXPECT_LT(ratio, 2.2) << "flow " << i;
    }
    // The shared link is the busy one, near its 3.66 GB/s.
    const ResourceUse* link = shared.resource("node1 link E");
    ASSERT_TRUE(link);
    EXPECT_EQ(link->bytes, 2u * kMiB);
    EXPECT_GT(static_cast<double>(link->busy) / static_cast<double>(shared.p.end), 0.9);
    const double total_gbps = 2.0 * kMiB / 1e3 / us(shared.p.end);
    EXPECT_LT(total_gbps, params().link_payload_gbps());
}

TEST(Model, HaloExchangeOnA4x4GridSharesLinks) {
    // Paper 000 §5.2: a 4 x 4 decomposition on two rings of 8 cannot avoid
    // sharing links. Every rank sends a 256 KiB halo to each grid neighbour.
    auto run = make("double-ring:8");
    constexpr uint32_t kHalo = 256 * 1024;
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    for (uint32_t r = 0; r < 16; ++r) {
        const uint32_t row = r / 4, col = r % 4;
        uint8_t ch = 0;
        std::vector<uint32_t> peers;
        if (col > 0)
            peers.push_back(r - 1);
        if (col < 3)
            peers.push_back(r + 1);
        if (row > 0)
            peers.push_back(r - 4);
        if (row < 3)
            peers.push_back(r + 4);
        for (uint32_t peer : peers) {
            run.dma(r, ch++, DmaMode::ChainHost, {{peer, 0x100000 + r * 0x40000ull, kHalo}});
            pairs.emplace_back(r, peer);
        }
    }
    const Result halo = replay(run);
    EXPECT_TRUE(halo.p.warnings.empty());
    // One neighbour exchange alone, for comparison.
    auto one = make("double-ring:8");
    one.dma(0, 0, DmaMode::ChainHost, {{1, 0x100000, kHalo}});
    const double alone_us = us(replay(one).p.end);
    uint64_t busiest = 0;
    for (const auto& r : halo.p.resources)
        if (r.name.find("link") != std::string::npos)
            busiest = std::max(busiest, r.bytes);
    EXPECT_GE(busiest, 2ull * kHalo) << "no link carries two halos";
    // The run cannot beat its busiest link, and takes longer than one exchange.
    EXPECT_GE(us(halo.p.end), busiest / 1e3 / params().link_payload_gbps());
    EXPECT_GT(us(halo.p.end), 1.5 * alone_us);
}

TEST(Model, PingPongRepliesWaitForTheMessage) {
    auto run = make("2");
    run.dma(0, 0, DmaMode::ChainCard, {{1, 0, 64 * 1024}});
    run.pio(1, 0, 0, 8);
    const Result r = replay(run);
    ASSERT_EQ(r.w.ops.size(), 2u);
    // The reply is issued only after the DMA's last byte arrived (and was seen).
    EXPECT_GE(r.p.ops[1].begin, r.p.ops[0].end);
    EXPECT_LT(r.p.ops[1].begin, r.p.ops[0].end + 1000000);  // within 1 µs
}

// Hand-written traces for runs the synthetic builder does not order this way.
struct Writer {
    uint32_t nodes;
    std::vector<std::vector<trace::Record>> recs;
    std::vector<uint64_t> number;
    explicit Writer(uint32_t n) : nodes(n), recs(n), number(n * n) {
        add(0, trace::link_state(trace::kPortE, true, 0, 1, trace::kPortW));
        add(1, trace::link_state(trace::kPortW, true, 1, 0, trace::kPortE));
    }
    void add(uint32_t node, trace::Record r) {
        r.seq = recs[node].size();
        r.t_emu_ns = r.t_host_ns = 1000 * (r.seq + 1);
        recs[node].push_back(r);
    }
    // A DMA data packet of `run` from 0 to 1, and its delivery.
    void dma_packet(uint8_t ch, uint64_t run, uint32_t len) {
        const uint64_t n = number[1]++;
        add(0, trace::pkt_send(trace::Origin::Dma, trace::kPortE, 1ull << 31, len, 0, 1, n, ch, run,
                               0));
        add(1, trace::pkt_recv(trace::RecvKind::Memory, trace::kPortW, 1ull << 31, len, 0, 1, n));
    }
    std::vector<trace::TraceFile> files() const {
        std::vector<trace::TraceFile> out;
        for (uint32_t i = 0; i < nodes; ++i) {
            trace::TraceFile f;
            f.path = "node" + std::to_string(i);
            f.header = trace::make_header(i, nodes, "test");
            f.records = recs[i];
            f.closed = true;
            out.push_back(f);
        }
        return out;
    }
};

TEST(Model, ARunStartedAfterACompletionWaitsForIt) {
    for (bool waited : {true, false}) {
        Writer t(2);
        t.add(0, trace::dma_start(0, DmaMode::ChainCard, 0, 0));
        t.add(0, trace::dma_desc(0, DmaMode::ChainCard, 0, 0x1000, 1ull << 31, 1 << 20, 0, 0,
                                 trace::kDescLast));
        for (int i = 0; i < 256; ++i)
            t.dma_packet(0, 0, 4096);
        if (waited)
            t.add(0, trace::dma_done(0, 0, 0, 1 << 20, 1));
        t.add(0, trace::dma_start(1, DmaMode::ChainCard, 1, 1));
        t.add(0, trace::dma_desc(1, DmaMode::ChainCard, 1, 0x1000, 1ull << 31, 8, 0, 0,
                                 trace::kDescLast));
        t.dma_packet(1, 1, 8);
        t.add(0, trace::dma_done(1, 1, 0, 8, 1));
        if (!waited)
            t.add(0, trace::dma_done(0, 0, 0, 1 << 20, 1));
        const Result r = replay(t.files());
        ASSERT_EQ(r.w.ops.size(), 2u);
        const Time a_done = r.p.run_done[0], b_begin = r.p.ops[1].begin;
        if (waited)
            EXPECT_GE(b_begin, a_done) << "the second run must wait for the first one's end";
        else
            EXPECT_LT(b_begin, a_done) << "nothing in the trace makes the second run wait";
    }
}

TEST(Model, EachHopAddsForwardingLatency) {
    const auto one_way = [](uint32_t to) {
        auto run = make("ring:4");
        run.pio(0, to, 0, 8);
        const Result r = replay(run);
        return static_cast<double>(r.p.ops.at(0).end - r.p.ops.at(0).begin) / 1e3;  // ns
    };
    const Params p = params();
    const double extra = one_way(2) - one_way(1);
    EXPECT_GT(extra, p.card_hop_ns + p.link_flight_ns);
    EXPECT_LT(extra, p.card_hop_ns + p.link_flight_ns + 60);  // plus a TLP's wire time
}

TEST(Model, HostTimeCountsOnlyWhenScaled) {
    auto run = make("2");
    run.pio(0, 1, 0, 8);
    run.host_time(0, 10000);  // 10 µs of host code (emulated) before the next put
    run.pio(0, 1, 64, 8);
    const double plain = us(replay(run).p.end);
    const double scaled = us(replay(run, {.host_scale = 0.5}).p.end);
    EXPECT_NEAR(scaled - plain, 5.0, 0.3);
}

TEST(Model, SameTracesSamePredictionInAnyOrder) {
    auto run = make("ring:4");
    for (uint32_t i = 0; i < 4; ++i) {
        run.dma(i, 0, DmaMode::ChainHost, {{(i + 1) % 4, 0, 100000}, {(i + 2) % 4, 0, 50000}});
        run.pio(i, (i + 3) % 4, 0, 512);
        run.read_proxy(i, (i + 2) % 4, 1, 8192);
    }
    auto traces = run.traces();
    const Result a = replay(traces);
    const Result b = replay(traces);
    std::reverse(traces.begin(), traces.end());
    const Result c = replay(traces);
    EXPECT_EQ(a.p.end, b.p.end);
    EXPECT_EQ(a.p.delivered, b.p.delivered);
    EXPECT_EQ(a.p.run_done, b.p.run_done);
    EXPECT_EQ(a.p.end, c.p.end);
    EXPECT_EQ(a.p.run_done, c.p.run_done);
    EXPECT_EQ(a.p.events, c.p.events);
}

TEST(Model, ReportsLinkUseOfAStream) {
    auto run = make("2");
    run.dma(0, 0, DmaMode::ChainHost, {{1, 0, 8 * kMiB}});
    const Result r = replay(run);
    const ResourceUse* link = r.resource("node0 link E");
    ASSERT_TRUE(link);
    EXPECT_EQ(link->bytes, 8u * kMiB);
    EXPECT_EQ(link->packets, 2048u);
    // The DMA datapath (3.5 GB/s) is the bottleneck, the link (3.66) nearly full.
    EXPECT_GT(static_cast<double>(link->busy) / static_cast<double>(r.p.end), 0.9);
    EXPECT_NEAR(8.0 * kMiB / 1e3 / r.op_us(0), 3.5, 0.1);
}

TEST(Model, MissingTracesAndDroppedRecordsStillGiveAPrediction) {
    auto run = make("ring:3");
    for (int i = 0; i < 5; ++i) {
        run.dma(0, 0, DmaMode::ChainHost, {{2, 0, 8192}});
        run.pio(2, 0, 0, 8);
    }
    auto traces = run.traces();
    // Only node 0: node 2's replies have no recorded sender.
    Result r = replay({traces[0]});
    EXPECT_GT(r.w.unmatched, 0u);
    EXPECT_GT(r.p.end, 0);
    // Node 1's trace missing: its forwarding comes from the cables.
    r = replay({traces[0], traces[2]});
    EXPECT_TRUE(r.p.warnings.empty());
    EXPECT_GT(r.p.end, 0);
    // Every third record dropped from node 0 and node 2.
    auto thin = traces;
    for (uint32_t n : {0u, 2u}) {
        std::vector<trace::Record> kept;
        for (size_t i = 0; i < thin[n].records.size(); ++i)
            if (i % 3 != 1)
                kept.push_back(thin[n].records[i]);
        thin[n].dropped = thin[n].records.size() - kept.size();
        thin[n].records = kept;
    }
    r = replay(thin);
    EXPECT_GT(r.p.end, 0);
}

// Cluster.restart_node: node 1's emulator starts again, its new trace replaces
// the old one and numbers its packets from 0 again, while node 0's trace still
// holds the deliveries of the first instance's packets.
TEST(Model, ARestartedNodesNewTraceMatchesOnlyItsOwnPackets) {
    auto first = make("2"), second = make("2");
    for (int i = 0; i < 3; ++i)
        first.pio(1, 0, 0, 8);
    for (int i = 0; i < 2; ++i)
        second.pio(1, 0, 0, 8);
    auto before = first.traces(), after = second.traces();
    uint64_t restart = 0;
    for (const auto& r : before[0].records)
        restart = std::max(restart, r.t_host_ns + 1000);
    auto traces = after;
    traces[1].header.t_host_ns = restart;
    for (auto& r : traces[1].records)
        r.t_host_ns += restart;
    traces[0].records = before[0].records;
    for (auto r : after[0].records) {
        r.t_host_ns += restart;
        traces[0].records.push_back(r);
    }
    std::string err;
    auto w = build_workload(traces, &err);
    ASSERT_TRUE(w) << err;
    EXPECT_EQ(w->earlier_instance, 3u);
    EXPECT_EQ(w->unmatched, 0u);
    unsigned received = 0;
    for (const auto& p : w->packets)
        received += p.received;
    EXPECT_EQ(received, 2u);
    // Without the restart (the same trace start), the old deliveries are
    // the new packets' second delivery: an error naming it.
    traces[1].header.t_host_ns = 0;
    EXPECT_FALSE(build_workload(traces, &err));
    EXPECT_NE(err.find("delivered twice"), std::string::npos) << err;
}

TEST(Model, BadFieldsAreErrorsNamingFileAndRecord) {
    auto run = make("2");
    run.dma(0, 0, DmaMode::ChainHost, {{1, 0, 4096}});
    const auto good = run.traces();
    const auto error_with = [&](auto change) {
        auto t = good;
        change(t[0].records);
        std::string err;
        auto w = build_workload(t, &err);
        return w ? std::string() : err;
    };
    const auto find = [&](trace::Type type) {
        for (size_t i = 0; i < good[0].records.size(); ++i)
            if (good[0].records[i].type == type)
                return i;
        return size_t{0};
    };
    const size_t send = find(trace::Type::PktSend), start = find(trace::Type::DmaStart);
    std::string e = error_with([&](auto& r) { r[send].len = 0; });
    EXPECT_NE(e.find("synthetic/node0.p2trace: record " + std::to_string(send) +
                     " (PKT_SEND): packet of 0 bytes"),
              std::string::npos)
        << e;
    e = error_with([&](auto& r) { r[send].port = 9; });
    EXPECT_NE(e.find("leaving by port 9"), std::string::npos) << e;
    e = error_with([&](auto& r) { r[start].unit = 7; });
    EXPECT_NE(e.find("(DMA_START): channel 7"), std::string::npos) << e;
    e = error_with([&](auto& r) { r[send].src_node = 1; });
    EXPECT_NE(e.find("sent by node 0"), std::string::npos) << e;
    e = error_with([&](auto& r) { r.push_back(r[send]); });
    EXPECT_NE(e.find("recorded twice"), std::string::npos) << e;
}

}  // namespace
}  // namespace peach2::model
