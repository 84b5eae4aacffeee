// Routing table registers and firmware loading (docs/hardware.md, "Routing",
// "Firmware image"). The card is the authority on images: the driver only
// hands one over; a refused image holds the links down.
#include <algorithm>
#include <cstring>

#include "card.h"
#include "fw_image.h"
#include "util.h"

namespace peach2 {

namespace {
constexpr uint64_t kRouteBase = PEACH2_REG_ROUTE(0, 0, 0);
constexpr uint64_t kRouteEnd = PEACH2_REG_ROUTE(PEACH2_NR_PORTS, 0, 0);
}  // namespace

void Card::routing_reset() {
    route_ctrl_ = 0;
    for (auto& port : routes_)
        port.fill(RouteEntry{});
    fw_addr_ = 0;
    fw_len_ = 0;
    fw_status_ = PEACH2_FW_NONE;
    fw_version_ = 0;
    fw_entries_ = 0;
    fw_topology_.fill(0);
    fw_pending_ = false;
    links_held_ = false;
}

bool Card::routing_reg_read(uint64_t off, uint32_t& v) const {
    if (off >= kRouteBase && off < kRouteEnd) {
        const uint64_t rel = off - kRouteBase;
        const RouteEntry& e = routes_[rel / 0x40][(rel % 0x40) / 0x20];
        switch (rel % 0x20) {
        case PEACH2_ROUTE_MASK_LO: v = static_cast<uint32_t>(e.mask); return true;
        case PEACH2_ROUTE_MASK_HI: v = static_cast<uint32_t>(e.mask >> 32); return true;
        case PEACH2_ROUTE_BASE_LO: v = static_cast<uint32_t>(e.base); return true;
        case PEACH2_ROUTE_BASE_HI: v = static_cast<uint32_t>(e.base >> 32); return true;
        case PEACH2_ROUTE_LIMIT_LO: v = static_cast<uint32_t>(e.limit); return true;
        case PEACH2_ROUTE_LIMIT_HI: v = static_cast<uint32_t>(e.limit >> 32); return true;
        case PEACH2_ROUTE_FLAGS: v = e.flags; return true;
        default: return false;
        }
    }
    if (off >= PEACH2_REG_FW_TOPOLOGY && off < PEACH2_REG_FW_TOPOLOGY + fw_topology_.size()) {
        v = static_cast<uint32_t>(load_le(fw_topology_.data() + (off - PEACH2_REG_FW_TOPOLOGY), 4));
        return true;
    }
    switch (off) {
    case PEACH2_REG_ROUTE_CTRL: v = route_ctrl_; return true;
    case PEACH2_REG_FW_ADDR_LO: v = static_cast<uint32_t>(fw_addr_); return true;
    case PEACH2_REG_FW_ADDR_HI: v = static_cast<uint32_t>(fw_addr_ >> 32); return true;
    case PEACH2_REG_FW_LEN: v = fw_len_; return true;
    case PEACH2_REG_FW_STATUS: v = fw_status_; return true;
    case PEACH2_REG_FW_VERSION: v = fw_version_; return true;
    case PEACH2_REG_FW_ENTRIES: v = fw_entries_; return true;
    default: return false;
    }
}

bool Card::routing_reg_write(uint64_t off, uint32_t val) {
    if (off >= kRouteBase && off < kRouteEnd) {
        const uint64_t rel = off - kRouteBase;
        RouteEntry& e = routes_[rel / 0x40][(rel % 0x40) / 0x20];
        const auto lo = [&](uint64_t& x) { x = (x & ~0xffffffffull) | val; };
        const auto hi = [&](uint64_t& x) { x = (x & 0xffffffffull) | static_cast<uint64_t>(val) << 32; };
        switch (rel % 0x20) {
        case PEACH2_ROUTE_MASK_LO: lo(e.mask); return true;
        case PEACH2_ROUTE_MASK_HI: hi(e.mask); return true;
        case PEACH2_ROUTE_BASE_LO: lo(e.base); return true;
        case PEACH2_ROUTE_BASE_HI: hi(e.base); return true;
        case PEACH2_ROUTE_LIMIT_LO: lo(e.limit); return true;
        case PEACH2_ROUTE_LIMIT_HI: hi(e.limit); return true;
        case PEACH2_ROUTE_FLAGS: e.flags = val & PEACH2_ROUTE_VALID; return true;
        default: return false;
        }
    }
    switch (off) {
    case PEACH2_REG_ROUTE_CTRL: route_ctrl_ = val & PEACH2_ROUTE_ENABLE; return true;
    case PEACH2_REG_FW_ADDR_LO: fw_addr_ = (fw_addr_ & ~0xffffffffull) | val; return true;
    case PEACH2_REG_FW_ADDR_HI:
        fw_addr_ = (fw_addr_ & 0xffffffffull) | static_cast<uint64_t>(val) << 32;
        return true;
    case PEACH2_REG_FW_LEN: fw_len_ = val; return true;
    case PEACH2_REG_FW_CMD:
        if (val != PEACH2_FW_CMD_LOAD || fw_pending_) {
            raise_error(PEACH2_ERR_BAD_COMMAND, off, "firmware command " + std::to_string(val) +
                                                         (fw_pending_ ? " while loading" : ""));
            return true;
        }
        // Like DMA, the image is read in the bottom half, not in this write.
        fw_status_ = PEACH2_FW_LOADING;
        fw_pending_ = true;
        kick();
        return true;
    default: return false;
    }
}

// First valid entry whose range holds the masked address: N, then E, W, S.
std::optional<unsigned> Card::table_port(uint64_t addr) const {
    for (unsigned p = PEACH2_PORT_N; p < PEACH2_NR_PORTS; ++p)
        for (const RouteEntry& e : routes_[p])
            if ((e.flags & PEACH2_ROUTE_VALID) && (addr & e.mask) >= e.base &&
                (addr & e.mask) <= e.limit)
                return p;
    return std::nullopt;
}

void Card::fw_load() {
    fw_pending_ = false;
    std::vector<uint8_t> image;
    fw::ParseResult r;
    if (fw_len_ == 0 || fw_len_ > PEACH2_FW_MAX_SIZE) {
        r.status = PEACH2_FW_TRUNCATED;
        r.why = "image length " + std::to_string(fw_len_);
    } else {
        image.resize(fw_len_);
        if (!host_.dma_read || host_.dma_read(host_.opaque, fw_addr_, image.data(), image.size()) != 0) {
            r.status = PEACH2_FW_READ_FAILED;
            r.why = "cannot read " + std::to_string(fw_len_) + " bytes at " + hex(fw_addr_);
        } else {
            r = fw::parse_for_node(image, cfg_.node_id, cfg_.node_count);
        }
    }
    if (r.status != PEACH2_FW_OK) {
        fw_status_ = r.status;
        log(PEACH2_LOG_GUEST_ERROR, "peach2 node " + std::to_string(cfg_.node_id) +
                                        ": firmware refused (" + peach2_fw_status_text(r.status) +
                                        "): " + r.why + "; links held down");
        if (!links_held_) {
            links_held_ = true;
            raise_interrupt(PEACH2_INT_LINK);
        }
        raise_interrupt(PEACH2_INT_ERROR);
        return;
    }
    for (auto& port : routes_)
        port.fill(RouteEntry{});
    fw_entries_ = 0;
    for (const auto& e : r.image.entries) {
        if (e.node != cfg_.node_id)
            continue;
        routes_[e.port][e.index] = RouteEntry{e.mask, e.base, e.limit, e.flags};
        ++fw_entries_;
    }
    route_ctrl_ = PEACH2_ROUTE_ENABLE;
    fw_version_ = r.image.image_version;
    fw_topology_.fill(0);
    std::memcpy(fw_topology_.data(), r.image.topology.data(),
                std::min<size_t>(r.image.topology.size(), fw_topology_.size() - 1));
    fw_status_ = PEACH2_FW_OK;
    log(PEACH2_LOG_INFO, "firmware '" + r.image.topology + "' version " +
                             std::to_string(fw_version_) + " applied: " +
                             std::to_string(fw_entries_) + " routes");
    if (links_held_) {
        links_held_ = false;
        raise_interrupt(PEACH2_INT_LINK);
    }
}

}  // namespace peach2
