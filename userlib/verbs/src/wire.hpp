// SPDX-License-Identifier: MIT
// What one QP writes into its peer's memory (docs/verbs.md, "Rings").
//
// Every QP owns an *area* in registered memory that only its peer writes:
//
//   [0, 4 KiB)            control page: words the peer writes (acks, NAKs,
//                         RNR retry tokens, the high-bandwidth ring's PSN pair)
//   [4 KiB, +LL bytes)    low-latency ring: fixed 256-byte slots, one packet
//                         each packed against the slot's end, the PSN pair
//                         in its last 8 bytes
//   [.., +HB bytes)       high-bandwidth ring: variable records (64-byte
//                         header, payload, padding to 64 bytes); its PSN pair
//                         is a control-page word the sender's DMA list writes
//                         after the records
//
// A PSN pair is one 8-byte store: the sender's packet count (this packet's
// sequence number + 1, never 0) and the sender's receive count (packets it
// consumed from us: an acknowledgement and ring credit in one). Pairs travel
// after the data they describe on the same in-order path, so a receiver that
// sees a pair with an acquire load sees the packet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pv::wire {

// The layout below, as published in every QP's info (QpInfo::version): a
// peer QP of another version is refused at connection (2: LL slots packed
// against their end).
constexpr std::uint8_t kVersion = 2;

// ---- control page -----------------------------------------------------------
constexpr std::uint32_t kCtrlBytes = 4096;
// Each word on its own 64-byte line: the peer writes them independently.
constexpr std::uint32_t kAckOff = 0x000;     // Pair{0, acked}: explicit ack/credit update
constexpr std::uint32_t kNakOff = 0x040;     // Nak
constexpr std::uint32_t kRetryOff = 0x080;   // RetryToken
constexpr std::uint32_t kHbPairOff = 0x0c0;  // Pair{HB records written, acked}
constexpr std::uint32_t kUdTailOff = 0x100;  // UD: the reservation word (see "UD receive ring")

// 8 bytes, one store: `sent` = packets written so far (a packet's own
// sequence number + 1), `acked` = the writer's count of packets it consumed.
struct Pair {
    std::uint32_t sent;
    std::uint32_t acked;
};
static_assert(sizeof(Pair) == 8);

inline std::uint64_t pack(Pair p) noexcept {
    return p.sent | static_cast<std::uint64_t>(p.acked) << 32;
}
inline Pair unpack(std::uint64_t v) noexcept {
    return Pair{static_cast<std::uint32_t>(v), static_cast<std::uint32_t>(v >> 32)};
}

// Receiver -> sender: packet `seq` found no receive WR (RNR). `count`
// grows with every NAK so that a repeated one is seen.
enum : std::uint8_t { kNakRnr = 1, kNakPsn = 2, kNakInvalid = 3 };
struct Nak {
    std::uint32_t seq;
    std::uint8_t kind;
    std::uint8_t rnr_timer;  // the receiver's min_rnr_timer (IB encoding)
    std::uint16_t count;
};
static_assert(sizeof(Nak) == 8);

// Sender -> receiver: try packet `seq` again (attempt number `attempt`).
struct RetryToken {
    std::uint32_t seq;
    std::uint32_t attempt;
};
static_assert(sizeof(RetryToken) == 8);

// ---- packets ------------------------------------------------------------------
enum Op : std::uint8_t {
    kOpSend = 1,      // payload for a receive WR (a fragment of one)
    kOpWriteImm = 2,  // RDMA Write with Immediate already placed: consume a receive WR
    kOpWrap = 3,      // HB ring: nothing here, continue at offset 0
    kOpUdSend = 4,    // UD datagram
};
enum Flags : std::uint8_t {
    kFirst = 1 << 0,      // first fragment of a message
    kLast = 1 << 1,       // last fragment
    kImm = 1 << 2,        // `imm` is valid
    kSolicited = 1 << 3,  // IBV_SEND_SOLICITED
};

// The first 32 bytes of every HB record and UD datagram (an LL slot packs
// the fields it needs: ll_put below).
struct Header {
    std::uint32_t seq;   // packet sequence number + 1 (as in the pair)
    std::uint32_t psn;   // InfiniBand PSN (24 bits): sq_psn + seq - 1
    std::uint8_t op;     // Op
    std::uint8_t flags;  // Flags
    std::uint8_t shift;  // HB: payload starts at record + kHbHeader + shift
    std::uint8_t pad0;
    std::uint32_t len;       // payload bytes in this packet
    std::uint32_t imm;       // immediate data, as the sender gave it (network order)
    std::uint32_t total;     // kFirst: bytes of the whole message; WriteImm: bytes written;
                             // UD: the Q_Key
    std::uint32_t src_qpn;   // UD: sending QP
    std::uint32_t src_node;  // UD: sending node
};
static_assert(sizeof(Header) == 32);

// ---- low-latency ring -----------------------------------------------------------
// An LL slot holds its packet packed against its end, so that a small one is
// a few contiguous 8-byte stores, the pair last:
//
//   [ unused | payload, padded to 8 | ext (if kLlExt) | head | pair ]
//                                          8 bytes      8      8 = slot end
//
// head: psn (24 bits) | op << 24 | flags << 32 | len << 40 (the seq is the
// pair's); ext: imm, then total, present only when the packet needs them
// (immediate data, a Write with Immediate, a fragment of a longer message).
// A one-packet 8-byte Send is 3 stores; with the 32-byte header it took 6,
// and each is an exit to the device model in an emulated guest.
constexpr std::uint32_t kLlSlot = 256;
constexpr std::uint32_t kLlPairOff = kLlSlot - sizeof(Pair);
constexpr std::uint32_t kLlHeadOff = kLlPairOff - 8;
constexpr std::uint32_t kLlPayload = 216;
constexpr std::uint8_t kLlExt = 1 << 7;  // head flag: the ext word is there

constexpr std::uint32_t pad8(std::uint32_t n) noexcept { return (n + 7) & ~7u; }

// Does packet h need the ext word (imm, total)?
inline bool ll_ext(const Header& h) noexcept {
    return (h.flags & kImm) || h.op != kOpSend ||
           (h.flags & (kFirst | kLast)) != (kFirst | kLast) || h.total != h.len;
}

// Where packet h starts in its slot: its payload's offset.
inline std::uint32_t ll_start(const Header& h) noexcept {
    return kLlHeadOff - (ll_ext(h) ? 8 : 0) - pad8(h.len);
}

// Writes h's head and ext words into `slot` (the payload goes at
// ll_start(h) + 0, the pair at kLlPairOff: the caller's). h.len <= kLlPayload.
inline void ll_put(const Header& h, unsigned char* slot) noexcept {
    const bool ext = ll_ext(h);
    const std::uint64_t head =
        (h.psn & 0xffffffu) | std::uint64_t{h.op} << 24 |
        std::uint64_t{static_cast<std::uint8_t>(h.flags | (ext ? kLlExt : 0))} << 32 |
        std::uint64_t{h.len} << 40;
    std::memcpy(slot + kLlHeadOff, &head, 8);
    if (ext) {
        const std::uint32_t w[2] = {h.imm, h.total};
        std::memcpy(slot + kLlHeadOff - 8, w, 8);
    }
}

// Reads the packet of `slot` whose pair says `seq`: its header into *h, and
// the offset of its payload. False if the head is not one ll_put writes (a
// peer's bytes: the packet stays where it is and the sender times out).
inline bool ll_get(const unsigned char* slot, std::uint32_t seq, Header* h,
                   std::uint32_t* payload) noexcept {
    std::uint64_t head;
    std::memcpy(&head, slot + kLlHeadOff, 8);
    *h = Header{};
    h->seq = seq;
    h->psn = static_cast<std::uint32_t>(head & 0xffffff);
    h->op = static_cast<std::uint8_t>(head >> 24);
    const auto flags = static_cast<std::uint8_t>(head >> 32);
    h->flags = flags & ~kLlExt;
    h->len = static_cast<std::uint32_t>(head >> 40);
    if (h->len > kLlPayload)
        return false;
    std::uint32_t end = kLlHeadOff;
    if (flags & kLlExt) {
        std::uint32_t w[2];
        std::memcpy(w, slot + kLlHeadOff - 8, 8);
        h->imm = w[0];
        h->total = w[1];
        end -= 8;
    } else {
        h->total = h->len;
    }
    *payload = end - pad8(h->len);
    return true;
}

// ---- high-bandwidth ring --------------------------------------------------------
constexpr std::uint32_t kHbHeader = 64;
constexpr std::uint32_t kHbAlign = 64;

// Bytes an HB record with `len` payload bytes at `shift` takes.
constexpr std::uint64_t hb_record_bytes(std::uint64_t len, std::uint32_t shift) noexcept {
    return (kHbHeader + shift + len + kHbAlign - 1) / kHbAlign * kHbAlign;
}

// ---- UD receive ring ----------------------------------------------------------------
// A UD QP's area has, after the control page, slots of this size: a
// datagram (64-byte header, up to the MTU of payload, its pair in the last
// 8 bytes). Any number of senders share the ring: a sender reserves slot
// `tail` with a remote compare-and-swap on the reservation word (kUdTailOff:
// low 32 bits slots reserved, high 32 bits slots the owner consumed, which
// the owner advances with local atomics), so it never overwrites a datagram
// not yet consumed; a full ring drops the datagram (UD may).
constexpr std::uint32_t kUdMtu = 4096;
constexpr std::uint32_t kUdHeader = 64;
constexpr std::uint32_t kUdSlot = kUdHeader + kUdMtu + 64;
constexpr std::uint32_t kUdPairOff = kUdSlot - sizeof(Pair);
constexpr std::uint32_t kGrh = 40;  // receive buffers start with room for a GRH

}  // namespace pv::wire
