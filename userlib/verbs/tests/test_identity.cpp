// SPDX-License-Identifier: MIT
#include <endian.h>
#include <gtest/gtest.h>

#include "identity.hpp"

using namespace pv;

TEST(Identity, LidIsNodePlusOne) {
    EXPECT_EQ(node_lid(0), 1);
    EXPECT_EQ(node_lid(15), 16);
}

TEST(Identity, GidIsLinkLocalGuid) {
    const ibv_gid g = node_gid(3, 0);
    EXPECT_EQ(be64toh(g.global.subnet_prefix), 0xfe80000000000000ull);
    EXPECT_EQ(be64toh(g.global.interface_id), node_guid(3));
}

TEST(Identity, NodeFromGidWinsOverLid) {
    std::uint32_t n = 99;
    ASSERT_TRUE(node_of(1, true, node_gid(2), 4, &n));
    EXPECT_EQ(n, 2u);
    ASSERT_TRUE(node_of(2, false, ibv_gid{}, 4, &n));
    EXPECT_EQ(n, 1u);
}

TEST(Identity, RefusesNodesOutsideTheCluster) {
    std::uint32_t n = 0;
    EXPECT_FALSE(node_of(0, false, ibv_gid{}, 4, &n));   // LID 0
    EXPECT_FALSE(node_of(5, false, ibv_gid{}, 4, &n));   // node 4 of 4
    EXPECT_FALSE(node_of(0, true, node_gid(7), 4, &n));  // GID of node 7
    ibv_gid foreign{};
    foreign.global.interface_id = htobe64(0x0002c90300001234ull);
    EXPECT_FALSE(node_of(0, true, foreign, 4, &n));  // not ours, no LID
    ASSERT_TRUE(node_of(1, true, foreign, 4, &n));   // falls back to the LID
    EXPECT_EQ(n, 0u);
}
