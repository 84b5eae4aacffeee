// SPDX-License-Identifier: MIT
// What every check and benchmark does around its own work: open the device
// (and check the peer), own its tcaMalloc buffers, exchange handles with
// the peer under a tag both sides derive from their parameters, say what
// failed and why, and end with one verdict line. Every line a program
// prints starts with its name ("tca_check pio recv: ...").
#pragma once

#include <tca/tca.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"

namespace tcatools {

// Options of every two-node command.
struct PeerOptions {
    int peer = -1;
    int timeout_ms = 10000;           // one step (a message, an answer)
    int exchange_timeout_ms = 60000;  // the peer starting
};

// Adds --peer, --timeout-ms, --exchange-timeout-ms.
void add_peer_options(Options& opts, PeerOptions* p);

// An exchange tag both sides derive from everything they must agree on:
// peers started with other parameters never pair (and time out).
std::uint32_t tag_of(std::string_view what, std::initializer_list<std::uint64_t> params,
                     const std::vector<std::uint64_t>& more = {});

class Session {
public:
    explicit Session(std::string name);
    // Frees the buffers, then closes the device.
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const char* name() const noexcept { return name_.c_str(); }

    // Opens the device (tcaInit); false after printing why.
    bool open();
    // Opens it and checks p.peer names another node and the timeouts are
    // positive. Then self(), peer() and leads() (the lower id) are set.
    bool open(const PeerOptions& p);
    int self() const noexcept { return self_; }
    int peer() const noexcept { return peer_.peer; }
    const PeerOptions& peer_options() const noexcept { return peer_; }
    bool leads() const noexcept { return self_ < peer_.peer; }

    // "<name>: <text>" on stdout, flushed (tests read it while we run).
    void say(const char* fmt, ...) const __attribute__((format(printf, 2, 3)));
    // "<name>: error: <text>" on stderr; returns false.
    bool fail(const char* fmt, ...) const __attribute__((format(printf, 2, 3)));
    // The same, as an exit status: returns 1.
    int error(const char* fmt, ...) const __attribute__((format(printf, 2, 3)));
    // True if rc == 0, else prints "<what>: <tcaErrorString> (rc)".
    bool ok(int rc, const char* what) const;
    // ok() for DMA calls: TCA_EDMA names the card's code from the ticket.
    bool dma_ok(int rc, const tcaDmaTicket* t, const char* what) const;
    // The last line: "<name>: PASS: <text>" or "<name>: FAIL: <text>";
    // the exit status (0 only on PASS).
    int verdict(bool pass, const char* fmt, ...) const __attribute__((format(printf, 3, 4)));

    // A zeroed tcaMalloc buffer owned by the session: nullptr after
    // printing the error.
    unsigned char* alloc(std::size_t size, const char* what);
    // Frees one of them now: tcaFree's code.
    int free(void* p);
    // tcaGetHandle (size 0: to the end of the buffer).
    bool handle(const void* p, std::size_t size, tcaHandle* out, const char* what) const;

    // tcaExchange with the peer (or `peer`), naming the step on failure.
    bool exchange(const tcaHandle& mine, tcaHandle* theirs, std::uint32_t tag, int timeout_ms,
                  const char* step) const;
    bool exchange_with(int peer, const tcaHandle& mine, tcaHandle* theirs, std::uint32_t tag,
                       int timeout_ms, const char* step) const;
    // A last exchange: neither side frees memory the other may still
    // write, and each knows the other finished cleanly. timeout_ms < 0:
    // the peer options' step timeout.
    bool barrier(const tcaHandle& mine, std::uint32_t tag, int timeout_ms = -1) const;
    // tcaPut of one 8-byte word.
    bool put_u64(const tcaHandle& h, std::uint64_t offset, std::uint64_t v, const char* what) const;

    // Waits until the 8-byte word holds `expect` (acquire loads). A value
    // other than `prev` (what it held before) or `expect` means the peer
    // is out of step. False after printing why (timeout or out of step).
    bool wait_word(const volatile void* word, std::uint64_t expect, std::uint64_t prev,
                   const char* what) const;

private:
    struct Buffer;

    std::string name_;
    PeerOptions peer_;
    int self_ = -1;
    bool opened_ = false;
    std::vector<std::unique_ptr<Buffer>> buffers_;
};

}  // namespace tcatools
