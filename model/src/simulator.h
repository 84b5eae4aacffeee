// Discrete-event model of PEACH2 hardware: replays a Workload and predicts
// when every operation would have happened on real cards.
//
// Resources (each a FIFO server): per node the CPU's stores, the N port in
// each direction, the host's memory path, the DMA datapath, and the egress of
// each cabled port. Packets move through them at TLP granularity (a packet
// starts on the next resource once its first TLP is through), so a flow costs
// its slowest resource and flows that share one divide it. DMA channels fetch
// descriptors (on-card, host or none for register mode), read their sources
// with a bounded window and keep their packets in order. Each node's user
// program, driver and card replay their steps in recorded order, and a step
// after an observation (a delivery, a DMA end) waits for it in the model.
// docs/timing-model.md describes the model and its limits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "params.h"
#include "workload.h"

namespace peach2::model {

using Time = int64_t;  // picoseconds
inline constexpr Time kUnknown = -1;

struct SimOptions {
    // Host time between a node's operations, as recorded under emulation,
    // counts scaled by this factor (0: only the hardware's time counts; the
    // prediction is then "the communication with host code taking no time").
    double host_scale = 0.0;
};

struct ResourceUse {
    std::string name;  // e.g. "node0 link E"
    uint32_t node = 0;
    Time busy = 0;  // time serving
    uint64_t bytes = 0;
    uint64_t packets = 0;
};

// From the CPU issuing it until the CPU waiting for it can see it (its last
// byte delivered and noticed by a polling CPU; a DMA run without packets:
// DONE seen).
struct OpTiming {
    Time begin = kUnknown, end = kUnknown;
};

struct Prediction {
    Time end = 0;                        // the whole run
    std::vector<OpTiming> ops;           // per Workload::ops
    std::vector<Time> context_end;       // per Workload::contexts: its last step done
    std::vector<Time> run_done;          // per Workload::runs
    std::vector<Time> delivered;         // per Workload::packets
    std::vector<ResourceUse> resources;  // every resource that served something
    uint64_t events = 0;
    std::vector<std::string> warnings;
};

Prediction simulate(const Workload& w, const Params& p, const SimOptions& opt = {});

// Picoseconds as microseconds / nanoseconds, for reports.
inline double us(Time t) { return static_cast<double>(t) / 1e6; }
inline double ns(Time t) { return static_cast<double>(t) / 1e3; }

}  // namespace peach2::model
