// SPDX-License-Identifier: MIT
// peach2-info: the PCI view of a card (what lspci shows), found through
// libpci (pci_scan.cpp), and the pure helpers that turn register fields
// into text (pci_view.cpp, unit-tested).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace peach2info {

struct PciBar {
    unsigned index = 0;
    std::uint64_t base = 0, size = 0;
    bool io = false, is64 = false, prefetchable = false;
};

struct PciLink {
    std::string speed, max_speed;  // "2.5GT/s"
    unsigned width = 0, max_width = 0;
};

struct PciView {
    std::string address;           // "0000:00:03.0"
    unsigned vendor = 0, device = 0, subsys_vendor = 0, subsys_device = 0;
    unsigned class_code = 0;       // base class and subclass: 0x0280
    unsigned revision = 0;
    int irq = -1;
    bool config_readable = true;   // false: capabilities unknown (config space needs root)
    std::string pcie_type;         // "" if no PCI Express capability (or unreadable)
    std::optional<PciLink> link;   // none for a root-complex integrated endpoint
    std::vector<PciBar> bars;
    std::optional<unsigned> msix_vectors;
    bool msix_enabled = false;
    std::string driver;            // "" if no driver is bound
    std::string class_device;      // the driver's device: "peach2-0" ("" if none)
    std::string class_dir;         // its sysfs directory
};

struct PciScan {
    std::vector<PciView> cards;    // every PEACH2 function, in bus order
    bool module_loaded = false;    // /sys/module/peach2 exists
};

// Every PEACH2 card (ids from include/peach2/peach2_hw.h) under `sysfs_root`
// ("/sys", or a fake tree in tests). libpci errors end the program (exit 1).
PciScan scan_cards(const std::string& sysfs_root);

// ---- pure helpers ----------------------------------------------------------
// PCIe Link Speed field (LNKCAP/LNKSTA bits 3:0): "2.5GT/s" ... "64GT/s", or
// "unknown (<code>)".
std::string link_speed_text(unsigned code);
// PCIe capability's device/port type (FLAGS bits 7:4).
std::string pcie_type_text(unsigned type);
// True for the types that have no link (root-complex integrated endpoint and
// event collector): lspci prints no link for them either.
bool pcie_type_has_link(unsigned type);
// A BAR size as lspci prints it: 16K, 64M, 64G, 100 (bytes).
std::string size_text(std::uint64_t bytes);
// "0000:00:03.0".
std::string pci_address(unsigned domain, unsigned bus, unsigned dev, unsigned func);
// A BAR from libpci's base_addr (with the flag bits) and size.
PciBar decode_bar(unsigned index, std::uint64_t base_with_flags, std::uint64_t size);

}  // namespace peach2info
