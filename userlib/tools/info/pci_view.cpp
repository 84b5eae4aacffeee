// SPDX-License-Identifier: MIT
#include "pci_view.hpp"

#include <cstdio>

namespace peach2info {

std::string link_speed_text(unsigned code) {
    static const char* const kSpeeds[] = {"2.5GT/s", "5GT/s",  "8GT/s",
                                          "16GT/s",  "32GT/s", "64GT/s"};
    if (code >= 1 && code <= 6)
        return kSpeeds[code - 1];
    return "unknown (" + std::to_string(code) + ")";
}

std::string pcie_type_text(unsigned type) {
    switch (type) {
    case 0x0: return "endpoint";
    case 0x1: return "legacy endpoint";
    case 0x4: return "root port";
    case 0x5: return "upstream port";
    case 0x6: return "downstream port";
    case 0x7: return "PCIe-to-PCI bridge";
    case 0x8: return "PCI-to-PCIe bridge";
    case 0x9: return "root complex integrated endpoint";
    case 0xa: return "root complex event collector";
    default: return "type " + std::to_string(type);
    }
}

bool pcie_type_has_link(unsigned type) { return type != 0x9 && type != 0xa; }

std::string size_text(std::uint64_t bytes) {
    static const char kUnits[] = {'K', 'M', 'G', 'T', 'P', 'E'};
    if (bytes == 0 || bytes % 1024)
        return std::to_string(bytes);
    int unit = -1;
    while (bytes % 1024 == 0 && unit < 5) {
        bytes /= 1024;
        ++unit;
    }
    return std::to_string(bytes) + kUnits[unit];
}

std::string pci_address(unsigned domain, unsigned bus, unsigned dev, unsigned func) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%u", domain & 0xffffu, bus & 0xffu,
                  dev & 0x1fu, func & 7u);
    return buf;
}

PciBar decode_bar(unsigned index, std::uint64_t base_with_flags, std::uint64_t size) {
    PciBar b;
    b.index = index;
    b.size = size;
    b.io = base_with_flags & 0x1;  // PCI_BASE_ADDRESS_SPACE_IO
    if (b.io) {
        b.base = base_with_flags & ~std::uint64_t{0x3};
    } else {
        b.is64 = (base_with_flags & 0x6) == 0x4;   // PCI_BASE_ADDRESS_MEM_TYPE_64
        b.prefetchable = base_with_flags & 0x8;    // PCI_BASE_ADDRESS_MEM_PREFETCH
        b.base = base_with_flags & ~std::uint64_t{0xf};
    }
    return b;
}

}  // namespace peach2info
