// SPDX-License-Identifier: MIT
// Finding the cards through libpci (pciutils): the same view lspci has.
// Config space beyond the first 64 bytes (the capabilities: PCIe link,
// MSI-X) is readable by root only; other users get the rest.
extern "C" {  // pciutils' header has no C++ guard
#include <pci/pci.h>
}

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "peach2/peach2_hw.h"
#include "pci_view.hpp"

namespace peach2info {

namespace {

void vreport(const char* what, char* msg, std::va_list ap) {
    std::fprintf(stderr, "peach2-info: %s: ", what);
    std::vfprintf(stderr, msg, ap);
    std::fputs("\n", stderr);
}

// libpci's error callback must not return: report and end (exit status 1,
// documented in userlib/tools/info/README.md).
[[noreturn]] void pci_fatal(char* msg, ...) {
    std::va_list ap;
    va_start(ap, msg);
    vreport("libpci", msg, ap);
    va_end(ap);
    std::exit(1);
}

void pci_warn(char* msg, ...) {
    std::va_list ap;
    va_start(ap, msg);
    vreport("libpci warning", msg, ap);
    va_end(ap);
}

void pci_quiet(char*, ...) {}

// RAII for the libpci context.
struct PciAccess {
    pci_access* a = pci_alloc();
    ~PciAccess() { pci_cleanup(a); }
    PciAccess() = default;
    PciAccess(const PciAccess&) = delete;
    PciAccess& operator=(const PciAccess&) = delete;
};

void read_capabilities(pci_dev* d, PciView* v) {
    std::uint8_t probe[4];
    // Beyond the standard header: unreadable for non-root users.
    if (!pci_read_block(d, 0x40, probe, sizeof probe)) {
        v->config_readable = false;
        return;
    }
    if (pci_cap* cap = pci_find_cap(d, PCI_CAP_ID_EXP, PCI_CAP_NORMAL)) {
        const unsigned flags = pci_read_word(d, cap->addr + PCI_EXP_FLAGS);
        const unsigned type = (flags & PCI_EXP_FLAGS_TYPE) >> 4;
        v->pcie_type = pcie_type_text(type);
        if (pcie_type_has_link(type)) {
            const std::uint32_t lnkcap = pci_read_long(d, cap->addr + PCI_EXP_LNKCAP);
            const unsigned lnksta = pci_read_word(d, cap->addr + PCI_EXP_LNKSTA);
            PciLink l;
            l.speed = link_speed_text(lnksta & PCI_EXP_LNKSTA_SPEED);
            l.width = (lnksta & PCI_EXP_LNKSTA_WIDTH) >> 4;
            l.max_speed = link_speed_text(lnkcap & PCI_EXP_LNKCAP_SPEED);
            l.max_width = (lnkcap & PCI_EXP_LNKCAP_WIDTH) >> 4;
            v->link = l;
        }
    }
    if (pci_cap* cap = pci_find_cap(d, PCI_CAP_ID_MSIX, PCI_CAP_NORMAL)) {
        const unsigned flags = pci_read_word(d, cap->addr + PCI_MSI_FLAGS);  // MSI-X shares the offset
        v->msix_vectors = (flags & PCI_MSIX_TABSIZE) + 1;
        v->msix_enabled = flags & PCI_MSIX_ENABLE;
    }
}

// The driver's class device under the PCI device: <dev>/peach2/peach2-<n>.
void find_class_device(const std::string& sysfs_root, PciView* v) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path dir = fs::path(sysfs_root) / "bus/pci/devices" / v->address / "peach2";
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("peach2-", 0) == 0 && (v->class_device.empty() || name < v->class_device)) {
            v->class_device = name;
            v->class_dir = e.path().string();
        }
    }
}

}  // namespace

PciScan scan_cards(const std::string& sysfs_root) {
    PciScan scan;
    PciAccess acc;
    pci_access* a = acc.a;
    a->error = pci_fatal;
    a->warning = pci_warn;
    a->debug = pci_quiet;
    if (sysfs_root != "/sys") {  // a fake tree (tests): sysfs only, no /proc fallback
        a->method = PCI_ACCESS_SYS_BUS_PCI;
        const std::string path = sysfs_root + "/bus/pci";
        pci_set_param(a, const_cast<char*>("sysfs.path"), const_cast<char*>(path.c_str()));
    }
    pci_init(a);
    pci_scan_bus(a);
    for (pci_dev* d = a->devices; d; d = d->next) {
        pci_fill_info(d, PCI_FILL_IDENT | PCI_FILL_CLASS);
        if (d->vendor_id != PEACH2_PCI_VENDOR_ID || d->device_id != PEACH2_PCI_DEVICE_ID)
            continue;
        pci_fill_info(d, PCI_FILL_IRQ | PCI_FILL_BASES | PCI_FILL_SIZES | PCI_FILL_CAPS |
                             PCI_FILL_CLASS_EXT | PCI_FILL_SUBSYS | PCI_FILL_DRIVER);
        PciView v;
        v.address = pci_address(static_cast<unsigned>(d->domain), d->bus, d->dev, d->func);
        v.vendor = d->vendor_id;
        v.device = d->device_id;
        v.class_code = d->device_class;
        v.revision = d->rev_id;
        v.subsys_vendor = d->subsys_vendor_id;
        v.subsys_device = d->subsys_id;
        v.irq = d->irq;
        for (unsigned i = 0; i < 6; ++i)
            if (d->size[i])
                v.bars.push_back(decode_bar(i, d->base_addr[i], d->size[i]));
        read_capabilities(d, &v);
        if (const char* drv = pci_get_string_property(d, PCI_FILL_DRIVER))
            v.driver = drv;
        find_class_device(sysfs_root, &v);
        scan.cards.push_back(std::move(v));
    }
    std::error_code ec;
    scan.module_loaded = std::filesystem::exists(sysfs_root + "/module/peach2", ec);
    return scan;
}

}  // namespace peach2info
