// The PEACH2 card event trace: file header, record layout and record types.
//
// One definition of the format (docs/trace-format.md explains it). The device
// (qemu-device/core) fills records with the constructors below and hands them
// to a trace::Recorder; peach2-model reads them back with trace::read_file.
// Everything on disk is little endian; records have a fixed size so a reader
// can tell a truncated file from a foreign one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace peach2::trace {

// "PEACH2TR": the first 8 bytes of every trace file.
inline constexpr std::array<uint8_t, 8> kMagic = {'P', 'E', 'A', 'C', 'H', '2', 'T', 'R'};
// The major version changes when a reader of the old one would misread a file;
// the minor version when records or fields are only added (old readers skip
// record types they do not know).
inline constexpr uint16_t kMajor = 1;
inline constexpr uint16_t kMinor = 0;
inline constexpr size_t kHeaderSize = 64;
inline constexpr size_t kRecordSize = 64;
inline constexpr size_t kProducerLen = 16;

// Ports as in include/peach2/peach2_hw.h (N is the host side of the card).
inline constexpr uint8_t kPortN = 0, kPortE = 1, kPortW = 2, kPortS = 3;
inline constexpr uint8_t kNoPort = 0xff;
inline constexpr unsigned kPorts = 4;
inline constexpr unsigned kChannels = 5;  // 4 user DMA channels + the read proxy's
inline constexpr unsigned kProxyChannel = 4;
inline constexpr unsigned kMaxNodes = 16;
inline constexpr uint32_t kMaxPacket = 4096;  // payload bytes of one link packet

enum class Type : uint16_t {
    Link = 1,       // a link's state: at trace start and on every change
    PktSend = 2,    // a packet this card originates (PIO, DMA, read proxy)
    PktFwd = 3,     // a packet this card forwards from one port to another
    PktRecv = 4,    // a packet delivered here (host memory, mailbox, proxy ring)
    DmaStart = 5,   // the CPU started a DMA run
    DmaDesc = 6,    // the channel fetched (or took from its registers) a descriptor
    DmaDone = 7,    // a DMA run ended (done or error)
    Irq = 8,        // an MSI-X message was sent
    RpRequest = 9,  // the driver sent a read-proxy request
    End = 15,       // the trace was closed cleanly: totals
};

// Why a packet was sent (PktSend flags, bits 0-7).
enum class Origin : uint8_t {
    Pio = 1,        // CPU stores into the window (a write-combined packet)
    Dma = 2,        // DMA data
    DmaImm = 3,     // an IMM descriptor's value (completion word, PSN)
    RpRequest = 4,  // a read-proxy request (RPREQ)
    RpAnswer = 5,   // the card's own answer to a request it could not queue
};

// What a delivered packet was for (PktRecv flags, bits 0-7).
enum class RecvKind : uint8_t {
    Memory = 1,   // host memory
    Mailbox = 2,  // the card's mailbox
    RpRing = 3,   // a read-proxy request, queued in the ring (or refused)
};

// How a DMA run was started (DmaStart flags) and where a descriptor came from
// (DmaDesc flags, bits 0-7).
enum class DmaMode : uint8_t {
    ChainCard = 1,  // chain in on-card descriptor RAM
    ChainHost = 2,  // chain in host memory
    Register = 3,   // register mode: one descriptor held in the registers
};

// Descriptor flags as in peach2_hw.h (DmaDesc flags, bits 8-15).
inline constexpr uint32_t kDescLast = 1u << 0;
inline constexpr uint32_t kDescNextHost = 1u << 1;
inline constexpr uint32_t kDescImm = 1u << 2;
inline constexpr uint32_t kDescStrideSrc = 1u << 3;
inline constexpr uint32_t kDescStrideDst = 1u << 4;

struct Header {
    uint16_t major = kMajor;
    uint16_t minor = kMinor;
    uint16_t header_size = kHeaderSize;
    uint16_t record_size = kRecordSize;
    uint32_t node = 0;
    uint32_t nodes = 0;
    uint64_t t_emu_ns = 0;   // emulated clock when tracing started
    uint64_t t_host_ns = 0;  // host CLOCK_MONOTONIC when tracing started
    uint32_t ring_records = 0;
    uint32_t reserved = 0;
    std::array<char, kProducerLen> producer{};  // NUL padded, e.g. "qemu-peach2"
};

// One event. The generic fields mean different things per type; the
// constructors below and docs/trace-format.md give the meaning.
struct Record {
    uint64_t t_emu_ns = 0;   // emulated (guest-visible) clock
    uint64_t t_host_ns = 0;  // host CLOCK_MONOTONIC: orders events across nodes
    uint64_t seq = 0;        // event number on this node; gaps are dropped events
    Type type = Type::End;
    uint8_t port = kNoPort;
    uint8_t unit = kNoPort;  // DMA channel, second port or MSI-X vector
    uint32_t flags = 0;
    uint64_t addr = 0;
    uint64_t arg = 0;
    uint32_t len = 0;
    uint16_t src_node = 0;
    uint16_t dst_node = 0;
    uint64_t id = 0;
    bool operator==(const Record&) const = default;
};

void encode(const Header& h, std::span<uint8_t, kHeaderSize> out);
void encode(const Record& r, std::span<uint8_t, kRecordSize> out);
// Decoding never fails on bytes alone; read_file() checks what they mean.
Header decode_header(std::span<const uint8_t, kHeaderSize> in);
Record decode_record(std::span<const uint8_t, kRecordSize> in);

const char* type_name(Type t);
const char* origin_name(Origin o);
const char* port_name(uint8_t port);  // "N", "E", "W", "S" or "-"
Header make_header(uint32_t node, uint32_t nodes, const std::string& producer);

// ---- Record constructors: what each type carries. ---------------------------
// Timestamps and seq are filled in by the Recorder (or the synthetic builder).

inline Record link_state(uint8_t port, bool up, uint16_t self, uint16_t peer_node,
                         uint8_t peer_port) {
    Record r;
    r.type = Type::Link;
    r.port = port;
    r.unit = peer_port;
    r.flags = up ? 1u : 0u;
    r.src_node = self;
    r.dst_node = peer_node;
    return r;
}

// A packet leaves (or loops back inside) this card. `port` is the port it
// leaves by (N: delivered to this node); `number` counts the packets from
// src to dst (from 0), the key that matches it with its PktFwd/PktRecv
// records on other nodes. DMA packets name their channel, run and the
// descriptor's index in the run.
inline Record pkt_send(Origin origin, uint8_t port, uint64_t addr, uint32_t len, uint16_t src,
                       uint16_t dst, uint64_t number, uint8_t channel = kNoPort, uint64_t run = 0,
                       uint32_t desc_index = 0) {
    Record r;
    r.type = Type::PktSend;
    r.port = port;
    r.unit = channel;
    r.flags = static_cast<uint32_t>(origin) | desc_index << 8;
    r.addr = addr;
    r.arg = run;
    r.len = len;
    r.src_node = src;
    r.dst_node = dst;
    r.id = number;
    return r;
}

inline Record pkt_fwd(uint8_t in_port, uint8_t out_port, uint64_t addr, uint32_t len, uint16_t src,
                      uint16_t dst, uint64_t number) {
    Record r;
    r.type = Type::PktFwd;
    r.port = in_port;
    r.unit = out_port;
    r.addr = addr;
    r.len = len;
    r.src_node = src;
    r.dst_node = dst;
    r.id = number;
    return r;
}

// A packet arrived for this node by `in_port` (N: looped back). `error` is 0
// when it was applied, else the peach2_err code it was refused with. For a
// read-proxy request, `op` and `tag` are the request's op and seq.
inline Record pkt_recv(RecvKind kind, uint8_t in_port, uint64_t addr, uint32_t len, uint16_t src,
                       uint16_t dst, uint64_t number, uint8_t error = 0, uint8_t op = 0,
                       uint64_t tag = 0) {
    Record r;
    r.type = Type::PktRecv;
    r.port = in_port;
    r.unit = op;
    r.flags = static_cast<uint32_t>(kind) | static_cast<uint32_t>(error) << 8;
    r.addr = addr;
    r.arg = tag;
    r.len = len;
    r.src_node = src;
    r.dst_node = dst;
    r.id = number;
    return r;
}

// `head` is the chain head as written to HEAD (index, or host address with
// bit 63); 0 in register mode. `run` numbers the runs of this card from 0.
inline Record dma_start(uint8_t channel, DmaMode mode, uint64_t head, uint64_t run) {
    Record r;
    r.type = Type::DmaStart;
    r.unit = channel;
    r.flags = static_cast<uint32_t>(mode);
    r.addr = head;
    r.arg = run;
    return r;
}

// A descriptor as the channel will run it. `src` is the source bus address
// (IMM: the value written), `dst` the destination global address.
inline Record dma_desc(uint8_t channel, DmaMode where, uint64_t run, uint64_t src, uint64_t dst,
                       uint32_t len, uint16_t burst, uint16_t gap, uint32_t desc_flags) {
    Record r;
    r.type = Type::DmaDesc;
    r.unit = channel;
    r.flags = static_cast<uint32_t>(where) | (desc_flags & 0xff) << 8;
    r.addr = dst;
    r.arg = run;
    r.len = len;
    r.src_node = burst;
    r.dst_node = gap;
    r.id = src;
    return r;
}

inline Record dma_done(uint8_t channel, uint64_t run, uint8_t error, uint64_t bytes,
                       uint32_t descs) {
    Record r;
    r.type = Type::DmaDone;
    r.unit = channel;
    r.flags = error;
    r.addr = bytes;
    r.arg = run;
    r.len = descs;
    return r;
}

inline Record irq(uint8_t vector, uint32_t int_status_bits) {
    Record r;
    r.type = Type::Irq;
    r.unit = vector;
    r.flags = int_status_bits;
    return r;
}

// The driver sent request `tag` (op, len bytes at the target's addr); the
// request travels as packet `number` of the src -> target stream.
inline Record rp_request(uint8_t op, uint16_t self, uint16_t target, uint64_t addr, uint32_t len,
                         uint64_t tag, uint64_t number) {
    Record r;
    r.type = Type::RpRequest;
    r.unit = op;
    r.addr = addr;
    r.arg = tag;
    r.len = len;
    r.src_node = self;
    r.dst_node = target;
    r.id = number;
    return r;
}

inline Record end(uint64_t recorded, uint64_t dropped) {
    Record r;
    r.type = Type::End;
    r.addr = recorded;
    r.arg = dropped;
    return r;
}

// Field views that name what a type's generic fields hold.
inline Origin send_origin(const Record& r) { return static_cast<Origin>(r.flags & 0xff); }
inline uint32_t send_desc_index(const Record& r) { return r.flags >> 8; }
inline RecvKind recv_kind(const Record& r) { return static_cast<RecvKind>(r.flags & 0xff); }
inline uint8_t recv_error(const Record& r) { return static_cast<uint8_t>(r.flags >> 8); }
inline DmaMode desc_where(const Record& r) { return static_cast<DmaMode>(r.flags & 0xff); }
inline uint32_t desc_flags(const Record& r) { return (r.flags >> 8) & 0xff; }

}  // namespace peach2::trace
