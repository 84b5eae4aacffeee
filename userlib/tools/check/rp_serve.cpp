// SPDX-License-Identifier: MIT
// tca_check rp serve: offers memory for remote gets and atomics, then
// sleeps. It serves nothing itself (the driver does); it only wakes every
// 10 ms to see whether its clients said done, or whether it is time for a
// scheduled event: unexport, free, exit or abort mid-way (rp_wire.hpp).
#include <unistd.h>

#include <cinttypes>
#include <cstdlib>
#include <span>
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
using tcatools::Session;

constexpr std::uint64_t kNever = ~0ull;

struct ServeOptions : tcatools::PeerOptions {
    std::vector<std::uint64_t> peers;  // --peers: several clients
    std::uint64_t size = 2ull << 20;
    std::uint64_t seed = 1;
    std::uint32_t flags = TCA_EXPORT_READ;
    std::uint64_t export_len = 0;  // 0: the whole buffer
    bool whole_handle = false;     // send a handle of the whole buffer with the export
    bool counter = false;
    std::uint64_t rounds = 1;
    std::uint64_t seconds = 600;
    std::uint64_t unexport_ms = kNever, free_ms = kNever, exit_ms = kNever, abort_ms = kNever;
    std::uint64_t self_faa = 0;
};

bool parse_flags(std::string_view s, std::uint32_t* out) {
    if (s == "read")
        *out = TCA_EXPORT_READ;
    else if (s == "atomic")
        *out = TCA_EXPORT_ATOMIC;
    else if (s == "read,atomic" || s == "atomic,read")
        *out = TCA_EXPORT_READ | TCA_EXPORT_ATOMIC;
    else
        return false;
    return true;
}

class Server {
public:
    Server(Session& s, const ServeOptions& o) : s_(s), o_(o) {}
    int run();

private:
    bool offer(const tcaHandle& data, const tcaHandle& ctrl);
    bool all_done() const;
    void clear_done();
    void events(std::uint64_t elapsed_ms);

    Session& s_;
    const ServeOptions& o_;
    unsigned char *data_ = nullptr, *ctrl_ = nullptr;
    tcaHandle exported_{};
    bool unexported_ = false, freed_ = false;
};

bool Server::offer(const tcaHandle& data, const tcaHandle& ctrl) {
    for (std::uint64_t p : o_.peers) {
        tcaHandle theirs;
        if (!s_.exchange_with(static_cast<int>(p), data, &theirs, data_tag(o_.seed),
                              o_.exchange_timeout_ms, "exchange(data handle)") ||
            !s_.exchange_with(static_cast<int>(p), ctrl, &theirs, kTagCtrl, o_.timeout_ms,
                              "exchange(control handle)"))
            return false;
    }
    return true;
}

bool Server::all_done() const {
    for (std::uint64_t p : o_.peers)
        if (tcatools::load_acquire(ctrl_ + done_offset(static_cast<std::uint32_t>(p))) !=
            kDoneValue)
            return false;
    return true;
}

void Server::clear_done() {
    for (std::uint64_t p : o_.peers)
        __atomic_store_n(
            reinterpret_cast<std::uint64_t*>(ctrl_ + done_offset(static_cast<std::uint32_t>(p))), 0,
            __ATOMIC_RELEASE);
}

void Server::events(std::uint64_t ms) {
    if (ms >= o_.abort_ms) {
        s_.say("aborting now");
        std::abort();
    }
    if (ms >= o_.exit_ms) {
        s_.say("exiting now (no cleanup)");
        _exit(0);
    }
    if (!unexported_ && ms >= o_.unexport_ms) {
        unexported_ = true;
        const int rc = tcaUnexport(&exported_);
        s_.say("unexported export %u: %s", exported_.export_id, tcaErrorString(rc));
    }
    if (!freed_ && ms >= o_.free_ms) {
        freed_ = true;
        const int rc = s_.free(data_);
        s_.say("freed the data buffer: %s", tcaErrorString(rc));
    }
}

int Server::run() {
    for (std::uint64_t p : o_.peers)
        if (p == static_cast<std::uint64_t>(s_.self()) ||
            p >= static_cast<std::uint64_t>(tcaNodeCount()))
            return s_.error("bad peer %" PRIu64, p);
    data_ = s_.alloc(o_.size, "tcaMalloc(data)");
    ctrl_ = data_ ? s_.alloc(kCtrlSize, "tcaMalloc(control)") : nullptr;
    if (!ctrl_)
        return 1;
    tcatools::fill_pattern(std::span(data_, o_.size), o_.seed);
    if (!s_.ok(tcaExport(data_, o_.export_len, o_.flags, &exported_), "tcaExport(data)"))
        return 1;
    tcaHandle data = exported_, ctrl;
    if (o_.whole_handle) {
        // Claims more than was exported: requests beyond the export must
        // be refused by the target (RP_RANGE).
        if (!s_.handle(data_, 0, &data, "tcaGetHandle"))
            return 1;
        tca::attach_export(&data, exported_.export_id, exported_.export_key);
    }
    if (o_.counter
            ? !s_.ok(tcaExport(ctrl_, kCtrlSize, TCA_EXPORT_ATOMIC, &ctrl), "tcaExport(counter)")
            : !s_.handle(ctrl_, kCtrlSize, &ctrl, "tcaGetHandle"))
        return 1;
    std::uint64_t start = 0;
    bool finished = false;
    for (std::uint64_t round = 0; round < o_.rounds && !finished; ++round) {
        if (!offer(data, ctrl))
            return 1;
        s_.say("READY node=%d export=%u key=0x%08x size=%" PRIu64 " seed=%" PRIu64
               " round=%" PRIu64,
               s_.self(), exported_.export_id, exported_.export_key, data.size, o_.seed, round + 1);
        // The clock of --seconds and the events starts once the first client
        // has the handles: a client slow to start still sees them happen.
        if (round == 0)
            start = tcatools::now_ns();
        if (round == 0 && o_.self_faa) {
            std::uint64_t old = 0;
            for (std::uint64_t i = 0; i < o_.self_faa; ++i)
                if (!s_.ok(tcaFaa(&ctrl, kCounterOff, 1, &old), "tcaFaa(self)"))
                    return 1;
            s_.say("self-faa: %" PRIu64 " adds done", o_.self_faa);
        }
        for (;;) {
            const std::uint64_t ms = (tcatools::now_ns() - start) / 1000000;
            events(ms);
            if (all_done())
                break;
            if (ms >= o_.seconds * 1000) {
                finished = true;
                break;
            }
            usleep(10000);
        }
        clear_done();
    }
    if (o_.counter)
        s_.say("counter=%" PRIu64, tcatools::load_acquire(ctrl_ + kCounterOff));
    s_.say("done (%s)", finished ? "time limit" : "clients done");
    return 0;
}

}  // namespace

int rp_serve(int argc, char** argv) {
    ServeOptions o;
    tcatools::Options opts(
        "tca_check rp serve", "--peer NODE|--peers A,B [options]",
        "Fills --size bytes with a pattern of --seed, exports them (or the first --export-len;\n"
        "--whole-handle then sends a handle claiming the whole buffer), and a control page\n"
        "whose first 8 bytes are a counter (exported for atomics with --counter). It then\n"
        "sleeps until every peer said done (--rounds times, one client each), or --seconds;\n"
        "--seconds and the --*-after-ms events count from the first READY (a client has the\n"
        "handles).");
    tcatools::add_peer_options(opts, &o);
    opts.u64_list("peers", &o.peers, "several clients (instead of --peer)");
    opts.u64("size", &o.size, "bytes offered (>= 64, a multiple of 4)");
    opts.u64("seed", &o.seed, "pattern of the data (the clients' --seed must match)");
    opts.custom(
        "flags", "read|atomic|read,atomic", "what the data export allows", "read",
        [&o](std::string_view s) { return parse_flags(s, &o.flags); },
        "read, atomic or read,atomic");
    opts.u64("export-len", &o.export_len, "export only the first bytes (0: all)");
    opts.flag("whole-handle", &o.whole_handle, "send a handle of the whole buffer with the export");
    opts.flag("counter", &o.counter, "export the counter for atomics");
    opts.u64("rounds", &o.rounds, "clients to serve one after the other");
    opts.u64("seconds", &o.seconds, "time limit");
    opts.u64("unexport-after-ms", &o.unexport_ms, "tcaUnexport the data then");
    opts.u64("free-after-ms", &o.free_ms, "tcaFree the data then");
    opts.u64("exit-after-ms", &o.exit_ms, "_exit(0) then");
    opts.u64("abort-after-ms", &o.abort_ms, "abort() then");
    opts.u64("self-faa", &o.self_faa, "add 1 this often to its own counter through the proxy");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check rp serve");
    if (o.peers.empty() && o.peer >= 0)
        o.peers.push_back(static_cast<std::uint64_t>(o.peer));
    if (o.peers.empty() || o.size < 64 || o.size % 4 || o.rounds < 1 || o.export_len > o.size)
        return s.error(
            "need --peer N (or --peers A,B), --size >= 64 (multiple of 4), --export-len <= "
            "--size, --rounds >= 1");
    o.peer = static_cast<int>(o.peers[0]);
    if (!s.open(o))
        return 1;
    return Server(s, o).run();
}

}  // namespace tcacheck
