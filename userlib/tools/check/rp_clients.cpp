// SPDX-License-Identifier: MIT
// tca_check rp's clients of `serve` (rp_wire.hpp): get-verify (random gets,
// every byte checked), faa / cas-check / read-counter (atomics on the
// server's counter), expect-refused (a request the target must refuse,
// with the exact error) and flood (non-blocking gets as fast as possible).
#include <peach2/peach2_hw.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "../common/pattern.hpp"
#include "../common/session.hpp"
#include "../common/spin.hpp"
#include "handle.hpp"
#include "roles.hpp"
#include "rp_wire.hpp"

namespace tcacheck {
namespace {

using namespace rp;
using tcatools::Options;
using tcatools::Session;

// Options of every client.
struct ClientOptions : tcatools::PeerOptions {
    std::uint64_t seed = 1;
    bool no_done = false;  // do not set the server's done word at the end
};

// A client's session: the server's two handles once connected.
class Client : public Session {
public:
    Client(const char* name, const ClientOptions& o) : Session(name), o_(o) {}

    // Opens the device, checks --peer, and takes the server's handles.
    bool connect() {
        if (!open(o_))
            return false;
        unsigned char* mine = alloc(4096, "tcaMalloc");
        tcaHandle h;
        if (!mine || !handle(mine, 0, &h, "tcaGetHandle"))
            return false;
        if (!exchange(h, &data, data_tag(o_.seed), o_.exchange_timeout_ms,
                      "exchange(data handle; is `serve` running with the same --seed?)") ||
            !exchange(h, &ctrl, kTagCtrl, o_.timeout_ms, "exchange(control handle)"))
            return false;
        return ctrl.size >= kCtrlSize || fail("the server's control buffer is too small");
    }

    // Tells the server this client is done (unless --no-done); passes rc on.
    int done(int rc) const {
        if (!o_.no_done)
            put_u64(ctrl, done_offset(static_cast<std::uint32_t>(self())), kDoneValue,
                    "telling the server we are done");
        return rc;
    }

    tcaHandle data{}, ctrl{};

private:
    const ClientOptions& o_;
};

Options client_options(const char* command, const char* args, const char* about, ClientOptions* o) {
    Options opts(command, args, about);
    tcatools::add_peer_options(opts, o);
    opts.u64("seed", &o->seed, "the server's --seed");
    opts.flag("no-done", &o->no_done, "do not tell the server we finished");
    return opts;
}

// "TCA_EREMOTE", "TCA_ENOTEXPORTED", "ETIMEDOUT", ... for a return code.
std::string code_name(int rc) {
    switch (rc) {
    case 0: return "ok";
    case TCA_ENOTEXPORTED: return "TCA_ENOTEXPORTED";
    case TCA_EREMOTE: return "TCA_EREMOTE";
    case TCA_EDEVICE: return "TCA_EDEVICE";
    case TCA_EALIGN: return "TCA_EALIGN";
    case TCA_ERANGE: return "TCA_ERANGE";
    case TCA_ENODE: return "TCA_ENODE";
    case TCA_EBADHANDLE: return "TCA_EBADHANDLE";
    case TCA_ENOTBUF: return "TCA_ENOTBUF";
    default: break;
    }
    if (rc < 0 && rc > -4096)
        if (const char* name = strerrorname_np(-rc))
            return name;
    return "error " + std::to_string(rc);
}

// A request's outcome as text: "ok", or "<code_name> status=<n> (<card name>)".
std::string outcome_text(int rc, std::uint32_t status) {
    std::string s = code_name(rc);
    if (status)
        s += " status=" + std::to_string(status) + " (" + tcaCardErrorName(status) + ")";
    return s;
}

// ---- get-verify ---------------------------------------------------------

constexpr unsigned char kPoison = 0xee;
constexpr std::uint64_t kGuard = 64;

struct GetShape {
    std::uint64_t src_off = 0, dst_off = 0, len = 0;
};

// A random get: a length (multiple of 4, log-uniform between min and max),
// a source offset in the served range (multiple of 4) and a destination
// offset with the source's low 4 address bits (the DMA rule; both buffers
// are page aligned, so offsets stand for addresses). Requires 4 <= min_len
// <= max_len <= min(src_size, dst_size - 16).
GetShape draw_get(std::mt19937_64& rng, std::uint64_t src_size, std::uint64_t dst_size,
                  std::uint64_t min_len, std::uint64_t max_len) {
    std::uniform_real_distribution<double> lg(std::log2(static_cast<double>(min_len)),
                                              std::log2(static_cast<double>(max_len)));
    GetShape g;
    g.len = static_cast<std::uint64_t>(std::exp2(lg(rng))) / 4 * 4;
    if (g.len < min_len)
        g.len = (min_len + 3) / 4 * 4;
    if (g.len > max_len)
        g.len = max_len / 4 * 4;
    g.src_off = std::uniform_int_distribution<std::uint64_t>(0, (src_size - g.len) / 4)(rng) * 4;
    const std::uint64_t low = g.src_off % 16;
    const std::uint64_t kmax = (dst_size - g.len - low) / 16;
    g.dst_off = std::uniform_int_distribution<std::uint64_t>(0, kmax)(rng) * 16 + low;
    return g;
}

struct VerifyOptions : ClientOptions {
    std::uint64_t iters = 1000;
    std::uint64_t min_len = 4;
    std::uint64_t max_len = 1ull << 20;
    std::uint64_t inflight = 1;  // > 1: non-blocking gets into separate slots
    std::uint64_t pause_us = 0;  // before each get after the first
};

// One destination slot: [guard | max_len + 16 | guard].
struct Slot {
    unsigned char* base = nullptr;
    GetShape g;
    tcaRequest req{};
    bool busy = false;
};

class Verifier {
public:
    Verifier(const Client& c, const VerifyOptions& o, unsigned char* mem, std::uint64_t slot_bytes)
        : c_(c), o_(o), rng_(o.seed * 7919 + 17), slot_bytes_(slot_bytes), mem_(mem) {}

    int run();

private:
    void start(Slot& sl) {
        sl.g = draw_get(rng_, c_.data.size, slot_bytes_ - 2 * kGuard, o_.min_len, o_.max_len);
        std::memset(sl.base, kPoison, slot_bytes_);
        sl.busy = true;
        const int rc =
            tcaGetNB(sl.base + kGuard + sl.g.dst_off, &c_.data, sl.g.src_off, sl.g.len, &sl.req);
        if (rc) {
            sl.busy = false;
            check(sl, rc);
        }
    }
    // Checks a finished get; false on a mismatch or an error.
    bool check(Slot& sl, int rc);

    const Client& c_;
    const VerifyOptions& o_;
    std::mt19937_64 rng_;
    std::uint64_t slot_bytes_;
    unsigned char* mem_;
    std::uint64_t gets_ = 0, bytes_ = 0, mismatches_ = 0, errors_ = 0;
};

bool Verifier::check(Slot& sl, int rc) {
    ++gets_;
    if (rc) {
        ++errors_;
        return c_.fail("get #%" PRIu64 " (offset %" PRIu64 ", %" PRIu64 " bytes): %s: %s", gets_,
                       sl.g.src_off, sl.g.len, outcome_text(rc, sl.req.status).c_str(),
                       tcaErrorString(rc));
    }
    const unsigned char* d = sl.base + kGuard + sl.g.dst_off;
    const std::size_t bad = tcatools::find_mismatch(std::span(d, sl.g.len), o_.seed, sl.g.src_off);
    bool stray = false;
    for (const unsigned char* p = sl.base; p < d && !stray; ++p)
        stray = *p != kPoison;
    for (const unsigned char* p = d + sl.g.len; p < sl.base + slot_bytes_ && !stray; ++p)
        stray = *p != kPoison;
    if (bad == tcatools::kNoMismatch && !stray) {
        bytes_ += sl.g.len;
        return true;
    }
    ++mismatches_;
    if (bad != tcatools::kNoMismatch)
        return c_.fail("MISMATCH get #%" PRIu64 " (src offset %" PRIu64 ", %" PRIu64
                       " bytes) at byte %zu: got 0x%02x, expected 0x%02x",
                       gets_, sl.g.src_off, sl.g.len, bad, d[bad],
                       tcatools::pattern_byte(o_.seed, sl.g.src_off + bad));
    return c_.fail("STRAY WRITE around get #%" PRIu64 " (%" PRIu64 " bytes)", gets_, sl.g.len);
}

int Verifier::run() {
    std::vector<Slot> slots(o_.inflight);
    for (std::size_t i = 0; i < slots.size(); ++i)
        slots[i].base = mem_ + i * slot_bytes_;
    std::uint64_t started = 0;
    const std::uint64_t t0 = tcatools::now_ns();
    while (gets_ < o_.iters) {
        for (Slot& sl : slots) {
            if (!sl.busy && started < o_.iters) {
                if (o_.pause_us && started)
                    std::this_thread::sleep_for(std::chrono::microseconds(o_.pause_us));
                ++started;
                start(sl);
            }
            if (sl.busy) {
                const int rc = tcaTest(&sl.req);
                if (rc == 1)
                    continue;
                sl.busy = false;
                check(sl, rc);
            }
        }
        if (errors_ + mismatches_ > 10)
            break;
    }
    const double secs = static_cast<double>(tcatools::now_ns() - t0) / 1e9;
    c_.say("%" PRIu64 " gets, %" PRIu64 " bytes, %" PRIu64 " mismatches, %" PRIu64
           " errors (%.1f s)",
           gets_, bytes_, mismatches_, errors_, secs);
    return mismatches_ == 0 && errors_ == 0 && gets_ == o_.iters ? 0 : 1;
}

// ---- expect-refused -----------------------------------------------------

struct RefusedOptions : ClientOptions {
    std::string op = "get";
    std::string expect = "notexported";
    std::string forge;
    std::string on;  // data | counter (default: get data, atomics counter)
    std::uint64_t offset = 0, len = 64;
};

bool matches(const std::string& expect, int rc, std::uint32_t status) {
    if (expect == "notexported")
        return rc == TCA_ENOTEXPORTED;
    if (expect == "timeout")
        return rc == -ETIMEDOUT;
    if (expect.rfind("remote:", 0) == 0)
        return rc == TCA_EREMOTE && expect.substr(7) == tcaCardErrorName(status);
    return false;
}

// ---- flood ---------------------------------------------------------------

struct FloodOptions : ClientOptions {
    std::uint64_t seconds = 10;
    std::uint64_t inflight = 64;
    std::uint64_t len = 64;
    bool allow_refused = false;
};

struct FloodCount {
    std::uint64_t ok = 0, full = 0, refused = 0, timeout = 0, other = 0;
    std::uint64_t done() const { return ok + refused + timeout + other; }
};

void account(const Session& s, FloodCount* n, int rc, const tcaRequest& r) {
    n->full += r.retries;
    if (rc == 0)
        ++n->ok;
    else if (rc == TCA_ENOTEXPORTED || (rc == TCA_EREMOTE && r.status == PEACH2_ERR_RP_OFF))
        ++n->refused;
    else if (rc == -ETIMEDOUT)
        ++n->timeout;
    else if (n->other++ < 5)
        s.fail("request ended %s", outcome_text(rc, r.status).c_str());
}

}  // namespace

int rp_get_verify(int argc, char** argv) {
    VerifyOptions o;
    Options opts = client_options(
        "tca_check rp get-verify", "--peer NODE [options]",
        "Random gets from what `serve` on NODE exports (log-uniform lengths, multiples of 4;\n"
        "offsets that keep the low-4-bits rule), the destination poisoned before each, every\n"
        "byte compared with the pattern, the bytes around it checked untouched.",
        &o);
    opts.u64("iters", &o.iters, "gets");
    opts.u64("min-len", &o.min_len, "shortest get (>= 4)");
    opts.u64("max-len", &o.max_len, "longest get");
    opts.u64("inflight", &o.inflight, "gets in flight (1..64; > 1: non-blocking)");
    opts.u64("pause-us", &o.pause_us, "sleep this long before each get after the first");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Client c("tca_check rp get-verify", o);
    if (o.min_len < 4 || o.min_len > o.max_len || o.inflight < 1 || o.inflight > 64)
        return c.error("need 4 <= --min-len <= --max-len, --inflight 1..64");
    if (!c.connect())
        return 1;
    o.max_len = std::min<std::uint64_t>(o.max_len, c.data.size / 4 * 4);
    o.min_len = std::min(o.min_len, o.max_len);
    const std::uint64_t slot_bytes = (o.max_len + 16 + 2 * kGuard + 4095) / 4096 * 4096;
    unsigned char* mem = c.alloc(slot_bytes * o.inflight, "tcaMalloc");
    if (!mem)
        return 1;
    c.say("node %d gets from node %d: %" PRIu64 " gets of %" PRIu64 "..%" PRIu64 " bytes, %" PRIu64
          " in flight, seed %" PRIu64,
          c.self(), o.peer, o.iters, o.min_len, o.max_len, o.inflight, o.seed);
    return c.done(Verifier(c, o, mem, slot_bytes).run());
}

int rp_faa(int argc, char** argv) {
    struct : ClientOptions {
        std::uint64_t count = 1000, add = 1;
    } o;
    Options opts = client_options(
        "tca_check rp faa", "--peer NODE [options]",
        "Adds --add to the counter of `serve --counter` on NODE, --count times; the old values\n"
        "it sees must only grow (other nodes may add in between, never subtract).",
        &o);
    opts.u64("count", &o.count, "adds");
    opts.u64("add", &o.add, "the addend");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Client c("tca_check rp faa", o);
    if (o.count == 0 || o.add == 0)
        return c.error("need --count >= 1, --add >= 1");
    if (!c.connect())
        return 1;
    std::uint64_t first = 0, prev = 0, old = 0;
    bool monotonic = true;
    const std::uint64_t t0 = tcatools::now_ns();
    for (std::uint64_t i = 0; i < o.count; ++i) {
        const int rc = tcaFaa(&c.ctrl, kCounterOff, o.add, &old);
        if (rc)
            return c.error("add #%" PRIu64 ": %s (%s)", i + 1, code_name(rc).c_str(),
                           tcaErrorString(rc));
        if (i == 0)
            first = old;
        else if (old < prev + o.add)
            monotonic = false;
        prev = old;
    }
    const double us =
        static_cast<double>(tcatools::now_ns() - t0) / 1e3 / static_cast<double>(o.count);
    std::uint64_t now = 0;
    if (!c.ok(tcaFaa(&c.ctrl, kCounterOff, 0, &now), "reading the counter"))
        return 1;
    c.say("%" PRIu64 " adds of %" PRIu64 ", first old=%" PRIu64 ", last old=%" PRIu64
          ", counter now=%" PRIu64 ", monotonic=%s, %.1f us/add",
          o.count, o.add, first, prev, now, monotonic ? "yes" : "no", us);
    return c.done(monotonic ? 0 : 1);
}

int rp_cas_check(int argc, char** argv) {
    ClientOptions o;
    Options opts = client_options(
        "tca_check rp cas-check", "--peer NODE [options]",
        "CAS on the counter of `serve --counter` on NODE: a mismatching compare returns the\n"
        "old value and changes nothing; a matching one returns it and swaps. (Its first step,\n"
        "reading the counter, checks only the return code.)",
        &o);
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Client c("tca_check rp cas-check", o);
    if (!c.connect())
        return 1;
    std::uint64_t v = 0, old = 0, now = 0;
    bool pass = true;
    const auto step = [&](const char* what, int rc, std::uint64_t got, std::uint64_t want) {
        const bool ok = rc == 0 && got == want;
        c.say("%s: rc=%d value=%" PRIu64 " expected %" PRIu64 ": %s", what, rc, got, want,
              ok ? "ok" : "WRONG");
        pass &= ok;
    };
    // One call per statement: the value is read only after the call returned.
    int rc = tcaFaa(&c.ctrl, kCounterOff, 0, &v);
    step("read", rc, v, v);  // checks rc only: v is whatever the counter holds
    // A compare that does not match: old value back, memory unchanged.
    rc = tcaCas(&c.ctrl, kCounterOff, v + 1, 0xdead, &old);
    step("cas mismatch", rc, old, v);
    rc = tcaFaa(&c.ctrl, kCounterOff, 0, &now);
    step("unchanged", rc, now, v);
    // A compare that matches: old value back, memory swapped.
    const std::uint64_t swap = v ^ 0x5a5a5a5a00000000ull;
    rc = tcaCas(&c.ctrl, kCounterOff, v, swap, &old);
    step("cas match", rc, old, v);
    rc = tcaFaa(&c.ctrl, kCounterOff, 0, &now);
    step("swapped", rc, now, swap);
    rc = tcaCas(&c.ctrl, kCounterOff, swap, v, &old);
    step("cas back", rc, old, swap);
    rc = tcaFaa(&c.ctrl, kCounterOff, 0, &now);
    step("restored", rc, now, v);
    return c.done(c.verdict(pass, "a CAS returns the old value and swaps only on a match"));
}

int rp_read_counter(int argc, char** argv) {
    ClientOptions o;
    Options opts =
        client_options("tca_check rp read-counter", "--peer NODE [options]",
                       "Reads the counter of `serve --counter` on NODE (an add of 0).", &o);
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Client c("tca_check rp read-counter", o);
    if (!c.connect())
        return 1;
    std::uint64_t v = 0;
    const int rc = tcaFaa(&c.ctrl, kCounterOff, 0, &v);
    if (rc)
        return c.error("%s (%s)", code_name(rc).c_str(), tcaErrorString(rc));
    c.say("%" PRIu64, v);
    return c.done(0);
}

int rp_expect_refused(int argc, char** argv) {
    RefusedOptions o;
    Options opts = client_options(
        "tca_check rp expect-refused", "--peer NODE [options]",
        "A request that `serve` on NODE must refuse, with the exact error. It retries every\n"
        "10 ms until the request is refused (the server may unexport or free a moment later)\n"
        "or --timeout-ms passes, then compares the outcome with --expect: notexported\n"
        "(TCA_ENOTEXPORTED, locally or RP_NOT_EXPORTED), remote:NAME (TCA_EREMOTE with card\n"
        "code NAME, e.g. RP_RANGE), timeout (-ETIMEDOUT: nobody answers).",
        &o);
    opts.text("op", &o.op, "get, cas or faa");
    opts.text("expect", &o.expect, "notexported, remote:NAME or timeout");
    opts.text("forge", &o.forge, "change the handle first: key (a wrong key) or none (no export)");
    opts.text("on", &o.on, "data or counter (default: data for get, the counter for atomics)");
    opts.u64("offset", &o.offset, "first byte");
    opts.u64("len", &o.len, "bytes of a get");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Client c("tca_check rp expect-refused", o);
    if ((o.op != "get" && o.op != "cas" && o.op != "faa") ||
        (o.forge != "" && o.forge != "key" && o.forge != "none"))
        return c.error("--op get|cas|faa, --forge key|none");
    if (!c.connect())
        return 1;
    const bool data = o.on.empty() ? o.op == "get" : o.on == "data";
    tcaHandle h = data ? c.data : c.ctrl;
    if (o.forge == "key")
        tca::attach_export(&h, h.export_id, h.export_key ^ 0x5a5a5a5au);
    else if (o.forge == "none")
        tca::attach_export(&h, 0, 0);
    unsigned char* dst = c.alloc(o.len + 4096, "tcaMalloc");
    if (!dst)
        return 1;
    const std::uint64_t deadline =
        tcatools::now_ns() + static_cast<std::uint64_t>(o.timeout_ms) * 1000000ull;
    int rc = 0;
    tcaRequest r{};
    std::uint64_t tries = 0;
    for (;;) {
        ++tries;
        if (o.op == "get")
            rc = tcaGetNB(dst + o.offset % 16, &h, o.offset, o.len, &r);
        else if (o.op == "cas")
            rc = tcaCasNB(&h, o.offset, 0x1234, 0x5678, &r);
        else
            rc = tcaFaaNB(&h, o.offset, 0, &r);
        if (rc == 0)
            rc = tcaWait(&r, 0);
        if (rc != 0 || tcatools::now_ns() >= deadline)
            break;
        usleep(10000);
    }
    const bool ok = matches(o.expect, rc, r.status);
    c.say("%s refused: %s after %" PRIu64 " tries; expected %s: %s", o.op.c_str(),
          outcome_text(rc, r.status).c_str(), tries, o.expect.c_str(), ok ? "PASS" : "FAIL");
    return c.done(ok ? 0 : 1);
}

int rp_flood(int argc, char** argv) {
    FloodOptions o;
    Options opts = client_options(
        "tca_check rp flood", "--peer NODE [options]",
        "Non-blocking gets from `serve` on NODE as fast as possible for --seconds, --inflight\n"
        "at a time, counting how each ended. RP_FULL answers are retried by the library\n"
        "(counted in rp_full); with --allow-refused refusals (the server went away) are\n"
        "counted, not errors. Exit 0 unless a request ended other than ok (or refused, if\n"
        "allowed).",
        &o);
    opts.u64("seconds", &o.seconds, "how long");
    opts.u64("inflight", &o.inflight, "gets in flight (1..4000)");
    opts.u64("len", &o.len, "bytes per get (a multiple of 4)");
    opts.flag("allow-refused", &o.allow_refused, "refusals are no failure");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Client c("tca_check rp flood", o);
    if (o.inflight < 1 || o.inflight > 4000 || o.len < 4 || o.len % 4)
        return c.error("--inflight 1..4000, --len a multiple of 4");
    if (!c.connect())
        return 1;
    o.len = std::min<std::uint64_t>(o.len, c.data.size / 4 * 4);
    const std::uint64_t stride = (o.len + 63) / 64 * 64;
    unsigned char* dst = c.alloc(stride * o.inflight, "tcaMalloc");
    if (!dst)
        return 1;
    std::vector<tcaRequest> reqs(o.inflight);
    std::vector<bool> busy(o.inflight, false);
    FloodCount n;
    const std::uint64_t t0 = tcatools::now_ns(), end = t0 + o.seconds * 1000000000ull;
    for (bool more = true; more;) {
        more = false;
        const bool go = tcatools::now_ns() < end;
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            if (busy[i]) {
                const int rc = tcaTest(&reqs[i]);
                if (rc == 1) {
                    more = true;
                    continue;
                }
                busy[i] = false;
                account(c, &n, rc, reqs[i]);
            }
            if (go) {
                const int rc = tcaGetNB(dst + i * stride, &c.data, 0, o.len, &reqs[i]);
                if (rc == 0)
                    busy[i] = true;
                else
                    account(c, &n, rc, reqs[i]);
                more = true;
            }
        }
    }
    const double secs = static_cast<double>(tcatools::now_ns() - t0) / 1e9;
    c.say("%" PRIu64 " completed in %.1f s: ok=%" PRIu64 " rp_full=%" PRIu64 " refused=%" PRIu64
          " timeout=%" PRIu64 " other=%" PRIu64 " (%.0f gets/s)",
          n.done(), secs, n.ok, n.full, n.refused, n.timeout, n.other,
          static_cast<double>(n.done()) / secs);
    return c.done(n.other == 0 && n.timeout == 0 && (o.allow_refused || n.refused == 0) ? 0 : 1);
}

}  // namespace tcacheck
