// SPDX-License-Identifier: MIT
// tca_check dma send/recv: random transfers (sizes, offsets, block-stride,
// descriptor modes) into the receiver's lanes, one lane per DMA channel,
// all lanes at once; the receiver judges every one (dma_shape.hpp).
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "../common/modes.hpp"
#include "../common/pattern.hpp"
#include "../common/session.hpp"
#include "../common/spin.hpp"
#include "../common/sysfs.hpp"
#include "dma_shape.hpp"
#include "roles.hpp"

namespace tcacheck {
namespace {

using tcatools::Mode;
using tcatools::Options;
using tcatools::Session;

inline constexpr std::uint32_t kTagCtrl = 0x31434d44u;  // "DMC1": ctrl <-> ack handles
inline constexpr std::uint32_t kTagLane = 0x32434d44u;  // "DMC2" + lane: lane handles

// ---- recv --------------------------------------------------------------

struct RecvOptions : tcatools::PeerOptions {
    std::uint64_t lanes = kMaxLanes;
    std::uint64_t lane_size = 65536;  // data bytes per lane
    std::uint64_t guard = 4096;
};

struct Lane {
    std::uint64_t base = 0;  // region offset in the buffer
    std::vector<std::uint8_t> pristine;
    std::uint64_t last = 0;  // last sequence word seen
    std::uint64_t checked = 0;
    bool ended = false;
};

class Receiver {
public:
    Receiver(const Session& s, const RecvOptions& o, unsigned char* buf, const unsigned char* ctrl)
        : s_(s), o_(o), buf_(buf), ctrl_(ctrl), lanes_(o.lanes) {
        const std::uint64_t region = o.lane_size + 2 * o.guard;
        for (unsigned l = 0; l < o.lanes; ++l) {
            Lane& ln = lanes_[l];
            ln.base = l * region;
            ln.pristine.resize(region);
            fill_lane_pristine(ln.pristine, o.guard, l);
            std::memcpy(buf_ + ln.base, ln.pristine.data(), region);
        }
    }

    void set_ack_handle(const tcaHandle& h) { ack_ = h; }
    std::uint64_t total_checked() const {
        std::uint64_t n = 0;
        for (const Lane& l : lanes_)
            n += l.checked;
        return n;
    }

    // One pass over the lanes: handles every new sequence word. Returns
    // false on a failed check or protocol error (printed); *progress tells
    // whether anything happened, *done whether every lane has ended.
    bool poll(bool* progress, bool* done) {
        *progress = false;
        *done = true;
        for (unsigned l = 0; l < lanes_.size(); ++l) {
            Lane& ln = lanes_[l];
            if (ln.ended)
                continue;
            *done = false;
            const std::uint64_t v = tcatools::load_acquire(ctrl_ + l * kCtrlSlot + kWordOff);
            if (v == ln.last)
                continue;
            *progress = true;
            if (!handle(l, v))
                return false;
        }
        return true;
    }

private:
    std::span<const std::uint8_t> region(const Lane& ln) const {
        return {buf_ + ln.base, ln.pristine.size()};
    }

    bool handle(unsigned l, std::uint64_t v) {
        Lane& ln = lanes_[l];
        std::uint64_t where = 0, st = kOk;
        if (v == (kEndBit | ln.last)) {
            // The end: nothing may have changed since the last check.
            if (std::memcmp(buf_ + ln.base, ln.pristine.data(), ln.pristine.size()) != 0) {
                st = kStrayWrite;
                while (buf_[ln.base + where] == ln.pristine[where])
                    ++where;
            }
            ln.ended = true;
        } else if (v == ln.last + 1) {
            st = check(l, ln.last, &where);
            ++ln.checked;
        } else {
            return s_.fail("FAIL lane %u: sequence word 0x%" PRIx64 " after %" PRIu64, l, v,
                           ln.last);
        }
        ln.last = v;
        const std::uint64_t head[2] = {st, where};
        const std::uint64_t off = l * kAckSlot;
        if (!s_.ok(tcaPut(&ack_, off, head, sizeof head), "put ack") ||
            !s_.put_u64(ack_, off + offsetof(Ack, seq), v, "put ack seq"))
            return false;
        return st == kOk;
    }

    std::uint64_t check(unsigned l, std::uint64_t k, std::uint64_t* where) {
        Lane& ln = lanes_[l];
        DmaCtrl c;
        std::memcpy(&c, ctrl_ + l * kCtrlSlot, sizeof c);  // written before the word
        const Shape s{c.src_off, c.dst_off, c.len, c.burst, c.gap, c.stride};
        if (c.k != k || c.len == 0 || c.stride > 3 || dst_span(s) > o_.lane_size ||
            c.dst_off > o_.lane_size - dst_span(s)) {
            s_.fail("FAIL lane %u transfer %" PRIu64 ": bad record (k %" PRIu64 ", dst %" PRIu64
                    ", len %" PRIu64 ")",
                    l, k, c.k, c.dst_off, c.len);
            return kBadRequest;
        }
        const std::uint64_t st = check_lane(region(ln), ln.pristine, o_.guard, s, c.seed, where);
        if (st != kOk) {
            const auto at = static_cast<std::int64_t>(*where) - static_cast<std::int64_t>(o_.guard);
            s_.fail("FAIL lane %u transfer %" PRIu64 " (%s, src %" PRIu64 ", dst %" PRIu64
                    ", len %" PRIu64 ", burst %u, gap %u, stride %u): %s at data offset %" PRId64
                    "%s",
                    l, k, tcatools::mode_name(static_cast<Mode>(c.mode)), c.src_off, c.dst_off,
                    c.len, c.burst, c.gap, c.stride, status_text(st), at,
                    at < 0 || at >= static_cast<std::int64_t>(o_.lane_size) ? " (guard)" : "");
        }
        // Back to pristine for the next transfer.
        std::memcpy(buf_ + ln.base + o_.guard + c.dst_off,
                    ln.pristine.data() + o_.guard + c.dst_off, dst_span(s));
        return st;
    }

    const Session& s_;
    const RecvOptions& o_;
    unsigned char* buf_;
    const unsigned char* ctrl_;
    std::vector<Lane> lanes_;
    tcaHandle ack_{};
};

// ---- send --------------------------------------------------------------

struct SendOptions : tcatools::PeerOptions {
    std::uint64_t count = 100;  // transfers per lane
    std::uint64_t lanes = kMaxLanes;
    std::uint64_t min_len = 4;
    std::uint64_t max_len = 16384;
    std::uint64_t seed = 0;  // 0: from the clock (printed)
    std::vector<Mode> modes{Mode::Card, Mode::Host, Mode::Reg};
    bool any_channel = false;  // else lane l on channel l
    bool no_stride = false;    // contiguous transfers only
};

struct LaneState {
    std::uint64_t next = 0;  // transfers started
    bool busy = false;       // a transfer (or the end) awaits its ack
    bool ended = false;
    bool end_pending = false;
    std::string last;  // the transfer awaiting its ack, for reports
    tcaDmaTicket ticket{};
};

// The driver's sysfs `dma` file: completed runs per channel, and how many
// channels are busy right now.
std::vector<std::uint64_t> channel_runs(unsigned* busy = nullptr) {
    std::vector<std::uint64_t> v;
    std::FILE* f = std::fopen((tcatools::default_sysfs_dir() + "/dma").c_str(), "r");
    if (!f)
        return v;
    char line[256];
    unsigned n = 0;
    while (std::fgets(line, sizeof line, f)) {
        const char* p = std::strstr(line, "completed=");
        v.push_back(p ? std::strtoull(p + 10, nullptr, 10) : 0);
        n += std::strstr(line, " busy ") ? 1 : 0;
    }
    std::fclose(f);
    if (busy)
        *busy = n;
    return v;
}

// One lane's next transfer, drawn and with its source filled, not started.
struct Prepared {
    Shape shape;
    Mode mode = Mode::Card;
    tcaDmaOpts opts{};
    std::uint64_t k = 0;
    bool end = false;  // the end marker instead of a transfer
};

class Sender {
public:
    Sender(const Session& s, const SendOptions& o, unsigned char* src, unsigned char* ctrl_src,
           const volatile unsigned char* ack, std::uint64_t src_room)
        : s_(s),
          o_(o),
          src_(src),
          ctrl_src_(ctrl_src),
          ack_(ack),
          src_room_(src_room),
          rng_(o.seed),
          lanes_(o.lanes) {}

    void set_targets(const tcaHandle& ctrl, std::vector<tcaHandle> lanes) {
        ctrl_h_ = ctrl;
        lane_h_ = std::move(lanes);
    }

    // Runs every lane to its end. False after printing the first failure.
    bool run() {
        std::uint64_t idle_since = tcatools::now_ns();
        for (;;) {
            bool all_ended = true, progress = false;
            std::vector<unsigned> ready;
            for (unsigned l = 0; l < lanes_.size(); ++l) {
                LaneState& ln = lanes_[l];
                if (ln.ended)
                    continue;
                all_ended = false;
                if (ln.busy && !answered(l, &progress))
                    return false;
                if (!ln.busy && !ln.ended) {
                    prepare(l);
                    ready.push_back(l);
                }
            }
            // Prepared first, started together: filling a big source
            // takes longer than the card needs to move it, so starting
            // each lane right after its preparation would never let two
            // channels run at once.
            for (unsigned l : ready)
                if (!launch(l))
                    return false;
            if (!ready.empty()) {
                unsigned busy = 0;
                channel_runs(&busy);
                max_busy_ = busy > max_busy_ ? busy : max_busy_;
            }
            if (all_ended)
                return true;
            if (progress || !ready.empty())
                idle_since = tcatools::now_ns();
            else if (tcatools::now_ns() - idle_since >
                     static_cast<std::uint64_t>(o_.timeout_ms) * 1000000ull)
                return s_.fail("no answer from node %d for %d ms", o_.peer, o_.timeout_ms);
            else
                tcatools::cpu_relax();
        }
    }

    std::uint64_t strided() const { return strided_; }
    std::uint64_t redrawn() const { return redrawn_; }
    std::uint64_t verified() const { return verified_; }
    unsigned max_busy() const { return max_busy_; }

private:
    // The receiver's answer to the lane's outstanding word, if it is there.
    bool answered(unsigned l, bool* progress) {
        LaneState& ln = lanes_[l];
        const volatile unsigned char* a = ack_ + l * kAckSlot;
        const std::uint64_t want = ln.end_pending ? (kEndBit | o_.count) : ln.next;
        if (tcatools::load_acquire(a + offsetof(Ack, seq)) != want)
            return true;  // not yet
        *progress = true;
        const std::uint64_t st = tcatools::load_acquire(a + offsetof(Ack, status));
        const auto where =
            static_cast<std::int64_t>(tcatools::load_acquire(a + offsetof(Ack, detail)));
        if (st != kOk)
            return s_.fail("FAIL lane %u: receiver reports %s (%" PRIu64
                           ") at lane region offset %" PRId64 " for %s",
                           l, status_text(st), st, where,
                           ln.end_pending ? "the end" : ln.last.c_str());
        if (!s_.dma_ok(tcaDmaWait(&ln.ticket, o_.timeout_ms), &ln.ticket, "DMA completion"))
            return false;
        ln.busy = false;
        if (ln.end_pending)
            ln.ended = true;
        else
            ++verified_;
        return true;
    }

    // Draws lane l's next transfer and writes its source and DmaCtrl record.
    void prepare(unsigned l) {
        LaneState& ln = lanes_[l];
        Prepared& p = prepared_[l];
        p = Prepared{};
        p.opts.channel = o_.any_channel ? TCA_DMA_ANY_CHANNEL : TCA_DMA_CHANNEL(l);
        p.k = ln.next;
        if (ln.next == o_.count) {
            p.end = true;
            return;
        }
        p.mode = o_.modes[(p.k + l) % o_.modes.size()];
        p.opts.flags = tcatools::mode_flags(p.mode);
        do
            p.shape = random_shape(rng_, src_room_, lane_h_[l].size, o_.min_len, o_.max_len);
        while (o_.no_stride && p.shape.burst);
        const Shape& s = p.shape;
        const std::uint64_t seed = tcatools::seed_of(o_.seed, l, p.k);
        tcatools::fill_pattern(std::span(src_ + l * src_room_ + s.src_off, src_span(s)), seed,
                               s.src_off);
        const DmaCtrl c{p.k,       seed,     s.src_off,
                        s.dst_off, s.len,    s.burst,
                        s.gap,     s.stride, static_cast<std::uint32_t>(p.mode)};
        std::memcpy(ctrl_src_ + l * kCtrlSlot, &c, sizeof c);
    }

    // Starts lane l's prepared transfer (data, DmaCtrl record, completion
    // word); draws again while a strided side crosses a chunk boundary.
    bool launch(unsigned l) {
        LaneState& ln = lanes_[l];
        ln.busy = true;
        for (unsigned tries = 0;; ++tries) {
            const Prepared& p = prepared_[l];
            if (p.end) {
                // The end marker: a completion word alone.
                tcaDmaXfer x{};
                x.notify = &ctrl_h_;
                x.notify_offset = l * kCtrlSlot + kWordOff;
                x.notify_value = kEndBit | o_.count;
                ln.end_pending = true;
                return s_.dma_ok(tcaDmaStart(&x, 1, &p.opts, &ln.ticket), nullptr,
                                 "start (end marker)");
            }
            const Shape& s = p.shape;
            tcaDmaXfer x[2] = {};
            x[0].dst = &lane_h_[l];
            x[0].dst_offset = s.dst_off;
            x[0].src = src_ + l * src_room_ + s.src_off;
            x[0].len = s.len;
            x[0].stride = s.stride;
            x[0].burst = static_cast<std::uint16_t>(s.burst);
            x[0].gap = static_cast<std::uint16_t>(s.gap);
            x[1].dst = &ctrl_h_;
            x[1].dst_offset = l * kCtrlSlot;
            x[1].src = ctrl_src_ + l * kCtrlSlot;
            x[1].len = (sizeof(DmaCtrl) + 3) / 4 * 4;  // DMA lengths are multiples of 4
            x[1].notify = &ctrl_h_;
            x[1].notify_offset = l * kCtrlSlot + kWordOff;
            x[1].notify_value = p.k + 1;
            const int rc = tcaDmaStart(x, 2, &p.opts, &ln.ticket);
            if (rc == TCA_ESTRIDE && tries < 1000) {
                ++redrawn_;  // a strided side crossed a chunk boundary
                prepare(l);
                continue;
            }
            char what[160];
            std::snprintf(what, sizeof what,
                          "transfer %" PRIu64 " (%s, src %" PRIu64 ", dst %" PRIu64 ", len %" PRIu64
                          ", burst %u, gap %u, stride %u)",
                          p.k, tcatools::mode_name(p.mode), s.src_off, s.dst_off, s.len, s.burst,
                          s.gap, s.stride);
            ln.last = what;
            if (!s_.dma_ok(rc, nullptr, what))
                return false;
            strided_ += s.burst ? 1 : 0;
            ln.next = p.k + 1;
            return true;
        }
    }

    const Session& s_;
    const SendOptions& o_;
    unsigned char *src_, *ctrl_src_;
    const volatile unsigned char* ack_;
    std::uint64_t src_room_;
    Rng rng_;
    std::vector<LaneState> lanes_;
    Prepared prepared_[kMaxLanes];
    tcaHandle ctrl_h_{};
    std::vector<tcaHandle> lane_h_;
    std::uint64_t strided_ = 0, redrawn_ = 0, verified_ = 0;
    unsigned max_busy_ = 0;
};

}  // namespace

int dma_recv(int argc, char** argv) {
    RecvOptions o;
    Options opts(
        "tca_check dma recv", "--peer NODE [options]",
        "Runs with `tca_check dma send` on NODE: owns --lanes regions of --lane-size bytes\n"
        "between canary guards and checks after each transfer that exactly the addressed\n"
        "bytes changed, to the source's values.");
    tcatools::add_peer_options(opts, &o);
    opts.u64("lanes", &o.lanes, "lanes, one per DMA channel (1..4)");
    opts.u64("lane-size", &o.lane_size, "data bytes per lane (64..16M, a multiple of 16)");
    opts.u64("guard", &o.guard, "canary bytes on each side (up to 1M, a multiple of 16)");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check dma recv");
    if (o.lanes < 1 || o.lanes > kMaxLanes || o.lane_size < 64 || o.lane_size > (16ull << 20) ||
        o.lane_size % 16 || o.guard % 16 || o.guard > (1ull << 20))
        return s.error(
            "need --lanes 1..4, --lane-size 64..16M and --guard <= 1M, both multiples of 16");
    if (!s.open(o))
        return 1;
    const std::uint64_t region = o.lane_size + 2 * o.guard;
    unsigned char* data = s.alloc(o.lanes * region, "tcaMalloc(lanes)");
    unsigned char* ctrl = data ? s.alloc(o.lanes * kCtrlSlot, "tcaMalloc(ctrl)") : nullptr;
    tcaHandle ctrl_h, ack_h, lane_h, ignored;
    if (!ctrl || !s.handle(ctrl, 0, &ctrl_h, "handle(ctrl)"))
        return 1;
    Receiver rx(s, o, data, ctrl);
    s.say("node %d: %" PRIu64 " lanes of %" PRIu64 " bytes between %" PRIu64
          "-byte guards; waiting for node %d",
          s.self(), o.lanes, o.lane_size, o.guard, o.peer);
    if (!s.exchange(ctrl_h, &ack_h, kTagCtrl, o.exchange_timeout_ms, "exchange(ctrl)"))
        return 1;
    if (ack_h.size < o.lanes * kAckSlot)
        return s.error("the sender's ack buffer is too small");
    rx.set_ack_handle(ack_h);
    for (unsigned l = 0; l < o.lanes; ++l)
        if (!s.handle(data + l * region + o.guard, o.lane_size, &lane_h, "handle(lane)") ||
            !s.exchange(lane_h, &ignored, kTagLane + l, o.timeout_ms, "exchange(lane)"))
            return 1;
    std::uint64_t idle_since = tcatools::now_ns();
    for (;;) {
        bool progress = false, done = false;
        if (!rx.poll(&progress, &done))
            return 1;
        if (done)
            break;
        if (progress)
            idle_since = tcatools::now_ns();
        else if (tcatools::now_ns() - idle_since >
                 static_cast<std::uint64_t>(o.timeout_ms) * 1000000ull)
            return s.error("nothing from node %d for %d ms", o.peer, o.timeout_ms);
        else
            tcatools::cpu_relax();
    }
    if (!s.barrier(ctrl_h, kTagCtrl))
        return 1;
    return s.verdict(true,
                     "%" PRIu64 " transfers from node %d in %" PRIu64
                     " lanes verified; each changed "
                     "exactly the addressed bytes; guards intact",
                     rx.total_checked(), o.peer, o.lanes);
}

int dma_send(int argc, char** argv) {
    SendOptions o;
    Options opts(
        "tca_check dma send", "--peer NODE [options]",
        "Runs with `tca_check dma recv` on NODE: --count random transfers per lane (lengths\n"
        "--min-len .. --max-len, log-uniform; any offsets the DMA rules allow; block-stride on\n"
        "either side or both in about half; the descriptor modes in turn), lane l on DMA\n"
        "channel l, all lanes at once; the receiver checks every one.");
    tcatools::add_peer_options(opts, &o);
    opts.u64("count", &o.count, "transfers per lane (1..1000000)");
    opts.u64("lanes", &o.lanes, "lanes (1..4; the receiver's)");
    opts.u64("min-len", &o.min_len, "shortest transfer (a multiple of 4)");
    opts.u64("max-len", &o.max_len, "longest transfer (a multiple of 4, up to 16M)");
    opts.u64("seed", &o.seed, "random draws (0: from the clock; printed)");
    tcatools::add_modes_option(opts, "modes", &o.modes, "descriptor modes, used in turn", true);
    opts.flag("any-channel", &o.any_channel,
              "let the library pick channels (else lane l on channel l)");
    opts.flag("no-stride", &o.no_stride, "contiguous transfers only");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check dma send");
    if (o.lanes < 1 || o.lanes > kMaxLanes || o.count == 0 || o.count > 1000000 || o.max_len < 4 ||
        o.max_len % 4 || o.max_len > (16ull << 20) || o.min_len < 4 || o.min_len % 4 ||
        o.min_len > o.max_len)
        return s.error(
            "need --lanes 1..4, --count 1..1000000, --min-len <= --max-len, multiples of 4 up "
            "to 16M");
    if (o.seed == 0)
        o.seed = static_cast<std::uint64_t>(std::time(nullptr)) * 2654435761u + 1;
    if (!s.open(o))
        return 1;
    unsigned char* ack = s.alloc(o.lanes * kAckSlot, "tcaMalloc(ack)");
    unsigned char* ctrl_src = ack ? s.alloc(o.lanes * kCtrlSlot, "tcaMalloc(ctrl)") : nullptr;
    tcaHandle ack_h, ctrl_h;
    if (!ctrl_src || !s.handle(ack, 0, &ack_h, "handle(ack)"))
        return 1;
    s.say("node %d: seed %" PRIu64 "; waiting for node %d", s.self(), o.seed, o.peer);
    if (!s.exchange(ack_h, &ctrl_h, kTagCtrl, o.exchange_timeout_ms, "exchange(ctrl)"))
        return 1;
    std::vector<tcaHandle> lanes(o.lanes);
    for (unsigned l = 0; l < o.lanes; ++l)
        if (!s.exchange(ack_h, &lanes[l], kTagLane + l, o.timeout_ms, "exchange(lane)"))
            return 1;
    if (ctrl_h.size < o.lanes * kCtrlSlot)
        return s.error("the receiver has fewer lanes than --lanes");
    // Source room: the lane size rounded up, so any drawn shape fits.
    const std::uint64_t src_room = (lanes[0].size + 4095) / 4096 * 4096;
    unsigned char* src = s.alloc(o.lanes * src_room, "tcaMalloc(source)");
    if (!src)
        return 1;
    const std::vector<std::uint64_t> runs_before = channel_runs();
    Sender tx(s, o, src, ctrl_src, ack, src_room);
    tx.set_targets(ctrl_h, lanes);
    if (!tx.run() || !s.barrier(ack_h, kTagCtrl))
        return 1;
    const std::vector<std::uint64_t> runs_after = channel_runs();
    std::string per_channel;
    for (std::size_t c = 0; c < runs_after.size() && c < runs_before.size(); ++c)
        per_channel +=
            " ch" + std::to_string(c) + "=" + std::to_string(runs_after[c] - runs_before[c]);
    s.say("runs per channel:%s; channels busy at once (sampled after each start): up to %u",
          per_channel.empty() ? " (no sysfs)" : per_channel.c_str(), tx.max_busy());
    return s.verdict(true,
                     "%" PRIu64 " transfers in %" PRIu64 " lanes verified by node %d (%" PRIu64
                     " block-stride, %" PRIu64 " redrawn at chunk boundaries; seed %" PRIu64 ")",
                     tx.verified(), o.lanes, o.peer, tx.strided(), tx.redrawn(), o.seed);
}

}  // namespace tcacheck
