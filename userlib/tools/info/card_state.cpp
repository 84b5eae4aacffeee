// SPDX-License-Identifier: MIT
#include "card_state.hpp"

#include <charconv>

#include "../common/sysfs.hpp"

namespace peach2info {

namespace {

// The lines of `text`, without their newlines; a trailing empty line dropped.
std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        out.push_back(text.substr(0, nl));
        if (nl == std::string_view::npos)
            break;
        text.remove_prefix(nl + 1);
    }
    return out;
}

// The space-separated words of a line.
std::vector<std::string_view> words_of(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
            ++i;
        std::size_t j = i;
        while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r')
            ++j;
        if (j > i)
            out.push_back(line.substr(i, j - i));
        i = j;
    }
    return out;
}

// Calls row(words) for every non-empty line; false as soon as a row is not
// in the expected format.
template <class Row>
bool for_each_row(std::string_view text, Row row) {
    for (std::string_view line : lines_of(text)) {
        const auto w = words_of(line);
        if (!w.empty() && !row(w))
            return false;
    }
    return true;
}

// "key=<number>" with the expected key.
bool keyed_number(std::string_view word, std::string_view key, std::uint64_t* out) {
    if (word.size() <= key.size() + 1 || word.substr(0, key.size()) != key ||
        word[key.size()] != '=')
        return false;
    return parse_number(word.substr(key.size() + 1), out);
}

bool is_port_letter(std::string_view w) {
    return w.size() == 1 && (w[0] == 'N' || w[0] == 'E' || w[0] == 'W' || w[0] == 'S');
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r'))
        s.remove_suffix(1);
    while (!s.empty() && s.front() == ' ')
        s.remove_prefix(1);
    return s;
}

}  // namespace

bool parse_number(std::string_view text, std::uint64_t* out) {
    int base = 10;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        text.remove_prefix(2);
        base = 16;
    }
    if (text.empty())
        return false;
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
    if (ec != std::errc() || end != text.data() + text.size())
        return false;
    *out = v;
    return true;
}

bool parse_link(std::string_view text, PortState* port) {
    const auto w = words_of(trim(text));
    if (w.size() == 1 && (w[0] == "down" || w[0] == "connected")) {
        port->link = std::string(w[0]);
        port->peer_node.reset();
        port->peer_port = 0;
        return true;
    }
    std::uint64_t node = 0;
    if (w.size() != 3 || w[0] != "up" || !keyed_number(w[1], "peer", &node) ||
        w[2].size() != 6 || w[2].substr(0, 5) != "port=" || !is_port_letter(w[2].substr(5)))
        return false;
    port->link = "up";
    port->peer_node = static_cast<unsigned>(node);
    port->peer_port = w[2][5];
    return true;
}

bool parse_counters(std::string_view text, std::vector<PortState>* ports) {
    static constexpr std::string_view kKeys[] = {"tx_pkts", "tx_bytes", "rx_pkts", "rx_bytes"};
    std::vector<PortState> parsed;
    const bool ok = for_each_row(text, [&](const std::vector<std::string_view>& w) {
        if (w.size() != 5 || !is_port_letter(w[0]))
            return false;
        PortState p;
        p.port = w[0][0];
        std::uint64_t* fields[] = {&p.tx_pkts, &p.tx_bytes, &p.rx_pkts, &p.rx_bytes};
        for (std::size_t k = 0; k < 4; ++k)
            if (!keyed_number(w[k + 1], kKeys[k], fields[k]))
                return false;
        p.have_counters = true;
        parsed.push_back(p);
        return true;
    });
    if (!ok)
        return false;
    // Merge into the ports already known (by letter), in their order.
    for (const PortState& p : parsed) {
        PortState* into = nullptr;
        for (PortState& q : *ports)
            if (q.port == p.port)
                into = &q;
        if (!into) {
            ports->push_back(PortState{});
            into = &ports->back();
            into->port = p.port;
        }
        into->have_counters = true;
        into->tx_pkts = p.tx_pkts;
        into->tx_bytes = p.tx_bytes;
        into->rx_pkts = p.rx_pkts;
        into->rx_bytes = p.rx_bytes;
    }
    return true;
}

bool parse_errors_by_code(std::string_view text, std::vector<ErrorByCode>* out) {
    std::vector<ErrorByCode> v;
    const bool ok = for_each_row(text, [&](const std::vector<std::string_view>& w) {
        std::uint64_t code = 0, count = 0;
        if (w.size() != 3 || !parse_number(w[0], &code) || !parse_number(w[2], &count))
            return false;
        v.push_back({static_cast<unsigned>(code), std::string(w[1]), count});
        return true;
    });
    if (ok)
        *out = std::move(v);
    return ok;
}

bool parse_dma(std::string_view text, std::vector<DmaChannel>* out) {
    std::vector<DmaChannel> v;
    const bool ok = for_each_row(text, [&](const std::vector<std::string_view>& w) {
        std::uint64_t ch = 0;
        DmaChannel c;
        if (w.size() != 5 || w[0].size() < 3 || w[0].substr(0, 2) != "ch" ||
            !parse_number(w[0].substr(2), &ch) || !keyed_number(w[2], "queued", &c.queued) ||
            !keyed_number(w[3], "completed", &c.completed) ||
            !keyed_number(w[4], "errors", &c.errors))
            return false;
        c.channel = static_cast<unsigned>(ch);
        c.state = std::string(w[1]);
        v.push_back(std::move(c));
        return true;
    });
    if (ok)
        *out = std::move(v);
    return ok;
}

bool parse_desc_ram(std::string_view text, std::uint64_t* used, std::uint64_t* free) {
    const auto w = words_of(trim(text));
    std::uint64_t u = 0, f = 0;
    if (w.size() != 2 || !keyed_number(w[0], "used", &u) || !keyed_number(w[1], "free", &f))
        return false;
    *used = u;
    *free = f;
    return true;
}

bool parse_name_values(std::string_view text,
                       std::vector<std::pair<std::string, std::uint64_t>>* out) {
    std::vector<std::pair<std::string, std::uint64_t>> v;
    const bool ok = for_each_row(text, [&](const std::vector<std::string_view>& w) {
        std::uint64_t x = 0;
        if (w.size() != 2 || !parse_number(w[1], &x))
            return false;
        v.emplace_back(std::string(w[0]), x);
        return true;
    });
    if (ok)
        *out = std::move(v);
    return ok;
}

std::uint64_t rp_counter(const CardState& s, std::string_view name) {
    for (const auto& [k, v] : s.read_proxy)
        if (k == name)
            return v;
    return 0;
}

CardState read_card_state(const std::string& dir, const std::string& device) {
    CardState s;
    s.device = device;
    s.sysfs_dir = dir;
    std::string text;
    auto read = [&](const char* name) {
        if (tcatools::read_attr_text(dir, name, &text))
            return true;
        s.problems.push_back(std::string(name) + ": cannot read " + dir + "/" + name);
        return false;
    };
    auto bad = [&](const char* name) {
        s.problems.push_back(std::string(name) + ": unexpected text '" +
                             std::string(trim(text)) + "'");
    };
    auto number = [&](const char* name, std::optional<std::uint64_t>* out) {
        std::uint64_t v = 0;
        if (!read(name))
            return;
        if (parse_number(trim(text), &v))
            *out = v;
        else
            bad(name);
    };
    auto word = [&](const char* name, std::string* out) {
        if (read(name))
            *out = std::string(trim(text));
    };

    std::optional<std::uint64_t> id, count;
    number("node_id", &id);
    number("node_count", &count);
    if (id)
        s.node_id = static_cast<unsigned>(*id);
    if (count)
        s.node_count = static_cast<unsigned>(*count);
    word("hw_version", &s.hw_version);
    word("fw_status", &s.fw_status);
    number("fw_version", &s.fw_version);
    number("fw_routes", &s.fw_routes);
    word("fw_topology", &s.fw_topology);

    s.ports.resize(4);
    s.ports[0].port = 'N';
    s.ports[0].link = "host";
    static constexpr struct { char port; const char* attr; } kLinks[] = {
        {'E', "link_e"}, {'W', "link_w"}, {'S', "link_s"}};
    for (std::size_t k = 0; k < 3; ++k) {
        PortState& p = s.ports[k + 1];
        p.port = kLinks[k].port;
        if (read(kLinks[k].attr) && !parse_link(text, &p))
            bad(kLinks[k].attr);
    }
    if (read("counters") && !parse_counters(text, &s.ports))
        bad("counters");

    number("err_count", &s.err_count);
    number("err_last", &s.err_last);
    number("err_status", &s.err_status);
    if (read("errors_by_code") && !parse_errors_by_code(text, &s.errors_by_code))
        bad("errors_by_code");
    if (read("dma") && !parse_dma(text, &s.dma))
        bad("dma");
    std::uint64_t used = 0, free = 0;
    if (read("dma_desc_ram")) {
        if (parse_desc_ram(text, &used, &free)) {
            s.desc_used = used;
            s.desc_free = free;
        } else {
            bad("dma_desc_ram");
        }
    }
    if (read("rproxy") && !parse_name_values(text, &s.read_proxy))
        bad("rproxy");
    return s;
}

}  // namespace peach2info
