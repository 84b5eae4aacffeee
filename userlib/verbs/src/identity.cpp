// SPDX-License-Identifier: MIT
#include "identity.hpp"

#include <endian.h>

namespace pv {

ibv_gid node_gid(std::uint32_t node, std::uint32_t index) noexcept {
    ibv_gid g{};
    g.global.subnet_prefix = htobe64(0xfe80000000000000ull);
    g.global.interface_id = htobe64(node_guid(node, index));
    return g;
}

bool node_of(std::uint16_t lid, bool is_global, const ibv_gid& gid, std::uint32_t node_count,
             std::uint32_t* node) noexcept {
    if (is_global) {
        const std::uint64_t id = be64toh(gid.global.interface_id);
        if ((id & kGuidTagMask) == kGuidTag && (id & 0xff) < node_count) {
            *node = static_cast<std::uint32_t>(id & 0xff);
            return true;
        }
    }
    if (lid >= 1 && lid <= node_count) {
        *node = lid - 1u;
        return true;
    }
    return false;
}

}  // namespace pv
