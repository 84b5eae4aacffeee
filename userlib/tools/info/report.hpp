// SPDX-License-Identifier: MIT
// peach2-info: what it prints. A Report is every card's PCI view plus, when
// the driver is bound, its state; the formatters are pure (unit-tested), and
// the JSON fields are documented in userlib/tools/info/README.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "card_state.hpp"
#include "pci_view.hpp"

namespace peach2info {

// Exit statuses (documented in the README).
enum ExitStatus : int {
    kExitOk = 0,        // every card found and read through its driver
    kExitUsage = 1,     // bad arguments, or PCI could not be scanned
    kExitNoCard = 2,    // no PEACH2 card on the PCI bus
    kExitNoDriver = 3,  // a card without its driver: PCI view only
};

// JSON format version: bump when a documented field changes meaning or goes.
inline constexpr int kJsonVersion = 1;

struct CardReport {
    PciView pci;
    std::optional<CardState> state;  // none: the driver is not bound
};

struct Report {
    std::string hostname;
    bool module_loaded = false;
    std::vector<CardReport> cards;
};

ExitStatus exit_status(const Report& r);
// "ok", "no-card", "no-driver" (the JSON "status").
const char* status_word(ExitStatus s);
// One line for a user: what is wrong and what to do ("" when all is well).
std::string status_message(const Report& r);

std::string format_text(const Report& r, bool verbose);
std::string format_json(const Report& r);

}  // namespace peach2info
