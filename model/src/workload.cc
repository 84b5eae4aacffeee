// Traces -> Workload: two passes over each node's records. The first collects
// what each card originated (packets, runs, requests), the second turns the
// records into steps in recorded order, matching every delivery with the
// packet that caused it (key: source, destination, packet number).
#include "workload.h"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>

namespace peach2::model {
namespace {

using trace::Record;
using trace::Type;

constexpr uint64_t kNumberLimit = 1ull << 48;
constexpr size_t kNoOp = ~size_t{0};

uint64_t packet_key(uint32_t src, uint32_t dst, uint64_t number) {
    return static_cast<uint64_t>(src) << 56 | static_cast<uint64_t>(dst) << 48 | number;
}

struct Builder {
    Workload w;
    std::string error;
    std::unordered_map<uint64_t, uint32_t> sent;        // packet key -> packet index
    std::unordered_map<uint64_t, uint32_t> request_of;  // its packet's key -> request
    // Per node: run number -> run index; which object each record became.
    std::vector<std::unordered_map<uint64_t, uint32_t>> runs_by_id;
    std::vector<std::vector<uint32_t>> object;
    // Per node: host clock when its trace started (a restarted node's new
    // instance numbers its packets from 0 again).
    std::vector<uint64_t> trace_start;
    // (target, requester, tag) -> the last answer packet.
    std::map<std::tuple<uint32_t, uint32_t, uint64_t>, uint32_t> answers;
    uint64_t orphans = 0;

    bool bad(const trace::TraceFile& f, size_t i, const std::string& msg) {
        error = f.path + ": record " + std::to_string(i) + " (" +
                trace::type_name(f.records[i].type) + "): " + msg;
        return false;
    }

    bool node_ok(uint32_t n) const { return n < w.nodes; }
    static bool cable_port(uint8_t p) { return p >= trace::kPortE && p <= trace::kPortS; }

    // Pass 1: what this node's card originated.
    bool collect(const trace::TraceFile& f) {
        const uint32_t n = f.header.node;
        auto& obj = object[n];
        obj.assign(f.records.size(), kNoIndex);
        for (size_t i = 0; i < f.records.size(); ++i) {
            const Record& r = f.records[i];
            switch (r.type) {
            case Type::Link:
                if (!cable_port(r.port) || !cable_port(r.unit) || !node_ok(r.dst_node))
                    return bad(f, i,
                               "port " + std::to_string(r.port) + " to node " +
                                   std::to_string(r.dst_node) + " port " + std::to_string(r.unit) +
                                   " is not a cable");
                if (r.flags & 1) {
                    w.peer[n * trace::kPorts + r.port] =
                        static_cast<int>(r.dst_node * trace::kPorts + r.unit);
                    w.peer[r.dst_node * trace::kPorts + r.unit] =
                        static_cast<int>(n * trace::kPorts + r.port);
                }
                break;
            case Type::PktSend: {
                const auto origin = trace::send_origin(r);
                if (r.src_node != n || !node_ok(r.dst_node))
                    return bad(f, i,
                               "packet from node " + std::to_string(r.src_node) + " to node " +
                                   std::to_string(r.dst_node) + " sent by node " +
                                   std::to_string(n));
                if (r.len == 0 || r.len > trace::kMaxPacket)
                    return bad(f, i, "packet of " + std::to_string(r.len) + " bytes");
                if (r.port >= trace::kPorts || (r.port == trace::kPortN) != (r.dst_node == n))
                    return bad(f, i,
                               "packet for node " + std::to_string(r.dst_node) +
                                   " leaving by port " + std::to_string(r.port));
                if (origin < trace::Origin::Pio || origin > trace::Origin::RpAnswer)
                    return bad(f, i, "unknown origin " + std::to_string(r.flags & 0xff));
                if (r.id >= kNumberLimit)
                    return bad(f, i, "packet number " + std::to_string(r.id) + " too large");
                Packet p;
                p.src = r.src_node;
                p.dst = r.dst_node;
                p.bytes = r.len;
                p.origin = origin;
                p.out_port = r.port;
                p.t_host_sent = r.t_host_ns;
                const auto idx = static_cast<uint32_t>(w.packets.size());
                if (origin == trace::Origin::Dma || origin == trace::Origin::DmaImm) {
                    auto it = runs_by_id[n].find(r.arg);
                    const uint32_t d = trace::send_desc_index(r);
                    if (it == runs_by_id[n].end() || d >= w.runs[it->second].descs.size()) {
                        ++orphans;  // its run's records were dropped
                        break;
                    }
                    Run& run = w.runs[it->second];
                    p.run = it->second;
                    run.descs[d].packets.push_back(idx);
                    ++run.packets;
                    run.bytes += r.len;
                    if (origin == trace::Origin::DmaImm && run.channel == trace::kProxyChannel)
                        answers[{n, r.dst_node, run.descs[d].value}] = idx;
                } else if (origin == trace::Origin::RpAnswer) {
                    answers[{n, r.dst_node, r.arg}] = idx;
                } else if (origin == trace::Origin::RpRequest) {
                    auto it = request_of.find(packet_key(n, r.dst_node, r.id));
                    if (it != request_of.end() && w.requests[it->second].packet == kNoIndex) {
                        w.requests[it->second].packet = idx;
                        p.claimed = true;
                    }
                }
                if (!sent.emplace(packet_key(r.src_node, r.dst_node, r.id), idx).second)
                    return bad(f, i,
                               "packet " + std::to_string(r.id) + " from node " +
                                   std::to_string(r.src_node) + " to node " +
                                   std::to_string(r.dst_node) + " recorded twice");
                w.packets.push_back(p);
                obj[i] = idx;
                set_route(n, r.dst_node, r.port);
                break;
            }
            case Type::PktFwd:
                if (!cable_port(r.port) || !cable_port(r.unit) || !node_ok(r.src_node) ||
                    !node_ok(r.dst_node) || r.dst_node == n || r.len > trace::kMaxPacket)
                    return bad(f, i,
                               "forwarding node " + std::to_string(r.src_node) + " -> " +
                                   std::to_string(r.dst_node) + " from port " +
                                   std::to_string(r.port) + " to port " + std::to_string(r.unit));
                set_route(n, r.dst_node, r.unit);
                break;
            case Type::PktRecv:
                if (trace::recv_kind(r) < trace::RecvKind::Memory ||
                    trace::recv_kind(r) > trace::RecvKind::RpRing)
                    return bad(f, i, "unknown delivery kind " + std::to_string(r.flags & 0xff));
                if (r.dst_node != n || !node_ok(r.src_node) || r.port >= trace::kPorts ||
                    r.len > trace::kMaxPacket)
                    return bad(f, i,
                               "delivery for node " + std::to_string(r.dst_node) + " from node " +
                                   std::to_string(r.src_node) + " by port " +
                                   std::to_string(r.port));
                break;
            case Type::DmaStart: {
                const auto mode = static_cast<trace::DmaMode>(r.flags);
                if (r.unit >= trace::kChannels || mode < trace::DmaMode::ChainCard ||
                    mode > trace::DmaMode::Register)
                    return bad(
                        f, i,
                        "channel " + std::to_string(r.unit) + ", mode " + std::to_string(r.flags));
                Run run;
                run.node = static_cast<uint16_t>(n);
                run.channel = r.unit;
                run.mode = mode;
                run.id = r.arg;
                run.t_host_start = r.t_host_ns;
                const auto idx = static_cast<uint32_t>(w.runs.size());
                if (!runs_by_id[n].emplace(r.arg, idx).second)
                    return bad(f, i, "run " + std::to_string(r.arg) + " started twice");
                w.runs.push_back(std::move(run));
                obj[i] = idx;
                break;
            }
            case Type::DmaDesc: {
                const auto where = trace::desc_where(r);
                if (r.unit >= trace::kChannels || where < trace::DmaMode::ChainCard ||
                    where > trace::DmaMode::Register)
                    return bad(f, i,
                               "channel " + std::to_string(r.unit) + ", descriptor from " +
                                   std::to_string(r.flags & 0xff));
                auto it = runs_by_id[n].find(r.arg);
                if (it == runs_by_id[n].end()) {
                    ++orphans;
                    break;
                }
                Run& run = w.runs[it->second];
                if (run.channel != r.unit)
                    return bad(f, i,
                               "run " + std::to_string(r.arg) + " is on channel " +
                                   std::to_string(run.channel) + ", not " + std::to_string(r.unit));
                if (run.descs.size() >= (1u << 24))
                    return bad(f, i, "more than 2^24 descriptors in one run");
                Desc d;
                d.where = where;
                d.imm = trace::desc_flags(r) & trace::kDescImm;
                d.len = r.len;
                d.value = r.id;
                run.descs.push_back(std::move(d));
                break;
            }
            case Type::DmaDone: {
                if (r.unit >= trace::kChannels)
                    return bad(f, i, "channel " + std::to_string(r.unit));
                auto it = runs_by_id[n].find(r.arg);
                if (it == runs_by_id[n].end()) {
                    ++orphans;
                    break;
                }
                w.runs[it->second].t_host_done = r.t_host_ns;
                obj[i] = it->second;
                break;
            }
            case Type::RpRequest: {
                if (!node_ok(r.dst_node) || r.unit < 1 || r.unit > 3)
                    return bad(f, i,
                               "request op " + std::to_string(r.unit) + " to node " +
                                   std::to_string(r.dst_node));
                Request q;
                q.node = static_cast<uint16_t>(n);
                q.target = r.dst_node;
                q.op = r.unit;
                q.len = r.len;
                q.tag = r.arg;
                q.t_host_sent = r.t_host_ns;
                obj[i] = static_cast<uint32_t>(w.requests.size());
                request_of[packet_key(n, r.dst_node, r.id)] = obj[i];
                w.requests.push_back(q);
                break;
            }
            case Type::Irq:
            case Type::End: break;
            }
        }
        return true;
    }

    void set_route(uint32_t node, uint32_t dst, uint8_t port) {
        if (port != trace::kPortN)
            w.route[node * w.nodes + dst] = port;
    }

    // Pass 2: steps in recorded order.
    bool steps(const trace::TraceFile& f) {
        const uint32_t n = f.header.node;
        Context* ctx[kActors];
        for (unsigned a = 0; a < kActors; ++a)
            ctx[a] = &w.contexts[n * kActors + a];
        std::vector<uint8_t> pending_ops;  // read-proxy ops queued for the driver
        size_t next_op = 0;
        size_t open_pio = kNoOp;  // the PIO op that contiguous stores extend
        uint64_t open_pio_end = 0;
        for (size_t i = 0; i < f.records.size(); ++i) {
            const Record& r = f.records[i];
            const uint32_t o = object[n][i];
            const auto add = [&](Actor a, StepKind k, uint32_t index, bool atomic = false) {
                ctx[static_cast<unsigned>(a)]->steps.push_back({k, atomic, index, r.t_emu_ns});
                if (a == Actor::User && k != StepKind::Pio)
                    open_pio = kNoOp;
            };
            switch (r.type) {
            case Type::PktSend: {
                if (o == kNoIndex)
                    break;
                const Packet& p = w.packets[o];
                if (p.origin == trace::Origin::Pio) {
                    add(Actor::User, StepKind::Pio, o);
                    if (open_pio != kNoOp && w.ops[open_pio].peer == p.dst &&
                        open_pio_end == r.addr) {
                        w.ops[open_pio].last = o;
                        w.ops[open_pio].bytes += p.bytes;
                    } else {
                        open_pio = w.ops.size();
                        w.ops.push_back({OpKind::Pio, static_cast<uint16_t>(n), p.dst, p.bytes, o,
                                         o, r.t_host_ns, 0});
                    }
                    open_pio_end = r.addr + r.len;
                } else if (p.origin == trace::Origin::RpAnswer ||
                           (p.origin == trace::Origin::RpRequest && !p.claimed)) {
                    // Sent by the card itself, or a request whose record was dropped.
                    add(p.origin == trace::Origin::RpAnswer ? Actor::Card : Actor::User,
                        StepKind::CardSend, o);
                }
                break;
            }
            case Type::PktRecv: {
                if (r.t_host_ns < trace_start[r.src_node]) {
                    // Delivered before the sender's trace began: sent by the
                    // instance before a restart, whose numbers the new one reuses.
                    ++w.earlier_instance;
                    break;
                }
                auto it = sent.find(packet_key(r.src_node, r.dst_node, r.id));
                if (it == sent.end()) {
                    ++w.unmatched;
                    break;
                }
                Packet& p = w.packets[it->second];
                if (p.received) {
                    bad(f, i,
                        "packet " + std::to_string(r.id) + " from node " +
                            std::to_string(r.src_node) +
                            " delivered twice (were traces of different runs mixed?)");
                    return false;
                }
                p.received = true;
                p.t_host_recv = r.t_host_ns;
                if (trace::recv_kind(r) == trace::RecvKind::RpRing) {
                    if (trace::recv_error(r) == 0) {
                        add(Actor::Driver, StepKind::WaitDelivery, it->second);
                        pending_ops.push_back(r.unit);
                    } else {
                        add(Actor::Card, StepKind::WaitDelivery, it->second);
                    }
                } else if (trace::recv_error(r) == 0) {
                    add(Actor::User, StepKind::WaitDelivery, it->second);
                }
                break;
            }
            case Type::DmaStart:
                if (r.unit == trace::kProxyChannel) {
                    const uint8_t op = next_op < pending_ops.size() ? pending_ops[next_op++] : 1;
                    add(Actor::Driver, StepKind::DmaStart, o, op == 2 || op == 3);
                } else {
                    add(Actor::User, StepKind::DmaStart, o);
                    w.ops.push_back({OpKind::Dma, static_cast<uint16_t>(n),
                                     static_cast<uint16_t>(n), 0, o, o, r.t_host_ns, 0});
                }
                break;
            case Type::DmaDone:
                if (o != kNoIndex)
                    add(r.unit == trace::kProxyChannel ? Actor::Driver : Actor::User,
                        StepKind::WaitRun, o);
                break;
            case Type::RpRequest: {
                add(Actor::User, StepKind::RpRequest, o);
                const Request& q = w.requests[o];
                w.ops.push_back({q.op == 1 ? OpKind::Get : OpKind::Atomic, static_cast<uint16_t>(n),
                                 q.target, q.len, o, o, r.t_host_ns, 0});
                break;
            }
            case Type::Link:
            case Type::PktFwd:
            case Type::DmaDesc:
            case Type::Irq:
            case Type::End: break;
            }
        }
        return true;
    }

    void finish_ops() {
        for (Request& q : w.requests) {
            auto it = answers.find({q.target, q.node, q.tag});
            if (it != answers.end())
                q.answer = it->second;
        }
        for (Op& op : w.ops) {
            switch (op.kind) {
            case OpKind::Pio: op.t_host_end = w.packets[op.last].t_host_recv; break;
            case OpKind::Dma: {
                const Run& run = w.runs[op.first];
                uint64_t end = run.t_host_done;
                op.bytes = 0;  // data: IMM values (completion words) are not counted
                for (const Desc& d : run.descs)
                    for (uint32_t p : d.packets) {
                        end = std::max(end, w.packets[p].t_host_recv);
                        op.peer = w.packets[p].dst;
                        if (!d.imm)
                            op.bytes += w.packets[p].bytes;
                    }
                op.t_host_end = end;
                break;
            }
            case OpKind::Get:
            case OpKind::Atomic: {
                const Request& q = w.requests[op.first];
                op.t_host_end = q.answer == kNoIndex ? 0 : w.packets[q.answer].t_host_recv;
                break;
            }
            }
        }
    }
};

}  // namespace

std::optional<Workload> build_workload(const std::vector<trace::TraceFile>& given,
                                       std::string* err) {
    // Node order, whatever order the files came in: the same traces always
    // give the same workload (and so the same prediction).
    std::vector<std::reference_wrapper<const trace::TraceFile>> traces(given.begin(), given.end());
    std::stable_sort(traces.begin(), traces.end(), [](const auto& a, const auto& b) {
        return a.get().header.node < b.get().header.node;
    });
    if (traces.empty()) {
        if (err)
            *err = "no traces";
        return std::nullopt;
    }
    Builder b;
    Workload& w = b.w;
    w.nodes = traces[0].get().header.nodes;
    w.traced.assign(w.nodes, false);
    w.peer.assign(w.nodes * trace::kPorts, -1);
    w.route.assign(w.nodes * w.nodes, -1);
    w.emu_span_ns.assign(w.nodes, 0);
    w.contexts.resize(w.nodes * kActors);
    for (uint32_t n = 0; n < w.nodes; ++n)
        for (unsigned a = 0; a < kActors; ++a)
            w.contexts[n * kActors + a] = {static_cast<uint16_t>(n), static_cast<Actor>(a), {}};
    b.runs_by_id.resize(w.nodes);
    b.object.resize(w.nodes);
    b.trace_start.assign(w.nodes, 0);
    uint64_t host_first = ~0ull, host_last = 0;
    for (const trace::TraceFile& f : traces) {
        if (f.header.nodes != w.nodes || f.header.node >= w.nodes || w.traced[f.header.node]) {
            if (err)
                *err = f.path + ": node " + std::to_string(f.header.node) + " of " +
                       std::to_string(f.header.nodes) + " does not fit the other traces";
            return std::nullopt;
        }
        w.traced[f.header.node] = true;
        b.trace_start[f.header.node] = f.header.t_host_ns;
        w.records += f.records.size();
        w.dropped += f.dropped;
        for (const auto& warning : f.warnings)
            w.warnings.push_back(f.path + ": " + warning);
        if (!f.records.empty()) {
            w.emu_span_ns[f.header.node] =
                f.records.back().t_emu_ns -
                std::min(f.records.back().t_emu_ns, f.records.front().t_emu_ns);
            host_first = std::min(host_first, f.records.front().t_host_ns);
            host_last = std::max(host_last, f.records.back().t_host_ns);
        }
        if (!b.collect(f)) {
            if (err)
                *err = b.error;
            return std::nullopt;
        }
    }
    w.host_span_ns = host_last > host_first ? host_last - host_first : 0;
    for (const trace::TraceFile& f : traces)
        if (!b.steps(f)) {
            if (err)
                *err = b.error;
            return std::nullopt;
        }
    b.finish_ops();
    if (b.orphans)
        w.warnings.push_back(std::to_string(b.orphans) +
                             " DMA records name runs whose start was not recorded (dropped); "
                             "they are left out");
    if (w.earlier_instance)
        w.warnings.push_back(std::to_string(w.earlier_instance) +
                             " deliveries came from a node's earlier instance (restarted; its "
                             "new trace replaced the old one); nothing waits for them");
    if (w.unmatched)
        w.warnings.push_back(std::to_string(w.unmatched) +
                             " deliveries have no recorded sender (a node's trace missing or "
                             "dropped records); nothing waits for them");
    return w;
}

}  // namespace peach2::model
