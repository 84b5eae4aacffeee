// SPDX-License-Identifier: MIT
// peach2-info's pure parts: the sysfs parsers, reading a card's directory
// (a fake tree in a temp dir, with the texts driver/sysfs.c prints), the PCI
// helpers, the text and JSON formatters and the exit statuses.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "../tools/info/card_state.hpp"
#include "../tools/info/pci_view.hpp"
#include "../tools/info/report.hpp"
#include "peach2/peach2_hw.h"

using namespace peach2info;
namespace fs = std::filesystem;

namespace {

// A temp directory, removed at the end of the test.
struct TempDir {
    fs::path path;
    TempDir() {
        char tmpl[] = "/tmp/peach2-info-test-XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    void write(const std::string& rel, const std::string& text) const {
        fs::create_directories((path / rel).parent_path());
        std::ofstream(path / rel, std::ios::binary) << text;
    }
};

// Every attribute of a bound card, as driver/sysfs.c prints it: node 1 of a
// ring of 4, E up to node 2, W up to node 0, S down, a few errors.
void write_card(const TempDir& t, const std::string& rel) {
    t.write(rel + "/node_id", "1\n");
    t.write(rel + "/node_count", "4\n");
    t.write(rel + "/hw_version", "1.1\n");
    t.write(rel + "/link_e", "up peer=2 port=W\n");
    t.write(rel + "/link_w", "up peer=0 port=E\n");
    t.write(rel + "/link_s", "down\n");
    t.write(rel + "/err_count", "3\n");
    t.write(rel + "/err_last", "2\n");
    t.write(rel + "/err_status", "0x00000002\n");
    t.write(rel + "/counters",
            "N tx_pkts=10 tx_bytes=640 rx_pkts=12 rx_bytes=768\n"
            "E tx_pkts=7 tx_bytes=448 rx_pkts=5 rx_bytes=320\n"
            "W tx_pkts=3 tx_bytes=192 rx_pkts=7 rx_bytes=448\n"
            "S tx_pkts=0 tx_bytes=0 rx_pkts=0 rx_bytes=0\n");
    t.write(rel + "/errors_by_code", "1 NO_SUCH_NODE 2\n2 LINK_DOWN 1\n");
    t.write(rel + "/dma",
            "ch0 idle queued=0 completed=5 errors=0\n"
            "ch1 busy queued=2 completed=1 errors=0\n"
            "ch2 idle queued=0 completed=0 errors=0\n"
            "ch3 wedged queued=0 completed=0 errors=1\n");
    t.write(rel + "/dma_desc_ram", "used=3 free=1021\n");
    t.write(rel + "/rproxy",
            "ring_entries 256\nserved_read 4\nserved_cas 1\nserved_faa 2\nread_bytes 4096\n"
            "refused_bad_request 0\nrefused_not_exported 1\nrefused_range 0\n"
            "refused_align 0\nrefused_replay 0\nrefused_throttled 0\nreply_errors 0\n"
            "ring_errors 0\nexports 1\nsubmitted 3\ncard_tx_sent 3\ncard_rx_queued 7\n"
            "card_rx_refused 0\ncard_rx_dropped 0\n");
    t.write(rel + "/fw_status", "ok\n");
    t.write(rel + "/fw_version", "1\n");
    t.write(rel + "/fw_routes", "8\n");
    t.write(rel + "/fw_topology", "ring:4\n");
}

PciView sample_pci(bool with_driver) {
    PciView p;
    p.address = "0000:00:03.0";
    p.vendor = PEACH2_PCI_VENDOR_ID;
    p.device = PEACH2_PCI_DEVICE_ID;
    p.class_code = PEACH2_PCI_CLASS;
    p.revision = PEACH2_PCI_REVISION;
    p.subsys_vendor = 0x1af4;
    p.subsys_device = 0x1100;
    p.irq = 10;
    p.pcie_type = pcie_type_text(9);
    p.bars = {decode_bar(0, 0xfea00000, PEACH2_REGS_SIZE), decode_bar(2, 0xfea10000, 0x10000),
              decode_bar(4, 0x80000000cull, 64ull << 30)};
    p.msix_vectors = PEACH2_MSIX_VECTORS;
    p.msix_enabled = with_driver;
    if (with_driver) {
        p.driver = "peach2";
        p.class_device = "peach2-0";
    }
    return p;
}

Report sample_report(bool with_driver, const std::string& card_dir = "") {
    Report r;
    r.hostname = "node1";
    r.module_loaded = with_driver;
    CardReport c;
    c.pci = sample_pci(with_driver);
    if (with_driver)
        c.state = read_card_state(card_dir, "peach2-0");
    r.cards.push_back(c);
    return r;
}

}  // namespace

TEST(InfoParse, Numbers) {
    std::uint64_t v = 0;
    EXPECT_TRUE(parse_number("42", &v));
    EXPECT_EQ(42u, v);
    EXPECT_TRUE(parse_number("0x00000002", &v));
    EXPECT_EQ(2u, v);
    for (const char* bad : {"", "0x", "-1", "12a", " 1", "1 ", "99999999999999999999"})
        EXPECT_FALSE(parse_number(bad, &v)) << bad;
}

TEST(InfoParse, LinkStates) {
    PortState p;
    ASSERT_TRUE(parse_link("up peer=3 port=W\n", &p));
    EXPECT_EQ("up", p.link);
    ASSERT_TRUE(p.peer_node.has_value());
    EXPECT_EQ(3u, *p.peer_node);
    EXPECT_EQ('W', p.peer_port);
    ASSERT_TRUE(parse_link("down\n", &p));
    EXPECT_EQ("down", p.link);
    EXPECT_FALSE(p.peer_node.has_value());  // a stale peer is forgotten
    ASSERT_TRUE(parse_link("connected", &p));
    EXPECT_EQ("connected", p.link);
    for (const char* bad : {"", "up", "up peer=x port=W", "up peer=1 port=Q",
                            "up peer=1 port=WW", "sideways", "down now"})
        EXPECT_FALSE(parse_link(bad, &p)) << bad;
}

TEST(InfoParse, CountersMergeIntoPortsByLetter) {
    std::vector<PortState> ports(2);
    ports[0].port = 'E';
    ports[0].link = "up";
    ports[1].port = 'N';
    ASSERT_TRUE(parse_counters("N tx_pkts=1 tx_bytes=2 rx_pkts=3 rx_bytes=4\n"
                               "E tx_pkts=5 tx_bytes=6 rx_pkts=7 rx_bytes=18446744073709551615\n",
                               &ports));
    ASSERT_EQ(2u, ports.size());
    EXPECT_EQ("up", ports[0].link);  // kept
    EXPECT_EQ(5u, ports[0].tx_pkts);
    EXPECT_EQ(18446744073709551615ull, ports[0].rx_bytes);
    EXPECT_EQ(4u, ports[1].rx_bytes);
    EXPECT_TRUE(ports[1].have_counters);
    for (const char* bad : {"N tx_pkts=1 tx_bytes=2 rx_pkts=3\n",
                            "Q tx_pkts=1 tx_bytes=2 rx_pkts=3 rx_bytes=4\n",
                            "N rx_pkts=1 tx_bytes=2 tx_pkts=3 rx_bytes=4\n"}) {
        std::vector<PortState> none;
        EXPECT_FALSE(parse_counters(bad, &none)) << bad;
        EXPECT_TRUE(none.empty()) << "nothing merged from a bad text";
    }
}

TEST(InfoParse, ErrorsDmaDescRamProxy) {
    std::vector<ErrorByCode> errs;
    ASSERT_TRUE(parse_errors_by_code("", &errs));
    EXPECT_TRUE(errs.empty());
    ASSERT_TRUE(parse_errors_by_code("7 BAD_PACKET 12\n", &errs));
    ASSERT_EQ(1u, errs.size());
    EXPECT_EQ(7u, errs[0].code);
    EXPECT_EQ("BAD_PACKET", errs[0].name);
    EXPECT_EQ(12u, errs[0].count);
    EXPECT_FALSE(parse_errors_by_code("7 BAD_PACKET\n", &errs));

    std::vector<DmaChannel> dma;
    ASSERT_TRUE(parse_dma("ch0 idle queued=0 completed=9 errors=1\n"
                          "ch1 busy queued=2 completed=0 errors=0\n", &dma));
    ASSERT_EQ(2u, dma.size());
    EXPECT_EQ(9u, dma[0].completed);
    EXPECT_EQ(1u, dma[0].errors);
    EXPECT_EQ("busy", dma[1].state);
    EXPECT_FALSE(parse_dma("chX idle queued=0 completed=0 errors=0\n", &dma));
    EXPECT_FALSE(parse_dma("ch0 idle queued=0\n", &dma));

    std::uint64_t used = 0, free = 0;
    ASSERT_TRUE(parse_desc_ram("used=5 free=1019\n", &used, &free));
    EXPECT_EQ(5u, used);
    EXPECT_EQ(1019u, free);
    EXPECT_FALSE(parse_desc_ram("free=1 used=2", &used, &free));

    std::vector<std::pair<std::string, std::uint64_t>> kv;
    ASSERT_TRUE(parse_name_values("a 1\nb 0x10\n", &kv));
    ASSERT_EQ(2u, kv.size());
    EXPECT_EQ("b", kv[1].first);
    EXPECT_EQ(16u, kv[1].second);
    EXPECT_FALSE(parse_name_values("a\n", &kv));
    EXPECT_FALSE(parse_name_values("a 1 2\n", &kv));
}

TEST(InfoCardState, ReadsEveryAttributeOfAFakeTree) {
    TempDir t;
    write_card(t, "peach2-0");
    const CardState s = read_card_state((t.path / "peach2-0").string(), "peach2-0");
    EXPECT_TRUE(s.problems.empty()) << s.problems.front();
    EXPECT_EQ(1u, s.node_id.value_or(99));
    EXPECT_EQ(4u, s.node_count.value_or(99));
    EXPECT_EQ("1.1", s.hw_version);
    EXPECT_EQ("ok", s.fw_status);
    EXPECT_EQ("ring:4", s.fw_topology);
    EXPECT_EQ(8u, s.fw_routes.value_or(0));
    ASSERT_EQ(4u, s.ports.size());
    EXPECT_EQ('N', s.ports[0].port);
    EXPECT_EQ("host", s.ports[0].link);
    EXPECT_EQ(12u, s.ports[0].rx_pkts);
    EXPECT_EQ('E', s.ports[1].port);
    EXPECT_EQ(2u, s.ports[1].peer_node.value_or(99));
    EXPECT_EQ('W', s.ports[1].peer_port);
    EXPECT_EQ(448u, s.ports[1].tx_bytes);
    EXPECT_EQ("down", s.ports[3].link);
    EXPECT_EQ(3u, s.err_count.value_or(0));
    EXPECT_EQ(2u, s.err_status.value_or(0));
    ASSERT_EQ(2u, s.errors_by_code.size());
    ASSERT_EQ(4u, s.dma.size());
    EXPECT_EQ("wedged", s.dma[3].state);
    EXPECT_EQ(3u, s.desc_used.value_or(0));
    EXPECT_EQ(19u, s.read_proxy.size());
    EXPECT_EQ(4u, rp_counter(s, "served_read"));
    EXPECT_EQ(0u, rp_counter(s, "no_such_counter"));
}

TEST(InfoCardState, MissingAndMalformedAttributesAreProblemsNotFailures) {
    TempDir t;
    write_card(t, "c");
    fs::remove(t.path / "c/rproxy");
    t.write("c/link_s", "sideways\n");
    t.write("c/node_count", "four\n");
    const CardState s = read_card_state((t.path / "c").string(), "peach2-0");
    ASSERT_EQ(3u, s.problems.size());
    std::string all;
    for (const auto& p : s.problems)
        all += p + "\n";
    EXPECT_NE(std::string::npos, all.find("rproxy: cannot read")) << all;
    EXPECT_NE(std::string::npos, all.find("link_s: unexpected text 'sideways'")) << all;
    EXPECT_NE(std::string::npos, all.find("node_count: unexpected text 'four'")) << all;
    EXPECT_FALSE(s.node_count.has_value());
    EXPECT_EQ(1u, s.node_id.value_or(99));  // the rest is still there
    EXPECT_EQ("up", s.ports[1].link);
    EXPECT_EQ("", s.ports[3].link);
    // And the text says so.
    Report r;
    r.module_loaded = true;
    r.cards.push_back({sample_pci(true), s});
    const std::string text = format_text(r, false);
    EXPECT_NE(std::string::npos, text.find("problem: rproxy: cannot read")) << text;
    EXPECT_NE(std::string::npos, text.find("node 1 of ?")) << text;
}

TEST(InfoPci, Helpers) {
    EXPECT_EQ("2.5GT/s", link_speed_text(1));
    EXPECT_EQ("16GT/s", link_speed_text(4));
    EXPECT_EQ("unknown (0)", link_speed_text(0));
    EXPECT_EQ("root complex integrated endpoint", pcie_type_text(9));
    EXPECT_EQ("endpoint", pcie_type_text(0));
    EXPECT_FALSE(pcie_type_has_link(9));
    EXPECT_TRUE(pcie_type_has_link(0));
    EXPECT_EQ("16K", size_text(PEACH2_REGS_SIZE));
    EXPECT_EQ("64K", size_text(PEACH2_CARDMEM_SIZE));
    EXPECT_EQ("64G", size_text(64ull << 30));
    EXPECT_EQ("1536", size_text(1536));
    EXPECT_EQ("1M", size_text(1u << 20));
    EXPECT_EQ("0000:00:03.0", pci_address(0, 0, 3, 0));
    EXPECT_EQ("0001:1a:1f.7", pci_address(1, 0x1a, 0x1f, 7));
    const PciBar b4 = decode_bar(4, 0x80000000cull, 64ull << 30);
    EXPECT_EQ(0x800000000ull, b4.base);
    EXPECT_TRUE(b4.is64);
    EXPECT_TRUE(b4.prefetchable);
    EXPECT_FALSE(b4.io);
    const PciBar b0 = decode_bar(0, 0xfea00000, 0x4000);
    EXPECT_FALSE(b0.is64);
    EXPECT_FALSE(b0.prefetchable);
    const PciBar io = decode_bar(1, 0xc041, 0x40);
    EXPECT_TRUE(io.io);
    EXPECT_EQ(0xc040u, io.base);
}

TEST(InfoReport, TextShowsTheCardAndItsCables) {
    TempDir t;
    write_card(t, "peach2-0");
    const Report r = sample_report(true, (t.path / "peach2-0").string());
    EXPECT_EQ(kExitOk, exit_status(r));
    EXPECT_EQ("", status_message(r));
    const std::string text = format_text(r, false);
    for (const char* want :
         {"peach2-0: PEACH2 at 0000:00:03.0 [1234:7ca2] rev 01, driver peach2",
          "node 1 of 4, hw 1.1, firmware ok (ring:4, version 1, 8 routes)",
          "up, node 2 port W", "up, node 0 port E", "errors: 3 (last LINK_DOWN): NO_SUCH_NODE 2, "
          "LINK_DOWN 1", "DMA: 2 of 4 channels idle; ch1 busy (queued 2, errors 0), ch3 wedged",
          "ch3 wedged (queued 0, errors 1); descriptor RAM 3 of 1024 used",
          "read proxy: served 4 reads, 1 CAS, 2 FAA; 1 refused; 1 exports",
          "PCI: root complex integrated endpoint (no link)",
          "BAR4 0x800000000 [64G] mem64 prefetchable", "MSI-X: 8 vectors, enabled"})
        EXPECT_NE(std::string::npos, text.find(want)) << "missing '" << want << "' in\n" << text;
    EXPECT_EQ(std::string::npos, text.find("card_rx_queued")) << "that is for -v";
    const std::string verbose = format_text(r, true);
    for (const char* want : {"card_rx_queued=7", "DMA ch3: wedged, queued 0, completed 0, errors 1",
                             "error status register: 0x00000002", "class 0280, subsystem 1af4:1100",
                             "irq 10", "sysfs: "})
        EXPECT_NE(std::string::npos, verbose.find(want)) << "missing '" << want << "' in\n"
                                                         << verbose;
}

TEST(InfoReport, JsonHasTheDocumentedFields) {
    TempDir t;
    write_card(t, "peach2-0");
    const auto j = nlohmann::json::parse(
        format_json(sample_report(true, (t.path / "peach2-0").string())));
    EXPECT_EQ("peach2-info", j["format"]);
    EXPECT_EQ(kJsonVersion, j["version"]);
    EXPECT_EQ("ok", j["status"]);
    EXPECT_EQ("node1", j["host"]);
    ASSERT_EQ(1u, j["cards"].size());
    const auto& pci = j["cards"][0]["pci"];
    EXPECT_EQ("0000:00:03.0", pci["address"]);
    EXPECT_EQ("1234", pci["vendor"]);
    EXPECT_EQ("7ca2", pci["device"]);
    EXPECT_EQ("0280", pci["class"]);
    EXPECT_EQ("01", pci["revision"]);
    EXPECT_TRUE(pci["link"].is_null());
    ASSERT_EQ(3u, pci["bars"].size());
    EXPECT_EQ(4, pci["bars"][2]["index"]);
    EXPECT_EQ(64ull << 30, pci["bars"][2]["size"].get<std::uint64_t>());
    EXPECT_EQ("mem64", pci["bars"][2]["type"]);
    EXPECT_EQ(8, pci["msix"]["vectors"]);
    EXPECT_EQ("peach2", pci["driver"]);
    const auto& d = j["cards"][0]["driver"];
    EXPECT_EQ("peach2-0", d["device"]);
    EXPECT_EQ(1, d["node_id"]);
    EXPECT_EQ(4, d["node_count"]);
    EXPECT_EQ("ring:4", d["firmware"]["topology"]);
    ASSERT_EQ(4u, d["ports"].size());
    EXPECT_EQ("E", d["ports"][1]["port"]);
    EXPECT_EQ("up", d["ports"][1]["link"]);
    EXPECT_EQ(2, d["ports"][1]["peer_node"]);
    EXPECT_EQ("W", d["ports"][1]["peer_port"]);
    EXPECT_EQ(448, d["ports"][1]["tx_bytes"]);
    EXPECT_TRUE(d["ports"][3]["peer_node"].is_null());
    EXPECT_EQ(3, d["errors"]["count"]);
    EXPECT_EQ("LINK_DOWN", d["errors"]["last_name"]);
    EXPECT_EQ("NO_SUCH_NODE", d["errors"]["by_code"][0]["name"]);
    EXPECT_EQ(4u, d["dma"]["channels"].size());
    EXPECT_EQ(1021, d["dma"]["desc_free"]);
    EXPECT_EQ(256, d["read_proxy"]["ring_entries"]);
    EXPECT_TRUE(d["problems"].empty());
}

TEST(InfoReport, NoCardAndNoDriverSayWhatToDo) {
    Report none;
    EXPECT_EQ(kExitNoCard, exit_status(none));
    EXPECT_STREQ("no-card", status_word(exit_status(none)));
    EXPECT_NE(std::string::npos, status_message(none).find("no PEACH2 card found (no PCI device "
                                                           "1234:7ca2)"));
    const auto j = nlohmann::json::parse(format_json(none));
    EXPECT_EQ("no-card", j["status"]);
    EXPECT_TRUE(j["cards"].empty());

    Report unloaded = sample_report(false);
    EXPECT_EQ(kExitNoDriver, exit_status(unloaded));
    EXPECT_NE(std::string::npos, status_message(unloaded).find("driver is not loaded: PCI view only"));
    const std::string text = format_text(unloaded, false);
    EXPECT_NE(std::string::npos, text.find("card: PEACH2 at 0000:00:03.0 [1234:7ca2] rev 01, no "
                                           "driver bound")) << text;
    EXPECT_NE(std::string::npos, text.find("driver state: unavailable (PCI view only)")) << text;
    EXPECT_NE(std::string::npos, text.find("MSI-X: 8 vectors, disabled")) << text;

    Report unbound = sample_report(false);
    unbound.module_loaded = true;
    EXPECT_NE(std::string::npos,
              status_message(unbound).find("loaded but not bound to 0000:00:03.0: PCI view only"));
    const auto ju = nlohmann::json::parse(format_json(unbound));
    EXPECT_EQ("no-driver", ju["status"]);
    EXPECT_TRUE(ju["cards"][0]["driver"].is_null());
    EXPECT_TRUE(ju["cards"][0]["pci"]["driver"].is_null());
}

// ---- the program end to end, libpci included, on a fake sysfs tree ----------
// libpci reads <root>/bus/pci/devices/<addr>/{config,resource,vendor,...}
// (its sysfs.path), peach2-info the driver's directory under the device.
namespace {

struct FakeSys : TempDir {
    static constexpr const char* kDev = "bus/pci/devices/0000:00:01.0";
    FakeSys() {
        std::string cfg(256, '\0');
        auto put16 = [&](std::size_t at, unsigned v) {
            cfg[at] = static_cast<char>(v & 0xff);
            cfg[at + 1] = static_cast<char>(v >> 8);
        };
        put16(0x00, PEACH2_PCI_VENDOR_ID);
        put16(0x02, PEACH2_PCI_DEVICE_ID);
        put16(0x06, 0x0010);                // status: capability list
        cfg[0x08] = PEACH2_PCI_REVISION;
        put16(0x0a, PEACH2_PCI_CLASS);
        put16(0x2c, 0x1af4);
        put16(0x2e, 0x1100);
        cfg[0x34] = 0x40;
        cfg[0x40] = 0x10;                   // PCI Express, next at 0x70
        cfg[0x41] = 0x70;
        put16(0x42, 0x0002);                // version 2, type 0: endpoint (has a link)
        put16(0x4c, 0x0083);                // LNKCAP: 8GT/s x8
        put16(0x52, 0x0041);                // LNKSTA: 2.5GT/s x4
        cfg[0x70] = 0x11;                   // MSI-X, last
        put16(0x72, 0x8000 | (PEACH2_MSIX_VECTORS - 1));
        write(std::string(kDev) + "/config", cfg);
        write(std::string(kDev) + "/vendor", "0x1234\n");
        write(std::string(kDev) + "/device", "0x7ca2\n");
        write(std::string(kDev) + "/class", "0x028000\n");
        write(std::string(kDev) + "/irq", "21\n");
        write(std::string(kDev) + "/resource",
              "0x00000000febf0000 0x00000000febf3fff 0x0000000000040200\n"
              "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
              "0x00000000febe0000 0x00000000febeffff 0x0000000000040200\n"
              "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
              "0x0000000800000000 0x0000000fffffffff 0x000000000014220c\n"
              "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
              "0x0000000000000000 0x0000000000000000 0x0000000000000000\n");
        fs::create_directories(path / "bus/pci/drivers/peach2");
        fs::create_directories(path / "module/peach2");
        fs::create_directory_symlink("../../drivers/peach2", path / kDev / "driver");
        write_card(*this, std::string(kDev) + "/peach2/peach2-0");
    }
    // (exit status, stdout) of peach2-info with `args` on this tree.
    std::pair<int, std::string> run(const std::string& args) const {
        const std::string cmd = std::string(PEACH2_INFO_BIN) + " --sysfs " + path.string() +
                                " " + args + " 2>" + (path / "stderr").string();
        std::FILE* p = popen(cmd.c_str(), "r");
        std::string out;
        char buf[4096];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;)
            out.append(buf, n);
        const int st = pclose(p);
        return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
    }
    std::string err() const {
        std::ifstream f(path / "stderr");
        return std::string(std::istreambuf_iterator<char>(f), {});
    }
};

}  // namespace

TEST(InfoProgram, ReadsTheFakeTreeThroughLibpci) {
    FakeSys t;
    auto [rc, out] = t.run("--json");
    ASSERT_EQ(kExitOk, rc) << out << t.err();
    const auto j = nlohmann::json::parse(out);
    const auto& pci = j["cards"][0]["pci"];
    EXPECT_EQ("0000:00:01.0", pci["address"]);
    EXPECT_EQ("0280", pci["class"]);
    EXPECT_EQ("1af4", pci["subsystem_vendor"]);
    EXPECT_EQ("endpoint", pci["pcie_type"]);
    EXPECT_EQ("2.5GT/s", pci["link"]["speed"]);
    EXPECT_EQ(4, pci["link"]["width"]);
    EXPECT_EQ("8GT/s", pci["link"]["max_speed"]);
    EXPECT_EQ(8, pci["link"]["max_width"]);
    EXPECT_EQ(PEACH2_MSIX_VECTORS, pci["msix"]["vectors"].get<unsigned>());
    EXPECT_EQ(true, pci["msix"]["enabled"]);
    ASSERT_EQ(3u, pci["bars"].size());
    EXPECT_EQ(0xfebf0000u, pci["bars"][0]["base"].get<std::uint64_t>());
    EXPECT_EQ(PEACH2_REGS_SIZE, pci["bars"][0]["size"].get<std::uint64_t>());
    EXPECT_EQ("mem64", pci["bars"][2]["type"]);
    EXPECT_EQ(true, pci["bars"][2]["prefetchable"]);
    EXPECT_EQ(32ull << 30, pci["bars"][2]["size"].get<std::uint64_t>());
    EXPECT_EQ("peach2", pci["driver"]);
    EXPECT_EQ(1, j["cards"][0]["driver"]["node_id"]);
    EXPECT_EQ("", t.err());
    std::tie(rc, out) = t.run("");
    EXPECT_EQ(kExitOk, rc);
    EXPECT_NE(std::string::npos, out.find("PCI: endpoint, link 2.5GT/s x4 (max 8GT/s x8)")) << out;
}

TEST(InfoProgram, ExitStatusesAndMessages) {
    FakeSys t;
    fs::remove(t.path / FakeSys::kDev / "driver");
    auto [rc, out] = t.run("");
    EXPECT_EQ(kExitNoDriver, rc) << out;
    EXPECT_NE(std::string::npos,
              t.err().find("peach2-info: the peach2 driver is loaded but not bound to "
                           "0000:00:01.0: PCI view only"))
        << t.err();
    EXPECT_NE(std::string::npos, out.find("driver state: unavailable (PCI view only)")) << out;
    fs::remove_all(t.path / "module/peach2");
    std::tie(rc, out) = t.run("--json");
    EXPECT_EQ(kExitNoDriver, rc);
    EXPECT_EQ("no-driver", nlohmann::json::parse(out)["status"]);
    EXPECT_NE(std::string::npos, t.err().find("driver is not loaded")) << t.err();

    t.write(std::string(FakeSys::kDev) + "/vendor", "0x8086\n");
    std::string cfg(256, '\0');
    cfg[0] = static_cast<char>(0x86);
    cfg[1] = static_cast<char>(0x80);
    t.write(std::string(FakeSys::kDev) + "/config", cfg);
    std::tie(rc, out) = t.run("");
    EXPECT_EQ(kExitNoCard, rc) << out;
    EXPECT_EQ("", out);
    EXPECT_NE(std::string::npos, t.err().find("no PEACH2 card found")) << t.err();

    std::tie(rc, out) = t.run("--bogus");
    EXPECT_EQ(kExitUsage, rc);
    std::tie(rc, out) = t.run("extra");
    EXPECT_EQ(kExitUsage, rc);
    std::tie(rc, out) = t.run("--help");
    EXPECT_EQ(kExitOk, rc);
    EXPECT_NE(std::string::npos, out.find("exit status: 0")) << out;
}
