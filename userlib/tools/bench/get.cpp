// SPDX-License-Identifier: MIT
// tca_bench get: one-sided get (read proxy) latency and bandwidth against
// PIO put latency and DMA put bandwidth from the same run, and CAS/FAA
// latency. The lower id is the client and measures; the other serves.
//
// Phase 1, the server taking part: PIO put latency for 8 bytes (the
// ping-pong of link.hpp), and a DMA put stream measured as the get stream
// is (both after --warmup untimed messages): --put-size puts with host
// descriptors into the server's `sink`, 4 in flight, back to back; the last
// one carries a completion word, which the server acknowledges at once (the
// end of the timing) and then checks the data and says so in a second word.
// Then the client stores kGetPhase into the server's phase word: from there
// on the server's process only sleeps (it looks at the word every 50 ms)
// until kDone, while the client gets from the server's `data`
// (exported for reads, the pattern of --seed) and does CAS/FAA on the word
// at kAtomic of its `ctrl` page (exported for atomics). The server's
// driver serves every request.
#include <unistd.h>

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

using tcatools::Row;
using tcatools::Session;

constexpr std::uint64_t kCtrlSize = 4096;
constexpr std::uint64_t kAck = 128;       // client's ctrl: the put stream's last completion seen
constexpr std::uint64_t kChecked = 320;   // ... and whether its data was right (kGood)
constexpr std::uint64_t kPhase = 192;     // server's ctrl
constexpr std::uint64_t kAtomic = 256;    // server's ctrl: the CAS/FAA word
constexpr std::uint64_t kGood = 0x4f4bu;  // "OK"
constexpr std::uint64_t kBad = 0x4241u;   // "BA"
constexpr unsigned kPutsInFlight = 4;
constexpr std::uint64_t kGetPhase = 0x53544547u;  // "GETS"
constexpr std::uint64_t kDone = 0x454e4f44u;      // "DONE"

struct GetOptions : tcatools::PeerOptions {
    std::vector<std::uint64_t> sizes;  // get sizes
    std::uint64_t min = 4, max = 1ull << 20;
    LatencyParams latency{200, 10, 5, 32ull << 20};
    std::uint64_t put_size = 1ull << 20;       // DMA put stream message, get stream request
    std::uint64_t stream_bytes = 64ull << 20;  // DMA put stream and get stream, each
    std::uint64_t inflight = 4;                // get stream: gets in flight
    std::uint64_t seed = 1;
    std::string csv;
};

// The put stream's source and the server's sink: the pattern of seed + 1.
std::uint64_t put_seed(const GetOptions& o) { return o.seed + 1; }

class Client {
public:
    Client(const Session& s, const GetOptions& o, unsigned char* data, unsigned char* ctrl,
           const tcaHandle& peer_data, const tcaHandle& peer_ctrl)
        : s_(s), o_(o), data_(data), ctrl_(ctrl), peer_data_(peer_data), peer_ctrl_(peer_ctrl) {}

    bool phase(std::uint64_t v) { return s_.put_u64(peer_ctrl_, kPhase, v, "phase word"); }
    bool put_stream(const unsigned char* src, const tcaHandle& sink, std::vector<Row>* rows);
    bool get_latency(std::uint64_t size, std::vector<Row>* rows);
    bool get_stream(std::vector<Row>* rows);
    bool atomics(std::vector<Row>* rows);

private:
    bool verify(const unsigned char* p, std::uint64_t len, const char* what) const {
        const std::size_t bad = tcatools::find_mismatch(std::span(p, len), o_.seed, 0);
        return bad == tcatools::kNoMismatch ||
               s_.fail("%s of %" PRIu64 " bytes differs at byte %zu", what, len, bad);
    }
    // One CAS or FAA test: each call's old value must be the one before.
    bool atomic_test(const char* test, std::uint64_t* v, std::vector<Row>* rows);

    const Session& s_;
    const GetOptions& o_;
    unsigned char *data_, *ctrl_;
    tcaHandle peer_data_, peer_ctrl_;
};

bool Client::put_stream(const unsigned char* src, const tcaHandle& sink, std::vector<Row>* rows) {
    const std::uint64_t count = o_.stream_bytes / o_.put_size;
    tcaDmaOpts opts{};
    opts.flags = TCA_DMA_HOST_DESC;
    std::vector<tcaDmaTicket> t(kPutsInFlight);
    // Untimed puts first: the first runs of a fresh guest also translate the
    // library's and the driver's code (TCG), which a short stream would time.
    for (std::uint64_t k = 0; k < o_.latency.warmup; ++k)
        if (!s_.dma_ok(tcaDmaPut(&sink, 0, src, o_.put_size, &opts, &t[0]), nullptr, "DMA put") ||
            !s_.dma_ok(tcaDmaWait(&t[0], o_.timeout_ms), &t[0], "DMA wait"))
            return false;
    const std::uint64_t t0 = tcatools::now_ns();
    for (std::uint64_t k = 0; k < count; ++k) {
        tcaDmaTicket& tk = t[k % t.size()];
        if (k >= t.size() && !s_.dma_ok(tcaDmaWait(&tk, o_.timeout_ms), &tk, "DMA wait"))
            return false;
        const int rc = k + 1 < count ? tcaDmaPut(&sink, 0, src, o_.put_size, &opts, &tk)
                                     : tcaDmaPutNotify(&sink, 0, src, o_.put_size, o_.put_size,
                                                       count, &opts, &tk);
        if (!s_.dma_ok(rc, nullptr, "DMA put"))
            return false;
    }
    if (!s_.wait_word(ctrl_ + kAck, count, 0, "DMA put stream acknowledgement"))
        return false;
    const double secs = static_cast<double>(tcatools::now_ns() - t0) / 1e9;
    for (tcaDmaTicket& tk : t)
        if (!s_.dma_ok(tcaDmaWait(&tk, o_.timeout_ms), &tk, "DMA wait"))
            return false;
    std::uint64_t seen = 0;
    const auto v = tcatools::spin_until(
        ctrl_ + kChecked, static_cast<std::uint64_t>(o_.timeout_ms) * 1000000ull,
        [](std::uint64_t x) { return x == 0 ? tcatools::Spin::Timeout : tcatools::Spin::Done; },
        &seen);
    if (v != tcatools::Spin::Done || seen != kGood)
        return s_.fail("the server found the DMA put stream's data %s",
                       v != tcatools::Spin::Done ? "unchecked (no answer)" : "wrong");
    rows->push_back(tcatools::bandwidth_row("dma_put_stream", "host", o_.put_size, count, secs, 1));
    return true;
}

bool Client::get_latency(std::uint64_t size, std::vector<Row>* rows) {
    const LatencyParams& l = o_.latency;
    const std::uint64_t iters = latency_iters(size, l.iters, l.latency_bytes, l.min_iters);
    std::vector<double> us;
    std::uint64_t verified = 0;
    for (std::uint64_t i = 0; i < l.warmup + iters; ++i) {
        const bool check = i == 0 || i + 1 == l.warmup + iters;
        if (check)
            std::memset(data_, 0x5a, size);
        const std::uint64_t t0 = tcatools::now_ns();
        const int rc = tcaGet(data_, &peer_data_, 0, size);
        const std::uint64_t t1 = tcatools::now_ns();
        if (!s_.ok(rc, "tcaGet") || (check && !verify(data_, size, "get")))
            return false;
        verified += check ? 1 : 0;
        if (i >= l.warmup)
            us.push_back(static_cast<double>(t1 - t0) / 1000.0);
    }
    rows->push_back(tcatools::latency_row("get", "", size, us, verified));
    return true;
}

bool Client::get_stream(std::vector<Row>* rows) {
    const std::uint64_t size = std::min<std::uint64_t>(o_.put_size, peer_data_.size / 16 * 16);
    const std::uint64_t count = o_.stream_bytes / o_.put_size;
    // `n` gets of `size`, o_.inflight at a time, back to back.
    auto stream = [&](std::uint64_t n) {
        std::vector<tcaRequest> reqs(o_.inflight);
        std::vector<bool> busy(o_.inflight, false);
        std::uint64_t started = 0, done = 0;
        while (done < n) {
            for (std::size_t i = 0; i < reqs.size(); ++i) {
                if (busy[i]) {
                    const int rc = tcaTest(&reqs[i]);
                    if (rc == 1)
                        continue;
                    busy[i] = false;
                    if (!s_.ok(rc, "get stream"))
                        return false;
                    ++done;
                }
                if (started < n) {
                    if (!s_.ok(tcaGetNB(data_ + i * size, &peer_data_, 0, size, &reqs[i]),
                               "tcaGetNB"))
                        return false;
                    busy[i] = true;
                    ++started;
                }
            }
        }
        return true;
    };
    // Untimed first, as the put stream: a few rounds of the whole window.
    if (!stream(std::max<std::uint64_t>(o_.latency.warmup, 2 * o_.inflight)))
        return false;
    std::memset(data_, 0x5a, size * o_.inflight);
    const std::uint64_t t0 = tcatools::now_ns();
    if (!stream(count))
        return false;
    const double secs = static_cast<double>(tcatools::now_ns() - t0) / 1e9;
    const std::uint64_t checked = std::min(count, o_.inflight);
    for (std::uint64_t i = 0; i < checked; ++i)
        if (!verify(data_ + i * size, size, "streamed get"))
            return false;
    rows->push_back(tcatools::bandwidth_row("get_stream", "", size, count, secs, checked));
    return true;
}

bool Client::atomic_test(const char* test, std::uint64_t* v, std::vector<Row>* rows) {
    const bool cas = test[0] == 'c';
    std::vector<double> us;
    for (std::uint64_t i = 0; i < o_.latency.warmup + o_.latency.iters; ++i) {
        std::uint64_t old = 0;
        const std::uint64_t t0 = tcatools::now_ns();
        const int rc = cas ? tcaCas(&peer_ctrl_, kAtomic, *v, *v + 1, &old)
                           : tcaFaa(&peer_ctrl_, kAtomic, 1, &old);
        const std::uint64_t t1 = tcatools::now_ns();
        if (!s_.ok(rc, cas ? "tcaCas" : "tcaFaa"))
            return false;
        if (old != *v)
            return s_.fail("%s saw %" PRIu64 ", expected %" PRIu64, test, old, *v);
        ++*v;
        if (i >= o_.latency.warmup)
            us.push_back(static_cast<double>(t1 - t0) / 1000.0);
    }
    rows->push_back(tcatools::latency_row(test, "", 8, us, o_.latency.warmup + o_.latency.iters));
    return true;
}

bool Client::atomics(std::vector<Row>* rows) {
    std::uint64_t v = 0;
    return s_.ok(tcaFaa(&peer_ctrl_, kAtomic, 0, &v), "tcaFaa") && atomic_test("cas", &v, rows) &&
           atomic_test("faa", &v, rows);
}

const Row* find(const std::vector<Row>& rows, const char* test, std::uint64_t size) {
    for (const Row& r : rows)
        if (r.test == test && (size == 0 || r.size == size))
            return &r;
    return nullptr;
}

// The two ratios issue 5 set targets for.
void print_ratios(const Session& s, const std::vector<Row>& rows) {
    const Row *put = find(rows, "put_pio", 8), *get8 = find(rows, "get", 8);
    if (put && get8 && put->median_us > 0)
        s.say("get 8 B / put 8 B latency: %.2f / %.2f us = %.2f (target <= 3)", get8->median_us,
              put->median_us, get8->median_us / put->median_us);
    else
        s.say("get 8 B / put 8 B latency: - (no 8-byte get measured)");
    const Row *dma = find(rows, "dma_put_stream", 0), *gs = find(rows, "get_stream", 0);
    if (dma && gs && dma->mb_per_s > 0)
        s.say("get / DMA put bandwidth (%" PRIu64 " B): %.1f / %.1f MB/s = %.2f (target >= 0.80)",
              gs->size, gs->mb_per_s, dma->mb_per_s, gs->mb_per_s / dma->mb_per_s);
}

// The server's part of the put stream: acknowledge the last completion
// word at once, then check the data (off the client's clock).
bool serve_put_stream(const Session& s, const GetOptions& o, const unsigned char* sink,
                      const tcaHandle& peer_ctrl) {
    const std::uint64_t count = o.stream_bytes / o.put_size;
    if (!s.wait_word(sink + o.put_size, count, 0, "DMA put stream") ||
        !s.put_u64(peer_ctrl, kAck, count, "put stream ack"))
        return false;
    const std::size_t bad = tcatools::find_mismatch(std::span(sink, o.put_size), put_seed(o), 0);
    if (!s.put_u64(peer_ctrl, kChecked, bad == tcatools::kNoMismatch ? kGood : kBad,
                   "put stream check"))
        return false;
    return bad == tcatools::kNoMismatch ||
           s.fail("the DMA put stream's data differs at byte %zu", bad);
}

// The server's phase 2: nothing but sleep until the client says done.
bool sleep_until_done(const Session& s, const unsigned char* ctrl) {
    if (!s.wait_word(ctrl + kPhase, kGetPhase, 0, "start of the get phase"))
        return false;
    s.say("server: sleeping while node %d gets and does atomics", s.peer());
    std::uint64_t wakeups = 0;
    const std::uint64_t limit = tcatools::now_ns() + 3600ull * 1000000000ull;
    while (tcatools::load_acquire(ctrl + kPhase) != kDone) {
        if (tcatools::now_ns() > limit)
            return s.fail("the client never said done");
        usleep(50000);
        ++wakeups;
    }
    s.say("server: done (%" PRIu64 " wake-ups of 50 ms sleeps, nothing served by this process)",
          wakeups);
    return true;
}

}  // namespace

int bench_get(int argc, char** argv) {
    GetOptions o;
    tcatools::Options opts(
        "tca_bench get", "--peer NODE [options]",
        "Remote get (read proxy) against puts, between this node and NODE. Run it on both\n"
        "nodes; the lower id is the client and measures, the other serves. First, with the\n"
        "server taking part: PIO put latency for 8 bytes (ping-pong, one-way = RTT/2) and\n"
        "DMA put bandwidth (--put-size messages, host descriptors). Then the server only\n"
        "sleeps while the client measures get latency per size (median, p99; MB/s = size /\n"
        "median), streaming get bandwidth (--put-size gets, --inflight at a time), and CAS\n"
        "and FAA latency. Both streams start after untimed messages (--warmup puts; gets:\n"
        "as many, at least two windows). Every get is checked against the server's pattern.\n"
        "The last lines give get 8 B / put 8 B latency and get / DMA put bandwidth.");
    tcatools::add_peer_options(opts, &o);
    opts.u64_list("sizes", &o.sizes, "get sizes (else --min .. --max, doubling)");
    opts.u64("min", &o.min, "smallest get");
    opts.u64("max", &o.max, "largest get");
    add_latency_options(opts, &o.latency);
    opts.u64("put-size", &o.put_size, "DMA put stream message and get stream request");
    opts.u64("stream-bytes", &o.stream_bytes, "bytes of the put stream and of the get stream");
    opts.u64("inflight", &o.inflight, "get stream: requests in flight (1..64)");
    opts.u64("seed", &o.seed, "the server's pattern");
    opts.text("csv", &o.csv, "also write the rows to this CSV file");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    if (o.sizes.empty())
        o.sizes = tcatools::doubling_sizes(o.min, o.max);
    const char* bad = nullptr;
    if (o.peer < 0)
        bad = "--peer NODE is required";
    else if (o.sizes.empty() || std::any_of(o.sizes.begin(), o.sizes.end(), [](std::uint64_t s) {
                 return s < 4 || s % 4 || s > (16ull << 20);
             }))
        bad = "get sizes must be multiples of 4, 4 .. 16 MiB";
    else if (o.latency.iters == 0 || o.latency.min_iters == 0 || o.inflight == 0 || o.inflight > 64)
        bad = "--iters, --min-iters >= 1, --inflight 1..64";
    else if (o.put_size < 4 || o.put_size % 4 || o.put_size > (16ull << 20) ||
             o.stream_bytes < o.put_size)
        bad = "--put-size a multiple of 4 up to 16M, --stream-bytes >= --put-size";
    if (bad) {
        std::fprintf(stderr, "tca_bench get: error: %s (try --help)\n", bad);
        return 1;
    }
    Session s("tca_bench get");
    if (!s.open(o))
        return 1;
    const bool client = s.leads();
    const std::uint64_t max_get = *std::max_element(o.sizes.begin(), o.sizes.end());
    const LatencyParams& l = o.latency;
    const std::uint32_t tag = tcatools::tag_of("get",
                                               {l.iters, l.min_iters, l.warmup, l.latency_bytes,
                                                o.put_size, o.stream_bytes, o.inflight, o.seed},
                                               o.sizes);
    s.say("node %d (%s) <-> node %d; waiting for the peer", s.self(),
          client ? "client: measures" : "server: exports, then sleeps", o.peer);
    Link link(s);
    if (!link.connect(8, 2, tag))
        return 1;
    // Both: a control page (the server's exported for atomics). Client: the
    // put stream's source and the gets' destination. Server: the put
    // stream's sink (and its completion word) and the pattern, exported
    // for reads.
    const std::uint64_t dsize = std::max(max_get, (client ? o.inflight : 1) * o.put_size) + 16;
    unsigned char* data = s.alloc(dsize, "tcaMalloc(data)");
    unsigned char* ctrl = data ? s.alloc(kCtrlSize, "tcaMalloc(ctrl)") : nullptr;
    unsigned char* put = ctrl ? s.alloc(o.put_size + 64, "tcaMalloc(put stream)") : nullptr;
    if (!put)
        return 1;
    tcaHandle mine_data, mine_ctrl, mine_put, peer_data, peer_ctrl, peer_put;
    if (client) {
        // The server uses neither data nor put: the exchange needs something to send.
        tcatools::fill_pattern(std::span(put, o.put_size), put_seed(o));
        if (!s.handle(ctrl, 0, &mine_ctrl, "tcaGetHandle(ctrl)"))
            return 1;
        mine_data = mine_put = mine_ctrl;
    } else {
        tcatools::fill_pattern(std::span(data, dsize), o.seed);
        if (!s.ok(tcaExport(data, 0, TCA_EXPORT_READ, &mine_data), "tcaExport(data)") ||
            !s.ok(tcaExport(ctrl, 0, TCA_EXPORT_ATOMIC, &mine_ctrl), "tcaExport(ctrl)") ||
            !s.handle(put, 0, &mine_put, "tcaGetHandle(sink)"))
            return 1;
    }
    if (!s.exchange(mine_data, &peer_data, tag + 100, o.timeout_ms, "exchange(data)") ||
        !s.exchange(mine_ctrl, &peer_ctrl, tag + 101, o.timeout_ms, "exchange(ctrl)") ||
        !s.exchange(mine_put, &peer_put, tag + 102, o.timeout_ms, "exchange(sink)"))
        return 1;
    if (client &&
        (peer_data.size < max_get || peer_ctrl.size < kCtrlSize || peer_put.size < o.put_size + 8))
        return s.verdict(false, "the server's buffers are too small");

    std::vector<Row> rows(1);
    if (!link.latency(Mode::Pio, 0, 8, l, &rows[0]))
        return s.verdict(false, "in the put ping-pong (see the error above)");
    rows[0].test = "put_pio";
    if (!client) {
        if (!serve_put_stream(s, o, put, peer_ctrl) || !sleep_until_done(s, ctrl) ||
            !s.barrier(link.mine(), tag))
            return 1;
        return s.verdict(true, "served node %d", o.peer);
    }
    Client c(s, o, data, ctrl, peer_data, peer_ctrl);
    bool ok = c.put_stream(put, peer_put, &rows) && c.phase(kGetPhase);
    for (std::uint64_t size : o.sizes)
        ok = ok && c.get_latency(size, &rows);
    ok = ok && c.get_stream(&rows) && c.atomics(&rows) && c.phase(kDone) &&
         s.barrier(link.mine(), tag);
    if (!ok)
        return s.verdict(false, "see the error above");
    tcatools::print_table(stdout, rows);
    if (!o.csv.empty() && !tcatools::write_csv(o.csv, rows, s.name()))
        return s.verdict(false, "CSV");
    print_ratios(s, rows);
    return s.verdict(true, "every get verified against the server's pattern");
}

}  // namespace tcabench
