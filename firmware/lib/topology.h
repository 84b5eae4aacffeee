// Cluster topologies and the routing tables they imply.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fw_image.h"

namespace peach2::fw {

struct Cable {
    uint32_t node_a, port_a, node_b, port_b;  // ports: PEACH2_PORT_E/W/S
};

struct Topology {
    std::string name;  // e.g. "ring:4"
    uint32_t nodes = 0;
    std::vector<Cable> cables;
};

// "2" or "direct:2" (node0.E-node1.W), "ring:N" (node i E to node i+1 W,
// 2 <= N <= 16), "double-ring:K" (two rings of K nodes, node i S to node i+K S,
// 2K <= 16), or "cables:N:0E-1W,1E-2W,..." for anything else.
std::optional<Topology> parse_topology(const std::string& spec, std::string* err);

// Hops between every pair (BFS over the cables); -1 if unreachable.
std::vector<std::vector<int>> hop_matrix(const Topology& t);

// The first hop from `from` towards `to`: among the ports on a shortest path,
// S before E before W (so each port's destinations stay contiguous ranges in
// rings and double rings). nullopt if unreachable or from == to.
std::optional<uint32_t> first_hop_port(const Topology& t, const std::vector<std::vector<int>>& hops,
                                       uint32_t from, uint32_t to);

// Routing entries for every node, or nullopt (and *err) when a port would
// need more than PEACH2_ROUTE_ENTRIES address ranges or a node is unreachable.
std::optional<std::vector<peach2_fw_entry>> routes(const Topology& t, std::string* err);

// A complete image for the topology.
std::optional<Image> build_image(const Topology& t, uint32_t image_version, std::string* err);

}  // namespace peach2::fw
