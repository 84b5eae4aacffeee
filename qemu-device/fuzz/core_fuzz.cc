// The device core's fuzz harness: a fuzz input is a program for two cards.
//
// Setting (from the input's first byte): card A is node 0 and card B node 1
// of 2 or 3 nodes; A's port E is cabled to B's port W (and, for ring:2,
// A's W to B's E); each card's port S is held by a rogue peer that the
// input speaks for. Each card has 64 KiB of host RAM at bus address 0; its
// BARs sit on its bus as in a guest, and a DMA that reaches them is refused
// as QEMU's re-entrancy guard refuses it (the glue runs every call into the
// core under the guard), so the card sees a failed host access.
//
// Then a sequence of operations, each an opcode byte (bit 0: which card)
// and its operands, little endian, read in the order written here (never two
// reads in one call's arguments: compilers order those differently); a
// short input reads zeros:
//   MMIO of every register, card memory and the window (stores, loads, fence)
//   the bottom half (service), device reset, link attach/connect/disconnect
//   bytes from the rogue: raw, a well-framed packet with any fields, HELLO
//   the cable: bytes carried across in pieces of any size, or left unread
//   host memory contents: DMA descriptors (on-card or host), read-proxy
//   rings and requests, firmware images (valid, then perhaps corrupted),
//   inbound filter ranges
// At the end every queue is carried and every card serviced until quiet,
// and a few invariants are checked. The operations only use the core's C
// API (peach2_core.h), as the QEMU glue does.
#include "core_fuzz.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "fw_image.h"
#include "peach2/peach2_hw.h"
#include "peach2_core.h"

namespace peach2::fuzz {
namespace {

constexpr size_t kRamSize = 64 * 1024;
constexpr uint64_t kBar0 = 0xfe000000;          // registers + MSI-X
constexpr uint64_t kBar2 = 0xfe010000;          // card memory
constexpr uint64_t kBar4 = 0x1000000000;        // the window (32 GiB)
constexpr unsigned kRogue = PEACH2_PORT_S;      // the input's own cable
constexpr int kDrainRounds = 256;               // service + carry at the end

// Stop the run with a message: libFuzzer keeps the input as a crash.
[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "core_fuzz: invariant broken: %s\n", what);
    std::abort();
}

// The input, read front to back; past its end every read is zero.
class Input {
public:
    Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    bool more() const { return pos_ < size_; }
    uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
    uint64_t le(unsigned bytes) {
        uint64_t v = 0;
        for (unsigned i = 0; i < bytes; ++i)
            v |= static_cast<uint64_t>(u8()) << (8 * i);
        return v;
    }
    uint16_t u16() { return static_cast<uint16_t>(le(2)); }
    uint32_t u32() { return static_cast<uint32_t>(le(4)); }
    uint64_t u64() { return le(8); }
    // n bytes (zeros past the end): the input's own bytes, or a copy
    // padded with zeros where it ends; valid until the next call.
    std::span<const uint8_t> bytes(size_t n) {
        const size_t take = std::min(n, size_ - pos_);
        const uint8_t* at = data_ + pos_;
        pos_ += take;
        if (take == n)
            return {at, n};
        short_.assign(n, 0);
        if (take)
            std::memcpy(short_.data(), at, take);
        return short_;
    }
    unsigned size() { return 1u << (u8() & 3); }  // an MMIO access: 1, 2, 4, 8

private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
    std::vector<uint8_t> short_;  // bytes() past the end
};

// A card's host RAM: kRamSize bytes at bus address 0. Allocated once and
// kept from input to input (a fresh, zeroed 64 KiB per card and input cost
// about a tenth of a run under ASan); what an input wrote is zeroed again
// before the next one begins, so that every input starts on zeros.
class HostRam {
public:
    const uint8_t* data() const { return bytes_.data(); }
    // len bytes to [off, off + len), inside the RAM.
    void write(size_t off, const void* src, size_t len) {
        if (!len)
            return;
        std::memmove(bytes_.data() + off, src, len);
        written_lo_ = std::min(written_lo_, off);
        written_hi_ = std::max(written_hi_, off + len);
    }
    void clear() {
        if (written_lo_ < written_hi_)
            std::memset(bytes_.data() + written_lo_, 0, written_hi_ - written_lo_);
        written_lo_ = kRamSize;
        written_hi_ = 0;
    }

private:
    std::vector<uint8_t> bytes_ = std::vector<uint8_t>(kRamSize, 0);
    size_t written_lo_ = kRamSize, written_hi_ = 0;
};

// One card and its host: RAM, and the callbacks QEMU's glue gives the core.
struct Node {
    HostRam* ram = nullptr;
    peach2_core* core = nullptr;
    bool wants_service = false;
    uint64_t clock_ns = 0;
    uint32_t rogue_seq = 0;  // the rogue's next packet seq on port S
    uint64_t bar_hits = 0;   // DMA refused because it reached the card's own BAR
    uint64_t interrupts = 0;  // notify() calls, and error() calls: for the report
    uint64_t error_calls = 0;
    // The shared-memory transport's direct writes (the QEMU glue's
    // peach2_direct_write): set by the harness when the input asks for them.
    std::function<bool(unsigned port, uint64_t addr, const void* buf, size_t len,
                       uint64_t pkts)>
        direct;
    uint64_t direct_writes = 0;  // calls: a DMA run of many pages is one

    ~Node() { peach2_core_free(core); }

    // Whether a DMA of len bytes at addr lands in RAM; if not, it is
    // refused (a BAR under the guard, or no memory).
    bool in_ram(uint64_t addr, size_t len) {
        if (addr < kRamSize && len <= kRamSize - addr)
            return true;
        const auto in = [&](uint64_t base, uint64_t size) {
            return addr >= base && addr - base < size;
        };
        if (in(kBar0, PEACH2_REGS_SIZE) || in(kBar2, PEACH2_CARDMEM_SIZE) ||
            in(kBar4, PEACH2_WINDOW_SIZE))
            ++bar_hits;
        return false;
    }

    peach2_core_host callbacks() {
        peach2_core_host h{};
        h.opaque = this;
        h.dma_write = [](void* o, uint64_t addr, const void* buf, size_t len) {
            Node* n = static_cast<Node*>(o);
            if (!n->in_ram(addr, len))
                return -1;
            n->ram->write(addr, buf, len);
            return 0;
        };
        h.dma_read = [](void* o, uint64_t addr, void* buf, size_t len) {
            Node* n = static_cast<Node*>(o);
            if (!n->in_ram(addr, len))
                return -1;
            std::memmove(buf, n->ram->data() + addr, len);
            return 0;
        };
        h.schedule_service = [](void* o) { static_cast<Node*>(o)->wants_service = true; };
        h.defer_service = [](void* o) { static_cast<Node*>(o)->wants_service = true; };
        h.notify = [](void* o, unsigned vector) {
            if (vector >= PEACH2_MSIX_VECTORS)
                fail("interrupt vector out of range");
            ++static_cast<Node*>(o)->interrupts;
        };
        h.log = [](void*, int level, const char* msg) {
            if (!msg || (level != PEACH2_LOG_GUEST_ERROR && level != PEACH2_LOG_INFO))
                fail("log line without text or with an unknown level");
        };
        h.error = [](void* o, const peach2_core_error* e) {
            if (e->code != PEACH2_ERR_NONE && !peach2_err_known(e->code))
                fail("error callback with an unknown code");
            if (!e->what)
                fail("error callback without text");
            ++static_cast<Node*>(o)->error_calls;
        };
        h.now_ns = [](void* o) { return static_cast<Node*>(o)->clock_ns += 10; };
        h.direct_write = [](void* o, unsigned port, uint64_t addr, const void* buf, size_t len) {
            Node* n = static_cast<Node*>(o);
            if (port < PEACH2_PORT_E || port >= PEACH2_NR_PORTS)
                fail("direct write asked for a port that is no link");
            return n->direct && n->direct(port, addr, buf, len, 1);
        };
        // The glue's peach2_direct_copy: a DMA piece straight from this
        // node's RAM (anything else: the card reads it itself).
        h.direct_copy = [](void* o, unsigned port, uint64_t addr, uint64_t src, size_t len,
                           uint64_t pkts) {
            Node* n = static_cast<Node*>(o);
            if (port < PEACH2_PORT_E || port >= PEACH2_NR_PORTS)
                fail("direct copy asked for a port that is no link");
            if (!n->direct || src >= kRamSize || len > kRamSize - src)
                return false;
            // One packet per page the destination touches, as the socket
            // path would send.
            if (len == 0 ||
                pkts != (addr % PEACH2_PKT_MAX_PAYLOAD + len - 1) / PEACH2_PKT_MAX_PAYLOAD + 1)
                fail("direct copy counted as other than the packets it replaces");
            return n->direct(port, addr, n->ram->data() + src, len, pkts);
        };
        return h;
    }

    void service(int times) {
        for (int i = 0; i < times && core; ++i) {
            wants_service = false;
            peach2_core_service(core);
        }
    }
};

// A cable between two cards' ports.
struct Cable {
    unsigned a_port, b_port;
};

class Harness {
public:
    Harness(Input& in, std::array<HostRam, 2>& ram) : in_(in) {
        for (unsigned i = 0; i < 2; ++i) {
            ram[i].clear();
            node_[i].ram = &ram[i];
        }
        const uint8_t setup = in_.u8();
        nodes_ = 2 + (setup & 1);
        static constexpr uint64_t limits[] = {0, 4096, 64 * 1024, 1 << 20};
        const uint64_t tx_limit = limits[(setup >> 2) & 3];
        cables_.push_back({PEACH2_PORT_E, PEACH2_PORT_W});
        if (setup & 2)  // ring:2: both cables
            cables_.push_back({PEACH2_PORT_W, PEACH2_PORT_E});
        for (uint32_t i = 0; i < 2; ++i) {
            const peach2_core_config cfg{i, nodes_, tx_limit};
            const peach2_core_host cb = node_[i].callbacks();
            char why[128];
            node_[i].core = peach2_core_new(&cfg, &cb, why, sizeof(why));
            if (!node_[i].core)
                fail(why);
            peach2_core_link_attach(node_[i].core, kRogue);
            peach2_core_link_connected(node_[i].core, kRogue, true);
        }
        for (const Cable& c : cables_) {
            peach2_core_link_attach(A(), c.a_port);
            peach2_core_link_attach(B(), c.b_port);
            peach2_core_link_connected(A(), c.a_port, true);
            peach2_core_link_connected(B(), c.b_port, true);
        }
        if (setup & 0x20) {  // the cables are shared memory with direct writes
            direct_ = true;
            for (unsigned i = 0; i < 2; ++i)
                node_[i].direct = [this, i](unsigned port, uint64_t addr, const void* buf,
                                            size_t len, uint64_t pkts) {
                    return direct(i, port, addr, buf, len, pkts);
                };
            for (const Cable& c : cables_) {
                set_direct(0, c.a_port);
                set_direct(1, c.b_port);
            }
        }
        if (setup & 0x10) {  // start with a working pair: HELLOs carried, memory registered
            carry_all(4096);
            for (Node& n : node_)
                add_range(n.core, 0, kRamSize);
        }
    }

    void run() {
        while (in_.more())
            step();
        drain();
        check();
    }

private:
    peach2_core* A() { return node_[0].core; }
    peach2_core* B() { return node_[1].core; }

    enum Op : uint8_t {
        REG_WRITE, REG_READ, CARDMEM_WRITE, CARDMEM_READ, WINDOW_WRITE, WINDOW_READ,
        CLOSE_WRITE, SERVICE, WIRE_RAW, WIRE_PACKET, WIRE_HELLO, LINK_EVENT, RESET,
        CARRY, RAM_WRITE, DESCRIPTOR, DMA_START, FIRMWARE, READ_PROXY, INBOUND,
        ROGUE_READS, NR_OPS
    };

    void step() {
        const uint8_t op = in_.u8();
        Node& n = node_[op & 1];
        peach2_core* c = n.core;
        switch (static_cast<Op>((op >> 1) % NR_OPS)) {
        case REG_WRITE: {
            const uint64_t off = in_.u16();
            const uint64_t val = in_.u64();
            peach2_core_reg_write(c, off, val, in_.size());
            break;
        }
        case REG_READ: {
            const uint64_t off = in_.u16();
            peach2_core_reg_read(c, off, in_.size());
            break;
        }
        case CARDMEM_WRITE: {
            const uint64_t off = in_.u16();
            const uint64_t val = in_.u64();
            peach2_core_cardmem_write(c, off, val, in_.size());
            break;
        }
        case CARDMEM_READ: {
            const uint64_t off = in_.u16();
            peach2_core_cardmem_read(c, off, in_.size());
            break;
        }
        case WINDOW_WRITE: {
            const uint64_t addr = global_addr();
            const unsigned size = in_.size();
            const unsigned count = 1 + in_.u8() % 64;  // a run of stores, as memcpy does
            for (unsigned i = 0; i < count; ++i) {
                // As the glue: the open write's next bytes, else the full path.
                const uint64_t at = addr + i * size, val = in_.u64();
                if (!peach2_core_window_append(c, at, val, size))
                    peach2_core_window_write(c, at, val, size);
            }
            break;
        }
        case WINDOW_READ: {
            const uint64_t addr = global_addr();
            peach2_core_window_read(c, addr, in_.size());
            break;
        }
        case CLOSE_WRITE: peach2_core_close_write(c); break;
        case SERVICE: n.service(1 + in_.u8() % 8); break;
        case WIRE_RAW: {
            const unsigned port = PEACH2_PORT_E + in_.u8() % 3;
            receive(op & 1, port, in_.bytes(in_.u8()));
            break;
        }
        case WIRE_PACKET: rogue_packet(op & 1); break;
        case WIRE_HELLO: rogue_hello(op & 1); break;
        case LINK_EVENT: link_event(op & 1); break;
        case RESET: peach2_core_reset(c); break;
        case CARRY: {
            const size_t piece = 1 + in_.u16() % 8192;
            carry_all(piece);
            break;
        }
        case RAM_WRITE: {
            const uint16_t off = in_.u16();
            const std::span<const uint8_t> bytes = in_.bytes(in_.u8());
            n.ram->write(off, bytes.data(), std::min(bytes.size(), kRamSize - off));
            break;
        }
        case DESCRIPTOR: descriptor(n); break;
        case DMA_START: dma_start(c); break;
        case FIRMWARE: firmware(n); break;
        case READ_PROXY: read_proxy(c); break;
        case INBOUND: inbound(c); break;
        case ROGUE_READS: {  // the rogue reads some of what the card sent it
            const void* buf = nullptr;
            const size_t queued = peach2_core_link_tx_peek(c, kRogue, &buf);
            const size_t take = std::min<size_t>(queued, in_.u32());
            if (take)
                peach2_core_link_tx_consume(c, kRogue, take);
            break;
        }
        case NR_OPS: break;
        }
    }

    // A global address the input chooses: node, then a region of its slice.
    uint64_t global_addr() {
        const uint64_t node = in_.u8() % (PEACH2_MAX_NODES + 1);  // 16: past the window
        uint64_t off = 0;
        switch (in_.u8() & 3) {
        case 0: off = in_.u16(); break;                                  // host RAM
        case 1: off = PEACH2_CARD_OFF + in_.u16(); break;                // mailbox, doorbell
        case 2: off = PEACH2_GPU_OFF + in_.u16(); break;                 // no GPU
        case 3: off = in_.u32() & (PEACH2_SLICE_SIZE - 1); break;        // anywhere
        }
        return (node << PEACH2_SLICE_SHIFT) | off;
    }

    // A host bus address: usually RAM, sometimes a BAR or nowhere.
    uint64_t bus_addr() {
        const uint8_t sel = in_.u8();
        switch (sel & 7) {
        case 5: return kBar0 + in_.u16() % PEACH2_REGS_SIZE;
        case 6: return kBar4 + in_.u32();
        case 7: return in_.u64();
        default: return in_.u16() & ~3u;
        }
    }

    // Bytes into card `who`'s port; a corrupt stream drops the connection
    // (both ends of a cable see it), and the transport reconnects, as the
    // glue does.
    void receive(unsigned who, unsigned port, std::span<const uint8_t> bytes) {
        peach2_core* c = node_[who].core;
        if (peach2_core_link_receive(c, port, bytes.data(), bytes.size()))
            return;
        reconnect(who, port);
    }

    void reconnect(unsigned who, unsigned port) {
        set_connected(who, port, false);
        set_connected(who, port, true);
    }

    // A connection event on card `who`'s port, and on the other end of its cable.
    void set_connected(unsigned who, unsigned port, bool up) {
        peach2_core_link_connected(node_[who].core, port, up);
        if (port == kRogue) {
            node_[who].rogue_seq = 0;
            return;
        }
        for (const Cable& c : cables_) {
            if ((who == 0 ? c.a_port : c.b_port) != port)
                continue;
            const unsigned peer_port = who == 0 ? c.b_port : c.a_port;
            peach2_core_link_connected(node_[who ^ 1].core, peer_port, up);
            if (up) {  // the glue agrees on the transport again for a new connection
                set_direct(who, port);
                set_direct(who ^ 1, peer_port);
            }
        }
    }

    void set_direct(unsigned who, unsigned port) {
        if (!direct_)
            return;
        peach2_core_link_shared_memory(node_[who].core, port, true);
        peach2_core_link_direct(node_[who].core, port, true);
    }

    // Card `who`'s write for the card at the other end of its `port`, applied
    // there as the glue does: inside one of that card's inbound ranges (its
    // published ones), counted by it. The core must ask only for a cabled
    // port it said could (LINK_x.DIRECT).
    bool direct(unsigned who, unsigned port, uint64_t addr, const void* buf, size_t len,
                uint64_t pkts) {
        const uint64_t link = peach2_core_reg_read(node_[who].core, PEACH2_REG_LINK(port - 1), 4);
        if (!(link & PEACH2_LINK_DIRECT) || !(link & PEACH2_LINK_UP))
            fail("direct write on a link that does not offer them");
        for (const Cable& c : cables_) {
            if ((who == 0 ? c.a_port : c.b_port) != port)
                continue;
            Node& peer = node_[who ^ 1];
            static std::array<uint64_t[2], PEACH2_IN_MAX_RANGES> ranges;  // not zeroed per input
            const size_t n = peach2_core_inbound_ranges(peer.core, ranges.data(), ranges.size());
            if (n > ranges.size())
                fail("more inbound ranges than asked for");
            bool admitted = false;
            for (size_t i = 0; i < n && !admitted; ++i)
                admitted = addr >= ranges[i][0] && ranges[i][1] >= addr &&
                           len <= ranges[i][1] - addr;
            if (!admitted || !peer.in_ram(addr, len))
                return false;  // travels as a packet; the peer decides
            peer.ram->write(addr, buf, len);
            ++peer.direct_writes;
            peach2_core_link_count_direct(peer.core, who == 0 ? c.b_port : c.a_port, pkts, len);
            return true;
        }
        fail("direct write on a port with no cable");
        return false;
    }

    void link_event(unsigned who) {
        const uint8_t how = in_.u8();
        const unsigned port = (how & 0x3f) % 5;  // N and 4: not links
        if (how & 0x80)
            peach2_core_link_attach(node_[who].core, port);
        else
            set_connected(who, port, how & 0x40);
    }

    // The rogue's packet on port S: a header the input fills (magic and
    // version right unless it says otherwise), then `len` payload bytes.
    void rogue_packet(unsigned who) {
        Node& n = node_[who];
        const uint8_t flags = in_.u8();
        peach2_pkt_hdr h{};
        h.magic = (flags & 1) ? in_.u32() : PEACH2_PKT_MAGIC;
        h.version = (flags & 2) ? in_.u8() : PEACH2_PKT_VERSION;
        h.type = in_.u8() % 5;
        h.hops = (flags & 4) ? in_.u8() : in_.u8() % 4;
        h.flags = (flags & 8) ? in_.u8() : 0;
        h.src_node = (flags & 16) ? in_.u16() : in_.u8() % 4;
        h.dst_node = in_.u8() % 4;
        h.addr = h.type == PEACH2_PKT_RPREQ && !(flags & 32)
                     ? PEACH2_NODE_BASE(who) + PEACH2_CARD_OFF + PEACH2_CARD_DOORBELL_OFF
                     : global_addr();
        h.seq = (flags & 64) ? in_.u32() : ++n.rogue_seq;
        h.number = in_.u32();
        const size_t len = (flags & 128) ? in_.u32() : in_.u16() % (PEACH2_PKT_MAX_PAYLOAD + 64);
        h.len = static_cast<uint32_t>(len);
        const std::span<const uint8_t> payload = in_.bytes(std::min<size_t>(len, 8192));
        stream_.resize(sizeof(h) + payload.size());
        std::memcpy(stream_.data(), &h, sizeof(h));
        std::copy(payload.begin(), payload.end(), stream_.begin() + sizeof(h));
        receive(who, kRogue, stream_);
    }

    void rogue_hello(unsigned who) {
        Node& n = node_[who];
        const uint8_t flags = in_.u8();
        peach2_hello hello{};
        hello.node_id = in_.u8() % (PEACH2_MAX_NODES + 2);
        hello.node_count = (flags & 1) ? in_.u32() : nodes_;
        hello.port = in_.u8() % 5;
        hello.version = (flags & 2) ? in_.u32() : PEACH2_VERSION_MAJOR << 16 | PEACH2_VERSION_MINOR;
        peach2_pkt_hdr h{};
        h.magic = PEACH2_PKT_MAGIC;
        h.version = PEACH2_PKT_VERSION;
        h.type = PEACH2_PKT_HELLO;
        h.src_node = static_cast<uint16_t>(hello.node_id);
        h.dst_node = static_cast<uint16_t>((flags & 4) ? in_.u8() : hello.node_id);
        h.len = sizeof(hello);
        h.seq = 0;
        n.rogue_seq = 0;
        uint8_t stream[sizeof(h) + sizeof(hello)];
        std::memcpy(stream, &h, sizeof(h));
        std::memcpy(stream + sizeof(h), &hello, sizeof(hello));
        receive(who, kRogue, stream);
    }

    // Carry what each card queued on its cables to the other, in pieces of
    // `piece` bytes (the receiver parses across the cuts); the rogues read
    // nothing here (ROGUE_READS, drain).
    bool carry_all(size_t piece) {
        bool moved = false;
        for (const Cable& c : cables_) {
            moved |= carry(0, c.a_port, 1, c.b_port, piece);
            moved |= carry(1, c.b_port, 0, c.a_port, piece);
        }
        return moved;
    }

    bool carry(unsigned from, unsigned from_port, unsigned to, unsigned to_port, size_t piece) {
        const void* buf = nullptr;
        const size_t queued = peach2_core_link_tx_peek(node_[from].core, from_port, &buf);
        const bool pending = peach2_core_tx_pending(node_[from].core) & (1u << from_port);
        if ((queued != 0) != pending)
            fail("tx_pending disagrees with tx_peek");
        if (!queued)
            return false;
        // A copy: the receiver may queue new bytes on `from` while parsing.
        const size_t n = std::min(queued, piece);
        carried_.assign(static_cast<const uint8_t*>(buf), static_cast<const uint8_t*>(buf) + n);
        peach2_core_link_tx_consume(node_[from].core, from_port, n);
        receive(to, to_port, carried_);
        return true;
    }

    // A descriptor the input fills, in descriptor RAM (card memory).
    void descriptor(Node& n) {
        const unsigned index = in_.u16() % (PEACH2_DESC_MAX + 8);
        peach2_desc d{};
        d.src = bus_addr();
        d.dst = global_addr();
        const uint8_t shape = in_.u8();
        d.len = (shape & 1) ? in_.u32() : (in_.u16() & ~3u);
        d.burst = (shape & 2) ? in_.u16() : 0;
        d.gap = (shape & 2) ? in_.u16() : 0;
        d.next = (shape & 4) ? static_cast<uint32_t>(bus_addr()) : in_.u16() % (PEACH2_DESC_MAX + 8);
        d.flags = (shape & 8) ? in_.u32() : in_.u8() & PEACH2_DESC_FLAGS_ALL;
        uint64_t words[PEACH2_DESC_SIZE / 8];
        std::memcpy(words, &d, sizeof(d));
        if (shape & 16) {  // in host RAM instead, for a chain that lives there
            const uint16_t off = in_.u16() & ~15u;
            if (off + sizeof(d) <= kRamSize)
                n.ram->write(off, &d, sizeof(d));
            return;
        }
        for (unsigned i = 0; i < PEACH2_DESC_SIZE / 8; ++i)
            peach2_core_cardmem_write(n.core, PEACH2_DESC_RAM_OFF + index * PEACH2_DESC_SIZE + 8 * i,
                                      words[i], 8);
    }

    void dma_start(peach2_core* c) {
        const unsigned ch = in_.u8() % (PEACH2_DMA_ENGINES + 1);  // 5: no such channel
        const uint8_t how = in_.u8();
        if (how & 1) {
            const uint64_t head = (how & 2) ? (PEACH2_DMA_HEAD_HOST | bus_addr())
                                            : in_.u16() % (PEACH2_DESC_MAX + 8);
            peach2_core_reg_write(c, PEACH2_REG_DMA(ch, PEACH2_DMA_HEAD_LO), head, 8);
        }
        if (how & 4) {  // register mode
            peach2_core_reg_write(c, PEACH2_REG_DMA(ch, PEACH2_DMA_SRC_LO), bus_addr(), 8);
            peach2_core_reg_write(c, PEACH2_REG_DMA(ch, PEACH2_DMA_DST_LO), global_addr(), 8);
            peach2_core_reg_write(c, PEACH2_REG_DMA(ch, PEACH2_DMA_LEN),
                                  (how & 8) ? in_.u32() : in_.u16() & ~3u, 4);
            peach2_core_reg_write(c, PEACH2_REG_DMA(ch, PEACH2_DMA_BLOCK), in_.u32(), 4);
            peach2_core_reg_write(c, PEACH2_REG_DMA(ch, PEACH2_DMA_FLAGS), in_.u8(), 4);
        }
        peach2_core_reg_write(c, PEACH2_REG_DMA(ch, PEACH2_DMA_CTRL), (how >> 4) & 7, 4);
    }

    // A firmware image: entries the input chooses, encoded correctly, then
    // perhaps one byte broken or the length wrong; loaded from host RAM.
    void firmware(Node& n) {
        const uint8_t how = in_.u8();
        fw::Image image;
        image.node_count = (how & 1) ? in_.u8() : nodes_;
        image.image_version = in_.u32();
        image.topology = "fuzz";
        const unsigned entries = in_.u8() % 8;
        for (unsigned i = 0; i < entries; ++i) {
            peach2_fw_entry e{};
            e.node = in_.u8() % (nodes_ + 1);
            e.port = in_.u8() % 5;
            e.index = in_.u8() % 3;
            e.flags = (how & 2) ? in_.u32() : PEACH2_ROUTE_VALID;
            e.mask = (how & 4) ? in_.u64() : ~(PEACH2_SLICE_SIZE - 1);
            e.base = PEACH2_NODE_BASE(in_.u8() % 17);
            e.limit = e.base + ((how & 8) ? in_.u64() : 0);  // (addr & mask) in [base, limit]
            image.entries.push_back(e);
        }
        std::vector<uint8_t> bytes = fw::encode(image);
        if ((how & 16) && !bytes.empty()) {
            const size_t pos = in_.u16() % bytes.size();
            bytes[pos] ^= static_cast<uint8_t>(1 + in_.u8() % 255);
        }
        const uint16_t at = in_.u16() & ~7u;
        n.ram->write(at, bytes.data(), std::min(bytes.size(), kRamSize - at));
        const uint64_t where = (how & 32) ? bus_addr() : at;
        const uint32_t size = (how & 64) ? in_.u32() : static_cast<uint32_t>(bytes.size());
        peach2_core_reg_write(n.core, PEACH2_REG_FW_ADDR_LO, where, 8);
        peach2_core_reg_write(n.core, PEACH2_REG_FW_LEN, size, 4);
        peach2_core_reg_write(n.core, PEACH2_REG_FW_CMD, (how & 128) ? in_.u8() : PEACH2_FW_CMD_LOAD,
                              4);
    }

    // The read proxy: set up a ring, move HEAD, or send a request.
    void read_proxy(peach2_core* c) {
        const uint8_t how = in_.u8();
        switch (how & 3) {
        case 0:
            peach2_core_reg_write(c, PEACH2_REG_RP_CTRL, 0, 4);
            peach2_core_reg_write(c, PEACH2_REG_RP_RING_SIZE, 1u << (in_.u8() % 14), 4);
            peach2_core_reg_write(c, PEACH2_REG_RP_BASE_LO, bus_addr() & ~63ull, 8);
            peach2_core_reg_write(c, PEACH2_REG_RP_CTRL, PEACH2_RP_ENABLE, 4);
            break;
        case 1: peach2_core_reg_write(c, PEACH2_REG_RP_HEAD, in_.u32(), 4); break;
        default: {
            peach2_rp_req r{};
            r.op = in_.u8() % 5;
            r.version = (how & 4) ? in_.u8() : PEACH2_RP_VERSION;
            r.len = (how & 8) ? in_.u32() : in_.u16() & ~3u;
            r.addr = bus_addr();
            r.seq = in_.u64();
            r.reply = bus_addr();
            r.cpl = (how & 16) ? bus_addr() : in_.u16() & ~31u;
            // A READ's reply list: a count the card accepts, from wherever in RAM.
            r.operand[0] = (how & 32) ? in_.u8() % (PEACH2_RP_MAX_PIECES + 2) : in_.u64();
            if (how & 32)
                peach2_core_reg_write(c, PEACH2_REG_RP_TX_LIST_LO, bus_addr(), 8);
            uint64_t words[sizeof(r) / 8];
            std::memcpy(words, &r, sizeof(r));
            for (unsigned i = 0; i < sizeof(r) / 8; ++i)
                peach2_core_reg_write(c, PEACH2_REG_RP_TX_REQ + 8 * i, words[i], 8);
            peach2_core_reg_write(c, PEACH2_REG_RP_TX_SEND, in_.u8() % 5, 4);
            break;
        }
        }
    }

    static void add_range(peach2_core* c, uint64_t base, uint64_t size) {
        peach2_core_reg_write(c, PEACH2_REG_IN_BASE_LO, base, 8);
        peach2_core_reg_write(c, PEACH2_REG_IN_SIZE_LO, size, 8);
        peach2_core_reg_write(c, PEACH2_REG_IN_CMD, PEACH2_IN_CMD_ADD, 4);
    }

    void inbound(peach2_core* c) {
        const uint8_t how = in_.u8();
        const uint64_t base = (how & 4) ? in_.u64() : in_.u16();
        const uint64_t size = (how & 8) ? in_.u64() : in_.u16();
        peach2_core_reg_write(c, PEACH2_REG_IN_BASE_LO, base, 8);
        peach2_core_reg_write(c, PEACH2_REG_IN_SIZE_LO, size, 8);
        peach2_core_reg_write(c, PEACH2_REG_IN_CMD, how & 3, 4);
    }

    // Everything queued is carried (the rogues read all), every card
    // serviced, until nothing moves (bounded: a stalled proxy run waits
    // for an abort that never comes).
    void drain() {
        for (int round = 0; round < kDrainRounds; ++round) {
            bool busy = false;
            for (Node& n : node_) {
                if (n.wants_service) {
                    n.service(1);
                    busy = true;
                }
                peach2_core_close_write(n.core);
                const void* buf = nullptr;
                const size_t rogue = peach2_core_link_tx_peek(n.core, kRogue, &buf);
                if (rogue) {
                    peach2_core_link_tx_consume(n.core, kRogue, rogue);
                    busy = true;
                }
            }
            busy |= carry_all(SIZE_MAX);
            if (!busy)
                return;
        }
    }

    void check() {
        static const bool verbose = std::getenv("PEACH2_FUZZ_VERBOSE") != nullptr;
        if (verbose)
            report();
        for (Node& n : node_) {
            if (peach2_core_reg_read(n.core, PEACH2_REG_ID, 4) != PEACH2_ID_MAGIC)
                fail("ID register changed");
            const uint64_t err_status = peach2_core_reg_read(n.core, PEACH2_REG_ERR_STATUS, 4);
            const uint64_t err_count = peach2_core_reg_read(n.core, PEACH2_REG_ERR_COUNT, 4);
            if ((err_status & PEACH2_ERR_VALID) && err_count == 0)
                fail("an error latched but none counted");
            for (unsigned port = PEACH2_PORT_E; port < PEACH2_NR_PORTS; ++port) {
                const uint64_t link = peach2_core_reg_read(n.core, PEACH2_REG_LINK(port - 1), 4);
                if ((link & PEACH2_LINK_UP) && !(link & PEACH2_LINK_CONNECTED))
                    fail("a link is up without a connection");
            }
        }
    }

    // What the program did, on stderr (PEACH2_FUZZ_VERBOSE=1): to see
    // what a seed or a crashing input reaches, and to compare two builds
    // of the harness or the core input by input (docs/fuzzing.md).
    void report() {
        for (unsigned i = 0; i < 2; ++i) {
            Node& n = node_[i];
            const auto r = [&](uint64_t off) { return peach2_core_reg_read(n.core, off, 4); };
            size_t dirty = 0;
            for (size_t a = 0; a < kRamSize; ++a)
                dirty += n.ram->data()[a] != 0;
            std::fprintf(stderr, "card %u: errors %llu (last %llu) links E %#llx W %#llx S %#llx",
                         i, (unsigned long long)r(PEACH2_REG_ERR_COUNT),
                         (unsigned long long)r(PEACH2_REG_LAST_ERR),
                         (unsigned long long)r(PEACH2_REG_LINK(0)),
                         (unsigned long long)r(PEACH2_REG_LINK(1)),
                         (unsigned long long)r(PEACH2_REG_LINK(2)));
            std::fprintf(stderr, " rx pkts E %llu W %llu S %llu; delivered %llu; fw %llu;"
                         " rp tail %llu; ram bytes set %zu; own-BAR DMA %llu;"
                         " direct writes in %llu\n",
                         (unsigned long long)r(PEACH2_REG_RX_PKTS(PEACH2_PORT_E)),
                         (unsigned long long)r(PEACH2_REG_RX_PKTS(PEACH2_PORT_W)),
                         (unsigned long long)r(PEACH2_REG_RX_PKTS(PEACH2_PORT_S)),
                         (unsigned long long)r(PEACH2_REG_TX_PKTS(PEACH2_PORT_N)),
                         (unsigned long long)r(PEACH2_REG_FW_STATUS),
                         (unsigned long long)r(PEACH2_REG_RP_TAIL), dirty,
                         (unsigned long long)n.bar_hits, (unsigned long long)n.direct_writes);
            for (unsigned code = 1; code < PEACH2_ERR_NR_CODES; ++code) {
                if (const uint64_t k = r(PEACH2_REG_ERR_BY_CODE(code)))
                    std::fprintf(stderr, "  %s %llu\n", peach2_err_name(code),
                                 (unsigned long long)k);
            }
            // FNV-1a digests of host RAM and card memory, the interrupt
            // and DMA state, and what the callbacks saw.
            uint64_t ram_digest = kFnvBasis, cardmem_digest = kFnvBasis;
            for (size_t a = 0; a < kRamSize; ++a)
                ram_digest = (ram_digest ^ n.ram->data()[a]) * kFnvPrime;
            for (uint64_t off = 0; off < PEACH2_CARDMEM_SIZE; off += 8)
                cardmem_digest =
                    (cardmem_digest ^ peach2_core_cardmem_read(n.core, off, 8)) * kFnvPrime;
            std::fprintf(stderr, "  ram %016llx cardmem %016llx int %#llx interrupts %llu"
                         " error calls %llu dma",
                         (unsigned long long)ram_digest, (unsigned long long)cardmem_digest,
                         (unsigned long long)r(PEACH2_REG_INT_STATUS),
                         (unsigned long long)n.interrupts, (unsigned long long)n.error_calls);
            for (unsigned ch = 0; ch < PEACH2_DMA_ENGINES; ++ch)
                std::fprintf(stderr, " %#llx/%llu",
                             (unsigned long long)r(PEACH2_REG_DMA(ch, PEACH2_DMA_STATUS)),
                             (unsigned long long)r(PEACH2_REG_DMA(ch, PEACH2_DMA_BYTES_LO)));
            std::fprintf(stderr, " tx pkts E %llu W %llu S %llu\n",
                         (unsigned long long)r(PEACH2_REG_TX_PKTS(PEACH2_PORT_E)),
                         (unsigned long long)r(PEACH2_REG_TX_PKTS(PEACH2_PORT_W)),
                         (unsigned long long)r(PEACH2_REG_TX_PKTS(PEACH2_PORT_S)));
        }
    }

    static constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull;
    static constexpr uint64_t kFnvPrime = 0x100000001b3ull;

    Input& in_;
    uint32_t nodes_ = 2;
    std::array<Node, 2> node_;
    std::vector<Cable> cables_;
    bool direct_ = false;
    std::vector<uint8_t> stream_;   // a rogue packet on its way in
    std::vector<uint8_t> carried_;  // what a cable carries, a piece at a time
};

// The cards' RAM, reused by every input (HostRam). Made before main: an
// input that allocates more than it frees is run again by libFuzzer to look
// for a leak.
std::array<HostRam, 2> host_ram;

}  // namespace

void run_core_input(const uint8_t* data, size_t size) {
    Input in(data, size);
    Harness h(in, host_ram);
    h.run();
}

}  // namespace peach2::fuzz
