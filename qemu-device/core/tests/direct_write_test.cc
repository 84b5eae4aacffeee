// Direct writes of the shared-memory transport: a write card A makes for its
// neighbour's host memory is handed to the host's direct_write (which the
// test carries out like the QEMU glue: B's inbound filter applied, B's
// counters told), and travels as a packet whenever order or a fault needs it.
#include <gtest/gtest.h>

#include <vector>

#include "cabled_pair.h"

namespace peach2::test {
namespace {

class DirectWrites : public CabledPair {
protected:
    std::vector<std::pair<uint64_t, size_t>> direct;  // (bus address, length) taken directly
    std::vector<std::pair<uint64_t, size_t>> copied;  // the DMA pieces among them
    std::vector<uint64_t> copied_pkts;                // the packets each stands for
    bool copies_on = true;  // the transport can read A's memory (QEMU: plain RAM)

    void SetUp() override {
        CabledPair::SetUp();
        peach2_core_link_shared_memory(a.get(), PEACH2_PORT_E, true);
        peach2_core_link_direct(a.get(), PEACH2_PORT_E, true);
        ha.direct = [this](unsigned port, uint64_t addr, const void* buf, size_t len) {
            return apply(port, addr, buf, len, 1);
        };
        ha.direct_copy = [this](unsigned port, uint64_t addr, uint64_t src, size_t len,
                                uint64_t pkts) {
            if (!copies_on || src > ha.mem.size() || ha.mem.size() - src < len)
                return false;
            if (!apply(port, addr, ha.mem.data() + src, len, pkts))
                return false;
            copied.emplace_back(addr, len);
            copied_pkts.push_back(pkts);
            return true;
        };
    }
    bool apply(unsigned port, uint64_t addr, const void* buf, size_t len, uint64_t pkts) {
        EXPECT_EQ(port, static_cast<unsigned>(PEACH2_PORT_E));
        if (!b_admits(addr, len))
            return false;  // B refuses it itself, counted there
        std::memcpy(hb.mem.data() + addr, buf, len);
        direct.emplace_back(addr, len);
        peach2_core_link_count_direct(b.get(), PEACH2_PORT_W, pkts, len);
        return true;
    }
    // What the glue does with B's published ranges.
    bool b_admits(uint64_t addr, uint64_t len) {
        uint64_t r[16][2];
        const size_t n = peach2_core_inbound_ranges(b.get(), r, 16);
        for (size_t i = 0; i < n; ++i)
            if (addr >= r[i][0] && addr + len <= r[i][1])
                return true;
        return false;
    }
    static uint64_t counter(peach2_core* c, uint64_t off) { return peach2_core_reg_read(c, off, 8); }
    // Register mode, channel 0: 8 KiB from A's host `src` (filled at
    // 0x10000) to node 1's `dst`; the channel's status at the end.
    uint32_t dma8k(uint64_t src = 0x10000, uint64_t dst = 0x20000) {
        for (size_t i = 0; i < 8192; ++i)
            ha.mem[0x10000 + i] = static_cast<uint8_t>(i * 7);
        const auto w = [&](uint32_t r, uint64_t v, unsigned size) {
            peach2_core_reg_write(a.get(), PEACH2_REG_DMA(0, r), v, size);
        };
        w(PEACH2_DMA_SRC_LO, src, 8);
        w(PEACH2_DMA_DST_LO, PEACH2_NODE_BASE(1) + dst, 8);
        w(PEACH2_DMA_LEN, 8192, 4);
        w(PEACH2_DMA_BLOCK, 0, 4);
        w(PEACH2_DMA_FLAGS, 0, 4);
        w(PEACH2_DMA_CTRL, PEACH2_DMA_CTRL_START_REG, 4);
        for (int i = 0; i < 64 && (reg(a.get(), PEACH2_REG_DMA(0, PEACH2_DMA_STATUS)) &
                                   PEACH2_DMA_ST_BUSY);
             ++i)
            peach2_core_service(a.get());
        return reg(a.get(), PEACH2_REG_DMA(0, PEACH2_DMA_STATUS));
    }
    size_t queued_on_e() {
        const void* buf = nullptr;
        return peach2_core_link_tx_peek(a.get(), PEACH2_PORT_E, &buf);
    }
};

TEST_F(DirectWrites, StoresLandAtTheFenceWithoutAPacketAndAreCountedOnBothSides) {
    const uint8_t data[24] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                              13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24};
    const uint64_t tx0 = counter(a.get(), PEACH2_REG_TX_PKTS(PEACH2_PORT_E));
    const uint64_t txb0 = counter(a.get(), PEACH2_REG_TX_BYTES(PEACH2_PORT_E));
    const uint64_t rx0 = counter(b.get(), PEACH2_REG_RX_PKTS(PEACH2_PORT_W));
    const uint64_t rxb0 = counter(b.get(), PEACH2_REG_RX_BYTES(PEACH2_PORT_W));
    cpu_store(a.get(), PEACH2_NODE_BASE(1) + 0x1000, data, sizeof(data));
    peach2_core_close_write(a.get());  // the CPU's fence
    ASSERT_EQ(direct.size(), 1u);
    EXPECT_EQ(direct[0], std::make_pair(uint64_t{0x1000}, sizeof(data)));
    EXPECT_EQ(0, std::memcmp(hb.mem.data() + 0x1000, data, sizeof(data)));
    EXPECT_EQ(queued_on_e(), 0u);
    EXPECT_TRUE(hb.writes.empty());  // not through B's DMA: B's core never saw a packet
    EXPECT_EQ(counter(a.get(), PEACH2_REG_TX_PKTS(PEACH2_PORT_E)), tx0 + 1);
    EXPECT_EQ(counter(a.get(), PEACH2_REG_TX_BYTES(PEACH2_PORT_E)), txb0 + sizeof(data));
    EXPECT_EQ(counter(b.get(), PEACH2_REG_RX_PKTS(PEACH2_PORT_W)), rx0 + 1);
    EXPECT_EQ(counter(b.get(), PEACH2_REG_RX_BYTES(PEACH2_PORT_W)), rxb0 + sizeof(data));
    EXPECT_EQ(counter(b.get(), PEACH2_REG_TX_BYTES(PEACH2_PORT_N)), sizeof(data));
    EXPECT_TRUE(reg(a.get(), PEACH2_REG_LINK(PEACH2_PORT_E - 1)) & PEACH2_LINK_DIRECT);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_ERR_COUNT), 0u);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_ERR_COUNT), 0u);
}

TEST_F(DirectWrites, AWriteOutsideThePeersRangesTravelsAndIsRefusedThere) {
    const uint8_t x = 7;
    cpu_store(a.get(), PEACH2_NODE_BASE(1) + (2 << 20), &x, 1);  // B registered 1 MiB
    peach2_core_close_write(a.get());
    EXPECT_TRUE(direct.empty());
    EXPECT_GT(queued_on_e(), 0u);
    ASSERT_TRUE(pump());
    EXPECT_EQ(errors(b.get(), PEACH2_ERR_NOT_REGISTERED), 1u);
}

TEST_F(DirectWrites, NothingOvertakesAPacketQueuedBeforeIt) {
    // A mailbox write travels as a packet; the host-memory store behind it
    // must not land first.
    const uint8_t m = 1, x = 2;
    cpu_store(a.get(), PEACH2_NODE_BASE(1) + PEACH2_CARD_OFF + PEACH2_CARD_MAILBOX_OFF, &m, 1);
    peach2_core_close_write(a.get());
    ASSERT_GT(queued_on_e(), 0u);
    cpu_store(a.get(), PEACH2_NODE_BASE(1) + 0x2000, &x, 1);
    peach2_core_close_write(a.get());
    EXPECT_TRUE(direct.empty());
    EXPECT_EQ(hb.mem[0x2000], 0);
    ASSERT_TRUE(pump());
    EXPECT_EQ(hb.mem[0x2000], 2);
    // Queue empty again: the next one goes directly.
    cpu_store(a.get(), PEACH2_NODE_BASE(1) + 0x3000, &x, 1);
    peach2_core_close_write(a.get());
    EXPECT_EQ(direct.size(), 1u);
}

TEST_F(DirectWrites, PacketsOwedToAFaultTravelAsPackets) {
    peach2_core_link_fault_drop(a.get(), PEACH2_PORT_E, 1);
    const uint8_t x = 3;
    cpu_store(a.get(), PEACH2_NODE_BASE(1) + 0x4000, &x, 1);
    peach2_core_close_write(a.get());
    EXPECT_TRUE(direct.empty());  // lost on the wire, as the fault says
    uint32_t left = 9;
    uint64_t dropped = 0;
    peach2_core_link_fault_state(a.get(), PEACH2_PORT_E, &left, &dropped);
    EXPECT_EQ(left, 0u);
    EXPECT_EQ(dropped, 1u);
}

TEST_F(DirectWrites, OffUntilSaidAndAfterTheConnectionCloses) {
    peach2_core_link_direct(a.get(), PEACH2_PORT_E, false);
    const uint8_t x = 4;
    cpu_store(a.get(), PEACH2_NODE_BASE(1) + 0x5000, &x, 1);
    peach2_core_close_write(a.get());
    EXPECT_TRUE(direct.empty());
    ASSERT_TRUE(pump());
    EXPECT_EQ(hb.mem[0x5000], 4);
    peach2_core_link_direct(a.get(), PEACH2_PORT_E, true);
    peach2_core_link_connected(a.get(), PEACH2_PORT_E, false);
    EXPECT_FALSE(reg(a.get(), PEACH2_REG_LINK(PEACH2_PORT_E - 1)) & PEACH2_LINK_DIRECT);
    peach2_core_link_direct(a.get(), PEACH2_PORT_E, true);  // not connected: ignored
    EXPECT_FALSE(reg(a.get(), PEACH2_REG_LINK(PEACH2_PORT_E - 1)) & PEACH2_LINK_DIRECT);
}

TEST_F(DirectWrites, DmaRunsAreCopiedStraightFromTheSourceAndCountedAsPackets) {
    const uint64_t tx0 = counter(a.get(), PEACH2_REG_TX_PKTS(PEACH2_PORT_E));
    const uint64_t rx0 = counter(b.get(), PEACH2_REG_RX_PKTS(PEACH2_PORT_W));
    EXPECT_EQ(dma8k() & PEACH2_DMA_ST_DONE,
              static_cast<uint32_t>(PEACH2_DMA_ST_DONE));
    EXPECT_EQ(0, std::memcmp(hb.mem.data() + 0x20000, ha.mem.data() + 0x10000, 8192));
    // One copy from A's memory for the whole run, counted on both sides as
    // the two packets the socket path would send.
    ASSERT_EQ(copied.size(), 1u);
    EXPECT_EQ(copied[0], std::make_pair(uint64_t{0x20000}, size_t{8192}));
    EXPECT_EQ(copied_pkts[0], 2u);
    EXPECT_EQ(counter(a.get(), PEACH2_REG_TX_PKTS(PEACH2_PORT_E)) - tx0, 2u);
    EXPECT_EQ(counter(b.get(), PEACH2_REG_RX_PKTS(PEACH2_PORT_W)) - rx0, 2u);
    EXPECT_EQ(queued_on_e(), 0u);
    // Off a page boundary the same 8 KiB touch three pages: three packets.
    EXPECT_EQ(dma8k(0x10000, 0x30800) & PEACH2_DMA_ST_DONE,
              static_cast<uint32_t>(PEACH2_DMA_ST_DONE));
    EXPECT_EQ(0, std::memcmp(hb.mem.data() + 0x30800, ha.mem.data() + 0x10000, 8192));
    ASSERT_EQ(copied.size(), 2u);
    EXPECT_EQ(copied_pkts[1], 3u);
    EXPECT_EQ(counter(a.get(), PEACH2_REG_TX_PKTS(PEACH2_PORT_E)) - tx0, 5u);
    EXPECT_EQ(counter(b.get(), PEACH2_REG_RX_PKTS(PEACH2_PORT_W)) - rx0, 5u);
}

// A run is cut where a slice's budget ends, on a page boundary: the pages
// are counted as on the socket path, however the slices fall.
TEST_F(DirectWrites, SlicesEndOnPagesSoRunsCountAsThePacketPath) {
    const auto run = [&](bool direct) {
        peach2_core_link_direct(a.get(), PEACH2_PORT_E, direct);
        const uint64_t tx0 = counter(a.get(), PEACH2_REG_TX_PKTS(PEACH2_PORT_E));
        const uint64_t rx0 = counter(b.get(), PEACH2_REG_RX_PKTS(PEACH2_PORT_W));
        const auto w = [&](uint32_t r, uint64_t v, unsigned size) {
            peach2_core_reg_write(a.get(), PEACH2_REG_DMA(0, r), v, size);
        };
        w(PEACH2_DMA_SRC_LO, 0x10800, 8);  // 128 KiB, both ends 2 KiB into a page
        w(PEACH2_DMA_DST_LO, PEACH2_NODE_BASE(1) + 0x40800, 8);
        w(PEACH2_DMA_LEN, 128 << 10, 4);
        w(PEACH2_DMA_BLOCK, 0, 4);
        w(PEACH2_DMA_FLAGS, 0, 4);
        w(PEACH2_DMA_CTRL, PEACH2_DMA_CTRL_START_REG, 4);
        for (int i = 0; i < 64 && (reg(a.get(), PEACH2_REG_DMA(0, PEACH2_DMA_STATUS)) &
                                   PEACH2_DMA_ST_BUSY);
             ++i) {
            peach2_core_service_bounded(a.get(), 48 << 10);  // slices end mid-page
            EXPECT_TRUE(pump());
        }
        EXPECT_EQ(reg(a.get(), PEACH2_REG_DMA(0, PEACH2_DMA_STATUS)) & PEACH2_DMA_ST_DONE,
                  static_cast<uint32_t>(PEACH2_DMA_ST_DONE));
        EXPECT_EQ(0, std::memcmp(hb.mem.data() + 0x40800, ha.mem.data() + 0x10800, 128 << 10));
        return std::make_pair(counter(a.get(), PEACH2_REG_TX_PKTS(PEACH2_PORT_E)) - tx0,
                              counter(b.get(), PEACH2_REG_RX_PKTS(PEACH2_PORT_W)) - rx0);
    };
    for (size_t i = 0; i < (128 << 10); ++i)
        ha.mem[0x10800 + i] = static_cast<uint8_t>(i * 13 + 1);
    const auto packets = run(false);
    EXPECT_TRUE(copied.empty());
    EXPECT_EQ(packets, std::make_pair(uint64_t{33}, uint64_t{33}));  // 33 pages touched
    std::memset(hb.mem.data() + 0x40800, 0, 128 << 10);
    EXPECT_EQ(run(true), packets);
    EXPECT_GE(copied.size(), 2u);  // a bounded slice, then the rest (pump's service)
    EXPECT_LT(copied.size(), 33u);
}

TEST_F(DirectWrites, ADmaRunPastThePeersRangeGoesDirectOnlyWhereAdmitted) {
    // B admits [0x20000, 0x21000) only: the run's first page lands
    // directly, the second travels as a packet and B refuses it.
    peach2_core_reg_write(b.get(), PEACH2_REG_IN_CMD, PEACH2_IN_CMD_CLEAR, 4);
    ASSERT_EQ(allow(b.get(), 0x20000, 0x1000), 0u);
    std::memset(hb.mem.data() + 0x21000, 0xee, 4096);
    EXPECT_EQ(dma8k() & PEACH2_DMA_ST_DONE, static_cast<uint32_t>(PEACH2_DMA_ST_DONE));
    ASSERT_EQ(copied.size(), 1u);
    EXPECT_EQ(copied[0], std::make_pair(uint64_t{0x20000}, size_t{4096}));
    EXPECT_EQ(copied_pkts[0], 1u);
    EXPECT_EQ(0, std::memcmp(hb.mem.data() + 0x20000, ha.mem.data() + 0x10000, 4096));
    ASSERT_TRUE(pump());
    EXPECT_EQ(errors(b.get(), PEACH2_ERR_NOT_REGISTERED), 1u);
    for (size_t i = 0; i < 4096; ++i)
        ASSERT_EQ(hb.mem[0x21000 + i], 0xee) << i;
}

TEST_F(DirectWrites, ADmaSourceTheTransportCannotReadGoesTheUsualWay) {
    copies_on = false;  // e.g. not plain RAM: the card reads it itself
    EXPECT_EQ(dma8k() & PEACH2_DMA_ST_DONE,
              static_cast<uint32_t>(PEACH2_DMA_ST_DONE));
    EXPECT_EQ(0, std::memcmp(hb.mem.data() + 0x20000, ha.mem.data() + 0x10000, 8192));
    EXPECT_TRUE(copied.empty());
    EXPECT_EQ(direct.size(), 2u);  // still direct writes, from a read buffer
}

TEST_F(DirectWrites, ADmaSourceNobodyCanReadFailsAndWritesNothing) {
    const uint64_t bad = ha.mem.size() - 4096;  // the second piece is past A's memory
    std::memset(ha.mem.data() + bad, 0x5a, 4096);
    std::memset(hb.mem.data() + 0x20000, 0xee, 8192);
    const uint32_t st = dma8k(bad);
    EXPECT_EQ(st & PEACH2_DMA_ST_ERROR, static_cast<uint32_t>(PEACH2_DMA_ST_ERROR));
    EXPECT_EQ((st >> PEACH2_DMA_ST_CODE_SHIFT) & 0xff, static_cast<uint32_t>(PEACH2_ERR_DMA_READ));
    EXPECT_EQ(copied.size(), 1u);  // the first piece was readable and went
    for (size_t i = 0; i < 4096; ++i)
        ASSERT_EQ(hb.mem[0x20000 + i], 0x5a) << i;
    for (size_t i = 4096; i < 8192; ++i)
        ASSERT_EQ(hb.mem[0x20000 + i], 0xee) << i;
}

TEST(InboundFilterPublish, GenerationChangesWithEveryEditAndRangesComeInOrder) {
    FakeHost h;
    CorePtr c = make_core(h, 0, 2);
    const uint64_t g0 = peach2_core_inbound_generation(c.get());
    ASSERT_EQ(allow(c.get(), 0x3000, 0x1000), 0u);
    const uint64_t g1 = peach2_core_inbound_generation(c.get());
    EXPECT_NE(g1, g0);
    ASSERT_EQ(allow(c.get(), 0x1000, 0x800), 0u);
    uint64_t r[4][2];
    ASSERT_EQ(peach2_core_inbound_ranges(c.get(), r, 4), 2u);
    EXPECT_EQ(r[0][0], 0x1000u);
    EXPECT_EQ(r[0][1], 0x1800u);
    EXPECT_EQ(r[1][0], 0x3000u);
    EXPECT_EQ(r[1][1], 0x4000u);
    EXPECT_EQ(peach2_core_inbound_ranges(c.get(), r, 1), 1u);
    const uint64_t g2 = peach2_core_inbound_generation(c.get());
    peach2_core_reg_write(c.get(), PEACH2_REG_IN_CTRL, 0, 4);
    EXPECT_FALSE(peach2_core_inbound_enabled(c.get()));
    EXPECT_NE(peach2_core_inbound_generation(c.get()), g2);
    const uint64_t g3 = peach2_core_inbound_generation(c.get());
    peach2_core_reset(c.get());
    EXPECT_TRUE(peach2_core_inbound_enabled(c.get()));
    EXPECT_NE(peach2_core_inbound_generation(c.get()), g3);
    EXPECT_EQ(peach2_core_inbound_ranges(c.get(), r, 4), 0u);
}

}  // namespace
}  // namespace peach2::test
