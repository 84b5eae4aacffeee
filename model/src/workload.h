// What a run's traces say happened, in the form the simulator replays:
// the packets each card originated, DMA runs and their descriptors,
// read-proxy requests, and per node the sequences of operations and the
// observations they waited for (the dependencies), plus the cabling and
// routes the cards used. Building it checks every record's fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace_reader.h"

namespace peach2::model {

inline constexpr uint32_t kNoIndex = ~0u;

// A packet a card originated (a PktSend record).
struct Packet {
    uint16_t src = 0, dst = 0;
    uint32_t bytes = 0;
    trace::Origin origin = trace::Origin::Pio;
    uint8_t out_port = 0;     // the port it left its source card by
    uint32_t run = kNoIndex;  // DMA packets: their run
    bool claimed = false;     // a read-proxy request record names it
    bool received = false;    // its PktRecv was seen
    uint64_t t_host_sent = 0;
    uint64_t t_host_recv = 0;  // its PktRecv at the destination (0: none recorded)
};

struct Desc {
    trace::DmaMode where = trace::DmaMode::ChainCard;
    bool imm = false;
    uint32_t len = 0;
    uint64_t value = 0;             // source address, or the IMM value
    std::vector<uint32_t> packets;  // in the order the card sent them
};

struct Run {
    uint16_t node = 0;
    uint8_t channel = 0;
    trace::DmaMode mode = trace::DmaMode::ChainCard;
    uint64_t id = 0;  // the card's run number
    std::vector<Desc> descs;
    uint32_t packets = 0;
    uint64_t bytes = 0;
    uint64_t t_host_start = 0, t_host_done = 0;
};

struct Request {
    uint16_t node = 0, target = 0;
    uint8_t op = 0;  // 1 READ, 2 CAS, 3 FAA
    uint32_t len = 0;
    uint64_t tag = 0;
    uint32_t packet = kNoIndex;  // the RPREQ packet
    uint32_t answer = kNoIndex;  // the last packet of its answer (the record's tag)
    uint64_t t_host_sent = 0;
};

// Who in a node does a step: the user's program, the driver's interrupt
// thread (read-proxy replies) or the card by itself (answers it generates).
enum class Actor : uint8_t { User, Driver, Card };
inline constexpr unsigned kActors = 3;

enum class StepKind : uint8_t {
    Pio,           // CPU stores: packet `index`
    DmaStart,      // run `index` started (its CTRL write)
    RpRequest,     // request `index` sent
    CardSend,      // the card sends packet `index` by itself
    WaitDelivery,  // packet `index` was delivered here before the next step
    WaitRun,       // run `index` ended before the next step
};

struct Step {
    StepKind kind;
    bool atomic = false;  // DmaStart of a reply to CAS/FAA (extra driver work)
    uint32_t index = 0;
    uint64_t t_emu = 0;  // emulated time of the record
};

struct Context {
    uint16_t node = 0;
    Actor actor = Actor::User;
    std::vector<Step> steps;
};

// An operation as a user sees it, for the report: a PIO put (contiguous
// stores to one node), a DMA run, a get or an atomic.
enum class OpKind : uint8_t { Pio, Dma, Get, Atomic };
struct Op {
    OpKind kind = OpKind::Pio;
    uint16_t node = 0, peer = 0;
    uint64_t bytes = 0;            // data bytes (a DMA run's IMM completion words not counted)
    uint32_t first = 0, last = 0;  // PIO: packets; DMA: the run; get/atomic: the request
    uint64_t t_host_begin = 0, t_host_end = 0;  // emulated, 0 if not recorded
};

struct Workload {
    uint32_t nodes = 0;
    std::vector<bool> traced;  // per node: its trace was given
    std::vector<Packet> packets;
    std::vector<Run> runs;
    std::vector<Request> requests;
    std::vector<Context> contexts;  // kActors per node: node * kActors + actor
    std::vector<Op> ops;
    // Cabling: peer[node * 4 + port] = peer node * 4 + peer port, or -1.
    std::vector<int> peer;
    // route[node * nodes + dst] = the port the traces show a packet leaving
    // `node` for `dst` by, or -1.
    std::vector<int> route;
    // Emulated time spans: per node (its emulated clock) and of the whole run
    // (host clock, shared by all nodes of one machine).
    std::vector<uint64_t> emu_span_ns;
    uint64_t host_span_ns = 0;
    uint64_t records = 0, dropped = 0;
    uint64_t unmatched = 0;  // deliveries whose sender's record is missing
    // Deliveries older than their sender's trace: sent by an earlier instance
    // of a restarted node (whose trace the new one replaced).
    uint64_t earlier_instance = 0;
    std::vector<std::string> warnings;
};

std::optional<Workload> build_workload(const std::vector<trace::TraceFile>& traces,
                                       std::string* err);

}  // namespace peach2::model
