// Flow control per output port (docs/hardware.md §6, "Flow control"): a
// link whose peer stops reading pauses only the DMA runs whose next write
// leaves by that link. Issue 14, hole 1: one backlogged link used to stop
// every channel of the card (local copies, other ports, the read proxy's),
// and closing the stuck link did not resume them.
#include <gtest/gtest.h>

#include <cstring>

#include "three_in_a_line.h"

namespace peach2::test {
namespace {

// Node 0 in the middle: its E port backs up (node 1 never reads unless a
// test carries E), its W port to node 2 stays healthy.
class Backpressure : public ThreeInALine {
protected:
    uint32_t status(unsigned ch) { return reg(n0.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_STATUS)); }
    bool busy(unsigned ch) { return status(ch) & PEACH2_DMA_ST_BUSY; }
    uint32_t code(unsigned ch) { return (status(ch) >> PEACH2_DMA_ST_CODE_SHIFT) & 0xff; }
    void start(unsigned ch, uint64_t src, uint64_t dst, uint32_t len) {
        peach2_core* c = n0.get();
        peach2_core_reg_write(c, PEACH2_REG_DMA(ch, PEACH2_DMA_SRC_LO), src, 8);
        peach2_core_reg_write(c, PEACH2_REG_DMA(ch, PEACH2_DMA_DST_LO), dst, 8);
        peach2_core_reg_write(c, PEACH2_REG_DMA(ch, PEACH2_DMA_LEN), len, 4);
        peach2_core_reg_write(c, PEACH2_REG_DMA(ch, PEACH2_DMA_CTRL), PEACH2_DMA_CTRL_START_REG, 4);
    }
    // Service node 0 (and carry W, never E) until `ch` stops or `runs` pass.
    void run_until_done(unsigned ch, int runs = 1000) {
        for (int i = 0; i < runs && busy(ch); ++i) {
            peach2_core_service(n0.get());
            carry_w();
        }
    }
    // Back up E: a 12 MiB DMA to node 1 on channel 0, nobody reading E.
    void back_up_e() {
        start(0, 0x100000, PEACH2_NODE_BASE(1) + 0x100000, 12 << 20);
        for (int i = 0; i < 50; ++i)
            peach2_core_service(n0.get());
        ASSERT_TRUE(busy(0));  // paused, not failed
        ASSERT_GT(queued(PEACH2_PORT_E), size_t{4} << 20);
    }
};

TEST_F(Backpressure, StuckLinkPausesOnlyTheRunThatGoesOutOfIt) {
    back_up_e();
    const uint64_t e_bytes = reg(n0.get(), PEACH2_REG_DMA(0, PEACH2_DMA_BYTES_LO));
    // A purely local 1 MiB copy on channel 1.
    start(1, 0x200000, 0xa00000, 1 << 20);
    // 256 KiB to the healthy neighbour on channel 2.
    start(2, 0x300000, PEACH2_NODE_BASE(2) + 0x100000, 256 << 10);
    // The read proxy's channel answers node 2.
    start(PEACH2_DMA_PROXY_CHANNEL, 0x400000, PEACH2_NODE_BASE(2) + 0x200000, 4096);
    run_until_done(1);
    run_until_done(2);
    run_until_done(PEACH2_DMA_PROXY_CHANNEL);
    EXPECT_EQ(status(1), PEACH2_DMA_ST_DONE);
    EXPECT_EQ(status(2), PEACH2_DMA_ST_DONE);
    EXPECT_EQ(status(PEACH2_DMA_PROXY_CHANNEL), PEACH2_DMA_ST_DONE);
    EXPECT_EQ(0, std::memcmp(h0.mem.data() + 0x200000, h0.mem.data() + 0xa00000, 1 << 20));
    EXPECT_EQ(0, std::memcmp(h0.mem.data() + 0x300000, h2.mem.data() + 0x100000, 256 << 10));
    EXPECT_EQ(0, std::memcmp(h0.mem.data() + 0x400000, h2.mem.data() + 0x200000, 4096));
    EXPECT_TRUE(accepted);
    // Channel 0 still waits for E, without moving or failing, and without
    // asking to be run again and again.
    EXPECT_TRUE(busy(0));
    EXPECT_EQ(reg(n0.get(), PEACH2_REG_DMA(0, PEACH2_DMA_BYTES_LO)), e_bytes);
    const int defers = h0.defers, services = h0.services;
    peach2_core_service(n0.get());
    EXPECT_EQ(h0.defers, defers);
    EXPECT_EQ(h0.services, services);
    EXPECT_EQ(reg(n0.get(), PEACH2_REG_ERR_COUNT), 0u);
}

TEST_F(Backpressure, DrainingTheLinkResumesTheWaitingRun) {
    back_up_e();
    const int services = h0.services;
    carry_e();                         // the peer reads again: E empties
    EXPECT_GT(h0.services, services);  // the waiting channel is kicked
    while (busy(0)) {
        peach2_core_service(n0.get());
        carry_e();
    }
    EXPECT_TRUE(accepted);
    EXPECT_EQ(status(0), PEACH2_DMA_ST_DONE);
    EXPECT_EQ(0, std::memcmp(h0.mem.data() + 0x100000, h1.mem.data() + 0x100000, 12 << 20));
}

TEST_F(Backpressure, ClosingTheStuckLinkKicksTheWaitingRunWhichEndsWithLinkDown) {
    back_up_e();
    const int services = h0.services;
    peach2_core_link_connected(n0.get(), PEACH2_PORT_E, false);  // queue cleared
    EXPECT_EQ(queued(PEACH2_PORT_E), 0u);
    EXPECT_GT(h0.services, services);  // kicked, not left waiting for ever
    run_until_done(0, 10);
    EXPECT_FALSE(busy(0));
    EXPECT_EQ(code(0), static_cast<uint32_t>(PEACH2_ERR_LINK_DOWN));
    // A local copy still works afterwards.
    start(1, 0x200000, 0xa00000, 64 << 10);
    run_until_done(1);
    EXPECT_EQ(status(1), PEACH2_DMA_ST_DONE);
}

TEST_F(Backpressure, ReconnectingTheStuckLinkAlsoKicksTheWaitingRun) {
    back_up_e();
    const int services = h0.services;
    // The transport reconnects without a close first (a new stream).
    peach2_core_link_connected(n0.get(), PEACH2_PORT_E, true);
    EXPECT_GT(h0.services, services);
    run_until_done(0, 10);
    EXPECT_FALSE(busy(0));
}

}  // namespace
}  // namespace peach2::test
