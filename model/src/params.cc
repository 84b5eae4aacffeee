// Parameter files: `key = number` lines, `[profile NAME]` sections.
#include "params.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace peach2::model {
namespace {

struct Field {
    const char* key;
    double Params::*member;
    double min, max;  // accepted range
};

// Every parameter, once: its file key, where it goes and its sane range.
constexpr Field kFields[] = {
    {"link.raw_gbps", &Params::link_raw_gbps, 0.01, 1000},
    {"link.max_payload_bytes", &Params::link_max_payload_bytes, 4, 4096},
    {"link.tlp_overhead_bytes", &Params::link_tlp_overhead_bytes, 0, 256},
    {"link.flight_ns", &Params::link_flight_ns, 0, 1e6},
    {"card.hop_ns", &Params::card_hop_ns, 0, 1e6},
    {"host.mmio_write_ns", &Params::host_mmio_write_ns, 0, 1e6},
    {"host.mem_write_ns", &Params::host_mem_write_ns, 0, 1e6},
    {"host.poll_ns", &Params::host_poll_ns, 0, 1e6},
    {"host.pio_gbps", &Params::host_pio_gbps, 0.001, 1000},
    {"host.pio_tlp_bytes", &Params::host_pio_tlp_bytes, 4, 4096},
    {"host.read_rtt_ns", &Params::host_read_rtt_ns, 0, 1e6},
    {"host.memory_gbps", &Params::host_memory_gbps, 0.01, 10000},
    {"dma.engine_gbps", &Params::dma_engine_gbps, 0.01, 1000},
    {"dma.window_bytes", &Params::dma_window_bytes, 4, 1 << 30},
    {"dma.prefetch_descs", &Params::dma_prefetch_descs, 1, 1024},
    {"dma.fetch_card_ns", &Params::dma_fetch_card_ns, 0, 1e6},
    {"dma.fetch_host_ns", &Params::dma_fetch_host_ns, 0, 1e6},
    {"dma.done_notice_ns", &Params::dma_done_notice_ns, 0, 1e6},
    {"dma.start_reg_ns", &Params::dma_start_reg_ns, 0, 1e6},
    {"dma.start_chain_ns", &Params::dma_start_chain_ns, 0, 1e6},
    {"irq.latency_ns", &Params::irq_latency_ns, 0, 1e9},
    {"rp.service_ns", &Params::rp_service_ns, 0, 1e9},
    {"rp.atomic_ns", &Params::rp_atomic_ns, 0, 1e9},
};

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos)
        return "";
    const size_t e = s.find_last_not_of(" \t\r");
    return s.substr(b, e - b + 1);
}

const Field* find_field(const std::string& key) {
    for (const Field& f : kFields)
        if (key == f.key)
            return &f;
    return nullptr;
}

// The file as sections: "" (common) and one per profile, each key -> (value, line).
struct Parsed {
    std::string default_profile;
    std::vector<std::string> order;  // profiles in file order
    std::map<std::string, std::map<std::string, std::pair<double, int>>> sections;
};

std::optional<Parsed> parse(const std::string& text, const std::string& name, std::string* err) {
    Parsed p;
    p.sections[""];
    std::string section;
    std::istringstream in(text);
    std::string raw;
    int lineno = 0;
    const auto fail = [&](const std::string& msg) -> std::optional<Parsed> {
        if (err)
            *err = name + ":" + std::to_string(lineno) + ": " + msg;
        return std::nullopt;
    };
    while (std::getline(in, raw)) {
        ++lineno;
        std::string line = trim(raw.substr(0, raw.find('#')));
        if (line.empty())
            continue;
        if (line.front() == '[') {
            if (line.back() != ']' || line.rfind("[profile ", 0) != 0)
                return fail("expected `[profile NAME]`, found `" + line + "`");
            section = trim(line.substr(9, line.size() - 10));
            if (section.empty())
                return fail("a profile needs a name");
            if (p.sections.count(section))
                return fail("profile `" + section + "` defined twice");
            p.sections[section];
            p.order.push_back(section);
            continue;
        }
        const size_t eq = line.find('=');
        if (eq == std::string::npos)
            return fail("expected `key = value`, found `" + line + "`");
        const std::string key = trim(line.substr(0, eq));
        const std::string value = trim(line.substr(eq + 1));
        if (key == "default_profile") {
            if (!section.empty())
                return fail("default_profile belongs before the first profile");
            p.default_profile = value;
            continue;
        }
        const Field* f = find_field(key);
        if (!f)
            return fail("unknown parameter `" + key + "`");
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || errno != 0 || !std::isfinite(v))
            return fail("`" + key + "` needs a number, found `" + value + "`");
        if (v < f->min || v > f->max) {
            std::ostringstream s;
            s << "`" << key << "` = " << v << " is outside " << f->min << " .. " << f->max;
            return fail(s.str());
        }
        auto& sec = p.sections[section];
        if (sec.count(key))
            return fail("`" + key + "` set twice (first on line " +
                        std::to_string(sec[key].second) + ")");
        sec[key] = {v, lineno};
    }
    return p;
}

}  // namespace

std::optional<Params> parse_params(const std::string& text, const std::string& name,
                                   const std::string& profile, std::string* err) {
    auto parsed = parse(text, name, err);
    if (!parsed)
        return std::nullopt;
    Params out;
    out.profile = profile.empty() ? parsed->default_profile : profile;
    if (!out.profile.empty() && !parsed->sections.count(out.profile)) {
        std::string known;
        for (const auto& n : parsed->order)
            known += (known.empty() ? "" : ", ") + n;
        if (err)
            *err = name + ": no profile `" + out.profile +
                   "` (profiles: " + (known.empty() ? "none" : known) + ")";
        return std::nullopt;
    }
    for (const Field& f : kFields) {
        const auto& common = parsed->sections[""];
        const auto& prof = parsed->sections[out.profile];
        if (auto it = prof.find(f.key); it != prof.end())
            out.*f.member = it->second.first;
        else if (auto jt = common.find(f.key); jt != common.end())
            out.*f.member = jt->second.first;
        else {
            if (err)
                *err = name + ": `" + f.key + "` has no value" +
                       (out.profile.empty() ? "" : " in profile `" + out.profile + "`");
            return std::nullopt;
        }
    }
    return out;
}

std::vector<std::string> profiles(const std::string& text) {
    std::string ignored;
    auto parsed = parse(text, "", &ignored);
    return parsed ? parsed->order : std::vector<std::string>{};
}

std::optional<std::string> read_params_file(const std::string& path, std::string* err) {
    std::ifstream in(path);
    if (!in) {
        if (err)
            *err = path + ": cannot open (" + std::strerror(errno) + ")";
        return std::nullopt;
    }
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string describe(const Params& p) {
    std::ostringstream s;
    s << "profile = " << p.profile << "\n";
    for (const Field& f : kFields)
        s << f.key << " = " << p.*f.member << "\n";
    return s.str();
}

}  // namespace peach2::model
