#include "topology.h"

#include <deque>
#include <sstream>
#include <tuple>

namespace peach2::fw {
namespace {

constexpr uint64_t kMask = (PEACH2_WINDOW_SIZE - 1) & ~(PEACH2_SLICE_SIZE - 1);

std::optional<uint32_t> parse_u32(const std::string& s) {
    if (s.empty() || s.size() > 4 || s.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    return static_cast<uint32_t>(std::stoul(s));
}

std::optional<uint32_t> parse_port(char c) {
    switch (c) {
    case 'E':
    case 'e': return PEACH2_PORT_E;
    case 'W':
    case 'w': return PEACH2_PORT_W;
    case 'S':
    case 's': return PEACH2_PORT_S;
    default: return std::nullopt;
    }
}

// "3E" -> (3, E)
std::optional<std::pair<uint32_t, uint32_t>> parse_end(const std::string& s) {
    if (s.size() < 2)
        return std::nullopt;
    const auto node = parse_u32(s.substr(0, s.size() - 1));
    const auto port = parse_port(s.back());
    if (!node || !port)
        return std::nullopt;
    return std::make_pair(*node, *port);
}

bool valid(const Topology& t, std::string* err) {
    if (t.nodes < 2 || t.nodes > PEACH2_MAX_NODES) {
        *err = "a topology has 2.." + std::to_string(PEACH2_MAX_NODES) + " nodes";
        return false;
    }
    std::vector<std::vector<bool>> used(t.nodes, std::vector<bool>(PEACH2_NR_PORTS, false));
    for (const auto& c : t.cables) {
        if (c.node_a >= t.nodes || c.node_b >= t.nodes || c.node_a == c.node_b) {
            *err = "cable between nodes " + std::to_string(c.node_a) + " and " +
                   std::to_string(c.node_b) + " of " + std::to_string(t.nodes);
            return false;
        }
        for (auto [n, p] : {std::pair{c.node_a, c.port_a}, std::pair{c.node_b, c.port_b}}) {
            if (used[n][p]) {
                *err = "node " + std::to_string(n) + " has two cables on one port";
                return false;
            }
            used[n][p] = true;
        }
    }
    return true;
}

}  // namespace

std::optional<Topology> parse_topology(const std::string& spec, std::string* err) {
    Topology t;
    t.name = spec;
    const auto colon = spec.find(':');
    const std::string kind = spec.substr(0, colon);
    const std::string arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
    if (colon == std::string::npos && parse_u32(spec) == 2u) {
        t.nodes = 2;
        t.cables = {{0, PEACH2_PORT_E, 1, PEACH2_PORT_W}};
    } else if (kind == "direct" && parse_u32(arg) == 2u) {
        t.nodes = 2;
        t.cables = {{0, PEACH2_PORT_E, 1, PEACH2_PORT_W}};
    } else if (kind == "ring" && parse_u32(arg)) {
        t.nodes = *parse_u32(arg);
        for (uint32_t i = 0; i < t.nodes && t.nodes >= 2; ++i)
            t.cables.push_back({i, PEACH2_PORT_E, (i + 1) % t.nodes, PEACH2_PORT_W});
    } else if (kind == "double-ring" && parse_u32(arg)) {
        const uint32_t k = *parse_u32(arg);
        t.nodes = 2 * k;
        for (uint32_t r = 0; r < 2 && k >= 2; ++r)
            for (uint32_t i = 0; i < k; ++i)
                t.cables.push_back({r * k + i, PEACH2_PORT_E, r * k + (i + 1) % k, PEACH2_PORT_W});
        for (uint32_t i = 0; i < k; ++i)
            t.cables.push_back({i, PEACH2_PORT_S, i + k, PEACH2_PORT_S});
    } else if (kind == "cables") {
        // cables:N:0E-1W,1E-2W
        const auto c2 = arg.find(':');
        const auto n = parse_u32(arg.substr(0, c2));
        if (!n || c2 == std::string::npos) {
            *err = "expected cables:N:AE-BW,...";
            return std::nullopt;
        }
        t.nodes = *n;
        std::stringstream ss(arg.substr(c2 + 1));
        std::string item;
        while (std::getline(ss, item, ',')) {
            const auto dash = item.find('-');
            const auto a = parse_end(item.substr(0, dash));
            const auto b =
                dash == std::string::npos ? std::nullopt : parse_end(item.substr(dash + 1));
            if (!a || !b) {
                *err = "bad cable '" + item + "' (expected like 0E-1W)";
                return std::nullopt;
            }
            t.cables.push_back({a->first, a->second, b->first, b->second});
        }
    } else {
        *err = "unknown topology '" + spec + "' (2, ring:N, double-ring:K, cables:N:0E-1W,...)";
        return std::nullopt;
    }
    if (t.name.size() > 31) {
        *err = "topology name longer than 31 characters";
        return std::nullopt;
    }
    if (!valid(t, err))
        return std::nullopt;
    return t;
}

std::vector<std::vector<int>> hop_matrix(const Topology& t) {
    std::vector<std::vector<uint32_t>> adj(t.nodes);
    for (const auto& c : t.cables) {
        adj[c.node_a].push_back(c.node_b);
        adj[c.node_b].push_back(c.node_a);
    }
    std::vector<std::vector<int>> d(t.nodes, std::vector<int>(t.nodes, -1));
    for (uint32_t s = 0; s < t.nodes; ++s) {
        std::deque<uint32_t> q{s};
        d[s][s] = 0;
        while (!q.empty()) {
            const uint32_t u = q.front();
            q.pop_front();
            for (uint32_t v : adj[u])
                if (d[s][v] < 0) {
                    d[s][v] = d[s][u] + 1;
                    q.push_back(v);
                }
        }
    }
    return d;
}

std::optional<uint32_t> first_hop_port(const Topology& t, const std::vector<std::vector<int>>& hops,
                                       uint32_t from, uint32_t to) {
    if (from == to || hops[from][to] < 0)
        return std::nullopt;
    std::optional<uint32_t> best;
    for (const auto& c : t.cables) {
        for (auto [me, port, peer] :
             {std::tuple{c.node_a, c.port_a, c.node_b}, std::tuple{c.node_b, c.port_b, c.node_a}}) {
            if (me != from || hops[peer][to] != hops[from][to] - 1)
                continue;
            // Preference S, E, W: ranks 0, 1, 2.
            const auto rank = [](uint32_t p) {
                return p == PEACH2_PORT_S ? 0 : p == PEACH2_PORT_E ? 1 : 2;
            };
            if (!best || rank(port) < rank(*best))
                best = port;
        }
    }
    return best;
}

std::optional<std::vector<peach2_fw_entry>> routes(const Topology& t, std::string* err) {
    const auto hops = hop_matrix(t);
    std::vector<peach2_fw_entry> out;
    for (uint32_t n = 0; n < t.nodes; ++n) {
        // Destination node sets per port; N is the node itself.
        std::vector<std::vector<bool>> dest(PEACH2_NR_PORTS, std::vector<bool>(t.nodes, false));
        dest[PEACH2_PORT_N][n] = true;
        for (uint32_t d = 0; d < t.nodes; ++d) {
            if (d == n)
                continue;
            const auto p = first_hop_port(t, hops, n, d);
            if (!p) {
                *err = "node " + std::to_string(d) + " cannot be reached from node " +
                       std::to_string(n);
                return std::nullopt;
            }
            dest[*p][d] = true;
        }
        for (uint32_t p = 0; p < PEACH2_NR_PORTS; ++p) {
            uint8_t index = 0;
            for (uint32_t d = 0; d < t.nodes;) {
                if (!dest[p][d]) {
                    ++d;
                    continue;
                }
                uint32_t e = d;
                while (e + 1 < t.nodes && dest[p][e + 1])
                    ++e;
                if (index >= PEACH2_ROUTE_ENTRIES) {
                    *err = "node " + std::to_string(n) + " port " + std::to_string(p) +
                           " needs more than " + std::to_string(PEACH2_ROUTE_ENTRIES) +
                           " address ranges";
                    return std::nullopt;
                }
                out.push_back({static_cast<uint16_t>(n), static_cast<uint8_t>(p), index++,
                               PEACH2_ROUTE_VALID, kMask, PEACH2_NODE_BASE(d),
                               PEACH2_NODE_BASE(e)});
                d = e + 1;
            }
        }
    }
    return out;
}

std::optional<Image> build_image(const Topology& t, uint32_t image_version, std::string* err) {
    auto entries = routes(t, err);
    if (!entries)
        return std::nullopt;
    Image img;
    img.node_count = t.nodes;
    img.image_version = image_version;
    img.topology = t.name;
    img.entries = std::move(*entries);
    return img;
}

}  // namespace peach2::fw
