// Bad traces never crash or hang the reader or the model (this binary runs
// under ASan/UBSan in make check): mutated files, and random records that
// are each well formed but make no sense together.
#include <gtest/gtest.h>

#include <random>

#include "simulator.h"
#include "synthetic.h"
#include "workload.h"

namespace peach2::model {
namespace {

struct Rng {
    std::mt19937_64 g;
    explicit Rng(uint64_t seed) : g(seed) {}
    uint64_t operator()() { return g(); }
    uint64_t below(uint64_t n) { return n ? g() % n : 0; }
};

Params builtin() {
    std::string err;
    auto p = parse_params(builtin_params(), "built-in", "", &err);
    return p ? *p : Params{};
}

// Reads, builds and simulates; returns how far it got (0 read error, 1 build
// error, 2 simulated).
int run_all(const std::vector<std::vector<uint8_t>>& files, bool partial, const Params& p) {
    std::vector<trace::TraceFile> traces;
    std::string err;
    for (size_t i = 0; i < files.size(); ++i) {
        auto f =
            trace::read_bytes(files[i], "fuzz" + std::to_string(i), {.partial = partial}, &err);
        if (!f) {
            EXPECT_FALSE(err.empty());
            return 0;
        }
        traces.push_back(std::move(*f));
    }
    auto w = build_workload(traces, &err);
    if (!w) {
        EXPECT_FALSE(err.empty());
        return 1;
    }
    const Prediction pred = simulate(*w, p);
    EXPECT_GE(pred.end, 0);
    return 2;
}

TEST(Fuzz, MutatedTraceFilesGiveErrorsOrPredictions) {
    auto run = SyntheticRun::create("ring:3", nullptr);
    for (uint32_t i = 0; i < 3; ++i) {
        run->pio(i, (i + 1) % 3, 0x1000, 300);
        run->dma(i, static_cast<uint8_t>(i), trace::DmaMode::ChainHost,
                 {{(i + 2) % 3, 0x2000, 9000}, {(i + 1) % 3, 0x3000, 8, 1, true}});
        run->read_proxy(i, (i + 1) % 3, static_cast<uint8_t>(1 + i), 128);
    }
    std::vector<std::vector<uint8_t>> good;
    for (uint32_t n = 0; n < 3; ++n)
        good.push_back(run->file_bytes(n));
    const Params p = builtin();
    int reached[3] = {0, 0, 0};
    for (uint64_t seed = 1; seed <= 1500; ++seed) {
        Rng r(seed);
        auto files = good;
        auto& f = files[r.below(3)];
        const unsigned mutations = 1 + static_cast<unsigned>(r.below(6));
        for (unsigned m = 0; m < mutations && !f.empty(); ++m) {
            switch (r.below(6)) {
            case 0: f[r.below(f.size())] ^= static_cast<uint8_t>(1u << r.below(8)); break;
            case 1: f[r.below(f.size())] = static_cast<uint8_t>(r()); break;
            case 2: {  // a field of a record: small values hit the checks
                const size_t rec = 64 + 64 * r.below((f.size() - 64) / 64);
                const size_t off = rec + r.below(64);
                if (off < f.size())
                    f[off] = static_cast<uint8_t>(r.below(20));
                break;
            }
            case 3: f.resize(r.below(f.size() + 1)); break;
            case 4: {  // duplicate a record
                const size_t rec = 64 + 64 * r.below((f.size() - 64) / 64);
                if (rec + 64 <= f.size())
                    f.insert(f.begin() + rec, f.begin() + rec, f.begin() + rec + 64);
                break;
            }
            case 5: {  // swap two records
                const size_t n = (f.size() - 64) / 64;
                const size_t a = 64 + 64 * r.below(n), b = 64 + 64 * r.below(n);
                if (a + 64 <= f.size() && b + 64 <= f.size())
                    std::swap_ranges(f.begin() + a, f.begin() + a + 64, f.begin() + b);
                break;
            }
            }
        }
        ++reached[run_all(files, r.below(2), p)];
    }
    // The fuzzing reaches every stage.
    EXPECT_GT(reached[0], 20);
    EXPECT_GT(reached[1], 20);
    EXPECT_GT(reached[2], 20);
}

TEST(Fuzz, RandomWellFormedRecordsNeverCrashOrHang) {
    // Each record is valid on its own (mostly), but runs, packets and
    // deliveries are thrown together at random: orphans, waits for packets
    // that never come, deliveries of packets sent later, loops in routes.
    const Params p = builtin();
    int simulated = 0;
    for (uint64_t seed = 1; seed <= 300; ++seed) {
        Rng r(seed);
        const uint32_t nodes = 2 + static_cast<uint32_t>(r.below(3));
        std::vector<trace::TraceFile> traces(nodes);
        std::vector<uint64_t> number(nodes * nodes);
        for (uint32_t n = 0; n < nodes; ++n) {
            auto& t = traces[n];
            t.path = "random" + std::to_string(n);
            t.header = trace::make_header(n, nodes, "fuzz");
            t.closed = true;
            uint64_t runs = 0;
            uint8_t last_channel = 0;
            const auto node = [&] { return static_cast<uint16_t>(r.below(nodes)); };
            const auto cable = [&] { return static_cast<uint8_t>(1 + r.below(3)); };
            for (uint64_t i = 0; i < 150; ++i) {
                trace::Record rec;
                const uint16_t dst = node();
                switch (r.below(9)) {
                case 0: rec = trace::link_state(cable(), true, n, node(), cable()); break;
                case 1: {
                    const auto origin = static_cast<trace::Origin>(1 + r.below(5));
                    rec = trace::pkt_send(origin, dst == n ? trace::kPortN : cable(), r(),
                                          static_cast<uint32_t>(1 + r.below(4096)), n, dst,
                                          number[n * nodes + dst]++, last_channel,
                                          r.below(runs + 1), static_cast<uint32_t>(r.below(3)));
                    break;
                }
                case 2:
                    rec = trace::pkt_fwd(cable(), cable(), r(), 64, node(),
                                         static_cast<uint16_t>((n + 1) % nodes), r.below(20));
                    break;
                case 3:
                    rec = trace::pkt_recv(static_cast<trace::RecvKind>(1 + r.below(3)),
                                          static_cast<uint8_t>(r.below(4)), r(), 64, node(), n,
                                          r.below(20), static_cast<uint8_t>(r.below(2) * 23),
                                          static_cast<uint8_t>(1 + r.below(3)), r.below(5));
                    break;
                case 4:
                    last_channel = static_cast<uint8_t>(r.below(trace::kChannels));
                    rec = trace::dma_start(last_channel,
                                           static_cast<trace::DmaMode>(1 + r.below(3)), 0, runs++);
                    break;
                case 5:
                    rec = trace::dma_desc(last_channel, static_cast<trace::DmaMode>(1 + r.below(3)),
                                          runs ? runs - 1 : 0, r.below(5), r(),
                                          static_cast<uint32_t>(r.below(1 << 20)), 0, 0,
                                          static_cast<uint32_t>(r.below(32)));
                    break;
                case 6:
                    rec = trace::dma_done(static_cast<uint8_t>(r.below(trace::kChannels)),
                                          r.below(runs + 1), 0, 0, 1);
                    break;
                case 7: rec = trace::irq(static_cast<uint8_t>(r.below(8)), 1); break;
                case 8:
                    rec = trace::rp_request(static_cast<uint8_t>(1 + r.below(3)), n, dst, 0, 8,
                                            r.below(5), number[n * nodes + dst]);
                    break;
                }
                if (r.below(1000) == 0)  // now and then a field out of range
                    rec.port = static_cast<uint8_t>(r.below(256));
                rec.seq = i;
                rec.t_emu_ns = rec.t_host_ns = i * 100 + r.below(100);
                t.records.push_back(rec);
            }
        }
        std::string err;
        auto w = build_workload(traces, &err);
        if (!w) {
            EXPECT_FALSE(err.empty());
            continue;
        }
        const Prediction pred = simulate(*w, p);
        EXPECT_GE(pred.end, 0);
        ++simulated;
    }
    EXPECT_GT(simulated, 30);
}

}  // namespace
}  // namespace peach2::model
