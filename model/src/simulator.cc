// The event loop of the PEACH2 model (see simulator.h for the model).
//
// Determinism: events are ordered by (time, insertion number) and every
// container is indexed, never iterated in hash order, so a workload always
// gives the same prediction.
#include "simulator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <queue>

namespace peach2::model {
namespace {

// Per-node resources.
enum Res : unsigned {
    kCpu,     // the CPU's stores into the window (PIO)
    kNUp,     // N port, host -> card (PIO TLPs, DMA read completions)
    kNDown,   // N port, card -> host (deliveries)
    kMem,     // the host's memory path for the card's reads and writes
    kEngine,  // the DMA datapath (all channels)
    kLinkE,   // egress of port E, W, S (kLinkE + port - 1)
    kLinkW,
    kLinkS,
    kDetour,  // a path the traces do not show (an untraced node's cables)
    kRes
};
constexpr const char* kResNames[kRes] = {"CPU stores",  "N port up",    "N port down",
                                         "host memory", "DMA datapath", "link E",
                                         "link W",      "link S",       "untraced path"};

enum class Phase : uint8_t { MemRead, NUp, Engine, Link, NDown, MemWrite, Deliver };

enum EventKind : uint32_t {
    kStage,      // obj: chunk; it reaches its next resource
    kResume,     // obj: context
    kRunStart,   // obj: run; its CTRL write reached the card
    kFetchDone,  // obj: channel; a descriptor is in
    kRunDone,    // obj: run
    kLeft,       // obj: channel, arg: bytes; a DMA packet left its source card
    kPortFree,   // obj: resource; an egress port can take its next packet
};

struct Event {
    Time t;
    uint64_t seq;
    uint32_t kind;
    uint32_t obj;
    uint64_t arg;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Chunk {
    uint32_t packet = 0;
    uint32_t channel = kNoIndex;  // DMA: global channel index
    uint16_t at = 0;              // the node it is at
    Phase phase = Phase::NUp;
    uint8_t port = 0;     // Link: the port it leaves by
    uint8_t in_port = 0;  // the port it came in by at this card (N: from the host)
    uint8_t hops = 0;
    bool ready = false;       // DMA: read done, waiting for its turn at the engine
    uint32_t tlp = 256;       // payload bytes per TLP
    Time head = 0, tail = 0;  // its first / last byte available to the next resource
};

struct Resource {
    Time free = 0;
    Time busy = 0;
    uint64_t bytes = 0, packets = 0;
};

struct Port {
    std::array<std::deque<uint32_t>, trace::kPorts> queue;  // by input port
    uint8_t next = 0;                                       // round robin
    bool busy = false;
};

struct Channel {
    bool busy = false;
    bool done_scheduled = false;
    bool fetching = false;
    uint32_t run = kNoIndex;
    std::deque<uint32_t> waiting;  // runs started while busy
    uint32_t fetched = 0;          // descriptors whose fetch is done
    uint32_t issue_desc = 0, issue_pkt = 0;
    uint64_t inflight = 0;  // bytes between read request and leaving the card
    uint32_t engine_done = 0;
    std::deque<uint32_t> order;  // chunks issued, not yet at the engine
    Time last_release = 0;
};

struct Ctx {
    uint32_t pc = 0;
    Time ready = 0;
    uint64_t last_emu = 0;
    bool seen_emu = false;
    bool armed = false;  // issue_at is computed for steps[pc]
    Time issue_at = 0;
};

constexpr unsigned kMaxHops = 32;
// What a resource must hold before it can pass data on: PCIe ports store and
// forward whole TLPs; the DMA datapath streams 16-byte words (4 GB/s at the
// 250 MHz of 004 §3.6 moves 16 bytes a cycle); memory streams cache lines.
constexpr uint32_t kEngineGranule = 16;
constexpr uint32_t kMemGranule = 64;

class Sim {
public:
    Sim(const Workload& w, const Params& p, const SimOptions& o) : w_(w), p_(p), o_(o) {
        res_.resize(w.nodes * kRes);
        ports_.resize(w.nodes * kRes);
        ch_.resize(w.nodes * trace::kChannels);
        ctx_.resize(w.contexts.size());
        waiter_pkt_.assign(w.packets.size(), kNoIndex);
        waiter_run_.assign(w.runs.size(), kNoIndex);
        out_.delivered.assign(w.packets.size(), kUnknown);
        out_.run_done.assign(w.runs.size(), kUnknown);
        issued_pkt_.assign(w.packets.size(), kUnknown);
        issued_run_.assign(w.runs.size(), kUnknown);
        issued_req_.assign(w.requests.size(), kUnknown);
        out_.context_end.assign(w.contexts.size(), 0);
        link_ps_per_byte_ = 1000.0 / p.link_raw_gbps;
        cpu_ps_per_byte_ = 1000.0 / p.host_pio_gbps;
        engine_ps_per_byte_ = 1000.0 / p.dma_engine_gbps;
        mem_ps_per_byte_ = 1000.0 / p.host_memory_gbps;
        overhead_ = p.link_tlp_overhead_bytes;
        max_payload_ = static_cast<uint32_t>(p.link_max_payload_bytes);
        pio_tlp_ = static_cast<uint32_t>(p.host_pio_tlp_bytes);
        shortest_routes();
    }

    Prediction run() {
        for (uint32_t c = 0; c < w_.contexts.size(); ++c)
            push(0, kResume, c);
        while (!q_.empty()) {
            const Event e = q_.top();
            q_.pop();
            now_ = e.t;
            ++out_.events;
            switch (e.kind) {
            case kStage: stage(e.obj); break;
            case kResume: resume(e.obj); break;
            case kRunStart: run_start(e.obj); break;
            case kFetchDone: fetch_done(e.obj); break;
            case kRunDone: run_done(e.obj); break;
            case kLeft: left(e.obj, e.arg); break;
            case kPortFree: port_free(e.obj); break;
            }
        }
        out_.end = now_;
        finish();
        return std::move(out_);
    }

private:
    // ---- plumbing --------------------------------------------------------------------
    void push(Time t, uint32_t kind, uint32_t obj, uint64_t arg = 0) {
        q_.push(Event{t, seq_++, kind, obj, arg});
    }
    static Time ps(double ns) { return static_cast<Time>(std::llround(ns * 1000.0)); }
    Time wire(uint32_t bytes, uint32_t tlp) const {
        const uint32_t tlps = (bytes + tlp - 1) / tlp;
        return static_cast<Time>(std::llround((bytes + tlps * overhead_) * link_ps_per_byte_));
    }
    static Time rate(uint32_t bytes, double ps_per_byte) {
        return static_cast<Time>(std::llround(bytes * ps_per_byte));
    }
    Resource& res(uint32_t node, unsigned r) { return res_[node * kRes + r]; }

    uint32_t new_chunk() {
        if (!free_chunks_.empty()) {
            const uint32_t i = free_chunks_.back();
            free_chunks_.pop_back();
            chunks_[i] = Chunk{};
            return i;
        }
        chunks_.emplace_back();
        return static_cast<uint32_t>(chunks_.size() - 1);
    }

    // A chunk is served by resource r: FIFO, starting when both it and the
    // resource are there, ending no earlier than its last unit arrives plus
    // that unit's own time. The resource is charged its service time only:
    // while a chunk trickles in slower than r could take it, others share r
    // (TLPs of different flows interleave on a link, reads and writes in
    // memory). Moves head/tail on to the next resource.
    void serve(Chunk& c, Resource& r, Time svc, Time svc_tlp) {
        const Time start = std::max(now_, r.free);
        const Time end = std::max(start + svc, c.tail + svc_tlp);
        r.free = start + svc;
        r.busy += svc;
        r.bytes += w_.packets[c.packet].bytes;
        ++r.packets;
        c.head = start + svc_tlp;
        c.tail = end;
    }

    void next(uint32_t ci, Phase ph, Time lat) {
        Chunk& c = chunks_[ci];
        c.phase = ph;
        c.head += lat;
        c.tail += lat;
        push(c.head, kStage, ci);
    }

    // The chunk is at card `c.at`: to this node's host, or out of a port.
    void route(uint32_t ci, Time lat) {
        Chunk& c = chunks_[ci];
        const Packet& pk = w_.packets[c.packet];
        lat += ps(p_.card_hop_ns);
        if (c.at == pk.dst) {
            next(ci, Phase::NDown, lat);
            return;
        }
        int port = w_.route[c.at * w_.nodes + pk.dst];
        if (port < 0)
            port = bfs_route_[c.at * w_.nodes + pk.dst];
        if (port < 0 || ++c.hops > kMaxHops) {
            // No recorded or cabled path: one detour "hop" straight to the target.
            ++detours_;
            c.port = kDetour;
        } else {
            c.port = static_cast<uint8_t>(port);
        }
        next(ci, Phase::Link, lat);
    }

    // ---- packets ---------------------------------------------------------------------
    void stage(uint32_t ci) {
        Chunk& c = chunks_[ci];
        const Packet& pk = w_.packets[c.packet];
        const uint32_t first = std::min(pk.bytes, c.tlp);
        switch (c.phase) {
        case Phase::MemRead:
            serve(c, res(c.at, kMem), rate(pk.bytes, mem_ps_per_byte_),
                  rate(std::min(pk.bytes, kMemGranule), mem_ps_per_byte_));
            next(ci, Phase::NUp, 0);
            return;
        case Phase::NUp:
            serve(c, res(c.at, kNUp), wire(pk.bytes, c.tlp), wire(first, c.tlp));
            if (c.channel != kNoIndex) {
                c.ready = true;
                release(c.channel);
            } else {
                route(ci, 0);
            }
            return;
        case Phase::Engine: {
            serve(c, res(c.at, kEngine), rate(pk.bytes, engine_ps_per_byte_),
                  rate(std::min(pk.bytes, kEngineGranule), engine_ps_per_byte_));
            Channel& ch = ch_[c.channel];
            ++ch.engine_done;
            maybe_done(c.channel, c.tail);
            route(ci, 0);
            return;
        }
        case Phase::Link:
            arrive(ci, c.at * kRes + (c.port == kDetour ? kDetour : kLinkE + c.port - 1));
            return;
        case Phase::NDown: arrive(ci, c.at * kRes + kNDown); return;
        case Phase::MemWrite:
            serve(c, res(c.at, kMem), rate(pk.bytes, mem_ps_per_byte_),
                  rate(std::min(pk.bytes, kMemGranule), mem_ps_per_byte_));
            c.head = c.tail;
            next(ci, Phase::Deliver, ps(p_.host_mem_write_ns));
            return;
        case Phase::Deliver:
            out_.delivered[c.packet] = now_;
            if (const uint32_t waiter = waiter_pkt_[c.packet]; waiter != kNoIndex)
                push(now_, kResume, waiter);
            free_chunks_.push_back(ci);
            return;
        }
    }

    // ---- ports: arbitration between the card's inputs --------------------------------
    // An egress port (E, W, S, or N towards the host) takes packets from the
    // card's inputs (the host side and the other ports) in turn, so a flow
    // forwarded from a neighbour and one the card originates share the port
    // instead of the earlier one taking it all.
    void arrive(uint32_t ci, uint32_t ri) {
        Port& port = ports_[ri];
        port.queue[chunks_[ci].in_port].push_back(ci);
        if (!port.busy)
            dispatch(ri);
    }

    void dispatch(uint32_t ri) {
        Port& port = ports_[ri];
        for (unsigned k = 0; k < trace::kPorts; ++k) {
            const unsigned input = (port.next + k) % trace::kPorts;
            if (port.queue[input].empty())
                continue;
            const uint32_t ci = port.queue[input].front();
            port.queue[input].pop_front();
            port.next = static_cast<uint8_t>((input + 1) % trace::kPorts);
            Chunk& c = chunks_[ci];
            const Packet& pk = w_.packets[c.packet];
            Resource& r = res_[ri];
            serve(c, r, wire(pk.bytes, c.tlp), wire(std::min(pk.bytes, c.tlp), c.tlp));
            port.busy = true;
            push(r.free, kPortFree, ri);
            if (ri % kRes == kNDown)
                delivered_to_host(ci);
            else
                crossed_link(ci, ri % kRes == kDetour);
            return;
        }
    }

    void port_free(uint32_t ri) {
        ports_[ri].busy = false;
        dispatch(ri);
    }

    void crossed_link(uint32_t ci, bool detour) {
        Chunk& c = chunks_[ci];
        const Packet& pk = w_.packets[c.packet];
        if (c.channel != kNoIndex && c.at == pk.src && c.hops <= 1)
            push(c.tail, kLeft, c.channel, pk.bytes);
        const int peer = detour ? -1 : w_.peer[c.at * trace::kPorts + c.port];
        if (!detour && peer < 0)
            ++detours_;
        c.at = peer < 0 ? pk.dst : static_cast<uint16_t>(peer / trace::kPorts);
        c.in_port = peer < 0 ? 0 : static_cast<uint8_t>(peer % trace::kPorts);
        route(ci, ps(p_.link_flight_ns));
    }

    void delivered_to_host(uint32_t ci) {
        Chunk& c = chunks_[ci];
        const Packet& pk = w_.packets[c.packet];
        if (c.channel != kNoIndex && c.at == pk.src)
            push(c.tail, kLeft, c.channel, pk.bytes);  // looped back
        next(ci, Phase::MemWrite, 0);
    }

    // ---- DMA channels ----------------------------------------------------------------
    uint32_t channel_of(const Run& r) const { return r.node * trace::kChannels + r.channel; }

    Time fetch_cost(trace::DmaMode where) const {
        switch (where) {
        case trace::DmaMode::ChainCard: return ps(p_.dma_fetch_card_ns);
        case trace::DmaMode::ChainHost: return ps(p_.dma_fetch_host_ns);
        case trace::DmaMode::Register: return 0;
        }
        return 0;
    }

    void run_start(uint32_t ri) {
        Channel& ch = ch_[channel_of(w_.runs[ri])];
        if (ch.busy) {
            ch.waiting.push_back(ri);  // the card refused it; the program retried
            return;
        }
        begin_run(ri);
    }

    void begin_run(uint32_t ri) {
        const Run& run = w_.runs[ri];
        const uint32_t chi = channel_of(run);
        Channel& ch = ch_[chi];
        ch.busy = true;
        ch.done_scheduled = false;
        ch.run = ri;
        ch.fetched = ch.issue_desc = ch.issue_pkt = ch.engine_done = 0;
        ch.inflight = 0;
        ch.order.clear();
        ch.last_release = 0;
        const Time start =
            ps(run.mode == trace::DmaMode::Register ? p_.dma_start_reg_ns : p_.dma_start_chain_ns);
        if (run.descs.empty()) {
            ch.done_scheduled = true;
            push(now_ + start, kRunDone, ri);
            return;
        }
        ch.fetching = true;
        push(now_ + start + fetch_cost(run.descs[0].where), kFetchDone, chi);
    }

    void fetch_done(uint32_t chi) {
        Channel& ch = ch_[chi];
        ch.fetching = false;
        ++ch.fetched;
        prefetch(chi);
        pump(chi);
    }

    // Fetch the next descriptor while up to dma.prefetch_descs fetched ones
    // still have data to move (the chain is followed ahead of the data).
    void prefetch(uint32_t chi) {
        Channel& ch = ch_[chi];
        const Run& run = w_.runs[ch.run];
        const auto depth = static_cast<uint32_t>(p_.dma_prefetch_descs);
        if (!ch.fetching && ch.fetched < run.descs.size() && ch.fetched - ch.issue_desc < depth) {
            ch.fetching = true;
            push(now_ + fetch_cost(run.descs[ch.fetched].where), kFetchDone, chi);
        }
    }

    // Issue the channel's next packets while its window has room; start the
    // next descriptor's fetch once the current one is issued.
    void pump(uint32_t chi) {
        Channel& ch = ch_[chi];
        const Run& run = w_.runs[ch.run];
        const auto window = static_cast<uint64_t>(p_.dma_window_bytes);
        while (ch.issue_desc < ch.fetched) {
            const Desc& d = run.descs[ch.issue_desc];
            if (ch.issue_pkt < d.packets.size()) {
                const uint32_t pi = d.packets[ch.issue_pkt];
                const Packet& pk = w_.packets[pi];
                if (ch.inflight > 0 && ch.inflight + pk.bytes > window)
                    return;  // kLeft resumes it
                ch.inflight += pk.bytes;
                ++ch.issue_pkt;
                issued_pkt_[pi] = now_;
                const uint32_t ci = new_chunk();
                Chunk& c = chunks_[ci];
                c.packet = pi;
                c.channel = chi;
                c.at = run.node;
                c.tlp = d.imm ? pk.bytes : max_payload_;
                ch.order.push_back(ci);
                if (d.imm) {  // the value is in the descriptor: nothing to read
                    c.head = c.tail = now_;
                    c.ready = true;
                    release(chi);
                } else {
                    c.head = c.tail = now_;
                    next(ci, Phase::MemRead, ps(p_.host_read_rtt_ns));
                }
                continue;
            }
            ++ch.issue_desc;
            ch.issue_pkt = 0;
            prefetch(chi);
        }
        maybe_done(chi, now_);
    }

    // Chunks reach the engine in the order they were issued.
    void release(uint32_t chi) {
        Channel& ch = ch_[chi];
        while (!ch.order.empty() && chunks_[ch.order.front()].ready) {
            const uint32_t ci = ch.order.front();
            ch.order.pop_front();
            Chunk& c = chunks_[ci];
            c.head = std::max({c.head, ch.last_release, now_});
            c.tail = std::max(c.tail, c.head);
            ch.last_release = c.head;
            c.phase = Phase::Engine;
            push(c.head, kStage, ci);
        }
    }

    void left(uint32_t chi, uint64_t bytes) {
        Channel& ch = ch_[chi];
        ch.inflight -= std::min(ch.inflight, bytes);
        if (ch.busy)
            pump(chi);
    }

    void maybe_done(uint32_t chi, Time t) {
        Channel& ch = ch_[chi];
        const Run& run = w_.runs[ch.run];
        if (ch.busy && !ch.done_scheduled && ch.issue_desc == run.descs.size() &&
            ch.engine_done == run.packets) {
            ch.done_scheduled = true;
            push(std::max(t, now_), kRunDone, ch.run);
        }
    }

    void run_done(uint32_t ri) {
        out_.run_done[ri] = now_;
        if (const uint32_t waiter = waiter_run_[ri]; waiter != kNoIndex)
            push(now_, kResume, waiter);
        Channel& ch = ch_[channel_of(w_.runs[ri])];
        ch.busy = false;
        if (!ch.waiting.empty()) {
            const uint32_t next_run = ch.waiting.front();
            ch.waiting.pop_front();
            begin_run(next_run);
        }
    }

    // ---- the nodes' programs, drivers and cards ----------------------------------------
    Time react_delivery(Actor a) const {
        switch (a) {
        case Actor::User: return ps(p_.host_poll_ns);
        case Actor::Driver: return ps(p_.irq_latency_ns);
        case Actor::Card: return 0;
        }
        return 0;
    }
    Time react_run(Actor a) const {
        return a == Actor::Driver ? ps(p_.irq_latency_ns) : ps(p_.dma_done_notice_ns);
    }

    void resume(uint32_t cx) {
        const Context& context = w_.contexts[cx];
        Ctx& c = ctx_[cx];
        while (c.pc < context.steps.size()) {
            const Step& s = context.steps[c.pc];
            if (s.kind == StepKind::WaitDelivery || s.kind == StepKind::WaitRun) {
                const bool pkt = s.kind == StepKind::WaitDelivery;
                const Time t = pkt ? out_.delivered[s.index] : out_.run_done[s.index];
                if (t == kUnknown) {
                    (pkt ? waiter_pkt_ : waiter_run_)[s.index] = cx;
                    return;
                }
                c.ready = std::max(
                    c.ready, t + (pkt ? react_delivery(context.actor) : react_run(context.actor)));
                note_emu(c, s);
                ++c.pc;
                continue;
            }
            if (!c.armed) {
                Time gap = 0;
                if (c.seen_emu && s.t_emu > c.last_emu && o_.host_scale > 0)
                    gap = ps(static_cast<double>(s.t_emu - c.last_emu) * o_.host_scale);
                c.issue_at = std::max(now_, c.ready + gap);
                c.armed = true;
            }
            if (c.issue_at > now_) {
                push(c.issue_at, kResume, cx);
                return;
            }
            c.armed = false;
            perform(context, c, s);
            note_emu(c, s);
            ++c.pc;
        }
        out_.context_end[cx] = c.ready;
    }

    static void note_emu(Ctx& c, const Step& s) {
        c.last_emu = s.t_emu;
        c.seen_emu = true;
    }

    void perform(const Context& context, Ctx& c, const Step& s) {
        switch (s.kind) {
        case StepKind::Pio: {
            const Packet& pk = w_.packets[s.index];
            issued_pkt_[s.index] = now_;
            const uint32_t ci = new_chunk();
            Chunk& ch = chunks_[ci];
            ch.packet = s.index;
            ch.at = pk.src;
            ch.tlp = pio_tlp_;
            ch.head = ch.tail = now_;
            // The CPU executes the stores: it is busy until the last one.
            serve(ch, res(pk.src, kCpu), rate(pk.bytes, cpu_ps_per_byte_),
                  rate(std::min(pk.bytes, pio_tlp_), cpu_ps_per_byte_));
            c.ready = ch.tail;
            next(ci, Phase::NUp, ps(p_.host_mmio_write_ns));
            return;
        }
        case StepKind::DmaStart: {
            Time cost = 0;
            if (context.actor == Actor::Driver)
                cost = ps(p_.rp_service_ns + (s.atomic ? p_.rp_atomic_ns : 0));
            issued_run_[s.index] = now_;
            c.ready = now_ + cost;
            push(c.ready + ps(p_.host_mmio_write_ns), kRunStart, s.index);
            return;
        }
        case StepKind::RpRequest: {
            const Request& q = w_.requests[s.index];
            issued_req_[s.index] = now_;
            c.ready = now_;
            if (q.packet != kNoIndex)
                inject_at_card(q.packet, now_ + ps(p_.host_mmio_write_ns));
            return;
        }
        case StepKind::CardSend:
            issued_pkt_[s.index] = now_;
            inject_at_card(s.index, now_);
            return;
        case StepKind::WaitDelivery:
        case StepKind::WaitRun: return;
        }
    }

    // A packet the card builds itself (read-proxy request or answer).
    void inject_at_card(uint32_t pi, Time t) {
        const Packet& pk = w_.packets[pi];
        const uint32_t ci = new_chunk();
        Chunk& c = chunks_[ci];
        c.packet = pi;
        c.at = pk.src;
        c.tlp = std::max<uint32_t>(pk.bytes, 4);
        c.head = c.tail = t;
        if (issued_pkt_[pi] == kUnknown)
            issued_pkt_[pi] = t;
        route(ci, 0);
    }

    // ---- routes over the cables (for nodes whose traces are missing) ------------------
    void shortest_routes() {
        const uint32_t n = w_.nodes;
        bfs_route_.assign(n * n, -1);
        for (uint32_t dst = 0; dst < n; ++dst) {
            std::vector<int> dist(n, -1);
            std::deque<uint32_t> todo{dst};
            dist[dst] = 0;
            while (!todo.empty()) {
                const uint32_t x = todo.front();
                todo.pop_front();
                for (unsigned port = trace::kPortE; port <= trace::kPortS; ++port) {
                    const int peer = w_.peer[x * trace::kPorts + port];
                    if (peer >= 0 && dist[peer / trace::kPorts] < 0) {
                        dist[peer / trace::kPorts] = dist[x] + 1;
                        todo.push_back(static_cast<uint32_t>(peer / trace::kPorts));
                    }
                }
            }
            // First hop: S before E before W, as the firmware's routes.
            static constexpr unsigned kPreference[] = {trace::kPortS, trace::kPortE, trace::kPortW};
            for (uint32_t from = 0; from < n; ++from) {
                if (from == dst || dist[from] < 0)
                    continue;
                for (unsigned port : kPreference) {
                    const int peer = w_.peer[from * trace::kPorts + port];
                    if (peer >= 0 && dist[peer / trace::kPorts] == dist[from] - 1) {
                        bfs_route_[from * n + dst] = static_cast<int>(port);
                        break;
                    }
                }
            }
        }
    }

    // ---- results ---------------------------------------------------------------------
    // An operation ends when the CPU waiting for it can see it: its last byte
    // in memory and a polling CPU noticing (the papers' ping-pong measures
    // exactly that), or, for a DMA run that delivered nothing, DONE seen.
    Time seen(uint32_t packet) const {
        const Time t = out_.delivered[packet];
        return t == kUnknown ? kUnknown : t + ps(p_.host_poll_ns);
    }

    void finish() {
        out_.ops.resize(w_.ops.size());
        for (size_t i = 0; i < w_.ops.size(); ++i) {
            const Op& op = w_.ops[i];
            OpTiming& t = out_.ops[i];
            switch (op.kind) {
            case OpKind::Pio:
                t.begin = issued_pkt_[op.first];
                t.end = seen(op.last);
                break;
            case OpKind::Dma: {
                const Run& run = w_.runs[op.first];
                t.begin = issued_run_[op.first];
                const Time done = out_.run_done[op.first];
                t.end = done == kUnknown ? kUnknown : done + ps(p_.dma_done_notice_ns);
                if (run.packets > 0 && t.end != kUnknown) {
                    t.end = 0;
                    for (const Desc& d : run.descs)
                        for (uint32_t pi : d.packets)
                            if (t.end != kUnknown)
                                t.end = seen(pi) == kUnknown ? kUnknown : std::max(t.end, seen(pi));
                }
                break;
            }
            case OpKind::Get:
            case OpKind::Atomic: {
                const Request& q = w_.requests[op.first];
                t.begin = issued_req_[op.first];
                t.end = q.answer == kNoIndex ? kUnknown : seen(q.answer);
                break;
            }
            }
        }
        for (uint32_t n = 0; n < w_.nodes; ++n)
            for (unsigned r = 0; r < kRes; ++r) {
                const Resource& x = res_[n * kRes + r];
                if (x.packets)
                    out_.resources.push_back({"node" + std::to_string(n) + " " + kResNames[r], n,
                                              x.busy, x.bytes, x.packets});
            }
        for (uint32_t cx = 0; cx < w_.contexts.size(); ++cx) {
            const Context& context = w_.contexts[cx];
            const Ctx& c = ctx_[cx];
            if (c.pc < context.steps.size()) {
                static constexpr const char* kActorNames[] = {"program", "driver", "card"};
                const Step& s = context.steps[c.pc];
                out_.warnings.push_back("node" + std::to_string(context.node) + " " +
                                        kActorNames[static_cast<unsigned>(context.actor)] +
                                        " stopped at step " + std::to_string(c.pc) + " of " +
                                        std::to_string(context.steps.size()) + ": it waits for " +
                                        (s.kind == StepKind::WaitRun ? "a DMA run" : "a packet") +
                                        " that never came (inconsistent traces?)");
            }
        }
        if (detours_)
            out_.warnings.push_back(std::to_string(detours_) +
                                    " packet hops took paths the traces do not show (a node's "
                                    "trace or LINK records missing); modelled as one hop");
    }

    const Workload& w_;
    const Params& p_;
    const SimOptions o_;
    Prediction out_;
    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> q_;
    uint64_t seq_ = 0;
    Time now_ = 0;
    std::vector<Resource> res_;
    std::vector<Port> ports_;  // for the egress resources (links, N down, detour)
    std::vector<Channel> ch_;
    std::vector<Ctx> ctx_;
    std::vector<Chunk> chunks_;
    std::vector<uint32_t> free_chunks_;
    std::vector<uint32_t> waiter_pkt_, waiter_run_;
    std::vector<Time> issued_pkt_, issued_run_, issued_req_;
    std::vector<int> bfs_route_;
    uint64_t detours_ = 0;
    double link_ps_per_byte_ = 0, cpu_ps_per_byte_ = 0, engine_ps_per_byte_ = 0,
           mem_ps_per_byte_ = 0, overhead_ = 0;
    uint32_t max_payload_ = 256, pio_tlp_ = 64;
};

}  // namespace

Prediction simulate(const Workload& w, const Params& p, const SimOptions& opt) {
    return Sim(w, p, opt).run();
}

}  // namespace peach2::model
