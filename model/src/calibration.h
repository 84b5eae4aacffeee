// The papers' experiments, replayed through the model as synthetic traces, and
// the figures the papers measured: the calibration the model must pass
// (model/tests/calibration_test.cc, `peach2-model --calibration`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "params.h"
#include "trace_format.h"

namespace peach2::model {

struct Figure {
    std::string id;          // short name, e.g. "pio_latency"
    std::string what;        // what was measured
    std::string source;      // paper and section
    std::string profile;     // parameter profile (FPGA logic version) it is checked in
    std::string unit;        // "us", "GB/s", "%"
    std::string paper_text;  // the paper's statement, e.g. "0.9", "< 5", "30-40"
    double paper = 0;        // the paper's value (middle of a range)
    double lo = 0, hi = 0;   // accepted model values: the statement widened by 10 %
    double model = 0;        // what the model predicts
    uint32_t bytes = 0;      // message size of the point (0: not a single size)
    // What a benchmark row must be to compare with it: the operation ("PIO put",
    // "DMA run", "get", "atomic" as peach2-model names them), the DMA mode
    // ("on-card", "host", "register", "-") and "latency" or "bandwidth".
    std::string op = "-", mode = "-", metric = "-";
    bool ok() const { return model >= lo && model <= hi; }
};

// Every figure, measured with the profiles of `params_text`.
std::optional<std::vector<Figure>> calibrate(const std::string& params_text, std::string* err);

// ---- The experiments (all times in µs; NaN if the model could not run it) ----
// PIO ping-pong between node 0 and `peer` (topology as cluster.py takes it):
// one-way time, the round trip halved as in 004 §4.2.
double pio_pingpong_us(const Params& p, uint32_t bytes, const std::string& topology = "2",
                       uint32_t peer = 1);
// DMA ping-pong, one way: a descriptor of `bytes` (register mode, or a chain
// with an 8-byte status word after the data when `status_word`).
double dma_pingpong_us(const Params& p, trace::DmaMode mode, uint32_t bytes, bool status_word);
// Local DMA as 004 §4.1 measured it: kick to DONE seen by the CPU, `descs`
// descriptors of `bytes` each within one node.
double local_dma_us(const Params& p, trace::DmaMode mode, uint32_t descs, uint32_t bytes);
// Register mode against one descriptor (host memory), local: T_desc / T_reg - 1, in %.
double register_speedup_pct(const Params& p, uint32_t bytes);
// A read-proxy get (op 1) or atomic (2 CAS, 3 FAA), node 0 from node 1.
double read_proxy_us(const Params& p, uint8_t op, uint32_t bytes);

// Predicted latency and bandwidth by message size, per operation, for charts.
struct CurvePoint {
    std::string series;  // "PIO", "DMA on-card", "DMA host", "DMA register", "get"
    uint32_t bytes = 0;
    double latency_us = 0;
    double gbps = 0;
};
std::vector<CurvePoint> curves(const Params& p);

}  // namespace peach2::model
