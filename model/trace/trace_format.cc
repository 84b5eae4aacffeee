// Byte layout of trace headers and records (docs/trace-format.md, "Layout").
#include "trace_format.h"

#include <algorithm>
#include <cstring>

namespace peach2::trace {
namespace {

template <typename T>
void put(std::span<uint8_t> out, size_t off, T v) {
    for (size_t i = 0; i < sizeof(T); ++i)
        out[off + i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
}

template <typename T>
T get(std::span<const uint8_t> in, size_t off) {
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
        v |= static_cast<uint64_t>(in[off + i]) << (8 * i);
    return static_cast<T>(v);
}

}  // namespace

void encode(const Header& h, std::span<uint8_t, kHeaderSize> out) {
    std::fill(out.begin(), out.end(), 0);
    std::copy(kMagic.begin(), kMagic.end(), out.begin());
    put<uint16_t>(out, 8, h.major);
    put<uint16_t>(out, 10, h.minor);
    put<uint16_t>(out, 12, h.header_size);
    put<uint16_t>(out, 14, h.record_size);
    put<uint32_t>(out, 16, h.node);
    put<uint32_t>(out, 20, h.nodes);
    put<uint64_t>(out, 24, h.t_emu_ns);
    put<uint64_t>(out, 32, h.t_host_ns);
    put<uint32_t>(out, 40, h.ring_records);
    put<uint32_t>(out, 44, h.reserved);
    std::memcpy(out.data() + 48, h.producer.data(), kProducerLen);
}

void encode(const Record& r, std::span<uint8_t, kRecordSize> out) {
    put<uint64_t>(out, 0, r.t_emu_ns);
    put<uint64_t>(out, 8, r.t_host_ns);
    put<uint64_t>(out, 16, r.seq);
    put<uint16_t>(out, 24, static_cast<uint16_t>(r.type));
    put<uint8_t>(out, 26, r.port);
    put<uint8_t>(out, 27, r.unit);
    put<uint32_t>(out, 28, r.flags);
    put<uint64_t>(out, 32, r.addr);
    put<uint64_t>(out, 40, r.arg);
    put<uint32_t>(out, 48, r.len);
    put<uint16_t>(out, 52, r.src_node);
    put<uint16_t>(out, 54, r.dst_node);
    put<uint64_t>(out, 56, r.id);
}

Header decode_header(std::span<const uint8_t, kHeaderSize> in) {
    Header h;
    h.major = get<uint16_t>(in, 8);
    h.minor = get<uint16_t>(in, 10);
    h.header_size = get<uint16_t>(in, 12);
    h.record_size = get<uint16_t>(in, 14);
    h.node = get<uint32_t>(in, 16);
    h.nodes = get<uint32_t>(in, 20);
    h.t_emu_ns = get<uint64_t>(in, 24);
    h.t_host_ns = get<uint64_t>(in, 32);
    h.ring_records = get<uint32_t>(in, 40);
    h.reserved = get<uint32_t>(in, 44);
    std::memcpy(h.producer.data(), in.data() + 48, kProducerLen);
    return h;
}

Record decode_record(std::span<const uint8_t, kRecordSize> in) {
    Record r;
    r.t_emu_ns = get<uint64_t>(in, 0);
    r.t_host_ns = get<uint64_t>(in, 8);
    r.seq = get<uint64_t>(in, 16);
    r.type = static_cast<Type>(get<uint16_t>(in, 24));
    r.port = get<uint8_t>(in, 26);
    r.unit = get<uint8_t>(in, 27);
    r.flags = get<uint32_t>(in, 28);
    r.addr = get<uint64_t>(in, 32);
    r.arg = get<uint64_t>(in, 40);
    r.len = get<uint32_t>(in, 48);
    r.src_node = get<uint16_t>(in, 52);
    r.dst_node = get<uint16_t>(in, 54);
    r.id = get<uint64_t>(in, 56);
    return r;
}

const char* type_name(Type t) {
    switch (t) {
    case Type::Link: return "LINK";
    case Type::PktSend: return "PKT_SEND";
    case Type::PktFwd: return "PKT_FWD";
    case Type::PktRecv: return "PKT_RECV";
    case Type::DmaStart: return "DMA_START";
    case Type::DmaDesc: return "DMA_DESC";
    case Type::DmaDone: return "DMA_DONE";
    case Type::Irq: return "IRQ";
    case Type::RpRequest: return "RP_REQUEST";
    case Type::End: return "END";
    }
    return "unknown";
}

const char* origin_name(Origin o) {
    switch (o) {
    case Origin::Pio: return "PIO";
    case Origin::Dma: return "DMA";
    case Origin::DmaImm: return "DMA_IMM";
    case Origin::RpRequest: return "RP_REQUEST";
    case Origin::RpAnswer: return "RP_ANSWER";
    }
    return "unknown";
}

const char* port_name(uint8_t port) {
    static constexpr const char* kNames[] = {"N", "E", "W", "S"};
    return port < kPorts ? kNames[port] : "-";
}

Header make_header(uint32_t node, uint32_t nodes, const std::string& producer) {
    Header h;
    h.node = node;
    h.nodes = nodes;
    std::copy_n(producer.begin(), std::min(producer.size(), kProducerLen - 1), h.producer.begin());
    return h;
}

}  // namespace peach2::trace
