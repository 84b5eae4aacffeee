// SPDX-License-Identifier: MIT
// tca_check dma: a process with DMA in flight for a test to kill (hold, and
// sink for its remote variant), a persistent chain started many times
// (chain), and the DMA rules: requests that break them get the documented
// error and move nothing (restrict). The placement check is dma_lanes.cpp.
#include <fcntl.h>
#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../common/modes.hpp"
#include "../common/pattern.hpp"
#include "../common/session.hpp"
#include "../common/sysfs.hpp"
#include "roles.hpp"

namespace tcacheck {
namespace {

using tcatools::Mode;
using tcatools::Options;
using tcatools::Session;

inline constexpr std::uint32_t kTagSink = 0x34434d44u;  // "DMC4": a sink's memory

struct HoldOptions : tcatools::PeerOptions {
    std::uint64_t size = 16ull << 20;
    std::uint64_t runs = 64;
    Mode mode = Mode::Card;
    std::uint64_t linger_ms = 30000;  // sink: how long to offer the memory
};

// ---- chain --------------------------------------------------------------

std::string desc_ram() {
    std::string s;
    return tcatools::read_attr(tcatools::default_sysfs_dir(), "dma_desc_ram", &s) ? s : "?";
}

// ---- restrict -----------------------------------------------------------

constexpr std::uint64_t kBuf = 65536;

class Checker {
public:
    explicit Checker(const Session& s) : s_(s) {}
    void expect(const char* what, int got, int want) {
        ++checked_;
        const bool ok = got == want;
        s_.say("%-58s %s (%d, expected %d: %s)", what, ok ? "ok  " : "FAIL", got, want,
               tcaErrorString(want));
        failed_ += ok ? 0 : 1;
    }
    unsigned checked() const { return checked_; }
    unsigned failed() const { return failed_; }

private:
    const Session& s_;
    unsigned checked_ = 0, failed_ = 0;
};

void library_checks(Checker& c, unsigned char* a, const tcaHandle& hb) {
    tcaDmaTicket t{};
    c.expect("lib: source not 4-byte aligned", tcaDmaPut(&hb, 2, a + 2, 64, nullptr, &t),
             TCA_EALIGN);
    c.expect("lib: destination not 4-byte aligned", tcaDmaPut(&hb, 6, a + 6, 64, nullptr, &t),
             TCA_EALIGN);
    c.expect("lib: low 4 address bits differ", tcaDmaPut(&hb, 0, a + 4, 64, nullptr, &t),
             TCA_EALIGN);
    c.expect("lib: length not a multiple of 4", tcaDmaPut(&hb, 0, a, 62, nullptr, &t), TCA_EALIGN);
    c.expect("lib: destination range beyond the handle",
             tcaDmaPut(&hb, kBuf - 32, a, 64, nullptr, &t), TCA_ERANGE);
    int stack[16] = {};
    c.expect("lib: source not in a tcaMalloc buffer", tcaDmaPut(&hb, 0, stack, 64, nullptr, &t),
             TCA_ENOTBUF);
    tcaHandle bad = hb;
    bad.size -= 4;
    c.expect("lib: corrupted handle", tcaDmaPut(&bad, 0, a, 64, nullptr, &t), TCA_EBADHANDLE);
    c.expect("lib: completion word not 8-byte aligned",
             tcaDmaPutNotify(&hb, 0, a, 64, 1028, 1, nullptr, &t), TCA_EALIGN);
    tcaDmaXfer x{};
    x.dst = &hb;
    x.src = a;
    x.len = 256;
    x.burst = 6;
    x.stride = TCA_DMA_STRIDE_DST;
    c.expect("lib: block-stride burst not a multiple of 4", tcaDmaStart(&x, 1, nullptr, &t),
             TCA_ESTRIDE);
    x.burst = 16;
    x.gap = 8;
    c.expect("lib: one-sided gap not a multiple of 16", tcaDmaStart(&x, 1, nullptr, &t),
             TCA_ESTRIDE);
    x.burst = 0;
    x.gap = 0;
    c.expect("lib: stride side without a burst", tcaDmaStart(&x, 1, nullptr, &t), TCA_ESTRIDE);
    tcaDmaOpts o{};
    o.flags = TCA_DMA_REG_MODE | TCA_DMA_HOST_DESC;
    c.expect("lib: register mode with host descriptors", tcaDmaPut(&hb, 0, a, 64, &o, &t), -EINVAL);
    o = tcaDmaOpts{};
    o.channel = TCA_DMA_CHANNEL(4);
    c.expect("lib: channel 4", tcaDmaPut(&hb, 0, a, 64, &o, &t), -EINVAL);
    // One descriptor more than the card's descriptor RAM holds.
    std::vector<tcaDmaXfer> many(PEACH2_DESC_MAX + 1);
    for (std::size_t i = 0; i < many.size(); ++i) {
        many[i].dst = &hb;
        many[i].dst_offset = 16 * i;
        many[i].src = a + 16 * i;
        many[i].len = 16;
    }
    c.expect("lib: 1025 on-card descriptors", tcaDmaStart(many.data(), many.size(), nullptr, &t),
             TCA_ENODESC);
}

// The driver on its own file: 0 or errno of one DMA_START.
int raw_start(int fd, const std::vector<peach2_xfer>& x, std::uint32_t flags) {
    peach2_dma_start s{};
    s.xfers = reinterpret_cast<std::uintptr_t>(x.data());
    s.count = static_cast<std::uint32_t>(x.size());
    s.flags = flags | PEACH2_DMA_WAIT;
    s.channel = PEACH2_DMA_ANY_CHANNEL;
    s.timeout_ms = 5000;
    return ioctl(fd, PEACH2_IOC_DMA_START, &s) ? errno : 0;
}

bool driver_checks(const Session& s, Checker& c) {
    const char* dev = std::getenv("TCA_DEVICE");
    const int fd = open(dev && *dev ? dev : "/dev/peach2-0", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return s.fail("cannot open the device: %s", std::strerror(errno));
    peach2_info info{};
    peach2_alloc a{}, b{};
    a.size = b.size = kBuf;
    if (ioctl(fd, PEACH2_IOC_INFO, &info) || ioctl(fd, PEACH2_IOC_ALLOC, &a) ||
        ioctl(fd, PEACH2_IOC_ALLOC, &b)) {
        s.fail("INFO/ALLOC: %s", std::strerror(errno));
        close(fd);
        return false;
    }
    auto xfer = [&](std::uint64_t src_off, std::uint64_t dst, std::uint64_t len) {
        peach2_xfer x{};
        x.src_handle = a.handle;
        x.dst_handle = b.handle;
        x.src_offset = src_off;
        x.dst = dst;
        x.len = len;
        return std::vector<peach2_xfer>{x};
    };
    c.expect("drv: source not 4-byte aligned", -raw_start(fd, xfer(2, 2, 64), 0), -EINVAL);
    c.expect("drv: low 4 address bits differ", -raw_start(fd, xfer(4, 0, 64), 0), -EINVAL);
    c.expect("drv: length not a multiple of 4", -raw_start(fd, xfer(0, 0, 62), 0), -EINVAL);
    c.expect("drv: destination beyond the buffer", -raw_start(fd, xfer(0, kBuf - 32, 64), 0),
             -EINVAL);
    auto v = xfer(0, 0, 64);
    v[0].dst_handle = 0;
    v[0].dst = PEACH2_NODE_BASE(info.node_id) + 0x100000;  // own memory by address
    c.expect("drv: own node by global address", -raw_start(fd, v, 0), -EINVAL);
    v[0].dst = PEACH2_NODE_BASE(info.node_count) + 0x100000;
    c.expect("drv: node beyond the sub-cluster", -raw_start(fd, v, 0), -EINVAL);
    v = xfer(0, 0, 64);
    v[0].src_handle = a.handle + b.handle + 100;
    c.expect("drv: unknown source buffer", -raw_start(fd, v, 0), -ENOENT);
    v = xfer(0, 0, 64);
    v[0].burst = 16;
    v[0].gap = 8;
    v[0].flags = PEACH2_XFER_STRIDE_DST;
    c.expect("drv: one-sided gap not a multiple of 16", -raw_start(fd, v, 0), -EINVAL);
    v = xfer(0, 0, 64);
    v.push_back(v[0]);
    c.expect("drv: register mode with two descriptors", -raw_start(fd, v, PEACH2_DMA_REG_MODE),
             -EINVAL);
    v = xfer(0, 0, 64);
    v[0].flags = 1u << 7;
    c.expect("drv: undefined transfer flag", -raw_start(fd, v, 0), -EINVAL);
    v[0] = peach2_xfer{};
    v[0].dst_handle = b.handle;
    v[0].len = 6;
    v[0].flags = PEACH2_XFER_IMM;
    c.expect("drv: immediate of 6 bytes", -raw_start(fd, v, 0), -EINVAL);
    std::vector<peach2_xfer> many;
    for (std::uint64_t i = 0; i <= PEACH2_DESC_MAX; ++i)
        many.push_back(xfer(16 * i, 16 * i, 16)[0]);
    peach2_chain_create cc{};
    cc.xfers = reinterpret_cast<std::uintptr_t>(many.data());
    cc.count = static_cast<std::uint32_t>(many.size());
    c.expect("drv: chain of 1025 on-card descriptors",
             ioctl(fd, PEACH2_IOC_CHAIN_CREATE, &cc) ? -errno : 0, -ENOSPC);
    // And one that is fine, on the same file: the driver still works.
    c.expect("drv: a valid copy", -raw_start(fd, xfer(16, 32, 4096), 0), 0);
    close(fd);
    return true;
}

}  // namespace

int dma_hold(int argc, char** argv) {
    HoldOptions o;
    Options opts(
        "tca_check dma hold", "[--peer NODE] [options]",
        "Starts --runs DMAs of --size bytes without waiting (to the memory a `tca_check dma\n"
        "sink` on --peer offers, else to a second local buffer), prints HOLDING and sleeps\n"
        "until killed: the card must end up idle and usable, the kernel log clean.");
    tcatools::add_peer_options(opts, &o);
    opts.u64("size", &o.size, "bytes per run (a multiple of 4, up to 256M)");
    opts.u64("runs", &o.runs, "runs (1..1000)");
    tcatools::add_mode_option(opts, "mode", &o.mode, "descriptor mode", true);
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check dma hold");
    if (o.size < 4 || o.size % 4 || o.size > (256ull << 20) || o.runs < 1 || o.runs > 1000)
        return s.error("need --size 4..256M (a multiple of 4), --runs 1..1000");
    const bool remote = o.peer >= 0;
    if (!(remote ? s.open(o) : s.open()))
        return 1;
    unsigned char* src = s.alloc(o.size, "tcaMalloc(source)");
    tcaHandle dst;
    if (!src)
        return 1;
    std::memset(src, 0xa5, o.size);
    if (remote) {
        tcaHandle mine;
        if (!s.handle(src, 4096, &mine, "tcaGetHandle") ||
            !s.exchange(mine, &dst, kTagSink, o.exchange_timeout_ms, "exchange(sink)"))
            return 1;
        if (dst.size < o.size)
            return s.error("the sink offers %" PRIu64 " bytes, need %" PRIu64,
                           static_cast<std::uint64_t>(dst.size), o.size);
    } else {
        unsigned char* local = s.alloc(o.size, "tcaMalloc(destination)");
        if (!local || !s.handle(local, 0, &dst, "tcaGetHandle"))
            return 1;
    }
    tcaDmaOpts dopts{};
    dopts.flags = tcatools::mode_flags(o.mode);
    std::vector<tcaDmaTicket> tickets(o.runs);
    // Say HOLDING once a few runs are under way, then go on starting the
    // rest: starting can take as long as the runs themselves (a fast link
    // empties the queue as fast as we fill it), and the test must kill us
    // while DMA is in flight, not after it is all done.
    const std::uint64_t announce_after = std::min<std::uint64_t>(o.runs, 4);
    for (std::uint64_t r = 0; r < o.runs; ++r) {
        if (!s.dma_ok(tcaDmaPut(&dst, 0, src, o.size, &dopts, &tickets[r]), nullptr, "start"))
            return 1;
        if (r + 1 == announce_after)
            s.say("HOLDING %" PRIu64 " %s runs of %" PRIu64 " bytes to %s (pid %d), starting more",
                  o.runs, tcatools::mode_name(o.mode), o.size,
                  remote ? "the peer" : "a local buffer", static_cast<int>(getpid()));
    }
    for (;;)
        pause();  // until killed: the point is to die with DMA in flight
}

int dma_sink(int argc, char** argv) {
    HoldOptions o;
    Options opts("tca_check dma sink", "--peer NODE [options]",
                 "Offers --size bytes to a `tca_check dma hold --peer` on NODE for --linger-ms.");
    tcatools::add_peer_options(opts, &o);
    opts.u64("size", &o.size, "bytes offered");
    opts.u64("linger-ms", &o.linger_ms, "how long to offer them");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check dma sink");
    if (!s.open(o))
        return 1;
    unsigned char* buf = s.alloc(o.size, "tcaMalloc");
    tcaHandle mine, theirs;
    if (!buf || !s.handle(buf, 0, &mine, "tcaGetHandle"))
        return 1;
    s.say("offering %" PRIu64 " bytes to node %d for %" PRIu64 " ms", o.size, o.peer, o.linger_ms);
    if (!s.exchange(mine, &theirs, kTagSink, o.exchange_timeout_ms, "exchange(hold)"))
        return 1;
    s.say("READY");
    usleep(static_cast<useconds_t>(o.linger_ms * 1000));
    s.say("done");
    return 0;
}

int dma_chain(int argc, char** argv) {
    struct {
        std::uint64_t descs = 1024, starts = 5, piece = 64;
        Mode mode = Mode::Card;
        int timeout_ms = 30000;
    } o;
    Options opts(
        "tca_check dma chain", "[options]",
        "The stencil pattern on one node: a chain of --descs descriptors (1024: all of\n"
        "on-card descriptor RAM), one --piece-byte transfer each from a source buffer into\n"
        "every other piece of a destination, built once and started --starts times with new\n"
        "source data; every start is verified byte for byte, the gaps included.");
    opts.u64("descs", &o.descs, "descriptors (1..4096)");
    opts.u64("starts", &o.starts, "starts, each verified");
    opts.u64("piece", &o.piece, "bytes per descriptor (a divisor of 4096, >= 4)");
    tcatools::add_mode_option(opts, "mode", &o.mode, "descriptor mode", true);
    opts.integer("timeout-ms", &o.timeout_ms, "longest wait for one start");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check dma chain");
    // A piece that divides the page never crosses a chunk: one descriptor each.
    if (o.descs < 1 || o.descs > 4096 || o.starts < 1 || o.piece < 4 || 4096 % o.piece ||
        o.timeout_ms <= 0)
        return s.error("need --descs 1..4096, --starts >= 1, --piece a divisor of 4096 (>= 4)");
    const std::uint64_t bytes = 2 * o.descs * o.piece;
    unsigned char* src = s.open() ? s.alloc(o.descs * o.piece, "tcaMalloc(source)") : nullptr;
    unsigned char* dst = src ? s.alloc(bytes, "tcaMalloc(destination)") : nullptr;
    tcaHandle dst_h;
    if (!dst || !s.handle(dst, 0, &dst_h, "tcaGetHandle"))
        return 1;
    // Piece i goes to the odd piece 2i + 1; the even ones must stay as they are.
    std::vector<tcaDmaXfer> x(o.descs);
    for (std::uint64_t i = 0; i < o.descs; ++i) {
        x[i].dst = &dst_h;
        x[i].dst_offset = (2 * i + 1) * o.piece;
        x[i].src = src + i * o.piece;
        x[i].len = o.piece;
    }
    const std::string ram_before = desc_ram();
    tcaDmaOpts create{};
    create.flags = tcatools::mode_flags(o.mode);
    tcaChain chain{};
    if (!s.dma_ok(tcaChainCreate(x.data(), x.size(), &create, &chain), nullptr, "tcaChainCreate"))
        return 1;
    const std::string ram_held = desc_ram();
    s.say("%s chain of %u descriptors (descriptor RAM before: %s, with the chain: %s)",
          tcatools::mode_name(o.mode), chain.descriptors, ram_before.c_str(), ram_held.c_str());
    bool ok = chain.descriptors == o.descs ||
              s.fail("FAIL: %u descriptors, expected %" PRIu64, chain.descriptors, o.descs);
    std::vector<std::uint8_t> canary(bytes);
    for (std::uint64_t n = 0; ok && n < o.starts; ++n) {
        const std::uint64_t seed = tcatools::seed_of(0x636861696eull /* "chain" */, n);
        tcatools::fill_pattern(std::span(src, o.descs * o.piece), seed);
        tcatools::fill_pattern(canary, seed ^ 1);
        std::memcpy(dst, canary.data(), bytes);
        tcaDmaOpts start{};
        start.timeout_ms = o.timeout_ms;
        start.flags = TCA_DMA_WAIT;
        tcaDmaTicket t{};
        ok = s.dma_ok(tcaChainStart(chain, &start, &t), &t, "tcaChainStart");
        for (std::uint64_t p = 0; ok && p < 2 * o.descs; ++p) {
            const unsigned char* want =
                p % 2 ? src + (p / 2) * o.piece : canary.data() + p * o.piece;
            if (std::memcmp(dst + p * o.piece, want, o.piece) != 0)
                ok = s.fail("FAIL start %" PRIu64 ": destination piece %" PRIu64 " (%s) differs", n,
                            p, p % 2 ? "written" : "gap");
        }
    }
    ok = s.ok(tcaChainDestroy(chain), "tcaChainDestroy") && ok;
    s.say("descriptor RAM after destroy: %s", desc_ram().c_str());
    return s.verdict(ok, "%" PRIu64 " starts of a %u-descriptor chain %s", o.starts,
                     chain.descriptors, ok ? "verified byte for byte" : "not all verified");
}

int dma_restrict(int argc, char** argv) {
    Options opts(
        "tca_check dma restrict", "",
        "Requests that break the DMA rules get the documented error and move nothing: first\n"
        "through libtca (its own codes, before the driver), then straight to the driver on a\n"
        "second open file (its errno), which must refuse them without touching the card: the\n"
        "card's error counter stays put. Last, a valid copy still works.");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check dma restrict");
    if (!s.open())
        return 1;
    const std::string dir = tcatools::default_sysfs_dir();
    std::uint64_t errs_before = 0, errs_after = 0;
    const bool have_errs = tcatools::read_attr_u64(dir, "err_count", &errs_before);
    unsigned char* a = s.alloc(kBuf, "tcaMalloc");
    unsigned char* b = a ? s.alloc(kBuf, "tcaMalloc") : nullptr;
    tcaHandle hb;
    if (!b || !s.handle(b, 0, &hb, "tcaGetHandle"))
        return 1;
    tcatools::fill_pattern(std::span(a, kBuf), 1);
    tcatools::fill_pattern(std::span(b, kBuf), 2);
    const std::vector<std::uint8_t> before(b, b + kBuf);
    Checker c(s);
    library_checks(c, a, hb);
    const bool untouched = std::memcmp(before.data(), b, kBuf) == 0 ||
                           s.fail("FAIL: a refused request changed the destination");
    if (!driver_checks(s, c))
        return 1;
    // A valid transfer through the library, verified.
    const int rc = tcaDmaPut(&hb, 256, a + 256, 8192, nullptr, nullptr);
    c.expect("lib: a valid copy", rc, 0);
    const bool copied = rc == 0 && (std::memcmp(a + 256, b + 256, 8192) == 0 ||
                                    s.fail("FAIL: the valid copy is wrong"));
    const bool counted = have_errs && tcatools::read_attr_u64(dir, "err_count", &errs_after);
    s.say("card err_count before %" PRIu64 ", after %" PRIu64 "%s", errs_before, errs_after,
          counted ? "" : " (sysfs unreadable)");
    const bool pass =
        c.failed() == 0 && untouched && copied && counted && errs_after == errs_before;
    if (pass)
        return s.verdict(true, "%u requests answered as documented; nothing reached the card",
                         c.checked());
    return s.verdict(false, "%u of %u checks failed%s", c.failed(), c.checked(),
                     counted && errs_after != errs_before ? "; the card counted errors" : "");
}

}  // namespace tcacheck
