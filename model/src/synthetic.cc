// Synthetic traces (see synthetic.h). Packet cutting follows the device:
// PIO write combining stops at 256 bytes and 4 KiB boundaries
// (docs/hardware.md §3), DMA packets carry up to 4 KiB and never cross a 4 KiB
// destination boundary (§6).
#include "synthetic.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "peach2/peach2_hw.h"

namespace peach2::model {
namespace {

constexpr uint64_t kRecordNs = 100;  // emulated time one record takes
constexpr uint32_t kPioPacket = 256;
constexpr uint64_t kPage = 4096;
constexpr uint64_t kRpCplHead = 24;  // completion record body (value, status, len, reserved)

uint64_t global(uint32_t node, uint64_t offset) {
    return static_cast<uint64_t>(node) << PEACH2_SLICE_SHIFT | offset;
}

}  // namespace

std::optional<SyntheticRun> SyntheticRun::create(const std::string& topology, std::string* err) {
    auto t = fw::parse_topology(topology, err);
    if (!t)
        return std::nullopt;
    return SyntheticRun(std::move(*t));
}

SyntheticRun::SyntheticRun(fw::Topology t) : topo_(std::move(t)) {
    const uint32_t n = topo_.nodes;
    hops_ = fw::hop_matrix(topo_);
    records_.resize(n);
    clock_.assign(n, 0);
    next_number_.assign(n * n, 0);
    next_run_.assign(n, 0);
    next_tag_.assign(n, 1);
    for (const fw::Cable& c : topo_.cables) {
        emit(c.node_a, trace::link_state(
                           static_cast<uint8_t>(c.port_a), true, static_cast<uint16_t>(c.node_a),
                           static_cast<uint16_t>(c.node_b), static_cast<uint8_t>(c.port_b)));
        emit(c.node_b, trace::link_state(
                           static_cast<uint8_t>(c.port_b), true, static_cast<uint16_t>(c.node_b),
                           static_cast<uint16_t>(c.node_a), static_cast<uint8_t>(c.port_a)));
    }
}

void SyntheticRun::host_time(uint32_t node, uint64_t ns) { clock_.at(node) += ns; }

void SyntheticRun::emit(uint32_t node, trace::Record r) {
    clock_[node] += kRecordNs;
    host_clock_ = std::max(host_clock_, clock_[node]) + 1;
    r.t_emu_ns = clock_[node];
    r.t_host_ns = host_clock_;
    r.seq = records_[node].size();
    records_[node].push_back(r);
}

void SyntheticRun::packet(trace::Origin origin, uint32_t src, uint32_t dst, uint64_t addr,
                          uint32_t len, trace::RecvKind kind, uint8_t channel, uint64_t run,
                          uint32_t desc_index, uint8_t op, uint64_t tag) {
    const uint64_t number = next_number_[src * topo_.nodes + dst]++;
    const auto s16 = static_cast<uint16_t>(src), d16 = static_cast<uint16_t>(dst);
    uint32_t at = src;
    uint8_t in_port = trace::kPortN;
    while (at != dst) {
        const auto port = fw::first_hop_port(topo_, hops_, at, dst);
        if (!port)
            return;  // unreachable: nothing leaves (the device raises NO_ROUTE)
        const auto out = static_cast<uint8_t>(*port);
        if (at == src) {
            trace::Record r =
                trace::pkt_send(origin, out, addr, len, s16, d16, number, channel, run, desc_index);
            if (origin == trace::Origin::RpAnswer)
                r.arg = tag;
            emit(src, r);
        } else {
            emit(at, trace::pkt_fwd(in_port, out, addr, len, s16, d16, number));
        }
        for (const fw::Cable& c : topo_.cables) {
            if (c.node_a == at && c.port_a == out) {
                at = c.node_b;
                in_port = static_cast<uint8_t>(c.port_b);
                break;
            }
            if (c.node_b == at && c.port_b == out) {
                at = c.node_a;
                in_port = static_cast<uint8_t>(c.port_a);
                break;
            }
        }
    }
    if (src == dst)
        emit(src, trace::pkt_send(origin, trace::kPortN, addr, len, s16, d16, number, channel, run,
                                  desc_index));
    emit(dst, trace::pkt_recv(kind, in_port, addr, len, s16, d16, number, 0, op, tag));
}

void SyntheticRun::pio(uint32_t src, uint32_t dst, uint64_t offset, uint32_t len) {
    uint64_t done = 0;
    while (done < len) {
        const uint64_t at = offset + done;
        const auto piece =
            static_cast<uint32_t>(std::min<uint64_t>({len - done, kPioPacket, kPage - at % kPage}));
        packet(trace::Origin::Pio, src, dst, global(dst, at), piece, trace::RecvKind::Memory);
        done += piece;
    }
}

uint64_t SyntheticRun::dma(uint32_t node, uint8_t channel, trace::DmaMode mode,
                           const std::vector<Desc>& descs) {
    const uint64_t run = next_run_[node]++;
    const uint64_t head = mode == trace::DmaMode::ChainHost ? (1ull << 63) | 0x200000 : 0;
    emit(node, trace::dma_start(channel, mode, head, run));
    uint64_t bytes = 0;
    for (size_t k = 0; k < descs.size(); ++k) {
        const Desc& d = descs[k];
        uint32_t flags = k + 1 == descs.size() ? trace::kDescLast : 0;
        if (d.imm)
            flags |= trace::kDescImm;
        if (d.burst)
            flags |= trace::kDescStrideDst;
        if (mode == trace::DmaMode::ChainHost && k + 1 < descs.size())
            flags |= trace::kDescNextHost;
        emit(node, trace::dma_desc(channel, mode, run, d.src, global(d.dst_node, d.dst_offset),
                                   d.len, d.burst, d.gap, flags));
        const auto index = static_cast<uint32_t>(k);
        if (d.imm) {
            packet(trace::Origin::DmaImm, node, d.dst_node, global(d.dst_node, d.dst_offset), d.len,
                   trace::RecvKind::Memory, channel, run, index);
            bytes += d.len;
            continue;
        }
        uint64_t progress = 0;
        while (progress < d.len) {
            uint64_t dst = d.dst_offset + progress;
            uint64_t piece = d.len - progress;
            if (d.burst) {
                const uint64_t block = progress / d.burst, within = progress % d.burst;
                dst = d.dst_offset + block * (d.burst + d.gap) + within;
                piece = std::min<uint64_t>(piece, d.burst - within);
            }
            piece = std::min<uint64_t>({piece, trace::kMaxPacket, kPage - dst % kPage});
            packet(trace::Origin::Dma, node, d.dst_node, global(d.dst_node, dst),
                   static_cast<uint32_t>(piece), trace::RecvKind::Memory, channel, run, index);
            progress += piece;
        }
        bytes += d.len;
    }
    emit(node, trace::dma_done(channel, run, 0, bytes, static_cast<uint32_t>(descs.size())));
    emit(node, trace::irq(static_cast<uint8_t>(1 + channel), 1u << (8 + channel)));
    return run;
}

void SyntheticRun::read_proxy(uint32_t requester, uint32_t target, uint8_t op, uint32_t len) {
    const uint64_t tag = next_tag_[requester]++;
    const uint64_t number = next_number_[requester * topo_.nodes + target];
    const uint64_t doorbell = global(target, PEACH2_CARD_OFF + PEACH2_CARD_DOORBELL_OFF);
    const uint32_t bytes = op == 1 ? len : 8;
    emit(requester, trace::rp_request(op, static_cast<uint16_t>(requester),
                                      static_cast<uint16_t>(target), 0x300000, bytes, tag, number));
    packet(trace::Origin::RpRequest, requester, target, doorbell, PEACH2_RP_ENTRY_SIZE,
           trace::RecvKind::RpRing, trace::kNoPort, 0, 0, op, tag);
    emit(target, trace::irq(6, 1u << 3));
    // The driver's reply on the proxy channel: host descriptors.
    std::vector<Desc> reply;
    const uint64_t reply_buf = 0x400000, cpl = 0x500000;
    if (op == 1)
        reply.push_back({requester, reply_buf, len, 0x300000});
    reply.push_back({requester, cpl, static_cast<uint32_t>(kRpCplHead), 0x600000});
    Desc tag_write{requester, cpl + kRpCplHead, 8, tag};
    tag_write.imm = true;
    reply.push_back(tag_write);
    dma(target, trace::kProxyChannel, trace::DmaMode::ChainHost, reply);
}

std::vector<trace::TraceFile> SyntheticRun::traces() const {
    std::vector<trace::TraceFile> out;
    for (uint32_t n = 0; n < topo_.nodes; ++n) {
        trace::TraceFile f;
        f.path = "synthetic/" + trace::file_name(n);
        f.header = trace::make_header(n, topo_.nodes, "synthetic");
        f.records = records_[n];
        f.closed = true;
        out.push_back(std::move(f));
    }
    return out;
}

std::vector<uint8_t> SyntheticRun::file_bytes(uint32_t node) const {
    const auto& recs = records_.at(node);
    std::vector<uint8_t> out(trace::kHeaderSize + (recs.size() + 1) * trace::kRecordSize);
    trace::encode(trace::make_header(node, topo_.nodes, "synthetic"),
                  std::span<uint8_t, trace::kHeaderSize>(out.data(), trace::kHeaderSize));
    for (size_t i = 0; i <= recs.size(); ++i) {
        trace::Record r = i < recs.size() ? recs[i] : trace::end(recs.size(), 0);
        if (i == recs.size()) {
            r.seq = recs.size();
            r.t_emu_ns = clock_[node];
            r.t_host_ns = host_clock_;
        }
        trace::encode(
            r, std::span<uint8_t, trace::kRecordSize>(
                   out.data() + trace::kHeaderSize + i * trace::kRecordSize, trace::kRecordSize));
    }
    return out;
}

bool SyntheticRun::write(const std::string& dir, std::string* err) const {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    for (uint32_t n = 0; n < topo_.nodes; ++n) {
        const std::string path = dir + "/" + trace::file_name(n);
        const auto bytes = file_bytes(n);
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes.data()),
                  static_cast<std::streamsize>(bytes.size()));
        if (!out) {
            if (err)
                *err = path + ": cannot write";
            return false;
        }
    }
    return true;
}

uint64_t SyntheticRun::records() const {
    uint64_t n = 0;
    for (const auto& r : records_)
        n += r.size();
    return n;
}

}  // namespace peach2::model
