// Routing and firmware (docs/hardware.md §5, "Routing", "Firmware"): the
// route table registers, the firmware image the driver hands over (read,
// validated and applied in the bottom half: the card is the authority on
// images; a refused one holds the links down), and the choice of the port a
// packet leaves by.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "peach2/peach2_hw.h"
#include "peach2_core.h"

namespace peach2 {

class Card;

class Router {
public:
    explicit Router(Card& card) : card_(card) {}

    // True while the table routes (a firmware image applied, or ROUTE_CTRL
    // written); otherwise only direct neighbours are reachable.
    bool table_enabled() const { return ctrl_ & PEACH2_ROUTE_ENABLE; }
    // The port a packet for `addr` leaves by: PEACH2_PORT_N means "deliver
    // here". nullopt: none usable, `why` says LINK_DOWN or NO_ROUTE.
    std::optional<unsigned> port_for(uint64_t addr, peach2_err& why) const;
    // The bottom half: load a firmware image handed over by FW_CMD.
    void service();
    bool service_due() const noexcept { return fw_pending_; }

    // Reset: no table, no image (default routing). Registers: ROUTE_CTRL,
    // the route entries, FW_*.
    void reset();
    bool reg_read(uint64_t off, uint32_t& v) const;
    bool reg_write(uint64_t off, uint32_t v);

private:
    struct RouteEntry {
        uint64_t mask = 0, base = 0, limit = 0;
        uint32_t flags = 0;
    };
    std::optional<unsigned> table_port(uint64_t addr) const;
    void load_firmware();
    void refuse_firmware(peach2_fw_status status, const std::string& why);

    Card& card_;
    uint32_t ctrl_ = 0;
    std::array<std::array<RouteEntry, PEACH2_ROUTE_ENTRIES>, PEACH2_NR_PORTS> routes_{};
    uint64_t fw_addr_ = 0;
    uint32_t fw_len_ = 0;
    uint32_t fw_status_ = PEACH2_FW_NONE;
    uint32_t fw_version_ = 0;
    uint32_t fw_entries_ = 0;
    std::array<uint8_t, 32> fw_topology_{};
    bool fw_pending_ = false;
};

}  // namespace peach2
