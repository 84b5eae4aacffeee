// SPDX-License-Identifier: MIT
// tca_bench <test>: the benchmarks, perftest-style. Run the same command on
// two nodes (each naming the other with --peer); the lower node id
// measures. Every message is checked, and a test exits 0 only if all were.
#include <cstdio>
#include <cstring>

#include "tests.hpp"

namespace {

struct Test {
    const char* name;
    int (*run)(int, char**);
    const char* about;
};

const Test kTests[] = {
    {"pingpong", tcabench::bench_pingpong, "PIO ping-pong latency (the demo)"},
    {"dma", tcabench::bench_dma,
     "DMA and PIO latency and streaming bandwidth, every descriptor mode"},
    {"get", tcabench::bench_get, "read proxy: get latency and bandwidth, CAS/FAA, beside puts"},
    {"crossover", tcabench::bench_crossover, "blocking PIO put against blocking DMA put, per size"},
    {"dma-local", tcabench::bench_dma_local, "DMA between two buffers of one node (one node only)"},
};

void usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: tca_bench TEST --peer NODE [options]   (tca_bench TEST --help)\n"
                 "Benchmarks between two PEACH2 nodes; every message is verified.\n");
    for (const Test& t : kTests)
        std::fprintf(out, "  %-10s %s\n", t.name, t.about);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    for (const Test& t : kTests)
        if (!std::strcmp(argv[1], t.name))
            return t.run(argc - 1, argv + 1);
    std::fprintf(stderr, "tca_bench: unknown test '%s'\n", argv[1]);
    usage(stderr);
    return 1;
}
