// Many cards in one process, cabled like a cluster, routing from firmware.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "fake_host.h"
#include "fw_image.h"
#include "topology.h"
#include "trace_reader.h"

namespace peach2::test {
namespace {

constexpr uint64_t kImageAt = 0x80000;  // where the driver would put the image
constexpr uint64_t kBufAt = 0x10000;    // a registered buffer on every node

struct Fabric {
    fw::Topology topo;
    std::vector<std::unique_ptr<FakeHost>> hosts;
    std::vector<CorePtr> cores;

    explicit Fabric(const std::string& spec) {
        std::string err;
        topo = *fw::parse_topology(spec, &err);
        for (uint32_t i = 0; i < topo.nodes; ++i) {
            hosts.push_back(std::make_unique<FakeHost>());
            cores.push_back(make_core(*hosts.back(), i, topo.nodes));
            EXPECT_EQ(allow(cores.back().get(), kBufAt, 0x1000), 0u);
        }
        for (const auto& c : topo.cables) {
            peach2_core_link_attach(core(c.node_a), c.port_a);
            peach2_core_link_attach(core(c.node_b), c.port_b);
        }
        connect_all();
    }
    peach2_core* core(uint32_t i) { return cores[i].get(); }
    void connect_all() {
        for (const auto& c : topo.cables) {
            peach2_core_link_connected(core(c.node_a), c.port_a, true);
            peach2_core_link_connected(core(c.node_b), c.port_b, true);
        }
        pump();
    }
    // Move bytes over every cable until nothing moves.
    void pump() {
        for (bool moved = true; moved;) {
            moved = false;
            for (auto& c : cores)
                peach2_core_service(c.get());
            for (const auto& c : topo.cables) {
                moved |= move(c.node_a, c.port_a, c.node_b, c.port_b);
                moved |= move(c.node_b, c.port_b, c.node_a, c.port_a);
            }
        }
    }
    bool move(uint32_t a, uint32_t pa, uint32_t b, uint32_t pb) {
        bool accepted = true;
        const bool moved = carry(core(a), pa, core(b), pb, accepted) > 0;
        EXPECT_TRUE(accepted);
        return moved;
    }
    // The driver's part: put the image in host memory, point the card at it.
    uint32_t load(uint32_t node, const std::vector<uint8_t>& image) {
        std::copy(image.begin(), image.end(), hosts[node]->mem.begin() + kImageAt);
        peach2_core_reg_write(core(node), PEACH2_REG_FW_ADDR_LO, kImageAt, 8);
        peach2_core_reg_write(core(node), PEACH2_REG_FW_LEN, image.size(), 4);
        peach2_core_reg_write(core(node), PEACH2_REG_FW_CMD, PEACH2_FW_CMD_LOAD, 4);
        EXPECT_EQ(reg(core(node), PEACH2_REG_FW_STATUS), static_cast<uint32_t>(PEACH2_FW_LOADING));
        peach2_core_service(core(node));
        return reg(core(node), PEACH2_REG_FW_STATUS);
    }
    std::vector<uint8_t> image(uint32_t version = 3) {
        std::string err;
        return fw::encode(*fw::build_image(topo, version, &err));
    }
    uint64_t link_tx_pkts() {
        uint64_t n = 0;
        for (auto& c : cores)
            for (unsigned p = PEACH2_PORT_E; p <= PEACH2_PORT_S; ++p)
                n += peach2_core_reg_read(c.get(), PEACH2_REG_TX_PKTS(p), 8);
        return n;
    }
    uint32_t errors() {
        uint32_t n = 0;
        for (auto& c : cores)
            n += reg(c.get(), PEACH2_REG_ERR_COUNT);
        return n;
    }
};

TEST(Routing, FirmwareIsAppliedAndVisible) {
    Fabric f("ring:4");
    const auto img = f.image(42);
    ASSERT_EQ(f.load(2, img), static_cast<uint32_t>(PEACH2_FW_OK));
    EXPECT_EQ(reg(f.core(2), PEACH2_REG_FW_VERSION), 42u);
    EXPECT_EQ(reg(f.core(2), PEACH2_REG_ROUTE_CTRL), PEACH2_ROUTE_ENABLE);
    EXPECT_GE(reg(f.core(2), PEACH2_REG_FW_ENTRIES), 3u);  // N, E, W at least
    char topo[33] = {};
    for (int i = 0; i < 8; ++i) {
        const uint32_t w = reg(f.core(2), PEACH2_REG_FW_TOPOLOGY + 4 * i);
        std::memcpy(topo + 4 * i, &w, 4);
    }
    EXPECT_STREQ(topo, "ring:4");
    // The table is readable register by register, as the tools expect.
    EXPECT_EQ(peach2_core_reg_read(f.core(2),
                                   PEACH2_REG_ROUTE(PEACH2_PORT_N, 0, PEACH2_ROUTE_BASE_LO), 8),
              PEACH2_NODE_BASE(2));
}

void all_pairs(Fabric& f, int max_hops) {
    const auto img = f.image();
    for (uint32_t i = 0; i < f.topo.nodes; ++i)
        ASSERT_EQ(f.load(i, img), static_cast<uint32_t>(PEACH2_FW_OK)) << "node " << i;
    const auto hops = fw::hop_matrix(f.topo);
    int pairs = 0, worst = 0;
    for (uint32_t a = 0; a < f.topo.nodes; ++a) {
        for (uint32_t b = 0; b < f.topo.nodes; ++b) {
            if (a == b)
                continue;
            const uint64_t value = 0x1000000ull * a + b + 1;
            const uint64_t before = f.link_tx_pkts();
            peach2_core_window_write(f.core(a), PEACH2_NODE_BASE(b) + kBufAt + 8 * a, value, 8);
            f.pump();
            uint64_t got = 0;
            std::memcpy(&got, f.hosts[b]->mem.data() + kBufAt + 8 * a, 8);
            ASSERT_EQ(got, value) << a << " -> " << b;
            // One link packet per cable crossed: the cards forwarded it.
            EXPECT_EQ(f.link_tx_pkts() - before, static_cast<uint64_t>(hops[a][b]))
                << a << " -> " << b;
            worst = std::max(worst, hops[a][b]);
            ++pairs;
        }
    }
    EXPECT_EQ(pairs, static_cast<int>(f.topo.nodes * (f.topo.nodes - 1)));
    EXPECT_EQ(worst, max_hops);
    EXPECT_EQ(f.errors(), 0u);
}

TEST(Routing, Ring8EveryPairThroughTheShortWay) {
    Fabric f("ring:8");
    all_pairs(f, 4);
}

TEST(Routing, DoubleRing16All240PairsWithBoundedHops) {
    Fabric f("double-ring:8");
    all_pairs(f, 5);
}

TEST(Routing, ForwardingCardsCountTheTraffic) {
    Fabric f("ring:4");
    const auto img = f.image();
    for (uint32_t i = 0; i < 4; ++i)
        ASSERT_EQ(f.load(i, img), static_cast<uint32_t>(PEACH2_FW_OK));
    peach2_core_window_write(f.core(0), PEACH2_NODE_BASE(2) + kBufAt, 7, 8);
    f.pump();
    // 0 -> 1 -> 2 (tie at distance 2 goes E): node 1 received on W, sent on E.
    EXPECT_EQ(peach2_core_reg_read(f.core(1), PEACH2_REG_RX_PKTS(PEACH2_PORT_W), 8),
              2u);  // HELLO + data
    EXPECT_EQ(peach2_core_reg_read(f.core(1), PEACH2_REG_TX_PKTS(PEACH2_PORT_E), 8),
              2u);  // HELLO + data
    EXPECT_EQ(f.hosts[2]->mem[kBufAt], 7);
}

// The trace of a forwarded packet: sent on 0, forwarded on 1 (W in, E out),
// received on 2, all under the number node 0 gave it.
TEST(Routing, ForwardedPacketsKeepTheirNumberInEveryCardsTrace) {
    Fabric f("ring:4");
    const auto img = f.image();
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("peach2-fwd-trace-" + std::to_string(getpid())))
            .string();
    std::filesystem::create_directories(dir);
    for (uint32_t i = 0; i < 4; ++i) {
        ASSERT_EQ(f.load(i, img), static_cast<uint32_t>(PEACH2_FW_OK));
        const std::string path = dir + "/" + trace::file_name(i);
        ASSERT_TRUE(peach2_core_trace_open(f.core(i), path.c_str(), 0, nullptr, 0));
    }
    peach2_core_window_write(f.core(0), PEACH2_NODE_BASE(2) + kBufAt, 7, 8);
    peach2_core_close_write(f.core(0));
    peach2_core_window_write(f.core(0), PEACH2_NODE_BASE(2) + kBufAt + 0x100, 8, 8);
    f.pump();
    std::vector<trace::TraceFile> t;
    for (uint32_t i = 0; i < 4; ++i) {
        peach2_core_trace_close(f.core(i));
        std::string err;
        auto file = trace::read_file(dir + "/" + trace::file_name(i), {}, &err);
        ASSERT_TRUE(file) << err;
        t.push_back(std::move(*file));
    }
    std::filesystem::remove_all(dir);
    const auto find = [](const trace::TraceFile& tf, trace::Type type, uint64_t id) {
        return std::find_if(tf.records.begin(), tf.records.end(), [&](const trace::Record& r) {
            return r.type == type && r.src_node == 0 && r.dst_node == 2 && r.id == id;
        });
    };
    for (uint64_t id = 0; id < 2; ++id) {
        const auto sent = find(t[0], trace::Type::PktSend, id);
        ASSERT_NE(sent, t[0].records.end());
        EXPECT_EQ(sent->port, PEACH2_PORT_E);
        const auto fwd = find(t[1], trace::Type::PktFwd, id);
        ASSERT_NE(fwd, t[1].records.end());
        EXPECT_EQ(fwd->port, PEACH2_PORT_W);  // in
        EXPECT_EQ(fwd->unit, PEACH2_PORT_E);  // out
        EXPECT_EQ(fwd->addr, sent->addr);
        const auto recv = find(t[2], trace::Type::PktRecv, id);
        ASSERT_NE(recv, t[2].records.end());
        EXPECT_EQ(recv->port, PEACH2_PORT_W);
        EXPECT_EQ(find(t[3], trace::Type::PktFwd, id), t[3].records.end());
    }
}

TEST(Routing, RefusedImagesHoldTheLinksDownUntilAGoodOne) {
    Fabric f("ring:4");
    auto img = f.image();
    auto corrupt = img;
    corrupt[100] ^= 1;
    EXPECT_EQ(f.load(0, corrupt), static_cast<uint32_t>(PEACH2_FW_BAD_CRC));
    ASSERT_FALSE(f.hosts[0]->errors.empty());
    EXPECT_EQ(f.hosts[0]->errors.back().e.code, static_cast<uint32_t>(PEACH2_ERR_NONE));
    EXPECT_EQ(f.hosts[0]->errors.back().e.fw_status, static_cast<uint32_t>(PEACH2_FW_BAD_CRC));
    EXPECT_FALSE(f.hosts[0]->errors.back().e.counted);
    EXPECT_FALSE(reg(f.core(0), PEACH2_REG_LINK(0)) & PEACH2_LINK_UP);
    EXPECT_FALSE(reg(f.core(0), PEACH2_REG_LINK(1)) & PEACH2_LINK_UP);
    peach2_core_window_write(f.core(0), PEACH2_NODE_BASE(1) + kBufAt, 9, 8);
    f.pump();
    EXPECT_EQ(f.hosts[1]->mem[kBufAt], 0);
    EXPECT_EQ(reg(f.core(0), PEACH2_REG_ERR_BY_CODE(PEACH2_ERR_LINK_DOWN)), 1u);
    // A peer's store into the held node is refused too.
    peach2_core_window_write(f.core(1), PEACH2_NODE_BASE(0) + kBufAt, 9, 8);
    f.pump();
    EXPECT_EQ(f.hosts[0]->mem[kBufAt], 0);
    for (uint32_t i = 0; i < 4; ++i)
        ASSERT_EQ(f.load(i, img), static_cast<uint32_t>(PEACH2_FW_OK));
    EXPECT_TRUE(reg(f.core(0), PEACH2_REG_LINK(0)) & PEACH2_LINK_UP);
    peach2_core_window_write(f.core(0), PEACH2_NODE_BASE(2) + kBufAt, 5, 8);
    f.pump();
    EXPECT_EQ(f.hosts[2]->mem[kBufAt], 5);
}

TEST(Routing, EachKindOfBadImageHasItsStatus) {
    Fabric f("ring:4");
    const auto img = f.image();
    auto wrong_version = img;
    wrong_version[4] = 2;
    EXPECT_EQ(f.load(0, wrong_version), static_cast<uint32_t>(PEACH2_FW_BAD_VERSION));
    EXPECT_EQ(f.load(0, std::vector<uint8_t>(img.begin(), img.begin() + 40)),
              static_cast<uint32_t>(PEACH2_FW_TRUNCATED));
    Fabric f8("ring:8");
    EXPECT_EQ(f.load(0, f8.image()), static_cast<uint32_t>(PEACH2_FW_WRONG_TOPOLOGY));
    auto magic = img;
    magic[0] = 'X';
    EXPECT_EQ(f.load(0, magic), static_cast<uint32_t>(PEACH2_FW_BAD_MAGIC));
    // Length 0, and an address outside memory.
    peach2_core_reg_write(f.core(0), PEACH2_REG_FW_LEN, 0, 4);
    peach2_core_reg_write(f.core(0), PEACH2_REG_FW_CMD, PEACH2_FW_CMD_LOAD, 4);
    peach2_core_service(f.core(0));
    EXPECT_EQ(reg(f.core(0), PEACH2_REG_FW_STATUS), static_cast<uint32_t>(PEACH2_FW_TRUNCATED));
    peach2_core_reg_write(f.core(0), PEACH2_REG_FW_ADDR_LO, 0x7ff00000, 8);
    peach2_core_reg_write(f.core(0), PEACH2_REG_FW_LEN, img.size(), 4);
    peach2_core_reg_write(f.core(0), PEACH2_REG_FW_CMD, PEACH2_FW_CMD_LOAD, 4);
    peach2_core_service(f.core(0));
    EXPECT_EQ(reg(f.core(0), PEACH2_REG_FW_STATUS), static_cast<uint32_t>(PEACH2_FW_READ_FAILED));
    peach2_core_reg_write(f.core(0), PEACH2_REG_FW_CMD, 5, 4);  // unknown command
    EXPECT_GE(reg(f.core(0), PEACH2_REG_ERR_BY_CODE(PEACH2_ERR_BAD_COMMAND)), 1u);
}

TEST(Routing, NoMatchingEntryIsNoRoute) {
    Fabric f("ring:4");
    ASSERT_EQ(f.load(0, f.image()), static_cast<uint32_t>(PEACH2_FW_OK));
    // Invalidate every E and W entry by hand: node 2 is now unreachable.
    for (unsigned p : {PEACH2_PORT_E, PEACH2_PORT_W})
        for (unsigned e = 0; e < PEACH2_ROUTE_ENTRIES; ++e)
            peach2_core_reg_write(f.core(0), PEACH2_REG_ROUTE(p, e, PEACH2_ROUTE_FLAGS), 0, 4);
    peach2_core_window_write(f.core(0), PEACH2_NODE_BASE(2) + kBufAt, 1, 8);
    f.pump();
    EXPECT_EQ(reg(f.core(0), PEACH2_REG_ERR_BY_CODE(PEACH2_ERR_NO_ROUTE)), 1u);
}

TEST(Routing, PeerDownOnTheRouteIsLinkDownThenRecovers) {
    Fabric f("ring:4");
    const auto img = f.image();
    for (uint32_t i = 0; i < 4; ++i)
        ASSERT_EQ(f.load(i, img), static_cast<uint32_t>(PEACH2_FW_OK));
    // Node 1 "dies": both its cables drop.
    peach2_core_link_connected(f.core(0), PEACH2_PORT_E, false);
    peach2_core_link_connected(f.core(2), PEACH2_PORT_W, false);
    peach2_core_window_write(f.core(0), PEACH2_NODE_BASE(1) + kBufAt, 1, 8);
    f.pump();
    EXPECT_EQ(reg(f.core(0), PEACH2_REG_ERR_BY_CODE(PEACH2_ERR_LINK_DOWN)), 1u);
    f.connect_all();  // it comes back
    peach2_core_window_write(f.core(0), PEACH2_NODE_BASE(1) + kBufAt, 2, 8);
    f.pump();
    EXPECT_EQ(f.hosts[1]->mem[kBufAt], 2);
}

}  // namespace
}  // namespace peach2::test
