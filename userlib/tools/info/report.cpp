// SPDX-License-Identifier: MIT
#include "report.hpp"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "peach2/peach2_hw.h"

namespace peach2info {

namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
    char buf[512];
    std::va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

std::string hex4(unsigned v) { return fmt("%04x", v & 0xffffu); }

bool bound(const CardReport& c) { return c.state.has_value(); }

std::string bar_kind(const PciBar& b) {
    if (b.io)
        return "io";
    std::string k = b.is64 ? "mem64" : "mem32";
    if (b.prefetchable)
        k += " prefetchable";
    return k;
}

std::string link_text(const PortState& p) {
    if (p.link == "up" && p.peer_node)
        return fmt("up, node %u port %c", *p.peer_node, p.peer_port ? p.peer_port : '?');
    return p.link.empty() ? "?" : p.link;
}

std::string opt_text(const std::optional<std::uint64_t>& v) {
    return v ? std::to_string(*v) : "?";
}

std::string card_title(const CardReport& c) {
    const PciView& p = c.pci;
    std::string who = c.state ? c.state->device : p.class_device;
    std::string t = (who.empty() ? "card" : who) + ": PEACH2 at " + p.address + " [" +
                    hex4(p.vendor) + ":" + hex4(p.device) + "] rev " + fmt("%02x", p.revision);
    t += p.driver.empty() ? ", no driver bound" : ", driver " + p.driver;
    return t;
}

void pci_lines(const PciView& p, bool verbose, std::string& o) {
    std::string pcie;
    if (!p.config_readable)
        pcie = "capabilities unreadable (config space past 64 bytes needs root)";
    else if (p.pcie_type.empty())
        pcie = "no PCI Express capability";
    else if (p.link)
        pcie = fmt("%s, link %s x%u (max %s x%u)", p.pcie_type.c_str(), p.link->speed.c_str(),
                   p.link->width, p.link->max_speed.c_str(), p.link->max_width);
    else
        pcie = p.pcie_type + " (no link)";
    o += "  PCI: " + pcie;
    if (verbose && p.irq >= 0)
        o += fmt(", irq %d", p.irq);
    o += "\n";
    if (verbose)
        o += fmt("       class %04x, subsystem %04x:%04x\n", p.class_code, p.subsys_vendor,
                 p.subsys_device);
    std::string bars;
    for (const PciBar& b : p.bars) {
        const std::string one = fmt("BAR%u 0x%" PRIx64 " [%s] %s", b.index, b.base,
                                    size_text(b.size).c_str(), bar_kind(b).c_str());
        if (verbose)
            o += "       " + one + "\n";
        else
            bars += (bars.empty() ? "" : ", ") + one;
    }
    if (!verbose && !bars.empty())
        o += "       " + bars + "\n";
    if (p.msix_vectors)
        o += fmt("       MSI-X: %u vectors, %s\n", *p.msix_vectors,
                 p.msix_enabled ? "enabled" : "disabled");
    else if (p.config_readable)
        o += "       MSI-X: none\n";
}

void state_lines(const CardState& s, bool verbose, std::string& o) {
    o += "  node " + (s.node_id ? std::to_string(*s.node_id) : std::string("?")) + " of " +
         (s.node_count ? std::to_string(*s.node_count) : std::string("?")) + ", hw " +
         (s.hw_version.empty() ? "?" : s.hw_version) + ", firmware " +
         (s.fw_status.empty() ? "?" : s.fw_status);
    if (s.fw_topology.size() && s.fw_topology != "none")
        o += " (" + s.fw_topology + ", version " + opt_text(s.fw_version) + ", " +
             opt_text(s.fw_routes) + " routes)";
    o += "\n";
    if (verbose)
        o += "  sysfs: " + s.sysfs_dir + "\n";
    o += fmt("  %-4s %-20s %12s %14s %12s %14s\n", "port", "link", "tx packets", "tx bytes",
             "rx packets", "rx bytes");
    for (const PortState& p : s.ports) {
        if (p.have_counters)
            o += fmt("  %-4c %-20s %12" PRIu64 " %14" PRIu64 " %12" PRIu64 " %14" PRIu64 "\n",
                     p.port, link_text(p).c_str(), p.tx_pkts, p.tx_bytes, p.rx_pkts, p.rx_bytes);
        else
            o += fmt("  %-4c %s\n", p.port, link_text(p).c_str());
    }
    if (s.err_count && *s.err_count == 0 && s.errors_by_code.empty()) {
        o += "  errors: none\n";
    } else {
        o += "  errors: " + opt_text(s.err_count);
        if (s.err_last)
            o += std::string(" (last ") + peach2_err_name(static_cast<peach2_u32>(*s.err_last)) +
                 ")";
        std::string by;
        for (const ErrorByCode& e : s.errors_by_code)
            by += fmt("%s%s %" PRIu64, by.empty() ? "" : ", ", e.name.c_str(), e.count);
        if (!by.empty())
            o += ": " + by;
        o += "\n";
    }
    if (verbose && s.err_status)
        o += fmt("  error status register: 0x%08" PRIx64 "\n", *s.err_status);
    std::string dma;
    unsigned idle = 0;
    for (const DmaChannel& c : s.dma) {
        if (verbose)
            o += fmt("  DMA ch%u: %s, queued %" PRIu64 ", completed %" PRIu64 ", errors %" PRIu64
                     "\n",
                     c.channel, c.state.c_str(), c.queued, c.completed, c.errors);
        if (c.state == "idle" && c.errors == 0)
            ++idle;
        else
            dma += fmt("%sch%u %s (queued %" PRIu64 ", errors %" PRIu64 ")",
                       dma.empty() ? "" : ", ", c.channel, c.state.c_str(), c.queued, c.errors);
    }
    if (!verbose) {
        std::string line = fmt("%u of %zu channels idle", idle, s.dma.size());
        if (!dma.empty())
            line += "; " + dma;
        o += "  DMA: " + line;
    } else {
        o += "  DMA:";
    }
    if (s.desc_used && s.desc_free)
        o += fmt("%s descriptor RAM %" PRIu64 " of %" PRIu64 " used", verbose ? "" : ";",
                 *s.desc_used, *s.desc_used + *s.desc_free);
    o += "\n";
    if (verbose) {
        o += "  read proxy:";
        for (const auto& [k, v] : s.read_proxy)
            o += fmt(" %s=%" PRIu64, k.c_str(), v);
        o += "\n";
    } else {
        std::uint64_t refused = 0;
        for (const auto& [k, v] : s.read_proxy)
            if (k.rfind("refused_", 0) == 0)
                refused += v;
        o += fmt("  read proxy: served %" PRIu64 " reads, %" PRIu64 " CAS, %" PRIu64
                 " FAA; %" PRIu64 " refused; %" PRIu64 " exports\n",
                 rp_counter(s, "served_read"), rp_counter(s, "served_cas"),
                 rp_counter(s, "served_faa"), refused, rp_counter(s, "exports"));
    }
    for (const std::string& p : s.problems)
        o += "  problem: " + p + "\n";
}

nlohmann::ordered_json opt_json(const std::optional<std::uint64_t>& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json pci_json(const PciView& p) {
    using J = nlohmann::ordered_json;
    J j;
    j["address"] = p.address;
    j["vendor"] = hex4(p.vendor);
    j["device"] = hex4(p.device);
    j["class"] = hex4(p.class_code);
    j["revision"] = fmt("%02x", p.revision);
    j["subsystem_vendor"] = hex4(p.subsys_vendor);
    j["subsystem_device"] = hex4(p.subsys_device);
    j["irq"] = p.irq;
    j["config_readable"] = p.config_readable;
    j["pcie_type"] = p.pcie_type.empty() ? J(nullptr) : J(p.pcie_type);
    if (p.link)
        j["link"] = {{"speed", p.link->speed},
                     {"width", p.link->width},
                     {"max_speed", p.link->max_speed},
                     {"max_width", p.link->max_width}};
    else
        j["link"] = nullptr;
    J bars = J::array();
    for (const PciBar& b : p.bars)
        bars.push_back({{"index", b.index},
                        {"base", b.base},
                        {"size", b.size},
                        {"type", b.io ? "io" : b.is64 ? "mem64" : "mem32"},
                        {"prefetchable", b.prefetchable}});
    j["bars"] = bars;
    if (p.msix_vectors)
        j["msix"] = {{"vectors", *p.msix_vectors}, {"enabled", p.msix_enabled}};
    else
        j["msix"] = nullptr;
    j["driver"] = p.driver.empty() ? J(nullptr) : J(p.driver);
    return j;
}

nlohmann::ordered_json state_json(const CardState& s) {
    using J = nlohmann::ordered_json;
    J j;
    j["device"] = s.device;
    j["sysfs"] = s.sysfs_dir;
    j["node_id"] = s.node_id ? J(*s.node_id) : J(nullptr);
    j["node_count"] = s.node_count ? J(*s.node_count) : J(nullptr);
    j["hw_version"] = s.hw_version;
    j["firmware"] = {{"status", s.fw_status},
                     {"version", opt_json(s.fw_version)},
                     {"routes", opt_json(s.fw_routes)},
                     {"topology", s.fw_topology}};
    J ports = J::array();
    for (const PortState& p : s.ports) {
        J q;
        q["port"] = std::string(1, p.port);
        q["link"] = p.link;
        q["peer_node"] = p.peer_node ? J(*p.peer_node) : J(nullptr);
        q["peer_port"] = p.peer_port ? J(std::string(1, p.peer_port)) : J(nullptr);
        q["tx_pkts"] = p.tx_pkts;
        q["tx_bytes"] = p.tx_bytes;
        q["rx_pkts"] = p.rx_pkts;
        q["rx_bytes"] = p.rx_bytes;
        ports.push_back(q);
    }
    j["ports"] = ports;
    J by = J::array();
    for (const ErrorByCode& e : s.errors_by_code)
        by.push_back({{"code", e.code}, {"name", e.name}, {"count", e.count}});
    j["errors"] = {{"count", opt_json(s.err_count)},
                   {"last", opt_json(s.err_last)},
                   {"last_name", s.err_last ? J(peach2_err_name(static_cast<peach2_u32>(
                                                  *s.err_last)))
                                            : J(nullptr)},
                   {"status", opt_json(s.err_status)},
                   {"by_code", by}};
    J chans = J::array();
    for (const DmaChannel& c : s.dma)
        chans.push_back({{"channel", c.channel},
                         {"state", c.state},
                         {"queued", c.queued},
                         {"completed", c.completed},
                         {"errors", c.errors}});
    j["dma"] = {{"channels", chans},
                {"desc_used", opt_json(s.desc_used)},
                {"desc_free", opt_json(s.desc_free)}};
    J rp = J::object();
    for (const auto& [k, v] : s.read_proxy)
        rp[k] = v;
    j["read_proxy"] = rp;
    j["problems"] = s.problems;
    return j;
}

}  // namespace

ExitStatus exit_status(const Report& r) {
    if (r.cards.empty())
        return kExitNoCard;
    for (const CardReport& c : r.cards)
        if (!bound(c))
            return kExitNoDriver;
    return kExitOk;
}

const char* status_word(ExitStatus s) {
    switch (s) {
    case kExitOk: return "ok";
    case kExitNoCard: return "no-card";
    case kExitNoDriver: return "no-driver";
    default: return "error";
    }
}

std::string status_message(const Report& r) {
    if (r.cards.empty())
        return fmt("no PEACH2 card found (no PCI device %04x:%04x): start QEMU with -device "
                   "peach2 (scripts/cluster.py does)",
                   PEACH2_PCI_VENDOR_ID, PEACH2_PCI_DEVICE_ID);
    for (const CardReport& c : r.cards) {
        if (bound(c))
            continue;
        const std::string& a = c.pci.address;
        if (!r.module_loaded)
            return "the peach2 driver is not loaded: PCI view only (load it: insmod "
                   "/usr/lib/modules/peach2.ko, or modprobe peach2)";
        if (c.pci.driver.empty())
            return "the peach2 driver is loaded but not bound to " + a +
                   ": PCI view only (bind it: echo " + a +
                   " > /sys/bus/pci/drivers/peach2/bind; dmesg says why a probe failed)";
        if (c.pci.driver != "peach2")
            return a + " is bound to driver " + c.pci.driver +
                   ", not peach2: PCI view only (unbind it, then bind peach2)";
        return "the peach2 driver is bound to " + a +
               " but has no device under /sys/class/peach2: PCI view only (dmesg says why)";
    }
    return "";
}

std::string format_text(const Report& r, bool verbose) {
    std::string o;
    for (const CardReport& c : r.cards) {
        if (!o.empty())
            o += "\n";
        o += card_title(c) + "\n";
        if (c.state)
            state_lines(*c.state, verbose, o);
        pci_lines(c.pci, verbose, o);
        if (!c.state)
            o += "  driver state: unavailable (PCI view only)\n";
    }
    return o;
}

std::string format_json(const Report& r) {
    using J = nlohmann::ordered_json;
    const ExitStatus st = exit_status(r);
    J j;
    j["format"] = "peach2-info";
    j["version"] = kJsonVersion;
    j["host"] = r.hostname;
    j["status"] = status_word(st);
    j["message"] = status_message(r);
    j["driver_loaded"] = r.module_loaded;
    J cards = J::array();
    for (const CardReport& c : r.cards)
        cards.push_back({{"pci", pci_json(c.pci)},
                         {"driver", c.state ? state_json(*c.state) : J(nullptr)}});
    j["cards"] = cards;
    return j.dump(2, ' ', false, J::error_handler_t::replace) + "\n";
}

}  // namespace peach2info
