// SPDX-License-Identifier: MIT
// The wire protocol of tca_bench's two-node tests (pingpong, dma, and the
// put half of get): buffer layout, completion words, payload seeds, and how
// many messages each size gets. Pure functions shared by both roles (and
// the unit tests); both sides must compute the same.
//
// Each node owns a receive buffer (rx) and a send buffer (tx), both from
// tcaMalloc. rx: `slots` message slots of slot_bytes, then a line of 64
// bytes per completion word (one per slot) and one for the credit word. tx:
// the same slots, so a message goes from tx slot s to the peer's rx slot s
// (page-aligned both: the DMA rule "equal low 4 address bits" holds). The
// peer gets a handle per rx slot and one for the words: a handle holds at
// most 14 physically contiguous pieces, fewer than megabytes of rx may have.
//
// A message is its payload and then an 8-byte completion word that arrives
// after it: written by the card after the data (DMA), or stored after the
// payload and a fence (PIO: one in-order link).
//
// Latency (ping-pong): message n of a size uses slot n % 2 and completion
// word 0; the word's value names (phase, size index, iteration), so a
// receiver waits for exactly the message it expects and can tell a peer
// that is out of step from one that is slow. The pong replies before it
// verifies: its slot for message n is next written by message n + 2, which
// the ping sends only after the pong replied to n + 1, i.e. after it
// checked n. After the last message of a size the pong stores that
// message's word into the ping's credit word, and the ping waits for it:
// the next size starts in slot 0 again, which the pong may still be
// checking otherwise.
//
// Stream (bandwidth): the ping sends message m from tx slot m % slots into
// rx slot m % slots with completion word m % slots; the pong verifies it
// and stores m + 1 into the ping's credit word. The ping sends m only after
// credit m - slots + 1 (the slot's previous message was verified) and after
// its own ticket for that slot's previous message (the source may change).
#pragma once

#include <cstdint>

#include "../common/modes.hpp"

namespace tcabench {

using tcatools::Mode;

struct Layout {
    std::uint64_t slot_bytes = 0;  // a multiple of 4096
    unsigned slots = 0;

    static Layout make(std::uint64_t max_size, unsigned slots);
    std::uint64_t slot_offset(unsigned s) const { return s * slot_bytes; }
    // The words: one per slot, then the credit word, a cache line each.
    std::uint64_t words_offset() const { return slots * slot_bytes; }
    std::uint64_t words_bytes() const { return 64ull * (slots + 1); }
    static std::uint64_t word_in_words(unsigned i) { return 64ull * i; }
    std::uint64_t word_offset(unsigned i) const { return words_offset() + word_in_words(i); }
    unsigned credit_word() const { return slots; }
    std::uint64_t rx_bytes() const { return words_offset() + words_bytes(); }
    std::uint64_t tx_bytes() const { return slots * slot_bytes; }
};

// Phases number the (mode, test) pairs of a run: completion words of
// different phases never match.
enum class Test : unsigned { Latency = 0, Stream = 1 };
constexpr unsigned phase_of(Mode m, Test t) {
    return static_cast<unsigned>(m) * 2 + static_cast<unsigned>(t);
}

// Never 0 (a fresh buffer is zero), unique per (phase, size index, message).
constexpr std::uint64_t word_value(unsigned phase, unsigned size_index, std::uint64_t message) {
    return (0xd3ull << 56) | (static_cast<std::uint64_t>(phase & 0xff) << 48) |
           (static_cast<std::uint64_t>(size_index & 0xffff) << 32) |
           ((message + 1) & 0xffffffffull);
}

enum class Dir : std::uint64_t { PingToPong = 1, PongToPing = 2 };

// Latency payloads: a fresh pattern per message.
std::uint64_t payload_seed(unsigned phase, unsigned size_index, std::uint64_t size,
                           std::uint64_t message, Dir d);
// Stream: the pattern of a source slot, and the stamp seed of a message.
std::uint64_t slot_seed(unsigned phase, std::uint64_t size, unsigned slot);
std::uint64_t stamp_seed(unsigned phase, std::uint64_t size, std::uint64_t message);

// Timed latency iterations for a size: `iters`, fewer for big messages so
// one size moves about `budget` bytes, never fewer than `min_iters`.
std::uint64_t latency_iters(std::uint64_t size, std::uint64_t iters, std::uint64_t budget,
                            std::uint64_t min_iters);
// Stream messages for a size: about `budget` bytes, 16 .. 4096 messages.
std::uint64_t stream_messages(std::uint64_t size, std::uint64_t budget);

}  // namespace tcabench
