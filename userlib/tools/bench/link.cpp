// SPDX-License-Identifier: MIT
#include "link.hpp"

#include <cinttypes>
#include <span>

#include "../common/block_sum.hpp"
#include "../common/pattern.hpp"
#include "../common/spin.hpp"

namespace tcabench {

using tcatools::Row;

void add_latency_options(tcatools::Options& opts, LatencyParams* p) {
    opts.u64("iters", &p->iters, "timed latency iterations per size");
    opts.u64("min-iters", &p->min_iters, "never fewer, however big the size");
    opts.u64("warmup", &p->warmup, "untimed iterations first (verified too)");
    opts.u64("latency-bytes", &p->latency_bytes,
             "fewer iterations beyond this many bytes per size");
}

bool Link::connect(std::uint64_t max_size, unsigned slots, std::uint32_t tag) {
    layout_ = Layout::make(max_size, slots);
    rx_ = s_.alloc(layout_.rx_bytes(), "tcaMalloc(receive buffer)");
    tx_ = rx_ ? s_.alloc(layout_.tx_bytes(), "tcaMalloc(send buffer)") : nullptr;
    if (!tx_)
        return false;
    mine_.resize(slots + 1);
    remote_slots_.resize(slots);
    last_.assign(slots + 1, 0);
    for (unsigned i = 0; i <= slots; ++i) {
        const bool words = i == slots;
        const std::uint64_t off = words ? layout_.words_offset() : layout_.slot_offset(i);
        const std::uint64_t len = words ? layout_.words_bytes() : layout_.slot_bytes;
        if (!s_.handle(rx_ + off, len, &mine_[i], "tcaGetHandle"))
            return false;
    }
    const tcatools::PeerOptions& p = s_.peer_options();
    for (unsigned i = 0; i <= slots; ++i) {
        tcaHandle* theirs = i < slots ? &remote_slots_[i] : &remote_words_;
        if (!s_.exchange(mine_[i], theirs, tag + i, i ? p.timeout_ms : p.exchange_timeout_ms,
                         "address exchange"))
            return false;
        if (theirs->size < (i < slots ? layout_.slot_bytes : layout_.words_bytes()))
            return s_.fail("the peer's buffer is too small");
    }
    return true;
}

int Link::send(Mode m, unsigned slot, std::uint64_t size, unsigned word, std::uint64_t value,
               tcaDmaTicket* t) const {
    const unsigned char* src = tx_ + layout_.slot_offset(slot);
    const tcaHandle& dst = remote_slots_[slot];
    const std::uint64_t word_off = Layout::word_in_words(word);
    if (m != Mode::Pio) {
        tcaDmaOpts opts{};
        opts.flags = tcatools::mode_flags(m);
        tcaDmaXfer x{};
        x.dst = &dst;
        x.src = src;
        x.len = size;
        x.notify = &remote_words_;
        x.notify_offset = word_off;
        x.notify_value = value;
        x.notify_len = 8;
        return tcaDmaStart(&x, 1, &opts, t);
    }
    *t = tcaDmaTicket{};
    // tcaPut ends with a store fence: the word cannot overtake the payload.
    if (int rc = tcaPut(&dst, 0, src, size))
        return rc;
    return tcaPut(&remote_words_, word_off, &value, sizeof value);
}

bool Link::wait_word(unsigned i, std::uint64_t expect, const char* what) {
    if (!s_.wait_word(word_at(i), expect, last_[i], what))
        return false;
    last_[i] = expect;
    return true;
}

// The peer's credits arrive in order (message numbers, as words of this
// phase); waits for one >= `need`.
bool Link::wait_credit(unsigned phase, unsigned si, std::uint64_t need) {
    const unsigned i = layout_.credit_word();
    const std::uint64_t base = word_value(phase, si, 0) & ~0xffffffffull;
    std::uint64_t seen = 0;
    const auto v = tcatools::spin_until(
        word_at(i), static_cast<std::uint64_t>(s_.peer_options().timeout_ms) * 1000000ull,
        [&](std::uint64_t x) {
            if ((x & ~0xffffffffull) == base && (x & 0xffffffffull) > need)
                return tcatools::Spin::Done;
            if (x == last_[i] || (x & ~0xffffffffull) == base)
                return tcatools::Spin::Timeout;
            return tcatools::Spin::Rejected;
        },
        &seen);
    if (v == tcatools::Spin::Done) {
        last_[i] = seen;
        return true;
    }
    return s_.fail("%s waiting for the credit of message %" PRIu64 " (saw 0x%016" PRIx64 ")",
                   v == tcatools::Spin::Timeout ? "timeout" : "out of step", need, seen);
}

// Tells the ping which message was checked last (its credit word).
bool Link::credit(std::uint64_t word) const {
    return s_.put_u64(remote_words_, Layout::word_in_words(layout_.credit_word()), word, "credit");
}

bool Link::collect(tcaDmaTicket* t) const {
    return s_.dma_ok(tcaDmaWait(t, s_.peer_options().timeout_ms), t, "DMA completion");
}

bool Link::verify(unsigned slot, std::uint64_t size, std::uint64_t seed, std::uint64_t it) const {
    const std::span<const std::uint8_t> got(rx_ + layout_.slot_offset(slot), size);
    const std::size_t bad = tcatools::find_mismatch(got, seed);
    if (bad == tcatools::kNoMismatch)
        return true;
    return s_.fail("message from node %d (size %" PRIu64 ", iteration %" PRIu64
                   ") differs at offset %zu: got 0x%02x, expected 0x%02x",
                   s_.peer(), size, it, bad, got[bad], tcatools::pattern_byte(seed, bad));
}

bool Link::latency(Mode m, unsigned si, std::uint64_t size, const LatencyParams& p, Row* r) {
    const unsigned phase = phase_of(m, Test::Latency);
    const std::uint64_t timed = latency_iters(size, p.iters, p.latency_bytes, p.min_iters);
    const Dir out = ping() ? Dir::PingToPong : Dir::PongToPing;
    const Dir in = ping() ? Dir::PongToPing : Dir::PingToPong;
    std::vector<double> us;
    us.reserve(timed);
    std::uint64_t verified = 0;
    for (std::uint64_t it = 0; it < p.warmup + timed; ++it) {
        const unsigned slot = static_cast<unsigned>(it % 2);
        const std::uint64_t off = layout_.slot_offset(slot), word = word_value(phase, si, it);
        tcatools::fill_pattern(std::span(tx_ + off, size), payload_seed(phase, si, size, it, out));
        tcaDmaTicket t{};
        if (ping()) {
            const std::uint64_t t0 = tcatools::now_ns();
            if (!s_.ok(send(m, slot, size, 0, word, &t), "send") ||
                !wait_word(0, word, "waiting for the reply"))
                return false;
            const std::uint64_t t1 = tcatools::now_ns();
            if (it >= p.warmup)
                us.push_back(static_cast<double>(t1 - t0) / 2000.0);
        } else {
            // Reply first, check after: the check stays out of the round trip.
            if (!wait_word(0, word, "waiting for the ping") ||
                !s_.ok(send(m, slot, size, 0, word, &t), "send"))
                return false;
        }
        // The reply (ping) or the next message (pong) proves our message
        // arrived; the ticket is collected off the timed path.
        if (!collect(&t) || !verify(slot, size, payload_seed(phase, si, size, it, in), it))
            return false;
        ++verified;
    }
    *r = tcatools::latency_row("latency", tcatools::mode_name(m), size, us, verified);
    r->count = timed;
    // End of the size: the pong confirms it has checked the last message,
    // which sits in a slot the next size's first message reuses.
    const std::uint64_t last = p.warmup + timed - 1;
    if (ping())
        return wait_credit(phase, si, last);
    return credit(word_value(phase, si, last));
}

bool Link::stream(Mode m, unsigned si, std::uint64_t size, std::uint64_t bytes, Row* r) {
    const unsigned phase = phase_of(m, Test::Stream), k = layout_.slots;
    const std::uint64_t n = stream_messages(size, bytes);
    if (ping()) {
        for (unsigned s = 0; s < k; ++s)
            tcatools::fill_pattern(std::span(tx_ + layout_.slot_offset(s), size),
                                   slot_seed(phase, size, s));
        std::vector<tcaDmaTicket> tickets(k);
        const std::uint64_t t0 = tcatools::now_ns();
        for (std::uint64_t msg = 0; msg < n; ++msg) {
            const unsigned s = static_cast<unsigned>(msg % k);
            const std::uint64_t off = layout_.slot_offset(s);
            if (msg >= k && !wait_credit(phase, si, msg - k))
                return false;
            if (!collect(&tickets[s]))
                return false;
            tcatools::stamp_blocks(tx_ + off, size, stamp_seed(phase, size, msg));
            if (!s_.ok(send(m, s, size, s, word_value(phase, si, msg), &tickets[s]), "send"))
                return false;
        }
        if (!wait_credit(phase, si, n - 1))
            return false;
        const double seconds = static_cast<double>(tcatools::now_ns() - t0) / 1e9;
        // Credits come only for verified messages, in order: all n confirmed.
        *r = tcatools::bandwidth_row("stream", tcatools::mode_name(m), size, n, seconds, n);
        for (tcaDmaTicket& t : tickets)
            if (!collect(&t))
                return false;
        return true;
    }
    std::vector<tcatools::BlockSum> expect(k);
    for (unsigned s = 0; s < k; ++s)
        expect[s] = tcatools::pattern_sum(slot_seed(phase, size, s), size);
    for (std::uint64_t msg = 0; msg < n; ++msg) {
        const unsigned s = static_cast<unsigned>(msg % k);
        const std::uint64_t word = word_value(phase, si, msg);
        if (!wait_word(s, word, "stream: waiting for a message"))
            return false;
        std::size_t bad = 0;
        if (!tcatools::check_blocks(rx_ + layout_.slot_offset(s), size,
                                    stamp_seed(phase, size, msg), expect[s], &bad)) {
            if (bad == static_cast<std::size_t>(-1))
                return s_.fail("stream message %" PRIu64 " (size %" PRIu64 "): checksum differs",
                               msg, size);
            return s_.fail("stream message %" PRIu64 " (size %" PRIu64
                           "): block %zu is stale or wrong (stamp differs)",
                           msg, size, bad);
        }
        if (!credit(word))
            return false;
    }
    *r = tcatools::bandwidth_row("stream", tcatools::mode_name(m), size, n, 0, n);
    return true;
}

}  // namespace tcabench
