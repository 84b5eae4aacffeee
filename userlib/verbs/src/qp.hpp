// SPDX-License-Identifier: MIT
// A queue pair: its receive area (rings the peer writes), the staging copy
// of the peer's rings (what DMA reads), the send queue as operations in
// flight, the receive queue, and the protocol state of docs/verbs.md.
//
// Every method runs under the Engine lock, unless it says otherwise. Nothing
// here has a thread: the program's verb calls and the engine's progress
// thread drive it.
#pragma once

#include <tca/tca.h>

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "objects.hpp"
#include "remote.hpp"
#include "rings.hpp"
#include "wire.hpp"

namespace pv {

class Engine;

// A tcaMalloc buffer, freed when the owner goes.
struct TcaBuffer {
    void* p = nullptr;
    std::size_t size = 0;
    TcaBuffer() = default;
    TcaBuffer(const TcaBuffer&) = delete;
    TcaBuffer& operator=(const TcaBuffer&) = delete;
    TcaBuffer(TcaBuffer&& o) noexcept
        : p(std::exchange(o.p, nullptr)), size(std::exchange(o.size, 0)) {}
    TcaBuffer& operator=(TcaBuffer&& o) noexcept {
        if (this != &o) {
            reset();
            p = std::exchange(o.p, nullptr);
            size = std::exchange(o.size, 0);
        }
        return *this;
    }
    ~TcaBuffer() { reset(); }
    // wait = false: over the user's quota, -EDQUOT at once rather than a
    // wait of seconds in the driver (see get_bounce).
    int alloc(std::size_t n, bool wait = true);
    void reset() noexcept;
    unsigned char* bytes() const noexcept { return static_cast<unsigned char*>(p); }
};

// Registered memory for data the card's DMA rules do not let us move in
// place (misaligned Reads and Writes): one of the QP's slots, or a buffer of
// its own for big ones.
struct Bounce {
    unsigned char* p = nullptr;
    int slot = -1;
    std::unique_ptr<TcaBuffer> own;
};

// What a QP publishes with its area (TCA_NAME_QP info).
struct QpInfo {
    std::uint32_t magic;  // kQpMagic
    std::uint8_t version;
    std::uint8_t type;  // ibv_qp_type
    std::uint16_t pad0;
    std::uint32_t ll_slots;
    std::uint32_t hb_bytes;
    std::uint32_t ud_slots;
    std::uint32_t qkey;  // UD
    std::uint32_t reserved[2];
};
constexpr std::uint32_t kQpMagic = 0x50515650;  // "PVQP"
static_assert(sizeof(QpInfo) <= TCA_NAME_INFO);

// One send WR from post to completion: its state (SendState, reset as a
// whole when the WR leaves the send queue), its SGEs (only the first nsge
// are valid, so recycling leaves the array as it is) and its buffers
// (emptied, their capacity kept).
struct SendState {
    std::uint64_t wr_id = 0;
    ibv_wr_opcode opcode = IBV_WR_SEND;
    unsigned flags = 0;
    std::uint32_t imm = 0;
    std::uint32_t nsge = 0;
    std::uint64_t remote_addr = 0;
    std::uint32_t rkey = 0;
    std::uint64_t compare_add = 0, swap = 0;
    std::uint32_t ud_node = 0, ud_qpn = 0, ud_qkey = 0;  // UD destination
    std::uint64_t total = 0;

    enum class Stage : std::uint8_t { New, Sending, Waiting, Done } stage = Stage::New;
    bool signaled = false;
    ibv_wc_status status = IBV_WC_SUCCESS;
    std::uint64_t sent = 0;        // bytes of a fragmented send out so far
    std::uint32_t wait_seq = 0;    // done once the peer acked this packet (0: none)
    std::uint64_t wait_dma = 0;    // done once this many DMA runs of the QP ended
    Bounce bounce;                 // reads/writes the DMA rules do not allow directly
    std::uint64_t bounce_off = 0;  // where the data sits in the bounce buffer
    bool counts_rd = false;        // holds one of max_rd_atomic
};

// IBV_SEND_INLINE's payload, copied at post: up to kHere bytes in the op
// itself (no allocation, no zero-filling resize: under TCG the vector's
// resize was two calls and a memset per inline Send), more in a vector
// kept across the ops of its slot (UD's inline limit is its MTU).
class InlineData {
public:
    static constexpr std::size_t kHere = 64;
    // Room for n bytes, which the caller fills.
    unsigned char* reserve(std::size_t n) {
        size_ = n;
        if (n <= kHere)
            return here_.data();
        if (more_.size() < n)
            more_.resize(n);
        return more_.data();
    }
    const unsigned char* data() const noexcept {
        return size_ <= kHere ? here_.data() : more_.data();
    }
    bool empty() const noexcept { return size_ == 0; }
    void clear() noexcept { size_ = 0; }

private:
    std::array<unsigned char, kHere> here_;
    std::vector<unsigned char> more_;
    std::size_t size_ = 0;
};

struct SendOp : SendState {
    std::array<ibv_sge, kMaxSge> sge{};
    InlineData inline_data;        // IBV_SEND_INLINE: copied at post
    std::vector<tcaRequest> rp;              // read proxy requests (read, atomic)

    // Back to a new SendOp when it leaves the send queue (Fifo). The next WR
    // of its slot allocates nothing, and under TCG rebuilding the whole op
    // (a zeroed 256-byte SGE array copied in) was a tenth of a Send's path.
    void recycle() {
        static_cast<SendState&>(*this) = SendState{};
        inline_data.clear();
        rp.clear();
    }
};

class Qp {
public:
    Qp(Engine& eng, Pd* pd, const ibv_qp_init_attr_ex& init);
    ~Qp();
    // Allocates and publishes the receive area: 0 or errno.
    int setup();

    static Qp* of(ibv_qp* q) noexcept { return reinterpret_cast<Qp*>(q); }
    ibv_qp* abi() noexcept { return &abi_.qp_base; }

    // ---- verbs (qp_verbs.cpp) ----
    // INIT -> RTR of an RC QP looks the peer's area up (a read-proxy round
    // trip) and allocates our staging copy of it (the driver may hold an
    // allocation for seconds): ibv_modify_qp does both without the Engine
    // lock, so that the progress thread goes on acknowledging this
    // process's other peers, and modify() takes the result.
    struct Connection {
        int rc = 0;  // 0, or the errno modify() returns
        std::uint32_t node = 0;
        std::uint32_t dest_qpn = 0;
        RemoteRange peer;
        QpInfo info{};
        TcaBuffer stage;
    };
    // Would modify(attr, mask) connect this QP?
    bool connects(const ibv_qp_attr& attr, int mask) const;
    // The slow part of connecting; without the Engine lock.
    void prepare_connect(const ibv_qp_attr& attr, Connection* c) const;
    // c: prepare_connect's result for this modify (or nullptr: prepared here).
    int modify(ibv_qp_attr* attr, int mask, Connection* c = nullptr);
    int query(ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init);
    // `now`: the verb's clock read (Engine::touch).
    int post_send(ibv_send_wr* wr, ibv_send_wr** bad, std::uint64_t now);
    // *progress_due: a packet may have waited for these WRs; the caller runs
    // progress() (and only then counts as driving progress itself).
    int post_recv(ibv_recv_wr* wr, ibv_recv_wr** bad, bool* progress_due);

    // ---- progress ----
    // Everything that can move without blocking: arrivals, acknowledgements,
    // DMA and read-proxy completions, new operations, timers.
    void progress(std::uint64_t now);
    // progress(now), unless quiet(now): what ibv_poll_cq and the progress
    // thread run, again and again while nothing happens.
    void poll(std::uint64_t now);
    // Would progress(now) find nothing to do? A connected RC QP with no
    // packet, acknowledgement or NAK new since the last pass, no DMA run or
    // read-proxy request out, nothing waiting to start and no timer due; a
    // UD QP with no datagram new and nothing to start or finish.
    // A few loads, where a whole pass that finds nothing costs ~300
    // instructions; UCX polls several CQs per progress call, each for 16
    // entries or more, and each such poll ran a pass on every QP of the CQ
    // (a connected QP sits on two CQs of one interface).
    // Only valid after a whole pass or a complete_sq(): an operation a verb
    // has just started may already be complete (post_send takes care).
    bool quiet(std::uint64_t now) const noexcept;
    // When progress() last ran (Engine::now()), whoever called it.
    std::uint64_t progressed_ns() const noexcept { return progressed_ns_; }
    // Lease renewal of the peer's area, for the progress thread: what to
    // look up (false: nothing due), then the lookup's outcome. The lookup
    // itself runs without the Engine lock (it may take a read-proxy round
    // trip, or a timeout when the peer's node is gone).
    struct Renewal {
        std::uint32_t node, kind, name;
        std::uint64_t owner, size;
    };
    // The renewals due at `now`, appended to *out: the lease on the peer QP
    // and those on remote MRs this QP used lately (kMrKeepNs).
    void renewals_due(std::uint64_t now, std::vector<Renewal>* out) const;
    // When the next renewal falls due (UINT64_MAX: none to make).
    std::uint64_t renewal_at() const noexcept;
    void renewed(const Renewal& r, int rc, const tcaNameInfo& n, std::uint64_t started);
    bool busy() const noexcept;
    void flush_ack() { send_ack(true); }

    Cq* send_cq() const noexcept { return scq_; }
    Cq* recv_cq() const noexcept { return rcq_; }
    Srq* srq() const noexcept { return srq_; }
    ibv_qp_state state() const noexcept { return abi_.qp_base.state; }

private:
    // qp_verbs.cpp
    int connect(Connection& c);
    void reset();
    void to_error();
    void flush();

    // qp_tx.cpp: the send side
    // Starts what the send queue can start now, in posting order: true when
    // nothing waits (all started, or the QP failed), false when an operation
    // is blocked (room, credit, an idle DMA queue) or still sending.
    bool advance_sq(std::uint64_t now);
    enum class Start { Done, Blocked, Failed };
    Start start(SendOp& op, std::uint64_t now);
    Start start_send(SendOp& op);
    Start start_write(SendOp& op, std::uint64_t now);
    Start rd_start_ready(SendOp& op);
    Start start_read(SendOp& op, std::uint64_t now);
    Start start_atomic(SendOp& op, std::uint64_t now);
    Start start_ud(SendOp& op);
    bool emit_ll(const wire::Header& h, const SendOp* op, std::uint64_t from, std::uint32_t len);
    enum class Emit { Sent, NoRoom, Error };
    Emit emit_hb(const wire::Header& h, const SendOp* op, std::uint64_t from, std::uint32_t len,
                 std::vector<tcaDmaXfer>* pre, std::uint64_t* seq_out);
    int start_dma(std::vector<tcaDmaXfer>& xfers, std::uint32_t* status);
    bool dma_idle();
    void poll_dma();
    void poll_rp(SendOp& op);
    void complete_sq();
    void check_timers(std::uint64_t now);
    // How long the peer may stay silent with packets unacknowledged before
    // a retry counts (the IB timeout, not below the tunable floor).
    std::uint64_t retry_after_ns() const noexcept;
    void fail(SendOp& op, ibv_wc_status st);
    // 0, -EDQUOT (only if !may_wait: try again later), or another code.
    int get_bounce(std::uint64_t bytes, Bounce* out, bool may_wait);
    // answered: no request of the operation can still write into it.
    void put_bounce(Bounce& b, bool answered = false) noexcept;
    // The peer's MR `rkey`, looked up (again) when not cached or its lease is
    // over; `now`: the verb's clock read.
    int remote_mr(std::uint32_t rkey, std::uint64_t now, RemoteRange** out);
    ibv_wc_status check_remote(SendOp& op, std::uint32_t need, std::uint64_t now, RemoteRange** mr,
                               std::uint64_t* off);
    void gather(const SendOp& op, std::uint64_t from, std::uint64_t len, unsigned char* to) const;
    // Bytes [from, from + len) of the operation's data where they lie, if in
    // one piece (inline data, or within one SGE); else nullptr (gather them).
    const unsigned char* span(const SendOp& op, std::uint64_t from, std::uint64_t len) const;
    bool sge_ok(const SendOp& op, std::uint32_t need) const;

    // qp_rx.cpp: the receive side
    void poll_rx();
    // Has the peer written the packet poll_rx() would take next? (no side effects)
    bool rx_ready() const noexcept;
    bool take_packet(const unsigned char* payload, const wire::Header& h, std::uint64_t hb_bytes);
    bool deliver(const wire::Header& h, const unsigned char* payload);
    void poll_ud();
    void read_feedback(std::uint64_t now);
    void send_ack(bool force);
    void send_nak(std::uint32_t seq, std::uint8_t kind);
    RecvWr* next_recv();
    void pop_recv();
    void complete_recv(const RecvWr& wr, ibv_wc_status st, const wire::Header& h,
                       std::uint32_t byte_len);
    void put_word(std::uint64_t off, std::uint64_t v);
    std::uint64_t load_ctrl(std::uint32_t off) const noexcept;

    ibv_qp_ex abi_{};  // first: the program's ibv_qp * is our address
    Engine& eng_;
    Pd* pd_;
    Cq *scq_, *rcq_;
    Srq* srq_;
    ibv_qp_cap cap_{};
    bool sq_sig_all_;
    ibv_qp_attr attr_{};  // what modify set (query returns it)

    // Our receive area (the peer writes it) and its geometry.
    TcaBuffer area_;
    std::uint32_t ll_slots_ = 0;
    std::uint64_t hb_bytes_ = 0;
    std::uint32_t ud_slots_ = 0;
    std::uint32_t qpn_ = 0;

    // The peer (RC): its area, geometry, and our staging mirror of it.
    std::uint32_t peer_node_ = 0;
    RemoteRange peer_;
    QpInfo peer_info_{};
    TcaBuffer stage_;
    std::vector<tcaChain> ll_chains_;  // slot i of staging -> slot i of the peer
    // Slot i of the peer's low-latency ring in our window, when the slot is
    // one physically contiguous piece (RemoteRange::direct: the latency
    // path stores there without a walk), else kLlWalk; nullptr: not known yet.
    std::vector<volatile unsigned char*> ll_at_;
    static inline volatile unsigned char* const kLlWalk =
        reinterpret_cast<volatile unsigned char*>(~std::uintptr_t{0});
    std::unique_ptr<TxRings> tx_;
    std::unique_ptr<RxRings> rx_;
    bool peer_lost_ = false;
    // advance_sq's last answer: an operation waits to start (room, credit,
    // an idle DMA queue). Only a hint for post_send, which then goes straight
    // to a whole pass instead of trying it first with stale feedback.
    bool sq_waits_ = false;
    // The peer is on this node: the driver does not DMA between two
    // processes of one node, so everything goes by PIO (through the card's
    // loopback, filtered like any remote write).
    bool loopback_ = false;
    // Working lists of the posting paths, members so that a post allocates
    // nothing once they have grown: calls are dear under TCG, and perftest's
    // SIGALRM handler calls fopen(), so an allocation under way when it
    // fires deadlocks the program in malloc's lock (seen: ib_write_bw -D).
    // start_write's pieces of the remote range and its DMA list:
    std::vector<RemoteRange::Piece> write_pieces_;
    std::vector<tcaDmaXfer> write_xfers_;
    // emit_hb's DMA list and the pieces of its records and of the pair:
    std::vector<tcaDmaXfer> hb_xfers_;
    std::vector<RemoteRange::Piece> hb_pieces_, hb_ctrl_;
    // The pieces of one remote range for emit_ll, start_read and atomics:
    std::vector<RemoteRange::Piece> op_pieces_;
    // start_read's handles of the remote range:
    std::vector<const tcaHandle*> read_handles_;
    // Remote MRs this QP used, by rkey (on the peer's node), with their
    // leases. The renewer keeps a lease going while its MR is in use (used
    // within kMrKeepNs before the renewal falls due), so that the data path
    // does not make the lookup itself under the engine lock; an MR left
    // alone lets its lease run out and is looked up again on its next use.
    struct CachedMr {
        std::unique_ptr<RemoteRange> range;
        std::uint64_t used_ns = 0;
        bool lapsed = false;  // a renewal failed for good
        bool kept() const noexcept {
            return !lapsed && range->valid() && used_ns + kMrKeepNs >= range->renewal_at();
        }
    };
    static constexpr std::uint64_t kMrKeepNs = 1'000'000'000;
    std::unordered_map<std::uint32_t, CachedMr> mr_cache_;

    // Bounce slots (bounce_slots_ bits set: free).
    static constexpr std::uint32_t kBounceSlots = 16;
    static constexpr std::uint64_t kBounceSlot = wire::kUdSlot;  // a datagram fits
    TcaBuffer bounce_area_;
    std::uint32_t bounce_free_ = (1u << kBounceSlots) - 1;

    // Send queue.
    Fifo<SendOp> sq_;
    std::uint32_t rd_inflight_ = 0;
    // DMA runs of this QP, all on one channel, so they end in order.
    Fifo<tcaDmaTicket> dma_;
    std::uint64_t dma_started_ = 0, dma_ended_ = 0;
    std::uint32_t dma_channel_ = 0;
    std::uint32_t dma_status_ = 0;  // a run that failed: its card code

    // Acknowledgements and retries (send side).
    std::uint32_t renew_failures_ = 0;  // lookups of the peer's name failed in a row
    std::uint64_t progress_ns_ = 0;     // last time the peer showed life
    std::uint64_t progressed_ns_ = 0;
    std::uint32_t retries_left_ = 7;
    std::uint32_t rnr_left_ = 7;
    std::uint16_t nak_seen_ = 0;
    std::uint64_t ack_word_seen_ = 0;  // the control page's ack word, as last read
    std::uint32_t rnr_seq_ = 0;        // a packet the peer had no receive for
    std::uint64_t rnr_resend_ns_ = 0;  // when to send the retry token
    std::uint32_t rnr_attempt_ = 0;

    // Receive side.
    Fifo<RecvWr> rq_;
    RecvWr cur_{};  // the receive WR a fragmented message fills
    bool cur_valid_ = false;
    std::uint64_t cur_len_ = 0;
    ibv_wc_status cur_status_ = IBV_WC_SUCCESS;
    std::uint32_t acked_sent_ = 0;  // the count our peer last got from us
    std::uint64_t ack_due_ns_ = 0;  // an explicit ack is owed from then on
    std::uint64_t hb_owed_ = 0;     // HB bytes consumed since the last ack
    static constexpr std::uint64_t kAckDelayNs = 100000;
    // ibv_post_send runs a whole progress pass at least this often.
    static constexpr std::uint64_t kPostPassNs = 100000;
    std::uint16_t nak_count_ = 0;
    std::uint32_t rnr_waiting_ = 0;  // seq we NAKed (RNR); 0: none
    std::uint32_t retry_seen_ = 0;   // the sender's last retry attempt seen
    std::uint64_t ud_consumed_ = 0;  // UD slots consumed
    std::uint64_t ud_stuck_ns_ = 0;  // since when a reserved slot stays unwritten
    // UD destinations (node << 32 | QPN): their area and the last
    // reservation word seen (a guess for the next compare-and-swap).
    struct UdDest {
        RemoteRange range;
        std::uint64_t word = 0;
        std::uint32_t slots = 0;
        std::uint64_t gone_until = 0;  // no such UD QP as of the last lookup: drop until then
    };
    std::unordered_map<std::uint64_t, std::unique_ptr<UdDest>> ud_dests_;
    UdDest* ud_dest(std::uint32_t node, std::uint32_t qpn);

    friend class Engine;
};

}  // namespace pv
