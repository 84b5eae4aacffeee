// The papers' experiments as synthetic traces (see calibration.h).
#include "calibration.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "simulator.h"
#include "synthetic.h"
#include "workload.h"

namespace peach2::model {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr unsigned kRounds = 4;  // ping-pong round trips per measurement

struct Replay {
    Workload w;
    Prediction p;
};

std::optional<Replay> replay(const SyntheticRun& run, const Params& params) {
    std::string err;
    auto w = build_workload(run.traces(), &err);
    if (!w)
        return std::nullopt;
    Replay r{std::move(*w), {}};
    r.p = simulate(r.w, params);
    if (!r.p.warnings.empty())
        return std::nullopt;
    return r;
}

// When node 0's program finished its last step.
double user_end_us(const Replay& r) { return us(r.p.context_end[0 * kActors]); }

}  // namespace

double pio_pingpong_us(const Params& p, uint32_t bytes, const std::string& topology,
                       uint32_t peer) {
    auto run = SyntheticRun::create(topology, nullptr);
    if (!run || peer >= run->nodes() || peer == 0)
        return kNaN;
    for (unsigned i = 0; i < kRounds; ++i) {
        run->pio(0, peer, 0x10000, bytes);
        run->pio(peer, 0, 0x10000, bytes);
    }
    auto r = replay(*run, p);
    return r ? user_end_us(*r) / (2 * kRounds) : kNaN;
}

double dma_pingpong_us(const Params& p, trace::DmaMode mode, uint32_t bytes, bool status_word) {
    auto run = SyntheticRun::create("2", nullptr);
    for (unsigned i = 0; i < kRounds; ++i)
        for (uint32_t from : {0u, 1u}) {
            const uint32_t to = 1 - from;
            std::vector<SyntheticRun::Desc> d{{to, 0x100000, bytes}};
            if (status_word && mode != trace::DmaMode::Register) {
                SyntheticRun::Desc status{to, 0x80000, 8, i + 1u};
                status.imm = true;
                d.push_back(status);
            }
            run->dma(from, 0, mode, d);
        }
    auto r = replay(*run, p);
    return r ? user_end_us(*r) / (2 * kRounds) : kNaN;
}

double local_dma_us(const Params& p, trace::DmaMode mode, uint32_t descs, uint32_t bytes) {
    auto run = SyntheticRun::create("2", nullptr);
    std::vector<SyntheticRun::Desc> d;
    for (uint32_t i = 0; i < descs; ++i)
        d.push_back({0, 0x200000 + static_cast<uint64_t>(i) * bytes, bytes,
                     0x100000 + static_cast<uint64_t>(i) * bytes});
    run->dma(0, 0, mode, d);
    auto r = replay(*run, p);
    if (!r || r->p.ops.empty() || r->p.run_done[0] == kUnknown)
        return kNaN;
    return us(r->p.run_done[0] - r->p.ops[0].begin) + p.dma_done_notice_ns / 1e3;
}

double register_speedup_pct(const Params& p, uint32_t bytes) {
    const double reg = local_dma_us(p, trace::DmaMode::Register, 1, bytes);
    const double desc = local_dma_us(p, trace::DmaMode::ChainHost, 1, bytes);
    return (desc / reg - 1) * 100;
}

double read_proxy_us(const Params& p, uint8_t op, uint32_t bytes) {
    auto run = SyntheticRun::create("2", nullptr);
    run->read_proxy(0, 1, op, bytes);
    auto r = replay(*run, p);
    if (!r)
        return kNaN;
    for (size_t i = 0; i < r->w.ops.size(); ++i)
        if (r->w.ops[i].kind == OpKind::Get || r->w.ops[i].kind == OpKind::Atomic)
            return r->p.ops[i].end == kUnknown ? kNaN : us(r->p.ops[i].end - r->p.ops[i].begin);
    return kNaN;
}

std::optional<std::vector<Figure>> calibrate(const std::string& text, std::string* err) {
    auto p2013 = parse_params(text, "parameters", "2013", err);
    if (!p2013)
        return std::nullopt;
    auto p2015 = parse_params(text, "parameters", "2015", err);
    if (!p2015)
        return std::nullopt;
    const Params& a = *p2013;  // paper 004's logic
    const Params& b = *p2015;  // paper 000's logic
    using trace::DmaMode;
    std::vector<Figure> f;
    // What the last figure is, for matching benchmark rows with it.
    const auto is = [&](const char* op, const char* mode, const char* metric) {
        f.back().op = op;
        f.back().mode = mode;
        f.back().metric = metric;
    };
    // A figure stated as a value: accepted within 10 % of it.
    const auto near = [&](std::string id, std::string what, std::string source, const Params& prm,
                          std::string unit, double paper, double model, uint32_t bytes = 0) {
        char text_value[32];
        std::snprintf(text_value, sizeof(text_value), "%g", paper);
        f.push_back({std::move(id), std::move(what), std::move(source), prm.profile,
                     std::move(unit), text_value, paper, paper * 0.9, paper * 1.1, model, bytes});
    };

    near("link_peak", "link payload rate, 256 B max payload (derived)", "004 4.1.1", a, "GB/s",
         3.66, a.link_payload_gbps());
    near("pio_latency", "PIO CPU -> remote CPU, 8 B, one way", "004 4.2.3", a, "us", 0.9,
         pio_pingpong_us(a, 8), 8);
    is("PIO put", "-", "latency");
    near("dma_latency_reg", "DMA register mode, 8 B, one way", "004 4.2.3", a, "us", 2.4,
         dma_pingpong_us(a, DmaMode::Register, 8, false), 8);
    is("DMA run", "register", "latency");
    const double dma8k = dma_pingpong_us(a, DmaMode::Register, 8192, false);
    f.push_back({"dma_latency_8k", "DMA register mode, 8 KiB, one way", "004 4.2.3", a.profile,
                 "us", "< 5", 5, 0, 5, dma8k, 8192});
    is("DMA run", "register", "latency");
    near("dma_bw_remote_2013", "DMA between nodes, 4 MiB, max bandwidth", "004 4.2.3", a, "GB/s",
         3.5, 4.0 * 1024 * 1024 / 1e3 / dma_pingpong_us(a, DmaMode::Register, 4 << 20, false),
         4 << 20);
    is("DMA run", "register", "bandwidth");
    const double local128 = local_dma_us(a, DmaMode::ChainHost, 128, 4096);
    near("dma_bw_local", "local DMA, 128 chained 4 KiB host descriptors", "004 4.1.1 fig. 4", a,
         "GB/s", 3.3, 128 * 4096 / 1e3 / local128, 4096);
    const double local4 = local_dma_us(a, DmaMode::ChainHost, 4, 4096);
    near("dma_chain4", "4 chained 4 KiB descriptors, % of the 128-descriptor bandwidth",
         "004 4.1.1 fig. 6", a, "%", 70, (4 * 4096 / local4) / (128 * 4096 / local128) * 100);
    for (uint32_t size : {8u, 2048u}) {
        f.push_back({"reg_speedup_" + std::to_string(size),
                     "register mode faster than 1 host descriptor, local, " +
                         std::string(size == 8 ? "8 B" : "2 KiB"),
                     "004 4.1.1 fig. 5", a.profile, "%", "30-40", 35, 30 * 0.9, 40 * 1.1,
                     register_speedup_pct(a, size), size});
    }
    near("dma_latency_card", "DMA on-card descriptors, 8 B + status, one way", "000 2.6", b, "us",
         2.0, dma_pingpong_us(b, DmaMode::ChainCard, 8, true), 8);
    is("DMA run", "on-card", "latency");
    near("dma_latency_host", "DMA host descriptors, 8 B + status, one way", "000 2.6", b, "us", 2.2,
         dma_pingpong_us(b, DmaMode::ChainHost, 8, true), 8);
    is("DMA run", "host", "latency");
    near("dma_bw_remote_2015", "DMA between nodes, 4 MiB, max bandwidth", "000 2.6", b, "GB/s", 3.5,
         4.0 * 1024 * 1024 / 1e3 / dma_pingpong_us(b, DmaMode::ChainHost, 4 << 20, true), 4 << 20);
    is("DMA run", "host", "bandwidth");
    near("pio_latency_2015", "PIO CPU -> remote CPU, 8 B, one way", "004 4.2.3", b, "us", 0.9,
         pio_pingpong_us(b, 8), 8);
    is("PIO put", "-", "latency");
    near("get_latency", "read-proxy get, 8 B (TCA Verbs RDMA Read)", "000 4.4.3", b, "us", 6.5,
         read_proxy_us(b, 1, 8), 8);
    is("get", "-", "latency");
    near("cas_latency", "read-proxy CAS (TCA Verbs atomic)", "000 4.4.4", b, "us", 6.5,
         read_proxy_us(b, 2, 8), 8);
    is("atomic", "cas", "latency");
    near("faa_latency", "read-proxy FAA (TCA Verbs atomic)", "000 4.4.4", b, "us", 6.5,
         read_proxy_us(b, 3, 8), 8);
    is("atomic", "faa", "latency");
    return f;
}

std::vector<CurvePoint> curves(const Params& p) {
    std::vector<CurvePoint> out;
    const auto add = [&](const char* series, uint32_t bytes, double t) {
        out.push_back({series, bytes, t, bytes / 1e3 / t});
    };
    for (uint32_t b = 8; b <= 4096; b *= 2)
        add("PIO", b, pio_pingpong_us(p, b));
    constexpr uint32_t kMax = 4u << 20;
    for (uint32_t b = 8; b <= kMax; b *= 2)
        add("DMA on-card", b, dma_pingpong_us(p, trace::DmaMode::ChainCard, b, true));
    for (uint32_t b = 8; b <= kMax; b *= 2)
        add("DMA host", b, dma_pingpong_us(p, trace::DmaMode::ChainHost, b, true));
    for (uint32_t b = 8; b <= kMax; b *= 2)
        add("DMA register", b, dma_pingpong_us(p, trace::DmaMode::Register, b, false));
    for (uint32_t b = 8; b <= kMax; b *= 2)
        add("get", b, read_proxy_us(p, 1, b));
    return out;
}

}  // namespace peach2::model
