#include <gtest/gtest.h>

#include "fw_image.h"
#include "topology.h"

namespace peach2::fw {
namespace {

std::vector<uint8_t> ring4() {
    std::string err;
    auto t = parse_topology("ring:4", &err);
    EXPECT_TRUE(t) << err;
    auto img = build_image(*t, 7, &err);
    EXPECT_TRUE(img) << err;
    return encode(*img);
}

TEST(Image, RoundTrip) {
    const auto bytes = ring4();
    const auto r = parse_for_node(bytes, 2, 4);
    ASSERT_EQ(r.status, PEACH2_FW_OK) << r.why;
    EXPECT_EQ(r.image.node_count, 4u);
    EXPECT_EQ(r.image.image_version, 7u);
    EXPECT_EQ(r.image.topology, "ring:4");
    EXPECT_FALSE(r.image.entries.empty());
    EXPECT_EQ(encode(r.image), bytes);
}

TEST(Image, EveryFlippedByteIsRefused) {
    const auto good = ring4();
    for (size_t i = 0; i < good.size(); ++i) {
        auto bad = good;
        bad[i] ^= 0x40;
        const auto r = parse(bad);
        EXPECT_NE(r.status, PEACH2_FW_OK) << "byte " << i;
        EXPECT_FALSE(r.why.empty());
    }
}

TEST(Image, SpecificRefusals) {
    const auto good = ring4();
    EXPECT_EQ(parse(std::span(good).first(10)).status, PEACH2_FW_TRUNCATED);
    EXPECT_EQ(parse(std::span(good).first(good.size() - 32)).status, PEACH2_FW_TRUNCATED);
    auto v = good;
    v[4] = 9;  // format version
    EXPECT_EQ(parse(v).status, PEACH2_FW_BAD_VERSION);
    auto m = good;
    m[0] = 0;
    EXPECT_EQ(parse(m).status, PEACH2_FW_BAD_MAGIC);
    auto c = good;
    c[good.size() - 1] ^= 1;  // entry data, CRC not updated
    EXPECT_EQ(parse(c).status, PEACH2_FW_BAD_CRC);
    EXPECT_EQ(parse_for_node(good, 0, 8).status, PEACH2_FW_WRONG_TOPOLOGY);
    EXPECT_EQ(parse({}).status, PEACH2_FW_TRUNCATED);
}

TEST(Image, BadEntriesAreRefusedEvenWithAGoodCrc) {
    Image img;
    img.node_count = 2;
    img.topology = "2";
    const uint64_t mask = (PEACH2_WINDOW_SIZE - 1) & ~(PEACH2_SLICE_SIZE - 1);
    img.entries = {
        {0, PEACH2_PORT_E, 0, PEACH2_ROUTE_VALID, mask, PEACH2_NODE_BASE(1), PEACH2_NODE_BASE(1)}};
    ASSERT_EQ(parse(encode(img)).status, PEACH2_FW_OK);
    auto bad = img;
    bad.entries[0].port = 7;
    EXPECT_EQ(parse(encode(bad)).status, PEACH2_FW_BAD_ENTRY);
    bad = img;
    bad.entries[0].index = PEACH2_ROUTE_ENTRIES;
    EXPECT_EQ(parse(encode(bad)).status, PEACH2_FW_BAD_ENTRY);
    bad = img;
    bad.entries[0].base = PEACH2_NODE_BASE(1) + 1;  // outside the mask
    EXPECT_EQ(parse(encode(bad)).status, PEACH2_FW_BAD_ENTRY);
    bad = img;
    bad.entries.push_back(bad.entries[0]);  // duplicate
    EXPECT_EQ(parse(encode(bad)).status, PEACH2_FW_BAD_ENTRY);
    bad = img;
    bad.entries[0].node = 5;
    EXPECT_EQ(parse(encode(bad)).status, PEACH2_FW_BAD_ENTRY);
    EXPECT_EQ(parse_for_node(encode(img), 1, 2).status, PEACH2_FW_NO_ENTRIES);
}

}  // namespace
}  // namespace peach2::fw
