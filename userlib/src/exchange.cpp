// SPDX-License-Identifier: MIT
#include "exchange.hpp"

#include <sys/random.h>
#include <tca/tca.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <optional>
#include <thread>

#include "handle.hpp"
#include "library.hpp"
#include "pio.hpp"

namespace tca {

namespace {

constexpr std::uint64_t kRecordSeed = 0x7463612d6d627831ull;  // "tca-mbx1"
constexpr std::size_t kCoveredWords = offsetof(MailboxRecord, checksum) / 8;
static_assert(offsetof(MailboxRecord, checksum) + 8 == sizeof(MailboxRecord));

}  // namespace

// ---- the record ----------------------------------------------------------------

std::uint64_t record_checksum(const MailboxRecord& r) noexcept {
    std::array<std::uint64_t, kCoveredWords> w{};
    std::memcpy(w.data(), &r, sizeof w);
    return hash_words(w, kRecordSeed);
}

void seal_record(MailboxRecord& r) noexcept {
    r.magic = kRecordMagic;
    r.version = kRecordVersion;
    r.length = sizeof(MailboxRecord);
    r.checksum = record_checksum(r);
}

bool record_valid(const MailboxRecord& r) noexcept {
    return r.magic == kRecordMagic && r.version == kRecordVersion &&
           r.length == sizeof(MailboxRecord) && r.checksum == record_checksum(r);
}

// ---- the handshake -------------------------------------------------------------

Handshake::Handshake(std::uint32_t self, std::uint32_t peer, std::uint32_t tag, std::uint64_t nonce,
                     const tcaHandle& mine, const PeerHistory& history) noexcept
    : self_(self), peer_(peer), tag_(tag), nonce_(nonce), mine_(mine), history_(history) {}

MailboxRecord Handshake::outgoing() const noexcept {
    MailboxRecord r{};
    r.tag = tag_;
    r.sender = self_;
    r.nonce = nonce_;
    r.ack = peer_nonce_;
    r.prev_tag = history_.tag;
    r.prev_nonce = history_.my_nonce;
    r.prev_ack = history_.peer_nonce;
    r.handle = mine_;
    seal_record(r);
    return r;
}

bool Handshake::observe(const MailboxRecord& rec) noexcept {
    if (done_ || rec.sender != peer_ || rec.nonce == 0)
        return done_;
    // The peer already finished this exchange (it acked our nonce, and the
    // nonce it used is the one whose handle we hold) and has moved on. This
    // test comes first: a peer in its next call with the same tag may have
    // read our old record and now ack our nonce *again*, next to a new
    // handle; the direct test below would then take the wrong handle.
    if (peer_nonce_ != 0 && rec.prev_tag == tag_ && rec.prev_ack == nonce_ &&
        rec.prev_nonce == peer_nonce_) {
        done_ = true;
        return true;
    }
    // Direct completion: the peer's current record acks our nonce.
    if (rec.tag == tag_ && rec.ack == nonce_) {
        peer_nonce_ = rec.nonce;
        theirs_ = rec.handle;
        done_ = final_write_ = true;
        return true;
    }
    // The peer's record for this tag, not yet acking us: remember its nonce
    // (acked by our next outgoing()) and the handle that came with it.
    if (rec.tag == tag_) {
        peer_nonce_ = rec.nonce;
        theirs_ = rec.handle;
    }
    return false;
}

// ---- the loop ------------------------------------------------------------------

int run_exchange(MailboxIo& io, Handshake& hs, const ExchangeTiming& timing) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto deadline = start + std::chrono::milliseconds(timing.timeout_ms);
    auto last_write = start;
    auto interval = timing.rewrite;
    std::uint64_t last_ack = ~0ull;  // forces the first write

    for (;;) {
        const auto now = clock::now();
        const MailboxRecord out = hs.outgoing();
        // A changed ack goes out at once: it is what the peer waits for.
        if (out.ack != last_ack) {
            io.write(out);
            last_write = now;
            last_ack = out.ack;
            interval = timing.rewrite;
        } else if (now - last_write >= interval) {
            io.write(out);
            last_write = now;
            interval = std::min<std::chrono::microseconds>(2 * interval, timing.rewrite_max);
        }
        MailboxRecord in;
        if (io.read(&in) && hs.observe(in)) {
            if (hs.needs_final_write())
                io.write(hs.outgoing());
            return 0;
        }
        if (timing.timeout_ms > 0 && now >= deadline)
            return -ETIMEDOUT;
        std::this_thread::sleep_for(timing.poll);
    }
}

// ---- the card's mailbox --------------------------------------------------------

std::uint64_t CardMailbox::slot_address(std::uint32_t node, std::uint32_t slot) noexcept {
    return PEACH2_NODE_BASE(node) + PEACH2_CARD_OFF + PEACH2_CARD_MAILBOX_OFF +
           static_cast<std::uint64_t>(slot) * PEACH2_MAILBOX_SLOT_SIZE;
}

void CardMailbox::write(const MailboxRecord& rec) noexcept {
    pio_copy(window_ + slot_address(peer_, self_), &rec, sizeof rec);
    store_fence();
}

bool CardMailbox::read(MailboxRecord* rec) noexcept {
    mmio_read64(rec, mailbox_ + static_cast<std::size_t>(peer_) * PEACH2_MAILBOX_SLOT_SIZE,
                sizeof *rec);
    return record_valid(*rec);
}

namespace {

std::uint64_t clock_ns(clockid_t id) noexcept {
    timespec ts{};
    clock_gettime(id, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

// ---- nonces --------------------------------------------------------------------

std::uint64_t fresh_nonce() noexcept {
    static std::atomic<std::uint64_t> counter{0};
    std::uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r))
        r = 0;
    // Mixing in time, pid and a counter keeps nonces distinct even when
    // getrandom is unavailable; with it they only add nothing harmful.
    std::uint64_t x = mix64(r ^ clock_ns(CLOCK_REALTIME));
    x = mix64(x ^ clock_ns(CLOCK_MONOTONIC) ^ (static_cast<std::uint64_t>(getpid()) << 40));
    x = mix64(x ^ counter.fetch_add(1, std::memory_order_relaxed));
    return x != 0 ? x : 1;
}

}  // namespace tca

// ---- the C API: tcaExchange ----------------------------------------------------

using namespace tca;

namespace {

struct Claim {
    std::uint32_t self = 0;
    PeerHistory history;
    std::optional<CardMailbox> io;
};

int claim_peer(int peer, Claim* out) {
    return with_context([&](Context& c) {
        if (peer < 0 || static_cast<std::uint32_t>(peer) >= c.node_count() ||
            static_cast<std::uint32_t>(peer) == c.node_id())
            return TCA_ENODE;
        const auto p = static_cast<std::uint32_t>(peer);
        if (c.exchange_busy(p))
            return -EBUSY;
        c.exchange_busy(p) = true;
        out->self = c.node_id();
        out->history = c.history(p);
        out->io.emplace(c.window(), c.mailbox(), c.node_id(), p);
        return 0;
    });
}

// Gives the peer back on every path out of tcaExchange, recording the
// completed exchange (if any) for the next one's `prev` fields.
class PeerRelease {
public:
    explicit PeerRelease(std::uint32_t peer) noexcept : peer_(peer) {}
    PeerRelease(const PeerRelease&) = delete;
    PeerRelease& operator=(const PeerRelease&) = delete;
    void completed(const Handshake& hs) noexcept { history_ = hs.completed(); }
    ~PeerRelease() {
        std::lock_guard<std::mutex> lock(library_mutex());
        // Only gone if tcaFinalize raced with us, which the API forbids.
        if (Context* c = context_if_open()) {
            c->exchange_busy(peer_) = false;
            if (history_)
                c->history(peer_) = *history_;
        }
    }

private:
    std::uint32_t peer_;
    std::optional<PeerHistory> history_;
};

}  // namespace

extern "C" int tcaExchange(int peer, const tcaHandle* mine, tcaHandle* theirs, int timeout_ms,
                           uint32_t tag) {
    if (!mine || !theirs)
        return -EINVAL;
    if (int rc = validate_handle(*mine))
        return rc;
    return guarded([&] {
        Claim claim;
        if (int rc = claim_peer(peer, &claim))
            return rc;
        const auto p = static_cast<std::uint32_t>(peer);
        PeerRelease release(p);
        Handshake hs(claim.self, p, tag, fresh_nonce(), *mine, claim.history);
        ExchangeTiming timing;
        timing.timeout_ms = timeout_ms;
        if (int rc = run_exchange(*claim.io, hs, timing))
            return rc;
        release.completed(hs);
        // The record's checksum proved it arrived intact; this checks that
        // the peer sent a well-formed handle in the first place.
        if (int bad = validate_handle(hs.theirs()))
            return bad;
        *theirs = hs.theirs();
        return 0;
    });
}
