// SPDX-License-Identifier: MIT
// The two-node data path of tca_bench's put tests (protocol.hpp): both
// nodes' buffers and handles, and one latency or stream measurement in one
// mode (PIO or a DMA descriptor mode) at one size, both roles. The lower
// node id pings and measures; the other answers and checks too.
#pragma once

#include <tca/tca.h>

#include <cstdint>
#include <vector>

#include "../common/results.hpp"
#include "../common/session.hpp"
#include "protocol.hpp"

namespace tcabench {

struct LatencyParams {
    std::uint64_t iters = 200;    // timed iterations (small sizes)
    std::uint64_t min_iters = 5;  // ... never fewer
    std::uint64_t warmup = 5;
    std::uint64_t latency_bytes = 32ull << 20;  // per size: fewer iterations beyond
};

// Adds --iters, --min-iters, --warmup, --latency-bytes.
void add_latency_options(tcatools::Options& opts, LatencyParams* p);

class Link {
public:
    explicit Link(tcatools::Session& s) : s_(s) {}

    // Buffers for messages up to max_size in `slots` slots (2 .. 16), a
    // handle per slot and one for the words, exchanged with the peer under
    // tag + i. False after printing the error.
    bool connect(std::uint64_t max_size, unsigned slots, std::uint32_t tag);
    // A handle of ours (for the final barrier).
    const tcaHandle& mine() const { return mine_.front(); }
    bool ping() const { return s_.leads(); }

    // Ping-pong at one size; the ping's row has the one-way latencies
    // (RTT/2). `si` numbers the sizes of the phase.
    bool latency(Mode m, unsigned si, std::uint64_t size, const LatencyParams& p, tcatools::Row* r);
    // About `bytes` in messages of `size` back to back; the ping's row has
    // the bandwidth (wall clock, first start to last credit).
    bool stream(Mode m, unsigned si, std::uint64_t size, std::uint64_t bytes, tcatools::Row* r);

private:
    // Message from tx slot `slot` into the peer's rx slot, then `value`
    // into its word `word`. DMA: started, *t to collect (before the source
    // changes); PIO: done on return.
    int send(Mode m, unsigned slot, std::uint64_t size, unsigned word, std::uint64_t value,
             tcaDmaTicket* t) const;
    const volatile unsigned char* word_at(unsigned i) const { return rx_ + layout_.word_offset(i); }
    bool wait_word(unsigned i, std::uint64_t expect, const char* what);
    bool wait_credit(unsigned phase, unsigned si, std::uint64_t need);
    bool credit(std::uint64_t word) const;
    bool collect(tcaDmaTicket* t) const;
    bool verify(unsigned slot, std::uint64_t size, std::uint64_t seed, std::uint64_t it) const;

    tcatools::Session& s_;
    Layout layout_;
    unsigned char *rx_ = nullptr, *tx_ = nullptr;
    std::vector<tcaHandle> mine_;          // ours: a handle per slot, then the words
    std::vector<tcaHandle> remote_slots_;  // the peer's rx slots
    tcaHandle remote_words_{};             // the peer's completion and credit words
    std::vector<std::uint64_t> last_;      // last value seen in each of our words
};

}  // namespace tcabench
