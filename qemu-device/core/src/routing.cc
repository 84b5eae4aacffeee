// Route table registers, firmware loading, the port for an address.
#include "routing.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>

#include "card.h"
#include "fw_image.h"
#include "topology.h"
#include "util.h"

namespace peach2 {

namespace {
constexpr uint64_t kRouteBase = PEACH2_REG_ROUTE(0, 0, 0);
constexpr uint64_t kRouteEnd = PEACH2_REG_ROUTE(PEACH2_NR_PORTS, 0, 0);
}  // namespace

void Router::reset() {
    ctrl_ = 0;
    for (auto& port : routes_)
        port.fill(RouteEntry{});
    fw_addr_ = 0;
    fw_len_ = 0;
    fw_status_ = PEACH2_FW_NONE;
    fw_version_ = 0;
    fw_entries_ = 0;
    fw_topology_.fill(0);
    fw_pending_ = false;
}

bool Router::reg_read(uint64_t off, uint32_t& v) const {
    if (off >= kRouteBase && off < kRouteEnd) {
        const uint64_t rel = off - kRouteBase;
        const RouteEntry& e = routes_[rel / 0x40][(rel % 0x40) / 0x20];
        switch (rel % 0x20) {
        case PEACH2_ROUTE_MASK_LO: v = lo32(e.mask); return true;
        case PEACH2_ROUTE_MASK_HI: v = hi32(e.mask); return true;
        case PEACH2_ROUTE_BASE_LO: v = lo32(e.base); return true;
        case PEACH2_ROUTE_BASE_HI: v = hi32(e.base); return true;
        case PEACH2_ROUTE_LIMIT_LO: v = lo32(e.limit); return true;
        case PEACH2_ROUTE_LIMIT_HI: v = hi32(e.limit); return true;
        case PEACH2_ROUTE_FLAGS: v = e.flags; return true;
        default: return false;
        }
    }
    if (off >= PEACH2_REG_FW_TOPOLOGY && off < PEACH2_REG_FW_TOPOLOGY + fw_topology_.size()) {
        v = static_cast<uint32_t>(load_le(fw_topology_.data() + (off - PEACH2_REG_FW_TOPOLOGY), 4));
        return true;
    }
    switch (off) {
    case PEACH2_REG_ROUTE_CTRL: v = ctrl_; return true;
    case PEACH2_REG_FW_ADDR_LO: v = lo32(fw_addr_); return true;
    case PEACH2_REG_FW_ADDR_HI: v = hi32(fw_addr_); return true;
    case PEACH2_REG_FW_LEN: v = fw_len_; return true;
    case PEACH2_REG_FW_STATUS: v = fw_status_; return true;
    case PEACH2_REG_FW_VERSION: v = fw_version_; return true;
    case PEACH2_REG_FW_ENTRIES: v = fw_entries_; return true;
    default: return false;
    }
}

bool Router::reg_write(uint64_t off, uint32_t val) {
    if (off >= kRouteBase && off < kRouteEnd) {
        const uint64_t rel = off - kRouteBase;
        RouteEntry& e = routes_[rel / 0x40][(rel % 0x40) / 0x20];
        switch (rel % 0x20) {
        case PEACH2_ROUTE_MASK_LO: set_lo32(e.mask, val); return true;
        case PEACH2_ROUTE_MASK_HI: set_hi32(e.mask, val); return true;
        case PEACH2_ROUTE_BASE_LO: set_lo32(e.base, val); return true;
        case PEACH2_ROUTE_BASE_HI: set_hi32(e.base, val); return true;
        case PEACH2_ROUTE_LIMIT_LO: set_lo32(e.limit, val); return true;
        case PEACH2_ROUTE_LIMIT_HI: set_hi32(e.limit, val); return true;
        case PEACH2_ROUTE_FLAGS: e.flags = val & PEACH2_ROUTE_VALID; return true;
        default: return false;
        }
    }
    switch (off) {
    case PEACH2_REG_ROUTE_CTRL: ctrl_ = val & PEACH2_ROUTE_ENABLE; return true;
    case PEACH2_REG_FW_ADDR_LO: set_lo32(fw_addr_, val); return true;
    case PEACH2_REG_FW_ADDR_HI: set_hi32(fw_addr_, val); return true;
    case PEACH2_REG_FW_LEN: fw_len_ = val; return true;
    case PEACH2_REG_FW_CMD:
        if (val != PEACH2_FW_CMD_LOAD || fw_pending_) {
            card_.raise_error(
                PEACH2_ERR_BAD_COMMAND, off,
                "firmware command " + std::to_string(val) + (fw_pending_ ? " while loading" : ""),
                {.value = val});
            return true;
        }
        // Like DMA, the image is read in the bottom half, not in this write.
        fw_status_ = PEACH2_FW_LOADING;
        fw_pending_ = true;
        card_.schedule_service();
        return true;
    default: return false;
    }
}

// First valid entry whose range holds the masked address: N, then E, W, S.
std::optional<unsigned> Router::table_port(uint64_t addr) const {
    for (unsigned p = PEACH2_PORT_N; p < PEACH2_NR_PORTS; ++p)
        for (const RouteEntry& e : routes_[p])
            if ((e.flags & PEACH2_ROUTE_VALID) && (addr & e.mask) >= e.base &&
                (addr & e.mask) <= e.limit)
                return p;
    return std::nullopt;
}

std::optional<unsigned> Router::port_for(uint64_t addr, peach2_err& why) const {
    if (!table_enabled())
        return card_.links().port_to_neighbour(PEACH2_ADDR_NODE(addr), why);
    std::optional<unsigned> port = table_port(addr);
    why = PEACH2_ERR_NO_ROUTE;
    if (port && *port != PEACH2_PORT_N && !card_.links().usable(*port)) {
        why = PEACH2_ERR_LINK_DOWN;
        port.reset();
    }
    return port;
}

namespace {

auto entry_key(const peach2_fw_entry& e) {
    return std::tuple(e.node, e.port, e.index, e.flags, e.mask, e.base, e.limit);
}

// What an image says is cabled to node's ports: its topology text's cables,
// trusted only when that text yields exactly the image's entries (a
// "cables:" text cut at 31 characters, or a hand-made image, does not: then
// nothing is known and HELLOs are checked as under default routing).
std::optional<Cabling> cabling_of(const fw::Image& image, uint32_t node) {
    std::string err;
    const auto topo = fw::parse_topology(image.topology, &err);
    if (!topo || topo->nodes != image.node_count)
        return std::nullopt;
    auto want = fw::routes(*topo, &err);
    if (!want || want->size() != image.entries.size())
        return std::nullopt;
    auto have = image.entries;
    const auto by_key = [](const auto& a, const auto& b) { return entry_key(a) < entry_key(b); };
    std::sort(want->begin(), want->end(), by_key);
    std::sort(have.begin(), have.end(), by_key);
    for (size_t i = 0; i < have.size(); ++i)
        if (entry_key(have[i]) != entry_key((*want)[i]))
            return std::nullopt;
    Cabling c{};
    for (const fw::Cable& cable : topo->cables) {
        if (cable.node_a == node)
            c[cable.port_a] = CabledPeer{cable.node_b, cable.port_b};
        if (cable.node_b == node)
            c[cable.port_b] = CabledPeer{cable.node_a, cable.port_a};
    }
    return c;
}

}  // namespace

void Router::service() {
    if (fw_pending_)
        load_firmware();
}

void Router::refuse_firmware(peach2_fw_status status, const std::string& why) {
    fw_status_ = status;
    const std::string what = std::string("firmware refused (") + peach2_fw_status_text(status) +
                             "): " + why + "; links held down";
    card_.report({PEACH2_ERR_NONE, status, false, fw_addr_, PEACH2_CORE_NONE, PEACH2_CORE_NONE,
                  PEACH2_CORE_NONE, fw_len_, what.c_str()},
                 PEACH2_LOG_GUEST_ERROR);
    card_.links().hold(true);
    card_.raise_interrupt(PEACH2_INT_ERROR);
}

void Router::load_firmware() {
    fw_pending_ = false;
    std::vector<uint8_t> image;
    fw::ParseResult r;
    if (fw_len_ == 0 || fw_len_ > PEACH2_FW_MAX_SIZE) {
        r.status = PEACH2_FW_TRUNCATED;
        r.why = "image length " + std::to_string(fw_len_);
    } else {
        image.resize(fw_len_);
        if (!card_.host_read(fw_addr_, image.data(), image.size())) {
            r.status = PEACH2_FW_READ_FAILED;
            r.why = "cannot read " + std::to_string(fw_len_) + " bytes at " + hex(fw_addr_);
        } else {
            r = fw::parse_for_node(image, card_.cfg().node_id, card_.cfg().node_count);
        }
    }
    if (r.status != PEACH2_FW_OK) {
        refuse_firmware(r.status, r.why);
        return;
    }
    for (auto& port : routes_)
        port.fill(RouteEntry{});
    fw_entries_ = 0;
    for (const auto& e : r.image.entries) {
        if (e.node != card_.cfg().node_id)
            continue;
        routes_[e.port][e.index] = RouteEntry{e.mask, e.base, e.limit, e.flags};
        ++fw_entries_;
    }
    ctrl_ = PEACH2_ROUTE_ENABLE;
    fw_version_ = r.image.image_version;
    fw_topology_.fill(0);
    std::memcpy(fw_topology_.data(), r.image.topology.data(),
                std::min<size_t>(r.image.topology.size(), fw_topology_.size() - 1));
    fw_status_ = PEACH2_FW_OK;
    card_.log(PEACH2_LOG_INFO, [&] {
        return "firmware '" + r.image.topology + "' version " + std::to_string(fw_version_) +
               " applied: " + std::to_string(fw_entries_) + " routes";
    });
    card_.links().set_cabling(cabling_of(r.image, card_.cfg().node_id));
    card_.links().hold(false);
}

}  // namespace peach2
