// peach2-fwgen: build a PEACH2 firmware image (routing tables) from a topology.
//   peach2-fwgen TOPOLOGY OUTPUT [--image-version N]
//   peach2-fwgen --cables TOPOLOGY      (print the cables, one "0E 1W" a line:
//                                        the cluster launcher cables by this)
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "topology.h"

int main(int argc, char** argv) {
    if (argc == 3 && !std::strcmp(argv[1], "--cables")) {
        std::string err;
        const auto topo = peach2::fw::parse_topology(argv[2], &err);
        if (!topo) {
            std::fprintf(stderr, "%s: %s\n", argv[0], err.c_str());
            return 1;
        }
        static const char* ports = "NEWS";
        std::printf("nodes %u\n", topo->nodes);
        for (const auto& c : topo->cables)
            std::printf("%u%c %u%c\n", c.node_a, ports[c.port_a], c.node_b, ports[c.port_b]);
        return 0;
    }
    if (argc < 3 || !std::strcmp(argv[1], "--help")) {
        std::fprintf(stderr,
                     "usage: %s TOPOLOGY OUTPUT [--image-version N]\n"
                     "       %s --cables TOPOLOGY\n"
                     "TOPOLOGY: 2 | ring:N | double-ring:K | cables:N:0E-1W,1E-2W,...\n",
                     argv[0], argv[0]);
        return argc < 3 ? 2 : 0;
    }
    uint32_t version = 1;
    for (int i = 3; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--image-version") && i + 1 < argc)
            version = static_cast<uint32_t>(std::stoul(argv[++i]));
        else {
            std::fprintf(stderr, "%s: unknown argument '%s'\n", argv[0], argv[i]);
            return 2;
        }
    }
    std::string err;
    const auto topo = peach2::fw::parse_topology(argv[1], &err);
    if (!topo) {
        std::fprintf(stderr, "%s: %s\n", argv[0], err.c_str());
        return 1;
    }
    const auto image = peach2::fw::build_image(*topo, version, &err);
    if (!image) {
        std::fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], err.c_str());
        return 1;
    }
    const auto bytes = peach2::fw::encode(*image);
    std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out) {
        std::fprintf(stderr, "%s: cannot write %s\n", argv[0], argv[2]);
        return 1;
    }
    std::printf("%s: %s, %u nodes, %zu entries, %zu bytes\n", argv[2], topo->name.c_str(),
                topo->nodes, image->entries.size(), bytes.size());
    return 0;
}
