#include "fw_image.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <tuple>

namespace peach2::fw {
namespace {

constexpr size_t kHeader = sizeof(peach2_fw_header);
constexpr size_t kEntry = sizeof(peach2_fw_entry);
constexpr size_t kCrcOffset = offsetof(peach2_fw_header, crc32);

void put(std::vector<uint8_t>& out, size_t off, uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; ++i)
        out[off + i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get(std::span<const uint8_t> b, size_t off, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i)
        v |= static_cast<uint64_t>(b[off + i]) << (8 * i);
    return v;
}

ParseResult fail(peach2_fw_status s, std::string why) {
    ParseResult r;
    r.status = s;
    r.why = std::move(why);
    return r;
}

}  // namespace

uint32_t crc32_ieee(std::span<const uint8_t> bytes) {
    uLong crc = ::crc32(0L, Z_NULL, 0);
    // zlib takes uInt lengths; images are at most PEACH2_FW_MAX_SIZE anyway.
    for (size_t off = 0; off < bytes.size();) {
        const size_t n = std::min<size_t>(bytes.size() - off, 1u << 30);
        crc = ::crc32(crc, bytes.data() + off, static_cast<uInt>(n));
        off += n;
    }
    return static_cast<uint32_t>(crc);
}

std::vector<uint8_t> encode(const Image& img) {
    std::vector<uint8_t> out(kHeader + kEntry * img.entries.size(), 0);
    put(out, 0, PEACH2_FW_MAGIC, 4);
    put(out, 4, PEACH2_FW_FORMAT, 2);
    put(out, 6, kHeader, 2);
    put(out, 8, out.size(), 4);
    put(out, 16, img.node_count, 2);
    put(out, 18, img.entries.size(), 2);
    put(out, 20, img.image_version, 4);
    std::memcpy(out.data() + 24, img.topology.data(), std::min<size_t>(img.topology.size(), 31));
    size_t off = kHeader;
    for (const auto& e : img.entries) {
        put(out, off + 0, e.node, 2);
        put(out, off + 2, e.port, 1);
        put(out, off + 3, e.index, 1);
        put(out, off + 4, e.flags, 4);
        put(out, off + 8, e.mask, 8);
        put(out, off + 16, e.base, 8);
        put(out, off + 24, e.limit, 8);
        off += kEntry;
    }
    put(out, kCrcOffset, crc32_ieee(out), 4);
    return out;
}

ParseResult parse(std::span<const uint8_t> b) {
    if (b.size() < kHeader)
        return fail(PEACH2_FW_TRUNCATED,
                    "image of " + std::to_string(b.size()) + " bytes is shorter than its header");
    if (get(b, 0, 4) != PEACH2_FW_MAGIC)
        return fail(PEACH2_FW_BAD_MAGIC, "not a PEACH2 firmware image (bad magic)");
    if (get(b, 4, 2) != PEACH2_FW_FORMAT)
        return fail(PEACH2_FW_BAD_VERSION, "image format " + std::to_string(get(b, 4, 2)) +
                                               ", this card knows " +
                                               std::to_string(PEACH2_FW_FORMAT));
    const uint64_t header_size = get(b, 6, 2), total = get(b, 8, 4), n = get(b, 18, 2);
    if (header_size != kHeader || total != b.size() || total != kHeader + n * kEntry)
        return fail(PEACH2_FW_TRUNCATED,
                    "image sizes do not add up (header " + std::to_string(header_size) +
                        ", total " + std::to_string(total) + ", " + std::to_string(n) +
                        " entries, got " + std::to_string(b.size()) + " bytes)");
    std::vector<uint8_t> copy(b.begin(), b.end());
    put(copy, kCrcOffset, 0, 4);
    if (crc32_ieee(copy) != get(b, kCrcOffset, 4))
        return fail(PEACH2_FW_BAD_CRC, "CRC mismatch: the image is corrupt");
    if (get(b, 56, 4) != 0 || get(b, 60, 4) != 0)
        return fail(PEACH2_FW_BAD_ENTRY, "reserved header fields are not zero");
    ParseResult r;
    Image& img = r.image;
    img.node_count = static_cast<uint32_t>(get(b, 16, 2));
    img.image_version = static_cast<uint32_t>(get(b, 20, 4));
    const char* topo = reinterpret_cast<const char*>(b.data() + 24);
    img.topology.assign(topo, strnlen(topo, 32));
    if (img.node_count < 1 || img.node_count > PEACH2_MAX_NODES)
        return fail(PEACH2_FW_WRONG_TOPOLOGY, "node count " + std::to_string(img.node_count));
    std::set<std::tuple<uint16_t, uint8_t, uint8_t>> seen;
    for (uint64_t i = 0; i < n; ++i) {
        const size_t off = kHeader + i * kEntry;
        peach2_fw_entry e{};
        e.node = static_cast<uint16_t>(get(b, off, 2));
        e.port = static_cast<uint8_t>(get(b, off + 2, 1));
        e.index = static_cast<uint8_t>(get(b, off + 3, 1));
        e.flags = static_cast<uint32_t>(get(b, off + 4, 4));
        e.mask = get(b, off + 8, 8);
        e.base = get(b, off + 16, 8);
        e.limit = get(b, off + 24, 8);
        const std::string where = "entry " + std::to_string(i);
        if (e.node >= img.node_count || e.port > PEACH2_PORT_S || e.index >= PEACH2_ROUTE_ENTRIES)
            return fail(PEACH2_FW_BAD_ENTRY, where + ": node, port or index out of range");
        if (e.flags & ~PEACH2_ROUTE_VALID)
            return fail(PEACH2_FW_BAD_ENTRY, where + ": unknown flags");
        if (e.base > e.limit || (e.base & ~e.mask) || (e.limit & ~e.mask))
            return fail(PEACH2_FW_BAD_ENTRY, where + ": base/limit outside the mask or reversed");
        if (!seen.insert({e.node, e.port, e.index}).second)
            return fail(PEACH2_FW_BAD_ENTRY, where + ": duplicate node/port/index");
        img.entries.push_back(e);
    }
    return r;
}

ParseResult parse_for_node(std::span<const uint8_t> bytes, uint32_t node_id, uint32_t node_count) {
    ParseResult r = parse(bytes);
    if (r.status != PEACH2_FW_OK)
        return r;
    if (r.image.node_count != node_count)
        return fail(PEACH2_FW_WRONG_TOPOLOGY, "image is for " + std::to_string(r.image.node_count) +
                                                  " nodes (" + r.image.topology +
                                                  "), this card is in a cluster of " +
                                                  std::to_string(node_count));
    if (std::none_of(r.image.entries.begin(), r.image.entries.end(),
                     [&](const peach2_fw_entry& e) { return e.node == node_id; }))
        return fail(PEACH2_FW_NO_ENTRIES,
                    "image has no entries for node " + std::to_string(node_id));
    return r;
}

}  // namespace peach2::fw
