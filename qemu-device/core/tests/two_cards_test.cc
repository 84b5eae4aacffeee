// Two cards cabled E(0) <-> W(1), bytes moved by the test like a socket would.
#include <gtest/gtest.h>

#include <random>

#include "cabled_pair.h"
#include "packet.h"

namespace peach2::test {
namespace {

using TwoCards = CabledPair;

TEST_F(TwoCards, HelloBringsBothLinksUpWithPeerIdentity) {
    const uint32_t la = reg(a.get(), PEACH2_REG_LINK(PEACH2_PORT_E - 1));
    const uint32_t lb = reg(b.get(), PEACH2_REG_LINK(PEACH2_PORT_W - 1));
    EXPECT_TRUE(la & PEACH2_LINK_UP);
    EXPECT_TRUE(la & PEACH2_LINK_CONNECTED);
    EXPECT_EQ(la >> PEACH2_LINK_PEER_NODE_SHIFT, 1u);
    EXPECT_EQ((la >> PEACH2_LINK_PEER_PORT_SHIFT) & 0xf, static_cast<uint32_t>(PEACH2_PORT_W));
    EXPECT_EQ(lb >> PEACH2_LINK_PEER_NODE_SHIFT, 0u);
    EXPECT_EQ((lb >> PEACH2_LINK_PEER_PORT_SHIFT) & 0xf, static_cast<uint32_t>(PEACH2_PORT_E));
    EXPECT_TRUE(reg(a.get(), PEACH2_REG_INT_STATUS) & PEACH2_INT_LINK);
    EXPECT_FALSE(la & PEACH2_LINK_SHM);
}

TEST_F(TwoCards, SharedMemoryTransportShowsUntilTheConnectionCloses) {
    const auto link_e = [&] { return reg(a.get(), PEACH2_REG_LINK(PEACH2_PORT_E - 1)); };
    peach2_core_link_shared_memory(a.get(), PEACH2_PORT_E, true);
    EXPECT_TRUE(link_e() & PEACH2_LINK_SHM);
    EXPECT_TRUE(link_e() & PEACH2_LINK_UP);
    peach2_core_link_connected(a.get(), PEACH2_PORT_E, false);
    EXPECT_FALSE(link_e() & (PEACH2_LINK_SHM | PEACH2_LINK_CONNECTED));
    peach2_core_link_shared_memory(a.get(), PEACH2_PORT_E, true);  // not connected: ignored
    EXPECT_FALSE(link_e() & PEACH2_LINK_SHM);
    peach2_core_link_connected(a.get(), PEACH2_PORT_E, true);  // a new stream: socket until said
    EXPECT_EQ(link_e() & (PEACH2_LINK_SHM | PEACH2_LINK_CONNECTED), PEACH2_LINK_CONNECTED);
}

TEST_F(TwoCards, RemoteStoresArriveIntactAndOnlyWhereAddressed) {
    std::mt19937 rng(1);
    for (int round = 0; round < 200; ++round) {
        const size_t len = 1 + rng() % 5000;
        const uint64_t off = rng() % (hb.mem.size() - len);
        std::vector<uint8_t> data(len);
        for (auto& x : data)
            x = static_cast<uint8_t>(rng());
        const auto before = hb.mem;
        cpu_store(a.get(), PEACH2_NODE_BASE(1) + off, data.data(), len);
        ASSERT_TRUE(pump());
        ASSERT_EQ(0, std::memcmp(hb.mem.data() + off, data.data(), len)) << "round " << round;
        ASSERT_EQ(0, std::memcmp(hb.mem.data(), before.data(), off));
        ASSERT_EQ(0, std::memcmp(hb.mem.data() + off + len, before.data() + off + len,
                                 hb.mem.size() - off - len));
    }
    EXPECT_EQ(reg(a.get(), PEACH2_REG_ERR_COUNT), 0u);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_ERR_COUNT), 0u);
    EXPECT_TRUE(ha.writes.empty());  // nothing landed on the sender
    EXPECT_GT(peach2_core_reg_read(a.get(), PEACH2_REG_TX_PKTS(PEACH2_PORT_E), 8), 200u);
    EXPECT_EQ(peach2_core_reg_read(a.get(), PEACH2_REG_TX_PKTS(PEACH2_PORT_E), 8),
              peach2_core_reg_read(b.get(), PEACH2_REG_RX_PKTS(PEACH2_PORT_W), 8));
}

TEST_F(TwoCards, RemoteStoreReportsQueuedPacketsToTheCaller) {
    EXPECT_EQ(peach2_core_window_write(a.get(), PEACH2_NODE_BASE(1) + 0x100, 1, 8),
              PEACH2_WINDOW_WC_OPEN);
    // A store that does not continue the open buffer closes it: one packet queued.
    EXPECT_EQ(peach2_core_window_write(a.get(), PEACH2_NODE_BASE(1) + 0x900, 2, 8),
              PEACH2_WINDOW_WC_OPEN | PEACH2_WINDOW_TX_PENDING);
    const void* buf = nullptr;
    EXPECT_EQ(peach2_core_link_tx_peek(a.get(), PEACH2_PORT_E, &buf), kHeaderSize + 8);
    ASSERT_TRUE(pump());
    EXPECT_EQ(hb.mem[0x100], 1);
    EXPECT_EQ(hb.mem[0x900], 2);
}

TEST_F(TwoCards, PacketsCarryTheirNumberInTheSourcesStreamToTheirDestination) {
    // Numbers count per destination from 0 and survive a guest reset (they
    // name packets across the nodes' traces).
    peach2_core_window_write(a.get(), PEACH2_NODE_BASE(0) + 0x40, 1, 8);  // to itself: 0 -> 0
    for (uint64_t i = 0; i < 3; ++i) {
        if (i == 2)
            peach2_core_reset(a.get());
        peach2_core_window_write(a.get(), PEACH2_NODE_BASE(1) + 0x100 * i, i, 8);
        peach2_core_close_write(a.get());
        const void* buf = nullptr;
        const size_t n = peach2_core_link_tx_peek(a.get(), PEACH2_PORT_E, &buf);
        ASSERT_EQ(n, kHeaderSize + 8);
        const peach2_pkt_hdr h = decode_header(
            std::span<const uint8_t, kHeaderSize>(static_cast<const uint8_t*>(buf), kHeaderSize));
        EXPECT_EQ(h.number, i);
        EXPECT_EQ(h.src_node, 0u);
        peach2_core_link_tx_consume(a.get(), PEACH2_PORT_E, n);
    }
}

TEST_F(TwoCards, MailboxIsRemotelyWritable) {
    const uint64_t v = 0x1122334455667788ull;
    peach2_core_window_write(a.get(), PEACH2_NODE_BASE(1) + PEACH2_CARD_OFF + 0x800, v, 8);
    ASSERT_TRUE(pump());
    EXPECT_EQ(peach2_core_cardmem_read(b.get(), PEACH2_MAILBOX_OFF + 0x800, 8), v);
}

TEST_F(TwoCards, GarbageOnTheLinkIsReportedAndTheLinkRecovers) {
    std::vector<uint8_t> junk(100, 0x5a);
    EXPECT_FALSE(peach2_core_link_receive(b.get(), PEACH2_PORT_W, junk.data(), junk.size()));
    EXPECT_EQ(errors(b.get(), PEACH2_ERR_BAD_PACKET), 1u);
    EXPECT_FALSE(reg(b.get(), PEACH2_REG_LINK(PEACH2_PORT_W - 1)) & PEACH2_LINK_UP);
    // The glue drops the connection; the transport reconnects.
    peach2_core_link_connected(a.get(), PEACH2_PORT_E, false);
    peach2_core_link_connected(b.get(), PEACH2_PORT_W, false);
    connect();
    EXPECT_TRUE(reg(b.get(), PEACH2_REG_LINK(PEACH2_PORT_W - 1)) & PEACH2_LINK_UP);
    peach2_core_window_write(a.get(), PEACH2_NODE_BASE(1) + 0x10, 0x77, 1);
    ASSERT_TRUE(pump());
    EXPECT_EQ(hb.mem[0x10], 0x77);
}

// Fault injection (host-driven): a packet lost on the wire is seen by the
// receiver as a sequence gap: counted, the connection dropped; after the
// reconnect the link carries traffic again, and the lost write stays lost.
TEST_F(TwoCards, InjectedPacketLossIsASequenceGapAtThePeerAndTheLinkRecovers) {
    peach2_core_link_fault_drop(a.get(), PEACH2_PORT_E, 1);
    peach2_core_window_write(a.get(), PEACH2_NODE_BASE(1) + 0x20, 0x11, 1);
    peach2_core_close_write(a.get());
    peach2_core_window_write(a.get(), PEACH2_NODE_BASE(1) + 0x24, 0x22, 1);
    peach2_core_close_write(a.get());
    EXPECT_FALSE(pump());
    uint32_t left = 9;
    uint64_t dropped = 0;
    peach2_core_link_fault_state(a.get(), PEACH2_PORT_E, &left, &dropped);
    EXPECT_EQ(left, 0u);
    EXPECT_EQ(dropped, 1u);
    EXPECT_EQ(errors(b.get(), PEACH2_ERR_BAD_PACKET), 1u);
    EXPECT_EQ(hb.mem[0x20], 0);  // lost
    EXPECT_EQ(hb.mem[0x24], 0);  // behind the gap: never delivered
    peach2_core_link_connected(a.get(), PEACH2_PORT_E, false);
    peach2_core_link_connected(b.get(), PEACH2_PORT_W, false);
    connect();
    EXPECT_TRUE(reg(b.get(), PEACH2_REG_LINK(PEACH2_PORT_W - 1)) & PEACH2_LINK_UP);
    peach2_core_window_write(a.get(), PEACH2_NODE_BASE(1) + 0x28, 0x33, 1);
    ASSERT_TRUE(pump());
    EXPECT_EQ(hb.mem[0x28], 0x33);
    EXPECT_EQ(hb.mem[0x20], 0);  // and nothing replayed
}

TEST_F(TwoCards, ForgedWritesAreRejected) {
    // A well-formed WRITE with the wrong sequence number.
    const uint8_t payload[4] = {9, 9, 9, 9};
    std::vector<uint8_t> bytes;
    add_packet(bytes, pkt_hdr(PEACH2_PKT_WRITE, 0, 1, 4, PEACH2_NODE_BASE(1) + 0x20, 999), payload);
    EXPECT_FALSE(peach2_core_link_receive(b.get(), PEACH2_PORT_W, bytes.data(), bytes.size()));
    EXPECT_EQ(hb.mem[0x20], 0);
    EXPECT_EQ(errors(b.get(), PEACH2_ERR_BAD_PACKET), 1u);
}

TEST_F(TwoCards, WriteBeforeHelloIsRejected) {
    peach2_core_link_connected(b.get(), PEACH2_PORT_W, false);
    peach2_core_link_connected(b.get(), PEACH2_PORT_W, true);  // fresh stream, no HELLO yet
    const uint8_t payload[4] = {9, 9, 9, 9};
    std::vector<uint8_t> bytes;
    add_packet(bytes, pkt_hdr(PEACH2_PKT_WRITE, 0, 1, 4, PEACH2_NODE_BASE(1) + 0x20, 0), payload);
    EXPECT_FALSE(peach2_core_link_receive(b.get(), PEACH2_PORT_W, bytes.data(), bytes.size()));
    EXPECT_EQ(hb.mem[0x20], 0);
}

TEST_F(TwoCards, MisconfiguredPeerKeepsTheLinkDown) {
    FakeHost hc;
    CorePtr c = make_core(hc, 1, 4);  // thinks the cluster has 4 nodes
    peach2_core_link_attach(c.get(), PEACH2_PORT_W);
    peach2_core_link_connected(a.get(), PEACH2_PORT_E, false);
    peach2_core_link_connected(a.get(), PEACH2_PORT_E, true);
    peach2_core_link_connected(c.get(), PEACH2_PORT_W, true);
    bool accepted = true;  // a misfit HELLO is not a corrupt stream: not checked here
    for (int i = 0; i < 3; ++i) {
        carry(a.get(), PEACH2_PORT_E, c.get(), PEACH2_PORT_W, accepted);
        carry(c.get(), PEACH2_PORT_W, a.get(), PEACH2_PORT_E, accepted);
    }
    EXPECT_FALSE(reg(a.get(), PEACH2_REG_LINK(PEACH2_PORT_E - 1)) & PEACH2_LINK_UP);
    EXPECT_FALSE(reg(c.get(), PEACH2_REG_LINK(PEACH2_PORT_W - 1)) & PEACH2_LINK_UP);
    EXPECT_EQ(errors(a.get(), PEACH2_ERR_BAD_PACKET), 1u);
    ASSERT_FALSE(ha.logs.empty());
}

TEST_F(TwoCards, PeerGoneMakesStoresFailVisibly) {
    peach2_core_link_connected(a.get(), PEACH2_PORT_E, false);
    EXPECT_FALSE(reg(a.get(), PEACH2_REG_LINK(PEACH2_PORT_E - 1)) & PEACH2_LINK_UP);
    peach2_core_window_write(a.get(), PEACH2_NODE_BASE(1), 1, 4);
    peach2_core_service(a.get());
    EXPECT_EQ(errors(a.get(), PEACH2_ERR_LINK_DOWN), 1u);
}

// One signal for "send now": the port's bit in tx_pending(), also what a
// store reports; queuing a packet never asks for the bottom half.
TEST_F(TwoCards, QueuedPacketsShowInTxPendingOnly) {
    const int services = ha.services;
    EXPECT_EQ(peach2_core_tx_pending(a.get()), 0u);
    EXPECT_EQ(peach2_core_window_write(a.get(), PEACH2_NODE_BASE(1), 1, 4), PEACH2_WINDOW_WC_OPEN);
    EXPECT_EQ(peach2_core_tx_pending(a.get()), 0u);  // still in the WC buffer
    EXPECT_EQ(peach2_core_window_write(a.get(), PEACH2_NODE_BASE(1) + 0x100, 2, 4),
              PEACH2_WINDOW_TX_PENDING | PEACH2_WINDOW_WC_OPEN);
    peach2_core_close_write(a.get());
    EXPECT_EQ(peach2_core_tx_pending(a.get()), 1u << PEACH2_PORT_E);
    EXPECT_EQ(ha.services, services);
    ASSERT_TRUE(pump());
    EXPECT_EQ(peach2_core_tx_pending(a.get()), 0u);
    EXPECT_EQ(hb.mem[0], 1);
    EXPECT_EQ(hb.mem[0x100], 2);
}

TEST_F(TwoCards, QueuedBytesLostOnDisconnectAreCounted) {
    peach2_core_window_write(a.get(), PEACH2_NODE_BASE(1), 1, 4);
    peach2_core_service(a.get());  // queued, not yet sent
    peach2_core_link_connected(a.get(), PEACH2_PORT_E, false);
    EXPECT_EQ(errors(a.get(), PEACH2_ERR_LINK_DOWN), 1u);
}

TEST(TwoCardsSmallQueue, OverflowDropsAndCounts) {
    FakeHost ha, hb;
    CorePtr a = make_core(ha, 0, 2, 1024);
    peach2_core_link_attach(a.get(), PEACH2_PORT_E);
    peach2_core_link_connected(a.get(), PEACH2_PORT_E, true);
    CorePtr b = make_core(hb, 1, 2);
    peach2_core_link_attach(b.get(), PEACH2_PORT_W);
    peach2_core_link_connected(b.get(), PEACH2_PORT_W, true);
    const void* buf = nullptr;
    size_t n = peach2_core_link_tx_peek(b.get(), PEACH2_PORT_W, &buf);
    peach2_core_link_receive(a.get(), PEACH2_PORT_E, buf, n);  // a learns its peer
    ASSERT_TRUE(reg(a.get(), PEACH2_REG_LINK(0)) & PEACH2_LINK_UP);
    std::vector<uint8_t> data(4096, 1);
    cpu_store(a.get(), PEACH2_NODE_BASE(1), data.data(), data.size());
    peach2_core_service(a.get());
    EXPECT_GT(reg(a.get(), PEACH2_REG_ERR_BY_CODE(PEACH2_ERR_TX_OVERFLOW)), 0u);
    EXPECT_LE(peach2_core_link_tx_peek(a.get(), PEACH2_PORT_E, &buf), 1024u);
}

}  // namespace
}  // namespace peach2::test
