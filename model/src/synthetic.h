// Synthetic traces: the records an emulated cluster would write for a given
// sequence of operations, without running one. The calibration test feeds the
// papers' experiments through the model this way; benchmarks build large
// traces with it. The records follow docs/trace-format.md exactly as the
// device writes them (packet cutting, forwarding, the driver's read-proxy
// replies).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "topology.h"
#include "trace_reader.h"

namespace peach2::model {

class SyntheticRun {
public:
    // Topology as scripts/cluster.py takes it: "2", "ring:4", "double-ring:4", ...
    static std::optional<SyntheticRun> create(const std::string& topology, std::string* err);

    uint32_t nodes() const { return topo_.nodes; }
    // Emulated time passes on a node (host code between operations).
    void host_time(uint32_t node, uint64_t ns);

    // CPU stores of `len` bytes to node `dst`'s host memory at `offset`, cut
    // into write-combined packets (256 bytes, never across 4 KiB).
    void pio(uint32_t src, uint32_t dst, uint64_t offset, uint32_t len);

    struct Desc {
        uint32_t dst_node = 0;
        uint64_t dst_offset = 0;  // in the destination's host memory
        uint32_t len = 0;
        uint64_t src = 0x100000;  // source bus address (IMM: the value)
        bool imm = false;
        uint16_t burst = 0, gap = 0;  // block-stride, gap on the destination
    };
    // A DMA run on `node`'s channel with these descriptors: its start, each
    // descriptor, its packets (with their forwarding and delivery), its end.
    // Returns the run number.
    uint64_t dma(uint32_t node, uint8_t channel, trace::DmaMode mode,
                 const std::vector<Desc>& descs);

    // A read-proxy request (op 1 READ of len bytes, 2 CAS, 3 FAA) from
    // requester to target and the target driver's reply (data, completion
    // record, tag), as driver/rproxy.c builds it.
    void read_proxy(uint32_t requester, uint32_t target, uint8_t op, uint32_t len);

    // The traces, as read_file() would return them.
    std::vector<trace::TraceFile> traces() const;
    // The encoded file of one node.
    std::vector<uint8_t> file_bytes(uint32_t node) const;
    // node<N>.p2trace files in `dir` (created if missing).
    bool write(const std::string& dir, std::string* err) const;
    uint64_t records() const;

private:
    explicit SyntheticRun(fw::Topology t);
    void emit(uint32_t node, trace::Record r);
    // One packet from src to dst along the cables: send, forwards, delivery.
    void packet(trace::Origin origin, uint32_t src, uint32_t dst, uint64_t addr, uint32_t len,
                trace::RecvKind kind, uint8_t channel = trace::kNoPort, uint64_t run = 0,
                uint32_t desc_index = 0, uint8_t op = 0, uint64_t tag = 0);

    fw::Topology topo_;
    std::vector<std::vector<int>> hops_;
    std::vector<std::vector<trace::Record>> records_;
    std::vector<uint64_t> clock_;        // per node, ns
    std::vector<uint64_t> next_number_;  // per (src, dst) pair
    std::vector<uint64_t> next_run_;     // per node
    std::vector<uint64_t> next_tag_;     // per node
    uint64_t host_clock_ = 0;
};

}  // namespace peach2::model
