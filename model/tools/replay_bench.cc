// peach2-model-bench: how fast peach2-model replays a trace of about N events
// (default 1 M; the goal is under 10 s on the project's 2-core machine).
//
// Builds a synthetic 4-node ring run (halo-like DMA puts with status words,
// PIO puts, gets), writes it as trace files, then times reading them back,
// building the workload and simulating, twice: the two predictions must be
// identical (determinism).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "params.h"
#include "simulator.h"
#include "synthetic.h"
#include "trace_reader.h"
#include "workload.h"

namespace {

using namespace peach2::model;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
    const uint64_t target = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
    constexpr double kGoalSeconds = 10.0;
    if (target == 0) {
        std::fprintf(stderr, "usage: peach2-model-bench [EVENTS]\n");
        return 2;
    }
    std::string err;
    auto params = parse_params(builtin_params(), "built-in", "", &err);
    auto run = SyntheticRun::create("ring:4", &err);
    if (!params || !run) {
        std::fprintf(stderr, "peach2-model-bench: %s\n", err.c_str());
        return 2;
    }
    const uint32_t n = run->nodes();
    std::fprintf(stderr, "building a synthetic trace of %llu events...\n",
                 static_cast<unsigned long long>(target));
    for (uint64_t i = 0; run->records() < target; ++i)
        for (uint32_t node = 0; node < n; ++node) {
            SyntheticRun::Desc data{(node + 1) % n, 0x100000, 64 * 1024};
            SyntheticRun::Desc status{(node + 1) % n, 0x80000, 8, i};
            status.imm = true;
            run->dma(node, static_cast<uint8_t>(i % 4), peach2::trace::DmaMode::ChainHost,
                     {data, status});
            run->pio(node, (node + 2) % n, 0x40000, 64);
            if (i % 8 == 0)
                run->read_proxy(node, (node + 3) % n, 1, 4096);
        }
    const std::string dir = (std::filesystem::temp_directory_path() /
                             ("peach2-model-bench." + std::to_string(getpid())))
                                .string();
    if (!run->write(dir, &err)) {
        std::fprintf(stderr, "peach2-model-bench: %s\n", err.c_str());
        return 2;
    }

    double best[3] = {1e30, 1e30, 1e30};
    Prediction first;
    bool deterministic = true;
    uint64_t events = 0, records = 0;
    for (int round = 0; round < 2; ++round) {
        auto t0 = Clock::now();
        auto traces = peach2::trace::read_run({dir}, {}, &err);
        const double read_s = seconds_since(t0);
        if (!traces) {
            std::fprintf(stderr, "peach2-model-bench: %s\n", err.c_str());
            return 2;
        }
        t0 = Clock::now();
        auto w = build_workload(*traces, &err);
        const double build_s = seconds_since(t0);
        if (!w) {
            std::fprintf(stderr, "peach2-model-bench: %s\n", err.c_str());
            return 2;
        }
        records = w->records;
        traces->clear();
        t0 = Clock::now();
        Prediction p = simulate(*w, *params);
        const double sim_s = seconds_since(t0);
        events = p.events;
        best[0] = std::min(best[0], read_s);
        best[1] = std::min(best[1], build_s);
        best[2] = std::min(best[2], sim_s);
        if (round == 0)
            first = std::move(p);
        else
            deterministic = first.end == p.end && first.delivered == p.delivered &&
                            first.run_done == p.run_done;
    }
    std::filesystem::remove_all(dir);
    const double total = best[0] + best[1] + best[2];
    std::printf("peach2-model replay speed (best of 2; synthetic ring:4 trace)\n");
    std::printf(
        "| trace records | read s | build s | simulate s | total s | records/s | model events | "
        "goal |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    std::printf("| %llu | %.2f | %.2f | %.2f | %.2f | %.2f M | %llu | < %.0f s (%s) |\n",
                static_cast<unsigned long long>(records), best[0], best[1], best[2], total,
                records / total / 1e6, static_cast<unsigned long long>(events), kGoalSeconds,
                total < kGoalSeconds ? "met" : "NOT met");
    std::printf("predicted run time %.3f ms; same prediction twice: %s\n", us(first.end) / 1e3,
                deterministic ? "yes" : "NO");
    return deterministic ? 0 : 1;
}
