// peach2-fwdump: check and print a PEACH2 firmware image.
//   peach2-fwdump IMAGE [--node N --nodes M]   (also check it fits that card)
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fw_image.h"

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help")) {
        std::fprintf(stderr, "usage: %s IMAGE [--node N --nodes M]\n", argv[0]);
        return argc < 2 ? 2 : 0;
    }
    long node = -1, nodes = -1;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--node"))
            node = std::stol(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--nodes"))
            nodes = std::stol(argv[i + 1]);
    }
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
        return 1;
    }
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    const auto r = (node >= 0 && nodes > 0)
                       ? peach2::fw::parse_for_node(bytes, static_cast<uint32_t>(node),
                                                    static_cast<uint32_t>(nodes))
                       : peach2::fw::parse(bytes);
    if (r.status != PEACH2_FW_OK) {
        std::printf("%s: INVALID (%s, status %d): %s\n", argv[1], peach2_fw_status_text(r.status),
                    r.status, r.why.c_str());
        return 1;
    }
    const auto& img = r.image;
    std::printf(
        "%s: PEACH2 firmware format %u, image version %u, topology '%s', %u nodes, "
        "%zu entries, %zu bytes, CRC ok\n",
        argv[1], PEACH2_FW_FORMAT, img.image_version, img.topology.c_str(), img.node_count,
        img.entries.size(), bytes.size());
    static const char* ports = "NEWS";
    std::printf("%5s %4s %3s %18s %18s %18s  nodes\n", "node", "port", "idx", "mask", "base",
                "limit");
    for (const auto& e : img.entries)
        std::printf("%5u %4c %3u 0x%016" PRIx64 " 0x%016" PRIx64 " 0x%016" PRIx64 "  %u..%u\n",
                    e.node, ports[e.port], e.index, e.mask, e.base, e.limit,
                    PEACH2_ADDR_NODE(e.base), PEACH2_ADDR_NODE(e.limit));
    return 0;
}
