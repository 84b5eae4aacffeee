// SPDX-License-Identifier: MIT
#include "modes.hpp"

#include <tca/tca.h>

#include <algorithm>

namespace tcatools {

const char* mode_name(Mode m) {
    switch (m) {
    case Mode::Reg: return "reg";
    case Mode::Card: return "card";
    case Mode::Host: return "host";
    case Mode::Pio: return "pio";
    }
    return "?";
}

const char* mode_title(Mode m) {
    switch (m) {
    case Mode::Reg: return "DMA, register mode (one descriptor per run)";
    case Mode::Card: return "DMA, descriptors in on-card RAM";
    case Mode::Host: return "DMA, descriptors in host memory";
    case Mode::Pio: return "PIO (CPU stores through the window)";
    }
    return "?";
}

std::uint32_t mode_flags(Mode m) {
    switch (m) {
    case Mode::Reg: return TCA_DMA_REG_MODE;
    case Mode::Host: return TCA_DMA_HOST_DESC;
    case Mode::Card:
    case Mode::Pio: break;
    }
    return 0;
}

bool parse_mode(std::string_view s, Mode* out) {
    for (unsigned i = 0; i < kModes; ++i)
        if (s == mode_name(static_cast<Mode>(i))) {
            *out = static_cast<Mode>(i);
            return true;
        }
    return false;
}

bool parse_modes(std::string_view s, std::vector<Mode>* out) {
    std::vector<Mode> v;
    for (;;) {
        const std::size_t comma = s.find(',');
        Mode m;
        if (!parse_mode(s.substr(0, comma), &m) || std::find(v.begin(), v.end(), m) != v.end())
            return false;
        v.push_back(m);
        if (comma == std::string_view::npos)
            break;
        s.remove_prefix(comma + 1);
    }
    *out = std::move(v);
    return true;
}

namespace {

std::string names(const std::vector<Mode>& v) {
    std::string s;
    for (Mode m : v)
        s += (s.empty() ? "" : ",") + std::string(mode_name(m));
    return s;
}

}  // namespace

void add_mode_option(Options& opts, const char* name, Mode* out, const char* help, bool dma_only) {
    opts.custom(
        name, "MODE", help, mode_name(*out),
        [out, dma_only](std::string_view s) {
            Mode m;
            if (!parse_mode(s, &m) || (dma_only && m == Mode::Pio))
                return false;
            *out = m;
            return true;
        },
        dma_only ? "reg, card or host" : "reg, card, host or pio");
}

void add_modes_option(Options& opts, const char* name, std::vector<Mode>* out, const char* help,
                      bool dma_only) {
    opts.custom(
        name, "LIST", help, names(*out),
        [out, dma_only](std::string_view s) {
            std::vector<Mode> v;
            if (!parse_modes(s, &v) ||
                (dma_only && std::find(v.begin(), v.end(), Mode::Pio) != v.end()))
                return false;
            *out = std::move(v);
            return true;
        },
        dma_only ? "distinct modes among reg, card, host"
                 : "distinct modes among reg, card, host, pio");
}

}  // namespace tcatools
