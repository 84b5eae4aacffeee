#include "address_map.h"

#include <gtest/gtest.h>

namespace peach2 {
namespace {

TEST(AddressMap, HostRegionGivesBusAddress) {
    const auto d = decode_global(PEACH2_NODE_BASE(5) + 0x123456, 8);
    EXPECT_EQ(d.node, 5u);
    EXPECT_EQ(d.region, Region::Host);
    EXPECT_EQ(d.offset, 0x123456u);
    const auto last = decode_global(PEACH2_NODE_BASE(1) + PEACH2_HOST_SIZE - 4, 4);
    EXPECT_EQ(last.region, Region::Host);
}

TEST(AddressMap, WriteMayNotStraddleRegions) {
    EXPECT_EQ(decode_global(PEACH2_NODE_BASE(1) + PEACH2_HOST_SIZE - 4, 8).region,
              Region::Unmapped);
}

TEST(AddressMap, CardMailboxAndGpu) {
    const auto mb = decode_global(PEACH2_NODE_BASE(2) + PEACH2_CARD_OFF + 0x40, 8);
    EXPECT_EQ(mb.region, Region::Mailbox);
    EXPECT_EQ(mb.offset, 0x40u);
    EXPECT_EQ(decode_global(PEACH2_NODE_BASE(2) + PEACH2_CARD_OFF + PEACH2_MAILBOX_SIZE, 8).region,
              Region::CardReserved);
    EXPECT_EQ(decode_global(PEACH2_NODE_BASE(2) + PEACH2_GPU_OFF, 8).region, Region::Gpu);
    EXPECT_EQ(decode_global(PEACH2_NODE_BASE(2) + PEACH2_CARD_OFF + PEACH2_CARD_SIZE, 8).region,
              Region::Unmapped);
}

TEST(AddressMap, LastSliceOfWindow) {
    const auto d = decode_global(PEACH2_WINDOW_SIZE - PEACH2_SLICE_SIZE, 4);
    EXPECT_EQ(d.node, PEACH2_MAX_NODES - 1);
    EXPECT_EQ(d.region, Region::Host);
}

}  // namespace
}  // namespace peach2
