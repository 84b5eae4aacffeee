#include "packet.h"

#include <cstring>

namespace peach2 {
namespace {

template <typename T>
void put_le(uint8_t* p, T v) {
    for (size_t i = 0; i < sizeof(T); ++i)
        p[i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
}

template <typename T>
T get_le(const uint8_t* p) {
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
        v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return static_cast<T>(v);
}

}  // namespace

void encode_packet(const peach2_pkt_hdr& h, std::span<const uint8_t> payload,
                   std::vector<uint8_t>& out) {
    uint8_t b[kHeaderSize];
    put_le<uint32_t>(b + 0, h.magic);
    b[4] = h.version;
    b[5] = h.type;
    b[6] = h.hops;
    b[7] = h.flags;
    put_le<uint16_t>(b + 8, h.src_node);
    put_le<uint16_t>(b + 10, h.dst_node);
    put_le<uint32_t>(b + 12, static_cast<uint32_t>(payload.size()));
    put_le<uint64_t>(b + 16, h.addr);
    put_le<uint32_t>(b + 24, h.seq);
    put_le<uint32_t>(b + 28, h.number);
    out.insert(out.end(), b, b + kHeaderSize);
    out.insert(out.end(), payload.begin(), payload.end());
}

peach2_pkt_hdr decode_header(std::span<const uint8_t, kHeaderSize> bytes) {
    const uint8_t* b = bytes.data();
    peach2_pkt_hdr h{};
    h.magic = get_le<uint32_t>(b + 0);
    h.version = b[4];
    h.type = b[5];
    h.hops = b[6];
    h.flags = b[7];
    h.src_node = get_le<uint16_t>(b + 8);
    h.dst_node = get_le<uint16_t>(b + 10);
    h.len = get_le<uint32_t>(b + 12);
    h.addr = get_le<uint64_t>(b + 16);
    h.seq = get_le<uint32_t>(b + 24);
    h.number = get_le<uint32_t>(b + 28);
    return h;
}

std::optional<std::string> header_problem(const peach2_pkt_hdr& h) {
    if (h.magic != PEACH2_PKT_MAGIC)
        return "bad magic " + std::to_string(h.magic);
    if (h.version != PEACH2_PKT_VERSION)
        return "unsupported packet version " + std::to_string(h.version);
    if (h.flags != 0)
        return "reserved header bits set";
    if (h.src_node >= PEACH2_MAX_NODES || h.dst_node >= PEACH2_MAX_NODES)
        return "node id out of range";
    switch (h.type) {
    case PEACH2_PKT_HELLO:
        if (h.len != sizeof(peach2_hello))
            return "HELLO with length " + std::to_string(h.len);
        return std::nullopt;
    case PEACH2_PKT_WRITE:
        if (h.len == 0 || h.len > PEACH2_PKT_MAX_PAYLOAD)
            return "WRITE with length " + std::to_string(h.len);
        if (h.addr >= PEACH2_WINDOW_SIZE || PEACH2_WINDOW_SIZE - h.addr < h.len)
            return "WRITE outside the window";
        return std::nullopt;
    case PEACH2_PKT_RPREQ:
        // The request, then a READ's reply list (rproxy.cc checks its count).
        if (h.len < sizeof(peach2_rp_req) ||
            h.len > sizeof(peach2_rp_req) + PEACH2_RP_MAX_PIECES * sizeof(peach2_rp_piece) ||
            (h.len - sizeof(peach2_rp_req)) % sizeof(peach2_rp_piece))
            return "RPREQ with length " + std::to_string(h.len);
        if (h.addr >= PEACH2_WINDOW_SIZE)
            return "RPREQ outside the window";
        return std::nullopt;
    default: return "unknown packet type " + std::to_string(h.type);
    }
}

std::vector<uint8_t> encode_hello(const peach2_hello& hello) {
    std::vector<uint8_t> p(sizeof(peach2_hello));
    put_le<uint32_t>(p.data() + 0, hello.node_id);
    put_le<uint32_t>(p.data() + 4, hello.node_count);
    put_le<uint32_t>(p.data() + 8, hello.port);
    put_le<uint32_t>(p.data() + 12, hello.version);
    return p;
}

std::optional<peach2_hello> decode_hello(std::span<const uint8_t> p) {
    if (p.size() != sizeof(peach2_hello))
        return std::nullopt;
    peach2_hello h{};
    h.node_id = get_le<uint32_t>(p.data() + 0);
    h.node_count = get_le<uint32_t>(p.data() + 4);
    h.port = get_le<uint32_t>(p.data() + 8);
    h.version = get_le<uint32_t>(p.data() + 12);
    return h;
}

bool PacketParser::feed(std::span<const uint8_t> bytes, const Sink& sink) {
    if (failed_)
        return false;
    pending_.insert(pending_.end(), bytes.begin(), bytes.end());
    size_t pos = 0;
    while (pending_.size() - pos >= kHeaderSize) {
        const auto hdr = decode_header(
            std::span<const uint8_t, kHeaderSize>(pending_.data() + pos, kHeaderSize));
        if (auto why = header_problem(hdr)) {
            fail(*why);
            return false;
        }
        if (pending_.size() - pos - kHeaderSize < hdr.len)
            break;  // payload not complete yet
        if (!sink(hdr, std::span<const uint8_t>(pending_.data() + pos + kHeaderSize, hdr.len))) {
            if (!failed_)
                fail("packet rejected");
            return false;
        }
        pos += kHeaderSize + hdr.len;
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(pos));
    return true;
}

void PacketParser::fail(std::string why) {
    error_ = std::move(why);
    failed_ = true;
    pending_.clear();
}

void PacketParser::reset() {
    pending_.clear();
    error_.clear();
    failed_ = false;
}

}  // namespace peach2
