#include "topology.h"

#include <gtest/gtest.h>

namespace peach2::fw {
namespace {

Topology topo(const std::string& spec) {
    std::string err;
    auto t = parse_topology(spec, &err);
    EXPECT_TRUE(t) << spec << ": " << err;
    return t ? *t : Topology{};
}

TEST(Topology, ParsesTheStandardShapes) {
    EXPECT_EQ(topo("2").nodes, 2u);
    EXPECT_EQ(topo("2").cables.size(), 1u);
    EXPECT_EQ(topo("ring:8").cables.size(), 8u);
    const auto d = topo("double-ring:8");
    EXPECT_EQ(d.nodes, 16u);
    EXPECT_EQ(d.cables.size(), 24u);
    EXPECT_EQ(topo("cables:3:0E-1W,1E-2W").cables.size(), 2u);
}

TEST(Topology, RefusesNonsenseWithAReason) {
    for (const char* bad : {"ring:1", "ring:17", "double-ring:9", "torus:4", "cables:3:0E-0W",
                            "cables:2:0E-1W,0E-1S", "cables:3:0X-1W", "ring:x", ""}) {
        std::string err;
        EXPECT_FALSE(parse_topology(bad, &err)) << bad;
        EXPECT_FALSE(err.empty()) << bad;
    }
}

TEST(Topology, RingRoutesTakeTheShortWay) {
    const auto t = topo("ring:8");
    const auto h = hop_matrix(t);
    EXPECT_EQ(h[0][4], 4);
    EXPECT_EQ(h[0][7], 1);
    EXPECT_EQ(first_hop_port(t, h, 0, 1), PEACH2_PORT_E);
    EXPECT_EQ(first_hop_port(t, h, 0, 7), PEACH2_PORT_W);
    EXPECT_EQ(first_hop_port(t, h, 0, 4), PEACH2_PORT_E);  // tie: E
    std::string err;
    const auto r = routes(t, &err);
    ASSERT_TRUE(r) << err;
}

TEST(Topology, DoubleRingNeedsAtMostTwoRangesPerPortAndFiveHops) {
    const auto t = topo("double-ring:8");
    std::string err;
    const auto r = routes(t, &err);
    ASSERT_TRUE(r) << err;
    const auto h = hop_matrix(t);
    int worst = 0;
    for (uint32_t a = 0; a < 16; ++a)
        for (uint32_t b = 0; b < 16; ++b)
            worst = std::max(worst, h[a][b]);
    EXPECT_EQ(worst, 5);  // S plus half a ring of 8
    for (const auto& e : *r)
        EXPECT_LT(e.index, PEACH2_ROUTE_ENTRIES);
}

TEST(Topology, UnreachableNodesAreAnError) {
    std::string err;
    const auto t = parse_topology("cables:4:0E-1W,2E-3W", &err);
    ASSERT_TRUE(t) << err;
    EXPECT_FALSE(routes(*t, &err));
    EXPECT_NE(err.find("cannot be reached"), std::string::npos);
}

}  // namespace
}  // namespace peach2::fw
