// SPDX-License-Identifier: MIT
// tca_check <area> <role>: the correctness checks the VM tests run inside
// the guests. Two-node checks run as a pair of roles (recv on one node,
// send on the other; serve and a client). Exit status 0 only if the check
// passed; the last line of a check says PASS or FAIL and why.
#include <cstdio>
#include <cstring>

#include "roles.hpp"

namespace {

struct Role {
    const char *area, *name;
    int (*run)(int, char**);
    const char* about;
};

const Role kRoles[] = {
    {"pio", "recv", tcacheck::pio_recv,
     "owns a buffer between guards; checks every write of `send`"},
    {"pio", "send", tcacheck::pio_send, "writes every offset x size into `recv`'s buffer"},
    {"pio", "bad-node", tcacheck::pio_bad_node,
     "a store to a missing node is counted NO_SUCH_NODE"},
    {"pio", "raw", tcacheck::pio_raw, "one 8-byte store to any window address"},
    {"pio", "order-recv", tcacheck::pio_order_recv,
     "checks that `order-send`'s stamped writes land in order"},
    {"pio", "order-send", tcacheck::pio_order_send, "streams stamped writes without waiting"},
    {"dma", "recv", tcacheck::dma_recv, "owns four lanes; checks every transfer of `send`"},
    {"dma", "send", tcacheck::dma_send,
     "random transfers into `recv`'s lanes, four channels at once"},
    {"dma", "hold", tcacheck::dma_hold, "starts a lot of DMA and waits to be killed"},
    {"dma", "sink", tcacheck::dma_sink, "offers memory to `hold --peer`"},
    {"dma", "chain", tcacheck::dma_chain, "a persistent chain, started and verified many times"},
    {"dma", "restrict", tcacheck::dma_restrict, "rule-breaking requests get the documented errors"},
    {"rp", "serve", tcacheck::rp_serve, "exports memory, then only sleeps"},
    {"rp", "get-verify", tcacheck::rp_get_verify, "random gets from `serve`, every byte checked"},
    {"rp", "faa", tcacheck::rp_faa, "fetch-and-adds on `serve`'s counter"},
    {"rp", "cas-check", tcacheck::rp_cas_check, "compare-and-swap on `serve`'s counter"},
    {"rp", "read-counter", tcacheck::rp_read_counter, "reads `serve`'s counter"},
    {"rp", "expect-refused", tcacheck::rp_expect_refused,
     "a request `serve` must refuse, exactly so"},
    {"rp", "flood", tcacheck::rp_flood, "non-blocking gets as fast as possible"},
    {"info", "", tcacheck::info, "one line: what the library sees of the device"},
};

void usage(std::FILE* out, const char* area) {
    std::fprintf(out,
                 "usage: tca_check AREA ROLE [options]   (tca_check AREA ROLE --help)\n"
                 "PEACH2 correctness checks; exit status 0 only if the check passed.\n");
    for (const Role& r : kRoles)
        if (!area || !std::strcmp(area, r.area))
            std::fprintf(out, "  %-4s %-14s %s\n", r.area, r.name, r.about);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout, nullptr);
        return argc < 2 ? 1 : 0;
    }
    bool known_area = false;
    for (const Role& r : kRoles) {
        if (std::strcmp(argv[1], r.area))
            continue;
        known_area = true;
        if (!*r.name)  // an area that is its own role
            return r.run(argc - 1, argv + 1);
        if (argc > 2 && !std::strcmp(argv[2], r.name))
            return r.run(argc - 2, argv + 2);
    }
    if (known_area && argc > 2 &&
        (!std::strcmp(argv[2], "--help") || !std::strcmp(argv[2], "-h"))) {
        usage(stdout, argv[1]);
        return 0;
    }
    if (known_area)
        std::fprintf(stderr, "tca_check %s: %s\n", argv[1],
                     argc > 2 ? "unknown role" : "which role?");
    else
        std::fprintf(stderr, "tca_check: unknown area '%s'\n", argv[1]);
    usage(stderr, known_area ? argv[1] : nullptr);
    return 1;
}
