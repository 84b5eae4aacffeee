// SPDX-License-Identifier: MIT
// tcaExchange: two nodes swap handles through their cards' mailboxes. The
// record each side writes into its slot on the peer, the handshake that
// decides what to write and when a call is complete (a pure state machine:
// no I/O, no clock), the loop that drives it over a mailbox with a clock,
// the card's mailbox as that I/O, and fresh nonces. exchange.cpp holds all
// of it and the C API; the tests run the state machine and the loop against
// in-memory mailboxes.
#pragma once

#include <peach2/peach2_hw.h>
#include <tca/tca.h>

#include <chrono>
#include <cstdint>

namespace tca {

// ---- the record ----------------------------------------------------------------

// The record tcaExchange() writes into a peer's mailbox slot, and its
// integrity check. A reader sees the slot through uncached MMIO while the
// peer may be rewriting it, so it can observe a mix of two records ("torn");
// the checksum over every other word makes such a mix fail validation, and
// the reader simply tries again later.

inline constexpr std::uint32_t kRecordMagic = 0x58414354u;  // "TCAX"
inline constexpr std::uint16_t kRecordVersion = 1;

struct MailboxRecord {
    std::uint32_t magic;       // kRecordMagic
    std::uint16_t version;     // kRecordVersion
    std::uint16_t length;      // sizeof(MailboxRecord)
    std::uint32_t tag;         // caller's tag: only equal tags pair up
    std::uint32_t sender;      // writer's node id (= the slot index)
    std::uint64_t nonce;       // writer's fresh random nonce for this call, != 0
    std::uint64_t ack;         // the peer nonce the writer has seen, 0 = none yet
    std::uint32_t prev_tag;    // the writer's last completed exchange with
    std::uint32_t reserved;    //   this peer: its tag, the writer's nonce and
    std::uint64_t prev_nonce;  //   the peer's nonce in it (0/0 if none); lets a
    std::uint64_t prev_ack;    //   slower peer finish (the handshake, below)
    tcaHandle handle;          // the writer's handle
    std::uint64_t checksum;    // record_checksum() of everything above
};

static_assert(sizeof(MailboxRecord) % 8 == 0, "read and written as 8-byte words");
static_assert(sizeof(MailboxRecord) <= PEACH2_MAILBOX_SLOT_SIZE, "fits one mailbox slot");

std::uint64_t record_checksum(const MailboxRecord& r) noexcept;

// Fills magic, version, length and checksum.
void seal_record(MailboxRecord& r) noexcept;

// True for a complete, untorn record of this format.
bool record_valid(const MailboxRecord& r) noexcept;

// ---- the handshake -------------------------------------------------------------

// The tcaExchange() handshake as a pure state machine: it decides what to
// write and interprets what was read, but does no I/O and keeps no clock, so
// tests can run two of them against in-memory mailboxes in any interleaving.
//
// Protocol. Node i's mailbox has one slot per source node; only node j ever
// writes slot j (a PIO store into node i's card), and only node i reads it.
// In one call each side picks a fresh random nonce and keeps rewriting its
// record {tag, nonce, ack, prev, handle, checksum} into its slot on the peer,
// where ack is the nonce it last read from the peer (0 before that). It
// finishes when it reads, in its own mailbox, a valid record from the peer
// with the same tag whose ack equals its own nonce: the peer has then seen
// this call's record, so the handle that came with that reply is current. On
// finishing it writes its record once more, now acking the peer's nonce.
//
// Why stale data cannot fool it: a record left over from an earlier run or an
// earlier call carries an ack made before this call's nonce existed; with
// 64-bit random nonces it cannot equal the new one. A stale record may make
// this side ack an old nonce and remember an old handle, but that is
// replaced as soon as the peer's current record arrives (the slot only ever
// holds the peer's latest write), and completion needs the peer's current
// record anyway. Torn reads fail the checksum and are ignored.
//
// Why both sides terminate. Both keep rewriting, so each eventually reads the
// other's current record and acks its nonce; the first to read an ack of its
// own nonce (say A) knows B's nonce, writes its final ack of it and returns.
// That final record stays in B's slot until A writes again, so B reads it and
// returns too. The catch: A may start its next exchange with B at once and
// overwrite that final record before B has read it. Therefore every record
// also carries the writer's last completed exchange with this peer (tag,
// own nonce, peer nonce): B, still in the old call, reads A's new record,
// sees "A completed tag T acking your nonce", and finishes with the handle
// it already has. (That test is made before the direct one: A's new call may
// have read B's old record and ack B's old nonce once more, beside A's new
// handle.) A cannot get two calls ahead: finishing the new call needs
// B's ack of A's new nonce, which B only writes from its own new call. So
// the n-th call on each side pairs with the n-th on the other.

// What a node remembers about its last completed exchange with one peer.
struct PeerHistory {
    std::uint32_t tag = 0;
    std::uint64_t my_nonce = 0;  // 0: no exchange completed yet
    std::uint64_t peer_nonce = 0;
};

class Handshake {
public:
    Handshake(std::uint32_t self, std::uint32_t peer, std::uint32_t tag, std::uint64_t nonce,
              const tcaHandle& mine, const PeerHistory& history) noexcept;

    // The record to write into our slot on the peer (sealed).
    MailboxRecord outgoing() const noexcept;

    // Feeds a record read from the peer's slot in our mailbox. It must have
    // passed record_valid(). Returns true once the exchange is complete.
    bool observe(const MailboxRecord& rec) noexcept;

    bool done() const noexcept { return done_; }
    // After completion: must outgoing() be written once more? (Yes when we
    // finished on the peer's direct ack: it still needs to see ours.)
    bool needs_final_write() const noexcept { return final_write_; }
    const tcaHandle& theirs() const noexcept { return theirs_; }
    // After completion: what to remember for the next exchange with the peer.
    PeerHistory completed() const noexcept { return {tag_, nonce_, peer_nonce_}; }

private:
    std::uint32_t self_, peer_, tag_;
    std::uint64_t nonce_;
    tcaHandle mine_;
    PeerHistory history_;
    std::uint64_t peer_nonce_ = 0;  // latest nonce read from the peer, same tag
    tcaHandle theirs_{};            // the handle that came with peer_nonce_
    bool done_ = false;
    bool final_write_ = false;
};

// ---- the loop ------------------------------------------------------------------

// Drives a Handshake over a mailbox with a clock: write, poll, rewrite
// periodically, give up at the deadline. The I/O is behind MailboxIo so the
// loop runs against the card in the library and against shared memory in
// the tests.

class MailboxIo {
public:
    virtual ~MailboxIo() = default;
    // Writes our record into our slot of the peer's mailbox (and fences).
    virtual void write(const MailboxRecord& rec) noexcept = 0;
    // Reads the peer's slot of our mailbox; false if it holds no valid
    // record right now (empty, garbage, or torn by a concurrent write).
    virtual bool read(MailboxRecord* rec) noexcept = 0;
};

struct ExchangeTiming {
    // How often to look at the mailbox. Reads are uncached MMIO: cheap on
    // hardware, a VM exit each under emulation, hence not a busy loop.
    std::chrono::microseconds poll{100};
    // How often to rewrite an unchanged record: first after `rewrite`, then
    // doubling up to `rewrite_max`. The rewrite is what reaches a peer whose
    // card was not up (or was reset) when we first wrote. The backoff matters
    // because every store to an absent peer is an error the local card counts
    // (link down / no route): a long wait must not flood the counters or the
    // link. A changed record (new ack) is written at once and resets it.
    std::chrono::microseconds rewrite{1000};
    std::chrono::microseconds rewrite_max{64000};
    // <= 0: no deadline.
    int timeout_ms = 10000;
};

// 0 when hs completed, -ETIMEDOUT at the deadline.
int run_exchange(MailboxIo& io, Handshake& hs, const ExchangeTiming& timing);

// ---- the card's mailbox --------------------------------------------------------

// MailboxIo on the real card: our record goes by PIO into slot `self` of
// the peer's mailbox (a card region of the peer's slice); the peer's record
// is read from slot `peer` of our own mailbox mapping (uncached MMIO).

class CardMailbox final : public MailboxIo {
public:
    CardMailbox(volatile unsigned char* window, const volatile unsigned char* mailbox,
                std::uint32_t self, std::uint32_t peer) noexcept
        : window_(window), mailbox_(mailbox), self_(self), peer_(peer) {}

    void write(const MailboxRecord& rec) noexcept override;
    bool read(MailboxRecord* rec) noexcept override;

    // Global address of slot `slot` in node `node`'s mailbox.
    static std::uint64_t slot_address(std::uint32_t node, std::uint32_t slot) noexcept;

private:
    volatile unsigned char* window_;
    const volatile unsigned char* mailbox_;
    std::uint32_t self_, peer_;
};

// ---- nonces --------------------------------------------------------------------

// Fresh 64-bit nonces for tcaExchange: each call must use a value no earlier
// call or run could have used, so that stale mailbox data never matches.

// Non-zero, random (getrandom), with a time/pid/counter fallback for a guest
// whose entropy pool is not ready yet (GRND_NONBLOCK: never stall at boot).
std::uint64_t fresh_nonce() noexcept;

}  // namespace tca
