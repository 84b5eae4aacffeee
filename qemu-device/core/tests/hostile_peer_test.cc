// A hostile peer on a link port (issue 14): whatever it sends, it can hurt
// only its own link. Hop counts (hole 2), HELLO identity and repeats (hole 3).
#include <gtest/gtest.h>

#include <cstring>

#include "three_in_a_line.h"

namespace peach2::test {
namespace {

class HostilePeer : public ThreeInALine {
protected:
    Rogue rogue{nullptr, PEACH2_PORT_W};
    void SetUp() override {
        ThreeInALine::SetUp();
        rogue.card = n0.get();
    }
    // A WRITE the rogue forwards towards node 1 through node 0.
    static peach2_pkt_hdr write_to(uint32_t node, uint64_t off, uint8_t hops, uint16_t src = 2) {
        peach2_pkt_hdr h = pkt_hdr(PEACH2_PKT_WRITE, src, static_cast<uint16_t>(node), 8,
                                   PEACH2_NODE_BASE(node) + off, 0);
        h.hops = hops;
        return h;
    }
    static constexpr uint8_t kData[8] = {1, 2, 3, 4, 5, 6, 7, 8};
};

// Hole 2: hops=255 used to wrap to 0 on forwarding; the next card then saw a
// neighbour's "own" packet claiming another source and dropped the honest
// link between two other nodes (or, with src = the forwarder, took it as
// the forwarder's own traffic).
TEST_F(HostilePeer, HopCountAtOrPastTheLimitIsDroppedAndCountedNeverWrapped) {
    ASSERT_TRUE(rogue.connect(2, 3));
    ASSERT_TRUE(link_up(PEACH2_PORT_W));
    const uint32_t before = errors(n0.get(), PEACH2_ERR_HOP_LIMIT);
    for (uint8_t hops : {255, 255, 8, 9, 200})
        EXPECT_TRUE(rogue.send(write_to(1, 0x40, hops, hops == 255 ? 0 : 2), kData));
    EXPECT_TRUE(rogue.send(write_to(0, 0x40, 255), kData));  // even to node 0 itself
    EXPECT_EQ(errors(n0.get(), PEACH2_ERR_HOP_LIMIT) - before, 6u);
    EXPECT_EQ(queued(PEACH2_PORT_E), 0u);                        // nothing forwarded
    EXPECT_TRUE(link_up(PEACH2_PORT_W));                         // dropped, not a corrupt stream
    EXPECT_EQ(h0.mem[0x40], (0x40 >> 3) ^ ((0x40 * 7) & 0xff));  // not delivered
    // The honest link between node 0 and node 1 is untouched.
    carry_e();
    EXPECT_TRUE(accepted);
    EXPECT_TRUE(link_up(PEACH2_PORT_W, n1.get()));
    EXPECT_EQ(errors(n1.get(), PEACH2_ERR_BAD_PACKET), 0u);
    EXPECT_EQ(h1.mem[0x40], 0);
}

TEST_F(HostilePeer, ForwardingAddsOneHopUpToTheLimit) {
    ASSERT_TRUE(rogue.connect(2, 3));
    EXPECT_TRUE(rogue.send(write_to(1, 0x80, PEACH2_PKT_HOP_LIMIT - 2), kData));
    ASSERT_GT(queued(PEACH2_PORT_E), 0u);
    const void* buf = nullptr;
    peach2_core_link_tx_peek(n0.get(), PEACH2_PORT_E, &buf);
    const peach2_pkt_hdr fwd = decode_header(
        std::span<const uint8_t, kHeaderSize>(static_cast<const uint8_t*>(buf), kHeaderSize));
    EXPECT_EQ(fwd.hops, PEACH2_PKT_HOP_LIMIT - 1);
    EXPECT_EQ(fwd.src_node, 2u);
    carry_e();
    EXPECT_TRUE(accepted);
    EXPECT_EQ(std::memcmp(h1.mem.data() + 0x80, kData, 8), 0);
    // One more card would pass the limit: the forwarder drops it.
    EXPECT_TRUE(rogue.send(write_to(1, 0x80, PEACH2_PKT_HOP_LIMIT - 1), kData));
    EXPECT_EQ(queued(PEACH2_PORT_E), 0u);
    EXPECT_EQ(errors(n0.get(), PEACH2_ERR_HOP_LIMIT), 1u);
}

}  // namespace
}  // namespace peach2::test
