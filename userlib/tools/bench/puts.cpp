// SPDX-License-Identifier: MIT
// tca_bench's put tests. `pingpong` (the demo) and `dma` are one test with
// two sets of defaults: ping-pong latency and streaming bandwidth through
// link.hpp, per mode and size, every message checked on arrival.
// `crossover` times a blocking PIO put against a blocking DMA put (where
// tcaPutAuto's threshold comes from); `dma-local` is DMA throughput between
// two buffers of one node (no link).
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <span>

#include "../common/pattern.hpp"
#include "../common/results.hpp"
#include "../common/session.hpp"
#include "../common/spin.hpp"
#include "link.hpp"
#include "tests.hpp"

namespace tcabench {
namespace {

using tcatools::Options;
using tcatools::Row;
using tcatools::Session;

constexpr std::uint64_t kMaxSize = 16ull << 20;
constexpr int kServeLimitMs = 3600 * 1000;  // a side that only serves waits this long

struct PutOptions : tcatools::PeerOptions {
    std::vector<Mode> modes;
    std::vector<std::uint64_t> sizes;  // every size of the run
    std::uint64_t min = 4, max = 4096, step = 2;
    std::uint64_t pio_max = kMaxSize;  // PIO latency only up to this size
    LatencyParams latency;
    std::uint64_t stream_bytes = 128ull << 20;  // per size in the stream test
    std::uint64_t stream_min = 4096;            // stream sizes from
    std::uint64_t slots = 4;                    // stream window
    bool no_latency = false, no_stream = false;
    std::string csv;

    // The sizes mode m runs in test t.
    std::vector<std::uint64_t> sizes_for(Mode m, Test t) const {
        std::vector<std::uint64_t> v;
        if ((t == Test::Latency && no_latency) ||
            (t == Test::Stream && (no_stream || m == Mode::Pio)))
            return v;
        for (std::uint64_t s : sizes)
            if (!(m == Mode::Pio && s > pio_max) &&
                !(t == Test::Stream && (s < stream_min || s % 8)))
                v.push_back(s);
        return v;
    }
};

void add_put_options(Options& opts, PutOptions* o) {
    tcatools::add_peer_options(opts, o);
    tcatools::add_modes_option(opts, "modes", &o->modes,
                               "reg (register mode), card (on-card descriptors), host (host "
                               "descriptors), pio (CPU stores)",
                               false);
    opts.u64_list("sizes", &o->sizes, "message sizes (else --min .. --max by --step)");
    opts.u64("min", &o->min, "smallest size");
    opts.u64("max", &o->max, "largest size (up to 16M)");
    opts.u64("step", &o->step, "factor between sizes");
    opts.u64("pio-max", &o->pio_max, "PIO latency only up to this size");
    add_latency_options(opts, &o->latency);
    opts.u64("stream-bytes", &o->stream_bytes, "bytes per size in the stream test");
    opts.u64("stream-min", &o->stream_min, "stream sizes from");
    opts.u64("slots", &o->slots, "stream messages in flight (2..16)");
    opts.flag("no-latency", &o->no_latency, "skip the latency test");
    opts.flag("no-stream", &o->no_stream, "skip the stream test");
    opts.text("csv", &o->csv, "also write the rows to this CSV file");
}

// False after printing what is wrong.
bool check_put_options(PutOptions* o, const char* who) {
    auto bad = [who](const char* why) {
        std::fprintf(stderr, "%s: error: %s (try --help)\n", who, why);
        return false;
    };
    if (o->peer < 0)
        return bad("--peer NODE is required");
    if (o->sizes.empty())
        o->sizes = tcatools::stepped_sizes(o->min, o->max, o->step);
    if (o->sizes.empty())
        return bad("need 1 <= --min <= --max and --step >= 2");
    if (o->sizes.size() > 0xffff)
        return bad("too many sizes");
    const bool dma =
        std::any_of(o->modes.begin(), o->modes.end(), [](Mode m) { return m != Mode::Pio; });
    for (std::uint64_t s : o->sizes)
        if (s == 0 || s > kMaxSize || (dma && s % 4))
            return bad(dma ? "sizes must be multiples of 4 (the DMA length rule), up to 16M"
                           : "sizes must be 1 .. 16M");
    if (o->slots < 2 || o->slots > 16)
        return bad("--slots must be 2 .. 16");
    const LatencyParams& l = o->latency;
    if (l.iters == 0 || l.iters + l.warmup >= 0xffffffffull || l.min_iters == 0)
        return bad("--iters and --min-iters must be >= 1 (iters + warmup < 2^32)");
    if (o->no_latency && o->no_stream)
        return bad("nothing to do: --no-latency and --no-stream");
    return true;
}

int run_puts(const char* name, int argc, char** argv, PutOptions o, const char* about) {
    const std::string who = std::string("tca_bench ") + name;
    Options opts(who, "--peer NODE [options]", about);
    add_put_options(opts, &o);
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    if (!check_put_options(&o, who.c_str()))
        return 1;
    Session s(who);
    if (!s.open(o))
        return 1;
    std::vector<std::uint64_t> agreed = o.sizes;
    for (Mode m : o.modes)
        agreed.push_back(static_cast<std::uint64_t>(m));
    const LatencyParams& l = o.latency;
    const std::uint32_t tag =
        tcatools::tag_of(name,
                         {o.pio_max, l.iters, l.min_iters, l.warmup, l.latency_bytes,
                          o.stream_bytes, o.stream_min, o.slots, o.no_latency, o.no_stream},
                         agreed);
    Link link(s);
    s.say("node %d (%s) <-> node %d; %zu modes, %zu sizes up to %" PRIu64
          " bytes; waiting for the peer",
          s.self(), s.leads() ? "ping" : "pong", o.peer, o.modes.size(), o.sizes.size(),
          *std::max_element(o.sizes.begin(), o.sizes.end()));
    if (!link.connect(*std::max_element(o.sizes.begin(), o.sizes.end()),
                      static_cast<unsigned>(o.slots), tag))
        return 1;
    std::vector<Row> rows;
    std::uint64_t verified = 0;
    for (Mode m : o.modes)
        for (Test t : {Test::Latency, Test::Stream}) {
            const std::vector<std::uint64_t> sizes = o.sizes_for(m, t);
            for (unsigned si = 0; si < sizes.size(); ++si) {
                Row r;
                const bool ok = t == Test::Latency
                                    ? link.latency(m, si, sizes[si], l, &r)
                                    : link.stream(m, si, sizes[si], o.stream_bytes, &r);
                if (!ok)
                    return s.verdict(false,
                                     "in mode %s, %s test, size %" PRIu64 " (after %" PRIu64
                                     " verified messages; see the error above)",
                                     tcatools::mode_name(m),
                                     t == Test::Latency ? "latency" : "stream", sizes[si],
                                     verified);
                verified += r.verified;
                rows.push_back(r);
            }
        }
    if (!s.barrier(link.mine(), tag))
        return s.verdict(false, "final barrier");
    tcatools::print_table(stdout, rows);
    if (!o.csv.empty() && !tcatools::write_csv(o.csv, rows, s.name()))
        return s.verdict(false, "CSV");
    if (o.no_stream ||
        std::all_of(o.modes.begin(), o.modes.end(), [](Mode m) { return m == Mode::Pio; }))
        return s.verdict(true, "all %" PRIu64 " messages verified byte for byte", verified);
    return s.verdict(true,
                     "%" PRIu64
                     " messages verified (latency: byte for byte; stream: a stamp per "
                     "4 KiB and a checksum)",
                     verified);
}

}  // namespace

int bench_pingpong(int argc, char** argv) {
    PutOptions o;
    o.modes = {Mode::Pio};
    o.latency.iters = 1000;
    o.latency.warmup = 10;
    o.no_stream = true;
    return run_puts(
        "pingpong", argc, argv, o,
        "PIO ping-pong latency between this node and NODE. Run the same command on both\n"
        "nodes (each naming the other); the lower node id sends first (ping) and measures.\n"
        "One-way latency = round trip / 2; every message is verified byte for byte by its\n"
        "receiver; exit status 0 only if all were. The dma test with other defaults.");
}

int bench_dma(int argc, char** argv) {
    PutOptions o;
    o.modes = {Mode::Reg, Mode::Card, Mode::Host, Mode::Pio};
    o.max = 8ull << 20;
    o.step = 4;
    o.pio_max = 65536;
    return run_puts(
        "dma", argc, argv, o,
        "DMA (and PIO) latency and bandwidth between this node and NODE; run the same\n"
        "command on both (the lower id pings). Latency: ping-pong of the payload plus a\n"
        "completion word the card writes after it; the receiver polls its own memory for\n"
        "the word and checks the payload byte for byte. Stream: about --stream-bytes per\n"
        "size back to back (--slots in flight); the receiver checks every message (a stamp\n"
        "per 4 KiB block and a checksum) and returns credits; MB/s is wall clock.");
}

int bench_crossover(int argc, char** argv) {
    struct : tcatools::PeerOptions {
        std::vector<std::uint64_t> sizes{64, 256, 512, 1024, 2048, 4096, 8192, 16384, 65536};
        std::uint64_t iters = 50;
        std::string csv;
    } o;
    Options opts(
        "tca_bench crossover", "--peer NODE [options]",
        "Where tcaPutAuto should switch from PIO to DMA: per size, the sender-side cost of a\n"
        "put that returns with the source reusable, PIO (stores and a fence) against a\n"
        "blocking DMA put, into memory the peer offers. Run it on both nodes: the lower id\n"
        "measures, the other offers its memory until the measuring side is done.");
    tcatools::add_peer_options(opts, &o);
    opts.u64_list("sizes", &o.sizes, "sizes (multiples of 4, up to 16M)");
    opts.u64("iters", &o.iters, "puts per size and kind");
    opts.text("csv", &o.csv, "also write the rows to this CSV file");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    const std::uint64_t max =
        o.sizes.empty() ? 0 : *std::max_element(o.sizes.begin(), o.sizes.end());
    if (o.iters < 1 || max > kMaxSize ||
        std::any_of(o.sizes.begin(), o.sizes.end(),
                    [](std::uint64_t s) { return s == 0 || s % 4; })) {
        std::fprintf(stderr,
                     "tca_bench crossover: error: need --iters >= 1 and sizes that are "
                     "multiples of 4, up to 16M\n");
        return 1;
    }
    Session s("tca_bench crossover");
    if (!s.open(o))
        return 1;
    const std::uint32_t tag = tcatools::tag_of("crossover", {o.iters}, o.sizes);
    unsigned char* buf = s.alloc(max, "tcaMalloc");
    tcaHandle mine, dst;
    if (!buf || !s.handle(buf, 0, &mine, "tcaGetHandle") ||
        !s.exchange(mine, &dst, tag, o.exchange_timeout_ms, "exchange"))
        return 1;
    if (!s.leads()) {
        s.say("offering %" PRIu64 " bytes to node %d until it is done", max, o.peer);
        return s.barrier(mine, tag, kServeLimitMs) ? s.verdict(true, "served node %d", o.peer) : 1;
    }
    if (dst.size < max) {
        s.fail("the peer offers fewer than %" PRIu64 " bytes", max);
        return 1;
    }
    std::memset(buf, 0x3c, max);
    std::vector<Row> rows;
    std::printf("%10s %12s %12s  (median µs until the source may be reused)\n", "size", "pio",
                "dma");
    std::uint64_t pio_wins_up_to = 0;
    for (std::uint64_t size : o.sizes) {
        std::vector<double> pio, dma;
        for (std::uint64_t i = 0; i < o.iters; ++i) {
            std::uint64_t t0 = tcatools::now_ns();
            if (!s.ok(tcaPut(&dst, 0, buf, size), "tcaPut"))
                return 1;
            pio.push_back(static_cast<double>(tcatools::now_ns() - t0) / 1000.0);
            t0 = tcatools::now_ns();
            if (!s.dma_ok(tcaDmaPut(&dst, 0, buf, size, nullptr, nullptr), nullptr, "tcaDmaPut"))
                return 1;
            dma.push_back(static_cast<double>(tcatools::now_ns() - t0) / 1000.0);
        }
        rows.push_back(tcatools::latency_row("blocking_put", "pio", size, pio, 0));
        rows.push_back(tcatools::latency_row("blocking_put", "card", size, dma, 0));
        const double p = rows[rows.size() - 2].median_us, d = rows.back().median_us;
        std::printf("%10" PRIu64 " %12.1f %12.1f%s\n", size, p, d, p <= d ? "  pio" : "  dma");
        if (p <= d)
            pio_wins_up_to = size;
    }
    if (!s.barrier(mine, tag))
        return 1;
    if (!o.csv.empty() && !tcatools::write_csv(o.csv, rows, s.name()))
        return 1;
    s.say("PIO is cheaper up to %" PRIu64 " bytes (tcaPutAuto uses %zu)", pio_wins_up_to,
          tcaPioMax());
    return s.verdict(true, "%zu sizes measured", o.sizes.size());
}

int bench_dma_local(int argc, char** argv) {
    struct {
        std::uint64_t size = 8ull << 20, count = 32;
        Mode mode = Mode::Card;
        std::string csv;
    } o;
    Options opts(
        "tca_bench dma-local", "[options]",
        "DMA throughput from one buffer to another of this node (the card loops the packets\n"
        "back, no link): beside the dma test's stream between nodes, it tells the DMA\n"
        "engine's share of the cost from the link's. The copy is verified at the end.");
    opts.u64("size", &o.size, "bytes per transfer (a multiple of 4, up to 64M)");
    opts.u64("count", &o.count, "transfers, all started before the first is waited for");
    tcatools::add_mode_option(opts, "mode", &o.mode, "descriptor mode", true);
    opts.text("csv", &o.csv, "also write the row to this CSV file");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    if (o.size < 4 || o.size % 4 || o.size > (64ull << 20) || o.count < 1 || o.count > 1000) {
        std::fprintf(stderr,
                     "tca_bench dma-local: error: need --size 4..64M (a multiple of 4), "
                     "--count 1..1000\n");
        return 1;
    }
    Session s("tca_bench dma-local");
    unsigned char* src = s.open() ? s.alloc(o.size, "tcaMalloc") : nullptr;
    unsigned char* dst = src ? s.alloc(o.size, "tcaMalloc") : nullptr;
    tcaHandle dst_h;
    if (!dst || !s.handle(dst, 0, &dst_h, "tcaGetHandle"))
        return 1;
    tcatools::fill_pattern(std::span(src, o.size), 7);
    tcaDmaOpts opts_dma{};
    opts_dma.flags = tcatools::mode_flags(o.mode);
    std::vector<tcaDmaTicket> t(o.count);
    const std::uint64_t t0 = tcatools::now_ns();
    for (std::uint64_t i = 0; i < o.count; ++i)
        if (!s.dma_ok(tcaDmaPut(&dst_h, 0, src, o.size, &opts_dma, &t[i]), nullptr, "start"))
            return 1;
    for (std::uint64_t i = 0; i < o.count; ++i)
        if (!s.dma_ok(tcaDmaWait(&t[i], 60000), &t[i], "wait"))
            return 1;
    const double secs = static_cast<double>(tcatools::now_ns() - t0) / 1e9;
    const bool same = std::memcmp(src, dst, o.size) == 0;
    const Row r = tcatools::bandwidth_row("local", tcatools::mode_name(o.mode), o.size, o.count,
                                          secs, same ? 1 : 0);
    s.say("%s, %" PRIu64 " x %" PRIu64 " bytes in %.3f s: %.1f MB/s; copy %s",
          tcatools::mode_name(o.mode), o.count, o.size, secs, r.mb_per_s,
          same ? "verified" : "WRONG");
    if (!o.csv.empty() && !tcatools::write_csv(o.csv, {r}, s.name()))
        return 1;
    return s.verdict(same, "%s", same ? "the copy is right" : "the copy differs from the source");
}

}  // namespace tcabench
