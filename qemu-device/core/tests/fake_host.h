// A host for the core in tests: guest memory as a byte vector, interrupts and
// log lines recorded.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "packet.h"
#include "peach2/peach2_hw.h"
#include "peach2_core.h"

namespace peach2::test {

struct FakeHost {
    std::vector<uint8_t> mem = std::vector<uint8_t>(1 << 20, 0);
    std::vector<std::pair<uint64_t, size_t>> writes;  // (addr, len) of every DMA write
    std::vector<unsigned> irqs;
    std::vector<std::string> logs;
    struct Error {  // a peach2_core_error, kept
        peach2_core_error e;
        std::string what;
    };
    std::vector<Error> errors;
    int services = 0;  // schedule_service() calls
    int defers = 0;
    uint64_t clock_ns = 1000;  // the emulated clock: 10 ns per reading
    // The transport's direct writes (peach2_core_host.direct_write); unset:
    // every write travels as a packet.
    std::function<bool(unsigned port, uint64_t addr, const void* buf, size_t len)> direct;
    // Its direct copies of DMA pieces (peach2_core_host.direct_copy); unset:
    // DMA pieces are read into a buffer and go as the writes above.
    std::function<bool(unsigned port, uint64_t addr, uint64_t src, size_t len, uint64_t pkts)>
        direct_copy;

    peach2_core_host callbacks() {
        peach2_core_host h{};
        h.opaque = this;
        h.dma_write = [](void* o, uint64_t addr, const void* buf, size_t len) {
            auto* self = static_cast<FakeHost*>(o);
            if (addr > self->mem.size() || self->mem.size() - addr < len)
                return -1;
            std::memcpy(self->mem.data() + addr, buf, len);
            self->writes.emplace_back(addr, len);
            return 0;
        };
        h.dma_read = [](void* o, uint64_t addr, void* buf, size_t len) {
            auto* self = static_cast<FakeHost*>(o);
            if (addr > self->mem.size() || self->mem.size() - addr < len)
                return -1;
            std::memcpy(buf, self->mem.data() + addr, len);
            return 0;
        };
        h.schedule_service = [](void* o) { ++static_cast<FakeHost*>(o)->services; };
        h.defer_service = [](void* o) { ++static_cast<FakeHost*>(o)->defers; };
        h.notify = [](void* o, unsigned v) { static_cast<FakeHost*>(o)->irqs.push_back(v); };
        h.log = [](void* o, int, const char* m) {
            static_cast<FakeHost*>(o)->logs.emplace_back(m);
        };
        h.error = [](void* o, const peach2_core_error* e) {
            static_cast<FakeHost*>(o)->errors.push_back({*e, e->what});
        };
        h.now_ns = [](void* o) { return static_cast<FakeHost*>(o)->clock_ns += 10; };
        h.direct_write = [](void* o, unsigned port, uint64_t addr, const void* buf, size_t len) {
            auto* self = static_cast<FakeHost*>(o);
            return self->direct && self->direct(port, addr, buf, len);
        };
        h.direct_copy = [](void* o, unsigned port, uint64_t addr, uint64_t src, size_t len,
                           uint64_t pkts) {
            auto* self = static_cast<FakeHost*>(o);
            return self->direct_copy && self->direct_copy(port, addr, src, len, pkts);
        };
        return h;
    }
};

struct CoreDeleter {
    void operator()(peach2_core* c) const { peach2_core_free(c); }
};
using CorePtr = std::unique_ptr<peach2_core, CoreDeleter>;

inline CorePtr make_core(FakeHost& host, uint32_t node, uint32_t nodes, uint64_t tx_limit = 0) {
    peach2_core_config cfg{node, nodes, tx_limit};
    const peach2_core_host cb = host.callbacks();
    return CorePtr(peach2_core_new(&cfg, &cb, nullptr, 0));
}

inline uint32_t reg(peach2_core* c, uint64_t off) {
    return static_cast<uint32_t>(peach2_core_reg_read(c, off, 4));
}

// Register [base, base+size) with the card's inbound filter, as the driver
// does for each buffer chunk. Returns IN_RESULT.
inline uint32_t allow(peach2_core* c, uint64_t base, uint64_t size) {
    peach2_core_reg_write(c, PEACH2_REG_IN_BASE_LO, base, 8);
    peach2_core_reg_write(c, PEACH2_REG_IN_SIZE_LO, size, 8);
    peach2_core_reg_write(c, PEACH2_REG_IN_CMD, PEACH2_IN_CMD_ADD, 4);
    return reg(c, PEACH2_REG_IN_RESULT);
}

// Store `len` bytes at window address `addr` the way a CPU does: 8-byte
// stores where aligned, smaller ones at the edges.
inline void cpu_store(peach2_core* c, uint64_t addr, const uint8_t* src, size_t len) {
    size_t i = 0;
    while (i < len) {
        unsigned size = 8;
        while (size > 1 && ((addr + i) % size != 0 || len - i < size))
            size /= 2;
        uint64_t v = 0;
        std::memcpy(&v, src + i, size);
        peach2_core_window_write(c, addr + i, v, size);
        i += size;
    }
}

// Move every byte `from` has queued on port fp into `to`'s port tp, as a
// socket would. Returns the bytes moved; clears `accepted` if `to` declared
// its stream corrupt.
inline size_t carry(peach2_core* from, unsigned fp, peach2_core* to, unsigned tp, bool& accepted) {
    const void* buf = nullptr;
    const size_t n = peach2_core_link_tx_peek(from, fp, &buf);
    if (!n)
        return 0;
    // A copy: the receiver may queue new bytes on `from` while parsing.
    std::vector<uint8_t> bytes(static_cast<const uint8_t*>(buf),
                               static_cast<const uint8_t*>(buf) + n);
    peach2_core_link_tx_consume(from, fp, n);
    accepted &= peach2_core_link_receive(to, tp, bytes.data(), bytes.size());
    return n;
}

// A link packet's header as a peer card sends it (node `src` to `dst`).
inline peach2_pkt_hdr pkt_hdr(uint8_t type, uint16_t src, uint16_t dst, uint32_t len, uint64_t addr,
                              uint32_t seq) {
    return {.magic = PEACH2_PKT_MAGIC,
            .version = PEACH2_PKT_VERSION,
            .type = type,
            .hops = 0,
            .flags = 0,
            .src_node = src,
            .dst_node = dst,
            .len = len,
            .addr = addr,
            .seq = seq,
            .number = 0};
}

// Append the packet `hdr` + `payload` to a stream.
inline void add_packet(std::vector<uint8_t>& stream, const peach2_pkt_hdr& hdr,
                       std::span<const uint8_t> payload) {
    encode_packet(hdr, payload, stream);
}

// A stream's start as node `node` (of 2) sends it from its port E: HELLO.
inline std::vector<uint8_t> hello_from(uint32_t node) {
    std::vector<uint8_t> stream;
    add_packet(stream,
               pkt_hdr(PEACH2_PKT_HELLO, static_cast<uint16_t>(node), static_cast<uint16_t>(node),
                       sizeof(peach2_hello), 0, 0),
               encode_hello({node, 2, PEACH2_PORT_E, PEACH2_VERSION_MAJOR << 16}));
    return stream;
}

}  // namespace peach2::test
