#include "packet.h"

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>

namespace peach2 {
namespace {

peach2_pkt_hdr write_hdr(uint64_t addr, uint32_t len) {
    peach2_pkt_hdr h{};
    h.magic = PEACH2_PKT_MAGIC;
    h.version = PEACH2_PKT_VERSION;
    h.type = PEACH2_PKT_WRITE;
    h.src_node = 0;
    h.dst_node = PEACH2_ADDR_NODE(addr);
    h.len = len;
    h.addr = addr;
    return h;
}

TEST(Packet, EncodeDecodeRoundTrip) {
    auto h = write_hdr(PEACH2_NODE_BASE(3) + 0x1234, 5);
    h.seq = 77;
    h.hops = 2;
    const uint8_t payload[5] = {1, 2, 3, 4, 5};
    std::vector<uint8_t> out;
    encode_packet(h, payload, out);
    ASSERT_EQ(out.size(), kHeaderSize + 5);
    const auto d = decode_header(std::span<const uint8_t, kHeaderSize>(out.data(), kHeaderSize));
    EXPECT_EQ(d.magic, PEACH2_PKT_MAGIC);
    EXPECT_EQ(d.addr, h.addr);
    EXPECT_EQ(d.len, 5u);
    EXPECT_EQ(d.seq, 77u);
    EXPECT_EQ(d.hops, 2);
    EXPECT_EQ(d.dst_node, 3);
    EXPECT_FALSE(header_problem(d));
    // Little endian on the wire regardless of host order.
    EXPECT_EQ(out[0], 0x50);
    EXPECT_EQ(out[3], 0x54);
}

// `good` is well formed; each change breaks it.
void expect_each_breaks(const peach2_pkt_hdr& good,
                        std::initializer_list<std::function<void(peach2_pkt_hdr&)>> changes) {
    EXPECT_FALSE(header_problem(good));
    int i = 0;
    for (const auto& change : changes) {
        peach2_pkt_hdr h = good;
        change(h);
        EXPECT_TRUE(header_problem(h)) << "change " << i;
        ++i;
    }
}

TEST(Packet, HeaderProblems) {
    expect_each_breaks(write_hdr(0x1000, 8),
                       {
                           [](auto& h) { h.magic = 0; },
                           [](auto& h) { h.version = 9; },
                           [](auto& h) { h.flags = 1; },
                           [](auto& h) { h.src_node = PEACH2_MAX_NODES; },
                           [](auto& h) { h.type = 99; },
                           [](auto& h) { h.len = 0; },
                           [](auto& h) { h.len = PEACH2_PKT_MAX_PAYLOAD + 1; },
                           [](auto& h) { h.addr = PEACH2_WINDOW_SIZE - 4; },
                           [](auto& h) { h.addr = ~0ull; },
                           [](auto& h) {
                               h.type = PEACH2_PKT_HELLO;
                               h.len = 3;
                           },
                       });
}

TEST(Packet, ReadProxyRequestsAre64BytesAndAListOfPieces) {
    auto h = write_hdr(PEACH2_NODE_BASE(1) + PEACH2_CARD_OFF + PEACH2_CARD_DOORBELL_OFF,
                       sizeof(peach2_rp_req));
    h.type = PEACH2_PKT_RPREQ;
    for (uint32_t n : {1u, 2u, 5u, PEACH2_RP_MAX_PIECES}) {
        h.len = sizeof(peach2_rp_req) + n * sizeof(peach2_rp_piece);
        EXPECT_FALSE(header_problem(h)) << n << " pieces";
    }
    h.len = sizeof(peach2_rp_req);
    expect_each_breaks(h, {
                              [](auto& b) { b.len = 63; },
                              [](auto& b) { b.len = 72; },
                              [](auto& b) {
                                  b.len = sizeof(peach2_rp_req) +
                                          (PEACH2_RP_MAX_PIECES + 1) * sizeof(peach2_rp_piece);
                              },
                              [](auto& b) { b.addr = PEACH2_WINDOW_SIZE; },
                          });
}

TEST(Packet, HelloRoundTrip) {
    const peach2_hello in{3, 8, PEACH2_PORT_W, 0x10000};
    const auto bytes = encode_hello(in);
    const auto out = decode_hello(bytes);
    ASSERT_TRUE(out);
    EXPECT_EQ(out->node_id, 3u);
    EXPECT_EQ(out->node_count, 8u);
    EXPECT_EQ(out->port, static_cast<uint32_t>(PEACH2_PORT_W));
    EXPECT_FALSE(decode_hello(std::span<const uint8_t>(bytes.data(), 4)));
}

TEST(PacketParser, ReassemblesAcrossArbitrarySplits) {
    std::vector<uint8_t> stream;
    for (uint32_t i = 0; i < 10; ++i) {
        std::vector<uint8_t> payload(1 + i * 25, static_cast<uint8_t>(i));
        encode_packet(write_hdr(0x100 * i, static_cast<uint32_t>(payload.size())), payload, stream);
    }
    PacketParser parser;
    std::vector<std::pair<uint64_t, size_t>> seen;
    const auto sink = [&](const peach2_pkt_hdr& h, std::span<const uint8_t> p) {
        seen.emplace_back(h.addr, p.size());
        for (uint8_t b : p)
            EXPECT_EQ(b, static_cast<uint8_t>(h.addr / 0x100));
        return true;
    };
    // Feed in pieces of 1, 2, 3, ... bytes.
    size_t pos = 0, step = 1;
    while (pos < stream.size()) {
        const size_t n = std::min(step++, stream.size() - pos);
        ASSERT_TRUE(parser.feed(std::span<const uint8_t>(stream.data() + pos, n), sink));
        pos += n;
    }
    ASSERT_EQ(seen.size(), 10u);
    for (uint32_t i = 0; i < 10; ++i) {
        EXPECT_EQ(seen[i].first, 0x100u * i);
        EXPECT_EQ(seen[i].second, 1u + i * 25);
    }
}

TEST(PacketParser, GarbageFailsAndStaysFailedUntilReset) {
    PacketParser parser;
    int calls = 0;
    const auto sink = [&](const peach2_pkt_hdr&, std::span<const uint8_t>) {
        ++calls;
        return true;
    };
    std::vector<uint8_t> junk(64, 0xab);
    EXPECT_FALSE(parser.feed(junk, sink));
    EXPECT_NE(parser.error().find("magic"), std::string::npos);
    std::vector<uint8_t> good;
    const uint8_t payload[4] = {1, 2, 3, 4};
    encode_packet(write_hdr(0, 4), payload, good);
    EXPECT_FALSE(parser.feed(good, sink));
    EXPECT_EQ(calls, 0);
    parser.reset();
    EXPECT_TRUE(parser.feed(good, sink));
    EXPECT_EQ(calls, 1);
}

TEST(PacketParser, SinkRejectionFailsTheStream) {
    PacketParser parser;
    std::vector<uint8_t> two;
    const uint8_t payload[4] = {};
    encode_packet(write_hdr(0, 4), payload, two);
    encode_packet(write_hdr(8, 4), payload, two);
    int calls = 0;
    EXPECT_FALSE(parser.feed(two, [&](const peach2_pkt_hdr&, std::span<const uint8_t>) {
        ++calls;
        return false;
    }));
    EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace peach2
