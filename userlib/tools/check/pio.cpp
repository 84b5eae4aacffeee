// SPDX-License-Identifier: MIT
// tca_check pio: PIO placement (recv owns the target buffer and checks
// after every write that exactly the addressed bytes changed, send writes
// every offset x size combination that fits), stores the card must count
// as errors (bad-node, raw), and what the library sees of the device (info).
#include <peach2/peach2_hw.h>

#include <cinttypes>
#include <cstddef>
#include <cstring>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "../common/session.hpp"
#include "../common/spin.hpp"
#include "../common/sysfs.hpp"
#include "pio_canary.hpp"
#include "roles.hpp"

namespace tcacheck {
namespace {

using tcatools::Options;
using tcatools::Session;

inline constexpr std::uint32_t kTagData = 0x31434950u;  // "PIC1": data and ack handles
inline constexpr std::uint32_t kTagCtrl = 0x32434950u;  // "PIC2": control handle

// ---- recv --------------------------------------------------------------

class Receiver {
public:
    // Writes the canary: do it before the peer can know the buffer's address.
    Receiver(const Session& s, std::uint64_t size, std::uint64_t guard, unsigned char* buf,
             const volatile PioCtrl* ctrl)
        : s_(s), size_(size), guard_(guard), buf_(buf), ctrl_(ctrl), pristine_(size + 2 * guard) {
        fill_pristine(pristine_, guard);
        std::memcpy(buf_, pristine_.data(), pristine_.size());
    }

    // Verifies the whole buffer after write k of [offset, offset + len),
    // puts it back to pristine, and reports. Returns the status. `when`
    // names the moment in the report when there was no write (len 0).
    std::uint64_t check(std::uint64_t k, std::uint64_t offset, std::uint64_t len,
                        std::int64_t* where, const char* when = nullptr) {
        const std::span<const std::uint8_t> now(buf_, pristine_.size());
        const std::uint64_t st = check_after_write(now, pristine_, guard_, k, offset, len, where);
        if (st != kOk) {
            const auto at = *where;
            const std::uint64_t b =
                static_cast<std::uint64_t>(at + static_cast<std::int64_t>(guard_));
            const bool inside = at >= static_cast<std::int64_t>(offset) &&
                                at < static_cast<std::int64_t>(offset + len);
            const std::uint8_t want =
                inside ? written_byte(k, static_cast<std::uint64_t>(at)) : pristine_[b];
            char what[96];
            if (when)
                std::snprintf(what, sizeof what, "%s", when);
            else
                std::snprintf(what, sizeof what,
                              "write #%" PRIu64 " (offset %" PRIu64 ", len %" PRIu64 ")", k, offset,
                              len);
            s_.fail("FAIL %s: %s: first difference at data offset %" PRId64
                    "%s: got 0x%02x, "
                    "expected 0x%02x",
                    what, status_text(st), at,
                    at < 0 || at >= static_cast<std::int64_t>(size_) ? " (guard)" : "", buf_[b],
                    want);
        }
        std::memcpy(buf_ + guard_ + offset, pristine_.data() + guard_ + offset, len);
        return st;
    }

    void set_ack_handle(const tcaHandle& h) { ack_ = h; }

    bool ack(std::uint64_t status, std::int64_t where, std::uint64_t seq) {
        const std::uint64_t head[2] = {status, static_cast<std::uint64_t>(where)};
        return s_.ok(tcaPut(&ack_, 0, head, sizeof head), "put ack") &&
               s_.put_u64(ack_, offsetof(Ack, seq), seq, "put ack seq");
    }

    // Waits for the next PioCtrl.seq after `last`: false on timeout or garbage.
    bool wait(std::uint64_t last, std::uint64_t* seq) {
        const int timeout_ms = s_.peer_options().timeout_ms;
        const auto verdict = tcatools::spin_until(
            &ctrl_->seq, static_cast<std::uint64_t>(timeout_ms) * 1000000ull,
            [&](std::uint64_t v) {
                if (v == last)
                    return tcatools::Spin::Timeout;
                return v == last + 1 || v == (kEndBit | last) ? tcatools::Spin::Done
                                                              : tcatools::Spin::Rejected;
            },
            seq);
        if (verdict == tcatools::Spin::Timeout)
            return s_.fail("no write from node %d within %d ms after #%" PRIu64, s_.peer(),
                           timeout_ms, last);
        if (verdict == tcatools::Spin::Rejected)
            return s_.fail("out of sequence: seq 0x%" PRIx64 " after %" PRIu64, *seq, last);
        return true;
    }

private:
    const Session& s_;
    std::uint64_t size_, guard_;
    unsigned char* buf_;
    const volatile PioCtrl* ctrl_;
    tcaHandle ack_{};
    std::vector<std::uint8_t> pristine_;
};

// ---- send --------------------------------------------------------------

struct SendOptions : tcatools::PeerOptions {
    // Negative offsets count from the end of the receiver's data.
    std::vector<std::int64_t> offsets{0,    1,    2,  3,  4,  5,  6,  7,   8,  9,  10,
                                      11,   12,   13, 14, 15, 16, 31, 63,  64, 65, 4095,
                                      4096, 4097, -1, -2, -3, -5, -8, -13, -64};
    std::vector<std::uint64_t> sizes{1,  2,  3,  4,   5,   6,   7,   8,    9,    10,   11,
                                     12, 13, 14, 15,  16,  17,  23,  24,   31,   32,   33,
                                     63, 64, 65, 100, 255, 256, 257, 1000, 4095, 4096, 4097};
    // --auto: tcaPutAuto from tcaMalloc memory placed with the
    // destination's low 4 address bits, so large writes go by DMA (with
    // PIO for an unaligned head and tail); set TCA_PIO_MAX to move the line.
    bool put_auto = false;
};

using Case = std::pair<std::uint64_t, std::uint64_t>;  // offset, len

// All (offset, size) pairs that fit, offsets first resolved against the end
// and extended by the positions around every chunk boundary of the target
// (a write that crosses one is split by tcaPut). Duplicates dropped.
std::vector<Case> plan(const SendOptions& o, const tcaHandle& data, std::uint64_t* skipped) {
    const std::uint64_t size = data.size;
    std::vector<std::uint64_t> offs;
    for (std::int64_t v : o.offsets) {
        const std::int64_t r = v < 0 ? static_cast<std::int64_t>(size) + v : v;
        if (r >= 0 && static_cast<std::uint64_t>(r) < size)
            offs.push_back(static_cast<std::uint64_t>(r));
        else
            ++*skipped;
    }
    std::uint64_t boundary = 0;
    for (unsigned i = 0; i + 1 < data.nr_chunks; ++i) {
        boundary += data.chunks[i].len;
        for (std::uint64_t back : {5u, 1u, 0u})
            if (boundary >= back)
                offs.push_back(boundary - back);
    }
    std::vector<Case> cases;
    std::set<Case> seen;
    for (std::uint64_t off : offs)
        for (std::uint64_t len : o.sizes) {
            if (len == 0 || len > size - off) {
                ++*skipped;
                continue;
            }
            if (seen.insert({off, len}).second)
                cases.emplace_back(off, len);
        }
    return cases;
}

// Puts that leave the target must be refused before any store happens.
bool local_range_checks(const Session& s, const tcaHandle& data, unsigned* checked) {
    const unsigned char byte[2] = {0xa5, 0x5a};
    const std::uint64_t n = data.size;
    const struct {
        std::uint64_t off, len;
    } bad[] = {{n, 1}, {n - 1, 2}, {0, n + 1}, {SIZE_MAX, 2}, {1, SIZE_MAX}, {SIZE_MAX, SIZE_MAX}};
    for (const auto& b : bad) {
        const int rc = tcaPut(&data, b.off, byte, b.len);
        ++*checked;
        if (rc != TCA_ERANGE)
            return s.fail("FAIL: tcaPut(offset %" PRIu64 ", len %" PRIu64 ") beyond %" PRIu64
                          " bytes returned %d (%s), expected TCA_ERANGE",
                          b.off, b.len, n, rc, tcaErrorString(rc));
    }
    return true;
}

class Sender {
public:
    Sender(Session& s, const SendOptions& o, const volatile Ack* ack, const tcaHandle& data,
           const tcaHandle& ctrl)
        : s_(s), o_(o), ack_(ack), data_(data), ctrl_(ctrl) {}

    // --auto: a staging buffer big enough for any write (+16 for placement).
    bool stage(std::uint64_t bytes) {
        return !o_.put_auto || (stage_ = s_.alloc(bytes + 16, "tcaMalloc(staging)")) != nullptr;
    }

    // Write k: data, then PioCtrl{offset, len}, then PioCtrl.seq (each put fenced).
    bool write(std::uint64_t k, std::uint64_t off, std::uint64_t len) {
        src_.resize(len);
        fill_written(src_, k, off);
        if (o_.put_auto) {
            // Same low 4 bits as the destination: DMA is possible.
            std::uint64_t ga = 0;
            if (!s_.ok(tcaRemoteAddress(&data_, off, &ga), "address"))
                return false;
            unsigned char* p = stage_ + ga % 16;
            std::memcpy(p, src_.data(), len);
            if (!s_.ok(tcaPutAuto(&data_, off, p, len), "tcaPutAuto"))
                return false;
        } else if (!s_.ok(tcaPut(&data_, off, src_.data(), len), "put data")) {
            return false;
        }
        return head(off, len, k + 1);
    }

    bool end(std::uint64_t count) { return head(0, 0, kEndBit | count); }

    // Waits for the receiver's answer to `seq`; false unless it is kOk.
    bool verdict(std::uint64_t seq, std::uint64_t prev, const char* what) {
        if (!s_.wait_word(&ack_->seq, seq, prev, what))
            return false;
        const std::uint64_t st = tcatools::load_acquire(&ack_->status);
        const auto where = static_cast<std::int64_t>(tcatools::load_acquire(&ack_->detail));
        return st == kOk ||
               s_.fail("FAIL: %s: receiver reports %s (%" PRIu64 ") at data offset %" PRId64, what,
                       status_text(st), st, where);
    }

private:
    bool head(std::uint64_t off, std::uint64_t len, std::uint64_t seq) {
        const std::uint64_t h[2] = {off, len};
        return s_.ok(tcaPut(&ctrl_, 0, h, sizeof h), "put ctrl") &&
               s_.put_u64(ctrl_, offsetof(PioCtrl, seq), seq, "put ctrl seq");
    }

    Session& s_;
    const SendOptions& o_;
    const volatile Ack* ack_;
    tcaHandle data_, ctrl_;
    std::vector<std::uint8_t> src_;
    unsigned char* stage_ = nullptr;
};

// Stores 8 bytes to `global`; nothing is checked here.
bool store_raw(const Session& s, std::uint64_t node, std::uint64_t offset, std::uint64_t value) {
    return s.ok(tcaPutRaw(PEACH2_NODE_BASE(node) + offset, &value, sizeof value), "tcaPutRaw");
}

}  // namespace

int pio_recv(int argc, char** argv) {
    struct : tcatools::PeerOptions {
        std::uint64_t size = 16384, guard = 4096;
    } o;
    Options opts(
        "tca_check pio recv", "--peer NODE [options]",
        "Runs with `tca_check pio send` on NODE: owns --size bytes between two canary-filled\n"
        "guards and checks after every write that exactly the addressed bytes changed and\n"
        "hold the right data.");
    tcatools::add_peer_options(opts, &o);
    opts.u64("size", &o.size, "data bytes (1..256M)");
    opts.u64("guard", &o.guard, "bytes of canaries on each side (up to 16M)");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check pio recv");
    if (o.size == 0 || o.size > (256ull << 20) || o.guard > (16ull << 20))
        return s.error("need 1 <= --size <= 256M and --guard <= 16M");
    if (!s.open(o))
        return 1;
    unsigned char* data = s.alloc(o.size + 2 * o.guard, "tcaMalloc(data)");
    unsigned char* ctrl = data ? s.alloc(sizeof(PioCtrl), "tcaMalloc(ctrl)") : nullptr;
    tcaHandle data_h, ctrl_h, ack_h, ignored;
    if (!ctrl || !s.handle(data + o.guard, o.size, &data_h, "handle(data)") ||
        !s.handle(ctrl, sizeof(PioCtrl), &ctrl_h, "handle(ctrl)"))
        return 1;
    const auto* rec = reinterpret_cast<const volatile PioCtrl*>(ctrl);
    s.say("node %d: %" PRIu64 " data bytes in %u chunk(s) between guards of %" PRIu64
          " bytes; waiting for node %d",
          s.self(), o.size, static_cast<unsigned>(data_h.nr_chunks), o.guard, o.peer);
    Receiver rx(s, o.size, o.guard, data, rec);
    if (!s.exchange(data_h, &ack_h, kTagData, o.exchange_timeout_ms, "exchange(data)"))
        return 1;
    if (ack_h.size < sizeof(Ack))
        return s.error("sender's ack buffer is too small");
    rx.set_ack_handle(ack_h);
    // Nothing may have landed yet. This is the moment to look: the sender
    // writes only after the second exchange, which cannot complete on its
    // side before we have entered it (it needs our ack of its new nonce).
    std::int64_t where = 0;
    if (rx.check(0, 0, 0, &where, "before the first write") != kOk)
        return 1;
    if (!s.exchange(ctrl_h, &ignored, kTagCtrl, o.timeout_ms, "exchange(ctrl)"))
        return 1;
    std::uint64_t last = 0, seq = 0;
    for (;;) {
        if (!rx.wait(last, &seq))
            return 1;
        if (seq & kEndBit) {
            const std::uint64_t st = rx.check(last, 0, 0, &where, "after the last write");
            if (!rx.ack(st, where, seq) || st != kOk)
                return 1;
            break;
        }
        const std::uint64_t off = tcatools::load_acquire(&rec->offset);
        const std::uint64_t len = tcatools::load_acquire(&rec->len);
        std::uint64_t st = kBadRequest;
        if (len > 0 && off < o.size && len <= o.size - off)
            st = rx.check(seq - 1, off, len, &where);
        else
            s.fail("write #%" PRIu64 " outside the data: offset %" PRIu64 " len %" PRIu64, seq - 1,
                   off, len);
        if (!rx.ack(st, where, seq) || st != kOk)
            return 1;
        last = seq;
    }
    if (!s.barrier(data_h, kTagData))
        return 1;
    return s.verdict(true,
                     "%" PRIu64
                     " writes from node %d verified; each changed exactly the addressed "
                     "bytes; guards of %" PRIu64 " bytes intact",
                     last, o.peer, o.guard);
}

int pio_send(int argc, char** argv) {
    SendOptions o;
    Options opts(
        "tca_check pio send", "--peer NODE [options]",
        "Runs with `tca_check pio recv` on NODE: writes every offset x size combination that\n"
        "fits into its data (negative offsets count from the end; positions around chunk\n"
        "boundaries are added), one at a time, and collects the receiver's verdict on each.\n"
        "Also checks locally that out-of-range puts are refused.");
    tcatools::add_peer_options(opts, &o);
    opts.i64_list("offsets", &o.offsets, "offsets into the receiver's data");
    opts.u64_list("sizes", &o.sizes, "write sizes");
    opts.flag("auto", &o.put_auto,
              "write with tcaPutAuto (PIO or DMA by size; TCA_PIO_MAX) from "
              "tcaMalloc memory with the destination's low 4 address bits");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check pio send");
    if (!s.open(o))
        return 1;
    unsigned char* ack = s.alloc(sizeof(Ack), "tcaMalloc(ack)");
    tcaHandle ack_h, data_h, ctrl_h;
    if (!ack || !s.handle(ack, sizeof(Ack), &ack_h, "handle(ack)"))
        return 1;
    s.say("node %d: waiting for node %d", s.self(), o.peer);
    if (!s.exchange(ack_h, &data_h, kTagData, o.exchange_timeout_ms, "exchange(data)") ||
        !s.exchange(ack_h, &ctrl_h, kTagCtrl, o.timeout_ms, "exchange(ctrl)"))
        return 1;
    if (ctrl_h.size < sizeof(PioCtrl))
        return s.error("receiver's control buffer is too small");
    unsigned range_checks = 0;
    if (!local_range_checks(s, data_h, &range_checks))
        return 1;
    std::uint64_t skipped = 0;
    const std::vector<Case> cases = plan(o, data_h, &skipped);
    s.say("%zu writes into %" PRIu64 " bytes on node %d (%u chunk(s)); %" PRIu64
          " offset/size combinations do not fit and are skipped",
          cases.size(), data_h.size, o.peer, static_cast<unsigned>(data_h.nr_chunks), skipped);
    Sender tx(s, o, reinterpret_cast<const volatile Ack*>(ack), data_h, ctrl_h);
    std::uint64_t biggest = 0;
    for (const Case& c : cases)
        biggest = c.second > biggest ? c.second : biggest;
    if (!tx.stage(biggest))
        return 1;
    if (o.put_auto)
        s.say("writing with tcaPutAuto (PIO up to %zu bytes, DMA above)", tcaPioMax());
    char what[96];
    for (std::uint64_t k = 0; k < cases.size(); ++k) {
        const auto [off, len] = cases[k];
        std::snprintf(what, sizeof what, "write #%" PRIu64 " (offset %" PRIu64 ", len %" PRIu64 ")",
                      k, off, len);
        if (!tx.write(k, off, len) || !tx.verdict(k + 1, k, what))
            return 1;
    }
    if (!tx.end(cases.size()) || !tx.verdict(kEndBit | cases.size(), cases.size(), "final check"))
        return 1;
    if (!s.barrier(ack_h, kTagData))
        return 1;
    return s.verdict(true,
                     "%zu writes%s verified by node %d (only the addressed bytes changed); %u "
                     "out-of-range puts refused locally",
                     cases.size(), o.put_auto ? " (tcaPutAuto)" : "", o.peer, range_checks);
}

int pio_bad_node(int argc, char** argv) {
    struct {
        std::uint64_t node = ~0ull;     // default: the first node id that does not exist
        std::uint64_t offset = 0x1000;  // host memory region of the slice
        std::string sysfs = tcatools::default_sysfs_dir();
    } o;
    Options opts(
        "tca_check pio bad-node", "[options]",
        "Stores 8 bytes to a node that does not exist (default: node_count; must be < 16)\n"
        "and checks that the card counted NO_SUCH_NODE (sysfs err_count and err_last).");
    opts.u64("node", &o.node, "target node (default: node_count)");
    opts.u64("offset", &o.offset, "offset in the node's slice");
    opts.text("sysfs", &o.sysfs, "the device's sysfs directory");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check pio bad-node");
    if (!s.open())
        return 1;
    const int count = tcaNodeCount();
    if (!s.ok(count < 0 ? count : 0, "tcaNodeCount"))
        return 1;
    if (o.node == ~0ull)
        o.node = static_cast<std::uint64_t>(count);
    if (o.node < static_cast<std::uint64_t>(count) || o.node >= PEACH2_MAX_NODES ||
        o.offset >= PEACH2_SLICE_SIZE - 8) {
        s.fail(
            "--node must be in %d..%u (nodes that do not exist but have a window slice), "
            "--offset inside the slice",
            count, PEACH2_MAX_NODES - 1);
        return 1;
    }
    std::uint64_t before = 0, after = 0, last = 0;
    if (!tcatools::read_attr_u64(o.sysfs, "err_count", &before))
        return s.error("cannot read %s/err_count", o.sysfs.c_str());
    if (!store_raw(s, o.node, o.offset, 0xbadc0de0badc0deull))
        return 1;
    // The card counts the error when it handles the store; under emulation
    // that can trail the store instruction a little: poll for up to 2 s.
    const std::uint64_t start = tcatools::now_ns();
    do {
        if (!tcatools::read_attr_u64(o.sysfs, "err_count", &after))
            after = before;
        if (after > before)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (tcatools::now_ns() - start < 2000000000ull);
    const bool have_last = tcatools::read_attr_u64(o.sysfs, "err_last", &last);
    s.say("store to node %" PRIu64 " (node_count %d): err_count before=%" PRIu64 " after=%" PRIu64
          " err_last=%s (%s)",
          o.node, count, before, after, have_last ? std::to_string(last).c_str() : "?",
          have_last ? tcaCardErrorName(static_cast<std::uint32_t>(last)) : "unreadable");
    const bool pass = after > before && have_last && last == PEACH2_ERR_NO_SUCH_NODE;
    return s.verdict(pass, "%s",
                     pass ? "the card counted NO_SUCH_NODE"
                          : "expected err_count to grow and err_last to be NO_SUCH_NODE");
}

int pio_raw(int argc, char** argv) {
    struct {
        std::uint64_t node = 0, offset = 0;
    } o;
    Options opts(
        "tca_check pio raw", "--node N --offset OFF",
        "One 8-byte store to any window address; nothing is checked here. Tests aim it at\n"
        "memory that is no buffer and then look at the target card's error counters.");
    opts.u64("node", &o.node, "target node (< 16)");
    opts.u64("offset", &o.offset, "offset in the node's slice");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check pio raw");
    if (o.node >= PEACH2_MAX_NODES || o.offset > PEACH2_SLICE_SIZE - 8)
        return s.error("--node must be < %u and --offset inside a slice", PEACH2_MAX_NODES);
    if (!s.open() || !store_raw(s, o.node, o.offset, 0x5eed5eed5eed5eedull))
        return 1;
    s.say("stored 8 bytes at node %" PRIu64 " offset 0x%" PRIx64, o.node, o.offset);
    return 0;
}

int info(int argc, char** argv) {
    Options opts("tca_check info", "",
                 "One line: what the library sees of the device (for test logs).");
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check info");
    tcaDeviceInfo d;
    if (!s.open() || !s.ok(tcaGetDeviceInfo(&d), "device info"))
        return 1;
    s.say("node_id=%u node_count=%u abi=%u hw=%u.%u window=%" PRIu64 " max_alloc=%" PRIu64
          " max_chunk=%" PRIu64 " link_e=0x%08x link_w=0x%08x link_s=0x%08x",
          d.node_id, d.node_count, d.abi_version, d.hw_version >> 16, d.hw_version & 0xffff,
          d.window_size, d.max_alloc, d.max_chunk, d.link[0], d.link[1], d.link[2]);
    return 0;
}

}  // namespace tcacheck
