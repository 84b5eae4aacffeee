// A hostile peer on a link port (issue 14): whatever it sends, it can hurt
// only its own link. Hop counts (hole 2), HELLO identity and repeats (hole 3).
#include <gtest/gtest.h>

#include <cstring>

#include "log_limit.h"
#include "three_in_a_line.h"
#include "topology.h"

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
    // The driver's part: node 0 applies the firmware image of `topology`.
    uint32_t load_firmware(const std::string& topology) {
        std::string err;
        const auto image = fw::encode(*fw::build_image(*fw::parse_topology(topology, &err), 1, &err));
        constexpr uint64_t at = 8 << 20;
        std::copy(image.begin(), image.end(), h0.mem.begin() + at);
        peach2_core_reg_write(n0.get(), PEACH2_REG_FW_ADDR_LO, at, 8);
        peach2_core_reg_write(n0.get(), PEACH2_REG_FW_LEN, image.size(), 4);
        peach2_core_reg_write(n0.get(), PEACH2_REG_FW_CMD, PEACH2_FW_CMD_LOAD, 4);
        peach2_core_service(n0.get());
        return reg(n0.get(), PEACH2_REG_FW_STATUS);
    }
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

// Hole 3: every HELLO used to log a line, even a repeat with nothing
// changed (200 000 of them grew the QEMU log by 14 MB).
TEST_F(HostilePeer, HelloRepeatsWithNothingChangedLogNothing) {
    ASSERT_TRUE(rogue.connect(2, 3));
    ASSERT_TRUE(link_up(PEACH2_PORT_W));
    peach2_core_reg_write(n0.get(), PEACH2_REG_INT_STATUS, ~0u, 4);
    const size_t logs = h0.logs.size(), irqs = h0.irqs.size();
    for (int i = 0; i < 20000; ++i)
        ASSERT_TRUE(rogue.hello(2, 3));
    EXPECT_EQ(h0.logs.size(), logs);
    EXPECT_EQ(h0.irqs.size(), irqs);
    EXPECT_EQ(reg(n0.get(), PEACH2_REG_INT_STATUS) & PEACH2_INT_LINK, 0u);
    EXPECT_TRUE(link_up(PEACH2_PORT_W));
    EXPECT_EQ(reg(n0.get(), PEACH2_REG_ERR_COUNT), 0u);
}

// Whatever a peer makes the card log (errors, link flaps), the log gets a
// burst and then a bounded rate; every event is still counted.
TEST_F(HostilePeer, WireTriggeredLogLinesAreRateLimitedButEveryEventCounted) {
    ASSERT_TRUE(rogue.connect(2, 3));
    const size_t logs = h0.logs.size();
    for (int i = 0; i < 20000; ++i)
        ASSERT_TRUE(rogue.send(write_to(1, 0x40, 255), kData));
    EXPECT_EQ(errors(n0.get(), PEACH2_ERR_HOP_LIMIT), 20000u);
    // At most two limiter windows pass in this test, each a burst and a
    // "suppressed" line.
    constexpr size_t kMaxLines = 2 * (LogLimiter::kBurst + 1);
    EXPECT_LE(h0.logs.size() - logs, kMaxLines);
    EXPECT_EQ(h0.errors.size(), 20000u);  // the typed trace records all of them
    // Link flaps: up/down lines are limited too.
    const size_t before_flaps = h0.logs.size();
    for (int i = 0; i < 2000; ++i)
        ASSERT_TRUE(rogue.connect(2, 3));
    EXPECT_LE(h0.logs.size() - before_flaps, kMaxLines);
    EXPECT_TRUE(link_up(PEACH2_PORT_W));
}

TEST(LogLimiter, BurstThenSilenceThenTheCountOfWhatWasHeldBack) {
    LogLimiter lim;
    uint64_t held = 99;
    for (uint32_t i = 0; i < LogLimiter::kBurst; ++i) {
        EXPECT_TRUE(lim.allow(1000 + i, held));
        EXPECT_EQ(held, 0u);
    }
    for (int i = 0; i < 500; ++i)
        EXPECT_FALSE(lim.allow(2000 + i, held));
    EXPECT_FALSE(lim.allow(LogLimiter::kIntervalNs + 999, held));  // same window
    EXPECT_TRUE(lim.allow(LogLimiter::kIntervalNs + 1000, held));  // the next one
    EXPECT_EQ(held, 501u);
    EXPECT_TRUE(lim.allow(LogLimiter::kIntervalNs + 1001, held));
    EXPECT_EQ(held, 0u);
}

TEST_F(HostilePeer, HelloFromANodeOutsideTheClusterIsRefusedAndCounted) {
    const uint32_t before = errors(n0.get(), PEACH2_ERR_BAD_PACKET);
    EXPECT_TRUE(rogue.connect(15, 3));  // "node 15 of 3"
    EXPECT_FALSE(link_up(PEACH2_PORT_W));
    EXPECT_TRUE(rogue.hello(3, 3));  // the first id past the end
    EXPECT_FALSE(link_up(PEACH2_PORT_W));
    EXPECT_EQ(errors(n0.get(), PEACH2_ERR_BAD_PACKET) - before, 2u);
    // Nothing addressed to the bogus ids can leave by W.
    peach2_core_window_write(n0.get(), PEACH2_NODE_BASE(2), 1, 4);
    peach2_core_close_write(n0.get());
    EXPECT_EQ(queued(PEACH2_PORT_W), 0u);
    EXPECT_TRUE(rogue.hello(2, 3));  // an honest HELLO on the same stream is taken
    EXPECT_TRUE(link_up(PEACH2_PORT_W));
}

// A peer on W claiming to be node 1's W port, which is cabled to node 0's
// E, must not attract node 1's traffic.
TEST_F(HostilePeer, TwoPortsCannotClaimTheSamePeerPort) {
    const uint32_t before = errors(n0.get(), PEACH2_ERR_BAD_PACKET);
    EXPECT_TRUE(rogue.connect(1, 3, PEACH2_PORT_W));
    EXPECT_FALSE(link_up(PEACH2_PORT_W));
    EXPECT_EQ(errors(n0.get(), PEACH2_ERR_BAD_PACKET) - before, 1u);
    EXPECT_TRUE(link_up(PEACH2_PORT_E));
    cpu_store(n0.get(), PEACH2_NODE_BASE(1) + 0x100, kData, 8);
    peach2_core_close_write(n0.get());
    EXPECT_EQ(queued(PEACH2_PORT_W), 0u);
    carry_e();
    EXPECT_EQ(std::memcmp(h1.mem.data() + 0x100, kData, 8), 0);
}

// With the firmware's topology known, a peer must be the one cabled to its
// port: claiming node 1's E (unused by node 0's links, cabled to node 2 in
// ring:3) used to be taken, and under default routing could attract node
// 1's traffic when the claimed port is tried first.
TEST_F(HostilePeer, AHelloMustNameThePeerTheFirmwareCablesThere) {
    ASSERT_EQ(load_firmware("ring:3"), static_cast<uint32_t>(PEACH2_FW_OK));
    EXPECT_TRUE(link_up(PEACH2_PORT_E));  // honest: node 1 port W
    EXPECT_TRUE(link_up(PEACH2_PORT_W));  // honest: node 2 port E
    const uint32_t before = errors(n0.get(), PEACH2_ERR_BAD_PACKET);
    EXPECT_TRUE(rogue.connect(1, 3, PEACH2_PORT_E));  // an unused port of node 1
    EXPECT_FALSE(link_up(PEACH2_PORT_W));
    EXPECT_TRUE(rogue.hello(2, 3, PEACH2_PORT_S));  // the right node, the wrong port
    EXPECT_FALSE(link_up(PEACH2_PORT_W));
    EXPECT_EQ(errors(n0.get(), PEACH2_ERR_BAD_PACKET) - before, 2u);
    EXPECT_TRUE(rogue.hello(2, 3, PEACH2_PORT_E));  // the cabled peer is taken
    EXPECT_TRUE(link_up(PEACH2_PORT_W));
    // Firmware that cables W elsewhere takes an up link down: "2" has no W cable.
    ASSERT_EQ(load_firmware("cables:3:0E-1W,1E-2W"), static_cast<uint32_t>(PEACH2_FW_OK));
    EXPECT_FALSE(link_up(PEACH2_PORT_W));
    EXPECT_TRUE(link_up(PEACH2_PORT_E));
    EXPECT_EQ(errors(n0.get(), PEACH2_ERR_BAD_PACKET) - before, 3u);
}

TEST_F(HostilePeer, APeerThatChangesItsIdentityLosesItsLink) {
    ASSERT_TRUE(rogue.connect(2, 3));
    ASSERT_TRUE(link_up(PEACH2_PORT_W));
    EXPECT_TRUE(rogue.hello(2, 4));  // another node count, on an up link
    EXPECT_FALSE(link_up(PEACH2_PORT_W));
    EXPECT_EQ(errors(n0.get(), PEACH2_ERR_BAD_PACKET), 1u);
}

// Two cables between the same two nodes (ring:2) are two different peer
// ports: both links come up.
TEST(HelloIdentity, TwoCablesBetweenTwoNodesAreBothUp) {
    FakeHost ha, hb;
    CorePtr a = make_core(ha, 0, 2), b = make_core(hb, 1, 2);
    for (peach2_core* c : {a.get(), b.get()})
        for (unsigned p : {PEACH2_PORT_E, PEACH2_PORT_W}) {
            peach2_core_link_attach(c, p);
            peach2_core_link_connected(c, p, true);
        }
    bool ok = true;
    for (int i = 0; i < 2; ++i) {
        carry(a.get(), PEACH2_PORT_E, b.get(), PEACH2_PORT_W, ok);
        carry(b.get(), PEACH2_PORT_W, a.get(), PEACH2_PORT_E, ok);
        carry(a.get(), PEACH2_PORT_W, b.get(), PEACH2_PORT_E, ok);
        carry(b.get(), PEACH2_PORT_E, a.get(), PEACH2_PORT_W, ok);
    }
    EXPECT_TRUE(ok);
    for (peach2_core* c : {a.get(), b.get()})
        for (unsigned p : {PEACH2_PORT_E, PEACH2_PORT_W})
            EXPECT_TRUE(reg(c, PEACH2_REG_LINK(p - 1)) & PEACH2_LINK_UP);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_ERR_COUNT), 0u);
}

}  // namespace
}  // namespace peach2::test
