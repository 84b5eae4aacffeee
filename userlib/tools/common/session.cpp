// SPDX-License-Identifier: MIT
#include "session.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "pattern.hpp"
#include "spin.hpp"

namespace tcatools {

void add_peer_options(Options& opts, PeerOptions* p) {
    opts.custom(
        "peer", "NODE", "the other node (required)", "",
        [p](std::string_view s) {
            std::uint64_t v = 0;
            if (!parse_u64(s, &v) || v > 0xffff)
                return false;
            p->peer = static_cast<int>(v);
            return true;
        },
        "a node id");
    opts.integer("timeout-ms", &p->timeout_ms, "longest wait for one step of the peer");
    opts.integer("exchange-timeout-ms", &p->exchange_timeout_ms,
                 "longest wait for the peer to start");
}

std::uint32_t tag_of(std::string_view what, std::initializer_list<std::uint64_t> params,
                     const std::vector<std::uint64_t>& more) {
    std::uint64_t h = seed_of(what.size(), params.size(), more.size());
    for (char c : what)
        h = mix(h ^ static_cast<unsigned char>(c));
    for (std::uint64_t p : params)
        h = mix(h ^ p);
    for (std::uint64_t p : more)
        h = mix(h ^ p);
    return static_cast<std::uint32_t>(h ^ (h >> 32));
}

struct Session::Buffer {
    void* p = nullptr;
    ~Buffer() {
        if (p)
            tcaFree(p);
    }
};

Session::Session(std::string name) : name_(std::move(name)) {}

Session::~Session() {
    buffers_.clear();  // before the device goes
    if (opened_)
        tcaFinalize();
}

bool Session::open() {
    opened_ = true;
    return ok(tcaInit(), "opening the PEACH2 device");
}

bool Session::open(const PeerOptions& p) {
    peer_ = p;
    if (!open())
        return false;
    self_ = tcaNodeId();
    const int count = tcaNodeCount();
    if (self_ < 0 || count < 0)
        return ok(self_ < 0 ? self_ : count, "device info");
    if (p.peer < 0 || p.peer == self_ || p.peer >= count)
        return fail("--peer must name another node below %d (this is node %d)", count, self_);
    if (p.timeout_ms <= 0 || p.exchange_timeout_ms <= 0)
        return fail("timeouts must be positive");
    return true;
}

void Session::say(const char* fmt, ...) const {
    std::va_list ap;
    va_start(ap, fmt);
    std::printf("%s: ", name_.c_str());
    std::vprintf(fmt, ap);
    std::printf("\n");
    va_end(ap);
    std::fflush(stdout);
}

namespace {

void print_error(const std::string& name, const char* fmt, std::va_list ap) {
    std::fprintf(stderr, "%s: error: ", name.c_str());
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
}

}  // namespace

bool Session::fail(const char* fmt, ...) const {
    std::va_list ap;
    va_start(ap, fmt);
    print_error(name_, fmt, ap);
    va_end(ap);
    return false;
}

int Session::error(const char* fmt, ...) const {
    std::va_list ap;
    va_start(ap, fmt);
    print_error(name_, fmt, ap);
    va_end(ap);
    return 1;
}

bool Session::ok(int rc, const char* what) const {
    return rc == 0 || fail("%s: %s (%d)", what, tcaErrorString(rc), rc);
}

bool Session::dma_ok(int rc, const tcaDmaTicket* t, const char* what) const {
    if (rc == TCA_EDMA && t)
        return fail("%s: the card reports %s (%u)", what, tcaCardErrorName(t->status), t->status);
    return ok(rc, what);
}

int Session::verdict(bool pass, const char* fmt, ...) const {
    std::va_list ap;
    va_start(ap, fmt);
    std::printf("%s: %s: ", name_.c_str(), pass ? "PASS" : "FAIL");
    std::vprintf(fmt, ap);
    std::printf("\n");
    va_end(ap);
    std::fflush(stdout);
    return pass ? 0 : 1;
}

unsigned char* Session::alloc(std::size_t size, const char* what) {
    auto b = std::make_unique<Buffer>();
    if (!ok(tcaMalloc(&b->p, size), what))
        return nullptr;
    buffers_.push_back(std::move(b));
    return static_cast<unsigned char*>(buffers_.back()->p);
}

int Session::free(void* p) {
    for (auto it = buffers_.begin(); it != buffers_.end(); ++it) {
        if ((*it)->p != p)
            continue;
        const int rc = tcaFree(p);
        (*it)->p = nullptr;
        buffers_.erase(it);
        return rc;
    }
    return TCA_ENOTBUF;
}

bool Session::handle(const void* p, std::size_t size, tcaHandle* out, const char* what) const {
    return ok(tcaGetHandle(p, size, out), what);
}

bool Session::exchange(const tcaHandle& mine, tcaHandle* theirs, std::uint32_t tag, int timeout_ms,
                       const char* step) const {
    return exchange_with(peer_.peer, mine, theirs, tag, timeout_ms, step);
}

bool Session::exchange_with(int peer, const tcaHandle& mine, tcaHandle* theirs, std::uint32_t tag,
                            int timeout_ms, const char* step) const {
    const int rc = tcaExchange(peer, &mine, theirs, timeout_ms, tag);
    if (rc == -ETIMEDOUT)
        return fail(
            "%s: node %d did not answer within %d ms (not running, or running with other "
            "parameters)",
            step, peer, timeout_ms);
    return ok(rc, step);
}

bool Session::barrier(const tcaHandle& mine, std::uint32_t tag, int timeout_ms) const {
    tcaHandle ignored;
    return exchange(mine, &ignored, tag ^ 0x444f4e45u /* "DONE" */,
                    timeout_ms < 0 ? peer_.timeout_ms : timeout_ms, "final barrier");
}

bool Session::put_u64(const tcaHandle& h, std::uint64_t offset, std::uint64_t v,
                      const char* what) const {
    return ok(tcaPut(&h, offset, &v, sizeof v), what);
}

bool Session::wait_word(const volatile void* word, std::uint64_t expect, std::uint64_t prev,
                        const char* what) const {
    std::uint64_t seen = 0;
    const Spin v = spin_until(
        word, static_cast<std::uint64_t>(peer_.timeout_ms) * 1000000ull,
        [&](std::uint64_t x) {
            if (x == expect)
                return Spin::Done;
            return x == prev ? Spin::Timeout : Spin::Rejected;
        },
        &seen);
    if (v == Spin::Done)
        return true;
    if (v == Spin::Timeout)
        return fail("%s: no answer from node %d within %d ms (expected 0x%016" PRIx64
                    ", saw 0x%016" PRIx64 "); is the peer running the same command?",
                    what, peer_.peer, peer_.timeout_ms, expect, seen);
    return fail("%s: node %d is out of step (expected 0x%016" PRIx64 ", saw 0x%016" PRIx64 ")",
                what, peer_.peer, expect, seen);
}

}  // namespace tcatools
