// SPDX-License-Identifier: MIT
// peach2-info: the driver's view of a card, read from its sysfs directory
// (/sys/class/peach2/peach2-<n>, attributes in driver/sysfs.c and
// driver/README.md). The parsers take the text of one attribute and are pure;
// read_card_state() reads a whole directory (a real one or a fake tree in a
// test) and records what it could not read instead of giving up.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace peach2info {

// One port: N is the host port (no link attribute); E, W, S carry cables.
struct PortState {
    char port = '?';
    std::string link;            // "host" (N), "up", "connected", "down"; "" if unread
    std::optional<unsigned> peer_node;  // when up: who is at the other end
    char peer_port = 0;
    bool have_counters = false;
    std::uint64_t tx_pkts = 0, tx_bytes = 0, rx_pkts = 0, rx_bytes = 0;
};

struct ErrorByCode {
    unsigned code = 0;
    std::string name;            // as the driver prints it (peach2_err_name)
    std::uint64_t count = 0;
};

struct DmaChannel {
    unsigned channel = 0;
    std::string state;           // idle, busy, wedged
    std::uint64_t queued = 0, completed = 0, errors = 0;
};

struct CardState {
    std::string device;          // "peach2-0"
    std::string sysfs_dir;
    std::optional<unsigned> node_id, node_count;
    std::string hw_version;      // "1.1"
    std::string fw_status, fw_topology;
    std::optional<std::uint64_t> fw_version, fw_routes;
    std::vector<PortState> ports;  // N, E, W, S
    std::optional<std::uint64_t> err_count, err_last, err_status;
    std::vector<ErrorByCode> errors_by_code;
    std::vector<DmaChannel> dma;
    std::optional<std::uint64_t> desc_used, desc_free;
    std::vector<std::pair<std::string, std::uint64_t>> read_proxy;  // driver's order
    // "<attribute>: <why>" for every attribute that could not be read or parsed.
    std::vector<std::string> problems;
};

// ---- parsers of one attribute's text (false: not in the driver's format) ----
// link_e/_w/_s: "up peer=<node> port=<E|W|S>", "connected" or "down".
bool parse_link(std::string_view text, PortState* port);
// counters: "<P> tx_pkts=.. tx_bytes=.. rx_pkts=.. rx_bytes=.." per port.
bool parse_counters(std::string_view text, std::vector<PortState>* ports);
// errors_by_code: "<code> <NAME> <count>" lines (only non-zero counts).
bool parse_errors_by_code(std::string_view text, std::vector<ErrorByCode>* out);
// dma: "ch<k> <state> queued=.. completed=.. errors=.." lines.
bool parse_dma(std::string_view text, std::vector<DmaChannel>* out);
// dma_desc_ram: "used=<n> free=<n>".
bool parse_desc_ram(std::string_view text, std::uint64_t* used, std::uint64_t* free);
// rproxy: "<name> <value>" lines.
bool parse_name_values(std::string_view text,
                       std::vector<std::pair<std::string, std::uint64_t>>* out);
// A number as sysfs prints it: decimal or 0x-hex, nothing else (strict, unlike
// tcatools::parse_u64, which takes the k/M suffixes of command lines: a suffix
// here would mean the driver changed its format).
bool parse_number(std::string_view text, std::uint64_t* out);

// Reads every attribute of `dir` (named `device`). Never fails: what is
// missing or malformed goes to problems.
CardState read_card_state(const std::string& dir, const std::string& device);

// A read-proxy counter by name (0 if absent).
std::uint64_t rp_counter(const CardState& s, std::string_view name);

}  // namespace peach2info
