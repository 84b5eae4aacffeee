// SPDX-License-Identifier: MIT
// peach2-info: what every PEACH2 card on this machine is and what state it is
// in, in one command: the PCI view through libpci (as lspci sees it) and the
// driver's state from sysfs. Read-only and quick: safe while jobs run.
// Output and exit statuses: userlib/tools/info/README.md.
#include <getopt.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "report.hpp"

namespace {

void usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: peach2-info [-v] [--json] [--sysfs DIR]\n"
                 "Every PEACH2 card: PCI view (libpci) and the driver's state (sysfs).\n"
                 "  -v, --verbose   more: every BAR, DMA channel and read-proxy counter\n"
                 "  -j, --json      machine-readable output (fields: userlib/tools/info/README.md)\n"
                 "      --sysfs DIR read sysfs from DIR instead of /sys (tests)\n"
                 "  -h, --help      this text\n"
                 "exit status: 0 all cards read through the driver, 1 bad arguments or PCI\n"
                 "unreadable, 2 no PEACH2 card, 3 a card without its driver (PCI view only)\n");
}

}  // namespace

int main(int argc, char** argv) {
    using namespace peach2info;
    bool verbose = false, json = false;
    std::string sysfs = "/sys";
    static const option kOptions[] = {
        {"verbose", no_argument, nullptr, 'v'}, {"json", no_argument, nullptr, 'j'},
        {"sysfs", required_argument, nullptr, 's'}, {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0}};
    for (int c; (c = getopt_long(argc, argv, "vjh", kOptions, nullptr)) != -1;) {
        switch (c) {
        case 'v': verbose = true; break;
        case 'j': json = true; break;
        case 's': sysfs = optarg; break;
        case 'h': usage(stdout); return kExitOk;
        default: usage(stderr); return kExitUsage;
        }
    }
    if (optind < argc) {
        std::fprintf(stderr, "peach2-info: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return kExitUsage;
    }
    while (sysfs.size() > 1 && sysfs.back() == '/')
        sysfs.pop_back();

    PciScan scan = scan_cards(sysfs);
    std::sort(scan.cards.begin(), scan.cards.end(),
              [](const PciView& a, const PciView& b) { return a.address < b.address; });
    Report r;
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) == 0)
        r.hostname = host;
    r.module_loaded = scan.module_loaded;
    for (PciView& p : scan.cards) {
        CardReport c;
        if (p.driver == "peach2" && !p.class_dir.empty())
            c.state = read_card_state(p.class_dir, p.class_device);
        c.pci = std::move(p);
        r.cards.push_back(std::move(c));
    }

    const ExitStatus st = exit_status(r);
    const std::string out = json ? format_json(r) : format_text(r, verbose);
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
    if (st != kExitOk)
        std::fprintf(stderr, "peach2-info: %s\n", status_message(r).c_str());
    return st;
}
