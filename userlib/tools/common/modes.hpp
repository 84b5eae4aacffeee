// SPDX-License-Identifier: MIT
// How a program moves data: DMA in one of the three descriptor modes, or
// PIO (CPU stores through the window). Names as on the command lines.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "cli.hpp"

namespace tcatools {

enum class Mode : unsigned { Reg = 0, Card = 1, Host = 2, Pio = 3 };
inline constexpr unsigned kModes = 4;

const char* mode_name(Mode m);   // "reg", "card", "host", "pio"
const char* mode_title(Mode m);  // a line for a heading
// tcaDmaOpts.flags of a DMA mode (0 for Pio).
std::uint32_t mode_flags(Mode m);
bool parse_mode(std::string_view s, Mode* out);
// Comma-separated names; false on an unknown one or a repeat.
bool parse_modes(std::string_view s, std::vector<Mode>* out);

// --name MODE / --name LIST; `dma_only` refuses pio.
void add_mode_option(Options& opts, const char* name, Mode* out, const char* help, bool dma_only);
void add_modes_option(Options& opts, const char* name, std::vector<Mode>* out, const char* help,
                      bool dma_only);

}  // namespace tcatools
