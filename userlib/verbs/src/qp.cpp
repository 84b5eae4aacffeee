// SPDX-License-Identifier: MIT
// Qp: creation (the receive area and its name), the state machine and
// connection set-up, queries, receive WRs, errors and flushing, and the
// progress entry points.
#include "qp.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "../../src/library.hpp"
#include "context.hpp"
#include "engine.hpp"
#include "identity.hpp"
#include "log.hpp"
#include "qp_state.hpp"

namespace pv {

int TcaBuffer::alloc(std::size_t n, bool wait) {
    reset();
    void* q = nullptr;
    if (int rc = tca::malloc_buffer(&q, n, wait ? 0u : PEACH2_ALLOC_NOWAIT))
        return rc;
    p = q;
    size = n;
    return 0;
}

void TcaBuffer::reset() noexcept {
    if (p)
        tcaFree(p);  // -EBUSY (a get still answers into it): freed at tcaFinalize
    p = nullptr;
    size = 0;
}

namespace {

// libtca codes in errno terms, for verbs that return errno.
int to_errno(int rc) noexcept {
    if (rc > -4096 && rc < 0)
        return -rc;
    return rc == TCA_ENOTEXPORTED ? ENOENT : EIO;
}

}  // namespace

Qp::Qp(Engine& eng, Pd* pd, const ibv_qp_init_attr_ex& init)
    : eng_(eng),
      pd_(pd),
      scq_(reinterpret_cast<Cq*>(init.send_cq)),
      rcq_(reinterpret_cast<Cq*>(init.recv_cq)),
      srq_(reinterpret_cast<Srq*>(init.srq)),
      cap_(init.cap),
      sq_sig_all_(init.sq_sig_all != 0) {
    ibv_qp& q = abi_.qp_base;
    q.context = eng.context().abi();
    q.qp_context = init.qp_context;
    q.pd = &pd->abi;
    q.send_cq = init.send_cq;
    q.recv_cq = init.recv_cq;
    q.srq = init.srq;
    q.state = IBV_QPS_RESET;
    q.qp_type = init.qp_type;
    pthread_mutex_init(&q.mutex, nullptr);
    pthread_cond_init(&q.cond, nullptr);
    cap_.max_inline_data = std::max<std::uint32_t>(cap_.max_inline_data, kMaxInline);
    cap_.max_inline_data = std::min<std::uint32_t>(
        cap_.max_inline_data, init.qp_type == IBV_QPT_UD ? wire::kUdMtu : kMaxInline);
    if (srq_)
        cap_.max_recv_wr = cap_.max_recv_sge = 0;
    dma_channel_ = 0;
}

Qp::~Qp() {
    send_ack(true);  // what we consumed is acknowledged before we go
    for (SendOp& op : sq_)
        for (tcaRequest& r : op.rp)
            if (r.id)
                tcaCancel(&r);
    for (tcaChain& c : ll_chains_)
        if (c.id)
            tcaChainDestroy(c);
    if (qpn_)
        tcaUnpublish(TCA_NAME_QP, qpn_);
    pthread_mutex_destroy(&abi_.qp_base.mutex);
    pthread_cond_destroy(&abi_.qp_base.cond);
}

int Qp::setup() {
    const Tunables& t = eng_.tune();
    const bool ud = abi_.qp_base.qp_type == IBV_QPT_UD;
    std::size_t bytes;
    if (ud) {
        ud_slots_ = t.ud_slots;
        bytes = wire::kCtrlBytes + static_cast<std::size_t>(ud_slots_) * wire::kUdSlot;
    } else {
        ll_slots_ = t.ll_slots;
        hb_bytes_ = t.hb_bytes;
        bytes = wire::kCtrlBytes + static_cast<std::size_t>(ll_slots_) * wire::kLlSlot + hb_bytes_;
    }
    if (int rc = area_.alloc(bytes)) {
        log_error("QP: cannot allocate its %zu-byte receive area: %s", bytes, tcaErrorString(rc));
        return to_errno(rc);
    }
    // A datagram goes out of a bounce slot once its peer's slot is reserved,
    // under the engine lock, where an allocation must not wait (get_bounce):
    // a UD QP's slots are allocated now, without the lock.
    if (ud)
        if (int rc = bounce_area_.alloc(kBounceSlots * kBounceSlot)) {
            log_error("QP: cannot allocate its datagram bounce slots: %s", tcaErrorString(rc));
            return to_errno(rc);
        }
    QpInfo info{};
    info.magic = kQpMagic;
    info.version = wire::kVersion;
    info.type = static_cast<std::uint8_t>(abi_.qp_base.qp_type);
    info.ll_slots = ll_slots_;
    info.hb_bytes = static_cast<std::uint32_t>(hb_bytes_);
    info.ud_slots = ud_slots_;
    // UD senders reserve slots with a remote fetch-and-add on our tail word.
    const std::uint32_t flags = TCA_NAME_WRITE | (ud ? TCA_NAME_ATOMIC : 0u);
    std::uint32_t name = 0;
    if (int rc =
            tcaPublish(area_.p, bytes, TCA_NAME_QP, flags, pd_->group, &info, sizeof info, &name)) {
        log_error("QP: cannot publish its receive area: %s", tcaErrorString(rc));
        return to_errno(rc);
    }
    qpn_ = name;
    abi_.qp_base.qp_num = name;
    dma_channel_ = name % TCA_DMA_CHANNELS;
    return 0;
}

// ---- state machine ---------------------------------------------------------------

bool Qp::connects(const ibv_qp_attr& attr, int mask) const {
    ibv_qp_state next;
    return abi_.qp_base.qp_type == IBV_QPT_RC && state() == IBV_QPS_INIT &&
           check_modify(IBV_QPT_RC, IBV_QPS_INIT, attr, mask, &next) == 0 && next == IBV_QPS_RTR;
}

int Qp::modify(ibv_qp_attr* attr, int mask, Connection* c) {
    ibv_qp_state next;
    const ibv_qp_state cur = state();
    if (int rc = check_modify(abi_.qp_base.qp_type, cur, *attr, mask, &next)) {
        log_debug("QP %#x: modify from state %d with mask %#x refused", qpn_, cur, mask);
        return rc;
    }
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) == 0 && next == IBV_QPS_RTS && cur == IBV_QPS_RTR &&
        abi_.qp_base.qp_type == IBV_QPT_UD)
        attr_.max_rd_atomic = 0;

    if (next == IBV_QPS_RTR && cur == IBV_QPS_INIT && abi_.qp_base.qp_type == IBV_QPT_RC) {
        Connection here;
        if (!c) {
            prepare_connect(*attr, &here);
            c = &here;
        }
        if (int rc = connect(*c))
            return rc;
    }

    // Keep what was given (query returns it).
    if (mask & IBV_QP_PKEY_INDEX)
        attr_.pkey_index = attr->pkey_index;
    if (mask & IBV_QP_PORT)
        attr_.port_num = attr->port_num;
    if (mask & IBV_QP_ACCESS_FLAGS)
        attr_.qp_access_flags = attr->qp_access_flags;
    if (mask & IBV_QP_QKEY)
        attr_.qkey = attr->qkey;
    if (mask & IBV_QP_AV)
        attr_.ah_attr = attr->ah_attr;
    if (mask & IBV_QP_PATH_MTU)
        attr_.path_mtu = attr->path_mtu;
    if (mask & IBV_QP_DEST_QPN)
        attr_.dest_qp_num = attr->dest_qp_num;
    if (mask & IBV_QP_RQ_PSN)
        attr_.rq_psn = attr->rq_psn & 0xffffff;
    if (mask & IBV_QP_SQ_PSN)
        attr_.sq_psn = attr->sq_psn & 0xffffff;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
        attr_.max_dest_rd_atomic = attr->max_dest_rd_atomic;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
        attr_.max_rd_atomic = attr->max_rd_atomic;
    if (mask & IBV_QP_MIN_RNR_TIMER)
        attr_.min_rnr_timer = attr->min_rnr_timer;
    if (mask & IBV_QP_TIMEOUT)
        attr_.timeout = attr->timeout;
    if (mask & IBV_QP_RETRY_CNT)
        attr_.retry_cnt = attr->retry_cnt;
    if (mask & IBV_QP_RNR_RETRY)
        attr_.rnr_retry = attr->rnr_retry;
    if (mask & IBV_QP_ALT_PATH)
        attr_.alt_ah_attr = attr->alt_ah_attr;
    if (mask & IBV_QP_PATH_MIG_STATE)
        attr_.path_mig_state = attr->path_mig_state;
    if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
        attr_.en_sqd_async_notify = attr->en_sqd_async_notify;

    if (next == IBV_QPS_RTS && cur == IBV_QPS_RTR) {
        retries_left_ = attr_.retry_cnt;
        rnr_left_ = attr_.rnr_retry;
        progress_ns_ = eng_.clock();
    }
    if (next == IBV_QPS_RESET && cur != IBV_QPS_RESET)
        reset();
    abi_.qp_base.state = next;
    attr_.qp_state = next;
    attr_.cur_qp_state = next;
    if (next == IBV_QPS_ERR && cur != IBV_QPS_ERR)
        to_error();
    else
        progress(eng_.clock());
    return 0;
}

// INIT -> RTR of an RC QP, the slow part: find the peer's area by (node,
// QPN) and allocate the staging mirror of its rings. Reads only what does
// not change after creation.
void Qp::prepare_connect(const ibv_qp_attr& a, Connection* c) const {
    std::uint32_t node;
    if (!node_of(a.ah_attr.dlid, a.ah_attr.is_global, a.ah_attr.grh.dgid, eng_.node_count(),
                 &node)) {
        log_error("QP %#x: the address (LID %u%s) names no node of this sub-cluster of %u", qpn_,
                  a.ah_attr.dlid, a.ah_attr.is_global ? ", GID" : "", eng_.node_count());
        c->rc = EINVAL;
        return;
    }
    c->node = node;
    c->dest_qpn = a.dest_qp_num;
    if (int rc = c->peer.open(node, TCA_NAME_QP, a.dest_qp_num)) {
        log_error("QP %#x: no QP %#x on node %u (%s): did the peer create it and send its number?",
                  qpn_, a.dest_qp_num, node, tcaErrorString(rc));
        c->rc = rc == TCA_ENOTEXPORTED ? EINVAL : to_errno(rc);
        return;
    }
    QpInfo& info = c->info;
    std::memcpy(&info, c->peer.info().info, sizeof info);
    if (info.magic != kQpMagic || info.type != IBV_QPT_RC || info.ll_slots < 2 ||
        info.hb_bytes < 4096 ||
        c->peer.size() <
            wire::kCtrlBytes + std::uint64_t{info.ll_slots} * wire::kLlSlot + info.hb_bytes) {
        log_error("QP %#x: QP %#x on node %u is not an RC QP of this library", qpn_, a.dest_qp_num,
                  node);
        c->rc = EINVAL;
        return;
    }
    if (info.version != wire::kVersion) {
        log_error(
            "QP %#x: QP %#x on node %u speaks wire version %u, this library %u: run the same "
            "libibverbs.so.1 of this project on every node",
            qpn_, a.dest_qp_num, node, info.version, wire::kVersion);
        c->rc = EPROTO;
        return;
    }
    if (int rc = c->stage.alloc(c->peer.size())) {
        c->rc = to_errno(rc);
        return;
    }
    c->rc = 0;
}

// INIT -> RTR of an RC QP: take the prepared connection and get ready to
// receive.
int Qp::connect(Connection& c) {
    if (c.rc)
        return c.rc;
    peer_node_ = c.node;
    peer_ = std::move(c.peer);
    peer_info_ = c.info;
    loopback_ = c.node == eng_.node_id();
    stage_ = std::move(c.stage);
    tx_ = std::make_unique<TxRings>(peer_info_.ll_slots, peer_info_.hb_bytes);
    rx_ = std::make_unique<RxRings>(ll_slots_, hb_bytes_);
    ll_chains_.assign(peer_info_.ll_slots, tcaChain{});
    ll_at_.assign(peer_info_.ll_slots, nullptr);
    log_debug("QP %#x (node %u) connected to QP %#x on node %u", qpn_, eng_.node_id(), c.dest_qpn,
              c.node);
    return 0;
}

// To RESET: forget the connection and everything queued (no completions).
void Qp::reset() {
    for (SendOp& op : sq_)
        for (tcaRequest& r : op.rp)
            if (r.id)
                tcaCancel(&r);
    sq_.clear();
    sq_waits_ = false;
    rq_.clear();
    cur_valid_ = false;
    for (tcaChain& c : ll_chains_)
        if (c.id)
            tcaChainDestroy(c);
    ll_chains_.clear();
    ll_at_.clear();
    while (!dma_.empty()) {
        tcaDmaWait(&dma_.front(), 0);
        dma_.pop_front();
    }
    dma_started_ = dma_ended_ = 0;
    dma_status_ = 0;
    rd_inflight_ = 0;
    tx_.reset();
    rx_.reset();
    peer_.close();
    stage_.reset();
    peer_lost_ = false;
    renew_failures_ = 0;
    loopback_ = false;
    mr_cache_.clear();
    ack_due_ns_ = 0;
    hb_owed_ = 0;
    bounce_free_ = (1u << kBounceSlots) - 1;
    acked_sent_ = 0;
    nak_seen_ = nak_count_ = 0;
    ack_word_seen_ = 0;
    rnr_seq_ = rnr_attempt_ = rnr_waiting_ = retry_seen_ = 0;
    ud_consumed_ = 0;
    ud_stuck_ns_ = 0;
    ud_dests_.clear();
    if (area_.p)
        std::memset(area_.p, 0, area_.size);  // no stale packet survives
    const ibv_qp_state keep = attr_.qp_state;
    attr_ = ibv_qp_attr{};
    attr_.qp_state = keep;
}

// Into ERR: outstanding work completes with IBV_WC_WR_FLUSH_ERR, in order.
void Qp::to_error() {
    abi_.qp_base.state = IBV_QPS_ERR;
    attr_.qp_state = IBV_QPS_ERR;
    flush();
    if (srq_) {
        ibv_async_event ev{};
        ev.element.qp = abi();
        ev.event_type = IBV_EVENT_QP_LAST_WQE_REACHED;
        eng_.async_event(ev);
    }
}

void Qp::flush() {
    for (SendOp& op : sq_) {
        for (tcaRequest& r : op.rp)
            if (r.id)
                tcaCancel(&r);
        op.rp.clear();
        if (op.stage != SendOp::Stage::Done) {
            op.stage = SendOp::Stage::Done;
            op.status = IBV_WC_WR_FLUSH_ERR;
        }
    }
    rd_inflight_ = 0;
    complete_sq();
    RecvWr wr;
    if (cur_valid_) {
        cur_valid_ = false;
        complete_recv(cur_, IBV_WC_WR_FLUSH_ERR, wire::Header{}, 0);
    }
    while (!rq_.empty()) {
        wr = rq_.front();
        rq_.pop_front();
        complete_recv(wr, IBV_WC_WR_FLUSH_ERR, wire::Header{}, 0);
    }
}

// ---- queries -----------------------------------------------------------------------

int Qp::query(ibv_qp_attr* attr, int, ibv_qp_init_attr* init) {
    *attr = attr_;
    attr->qp_state = state();
    attr->cur_qp_state = state();
    attr->cap = cap_;
    attr->sq_draining = 0;
    if (init) {
        *init = ibv_qp_init_attr{};
        init->qp_context = abi_.qp_base.qp_context;
        init->send_cq = abi_.qp_base.send_cq;
        init->recv_cq = abi_.qp_base.recv_cq;
        init->srq = abi_.qp_base.srq;
        init->cap = cap_;
        init->qp_type = abi_.qp_base.qp_type;
        init->sq_sig_all = sq_sig_all_;
    }
    return 0;
}

// ---- receive WRs ---------------------------------------------------------------------

int Qp::post_recv(ibv_recv_wr* wr, ibv_recv_wr** bad, bool* progress_due) {
    *progress_due = false;
    for (; wr; wr = wr->next) {
        int err = 0;
        if (srq_)
            err = EINVAL;  // receives come from the SRQ
        else if (state() == IBV_QPS_RESET)
            err = EINVAL;
        else if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > cap_.max_recv_sge)
            err = EINVAL;
        else if (rq_.size() >= cap_.max_recv_wr)
            err = ENOMEM;
        if (err) {
            *bad = wr;
            return err;
        }
        rq_.push_back().assign(*wr);
    }
    // A receive WR completes nothing by itself: progress only for a packet that
    // may have been waiting for it (poll_cq and the progress thread do the rest).
    if (state() == IBV_QPS_ERR)
        flush();
    else
        *progress_due = rx_ready();
    return 0;
}

// ---- progress ------------------------------------------------------------------------------

void Qp::poll(std::uint64_t now) {
    if (!quiet(now)) {
        progress(now);
        return;
    }
    progressed_ns_ = now;
    if (tx_ && (tx_->all_acked() || attr_.timeout == 0))
        progress_ns_ = now;  // as check_timers: no silence to time
}

void Qp::progress(std::uint64_t now) {
    progressed_ns_ = now;
    const ibv_qp_state s = state();
    if (s == IBV_QPS_RESET || s == IBV_QPS_INIT)
        return;
    if (s == IBV_QPS_ERR) {
        complete_sq();
        return;
    }
    if (abi_.qp_base.qp_type == IBV_QPT_UD) {
        poll_ud();
    } else {
        read_feedback(now);
        poll_rx();
    }
    if (state() == IBV_QPS_ERR)
        return;
    if (s == IBV_QPS_RTS || s == IBV_QPS_SQD) {
        poll_dma();
        for (SendOp& op : sq_)
            poll_rp(op);
        advance_sq(now);
        check_timers(now);
    }
    if (state() != IBV_QPS_ERR)
        complete_sq();
    send_ack(false);
}

bool Qp::quiet(std::uint64_t now) const noexcept {
    // Local state first (no memory the peer writes): anything in motion,
    // and the timers of check_timers and send_ack.
    if (state() != IBV_QPS_RTS || sq_waits_ || !dma_.empty())
        return false;
    if (abi_.qp_base.qp_type == IBV_QPT_UD) {
        // No datagram reserved in our ring since the last pass (as poll_ud).
        const std::uint64_t w = load_ctrl(wire::kUdTailOff);
        return static_cast<std::uint32_t>(w) == static_cast<std::uint32_t>(w >> 32);
    }
    if (!tx_ || peer_lost_ || rd_inflight_ || rnr_seq_ || rnr_waiting_ || cur_valid_)
        return false;
    if (ack_due_ns_ && now >= ack_due_ns_)
        return false;
    if (!tx_->all_acked() && attr_.timeout && now - progress_ns_ >= retry_after_ns())
        return false;
    // Then what the peer writes into our area: acknowledgement, NAK, packets.
    if (load_ctrl(wire::kAckOff) != ack_word_seen_)
        return false;
    wire::Nak nak;
    const std::uint64_t raw = load_ctrl(wire::kNakOff);
    std::memcpy(&nak, &raw, sizeof nak);
    return nak.count == nak_seen_ && !rx_ready();
}

bool Qp::busy() const noexcept { return !sq_.empty() || (tx_ && !tx_->all_acked()); }

void Qp::renewals_due(std::uint64_t now, std::vector<Renewal>* out) const {
    if (renewal_at() > now)
        return;
    if (peer_.renewal_due(now))
        out->push_back(Renewal{peer_.node(), peer_.info().kind, peer_.info().name,
                               peer_.info().owner, peer_.info().size});
    for (const auto& [rkey, c] : mr_cache_)
        if (c.kept() && c.range->renewal_due(now))
            out->push_back(Renewal{c.range->node(), c.range->info().kind, rkey,
                                   c.range->info().owner, c.range->info().size});
}

std::uint64_t Qp::renewal_at() const noexcept {
    const ibv_qp_state s = state();
    if (!peer_.valid() || peer_lost_ || (s != IBV_QPS_RTR && s != IBV_QPS_RTS && s != IBV_QPS_SQD))
        return UINT64_MAX;
    std::uint64_t at = peer_.renewal_at();
    for (const auto& [rkey, c] : mr_cache_)
        if (c.kept())
            at = std::min(at, c.range->renewal_at());
    return at;
}

void Qp::renewed(const Renewal& r, int rc, const tcaNameInfo& n, std::uint64_t started) {
    if (!peer_.valid() || peer_lost_)
        return;
    if (r.kind == TCA_NAME_KEY) {
        const auto it = mr_cache_.find(r.name);
        if (it == mr_cache_.end() || !it->second.range->valid() ||
            r.node != it->second.range->node() || r.owner != it->second.range->info().owner)
            return;  // dropped or looked up again meanwhile
        // A failure for good leaves the entry as it is (operations in flight
        // may hold its handles) but no longer renewed: its lease runs out,
        // and its next use looks it up.
        CachedMr& c = it->second;
        if (const int err = c.range->renewed(rc, n, started))
            c.lapsed = !c.range->retry_renewal(err, eng_.clock());
        return;
    }
    if (r.node != peer_.node() || r.name != peer_.info().name || r.owner != peer_.info().owner)
        return;  // the QP was reset and connected elsewhere meanwhile
    const int err = peer_.renewed(rc, n, started);
    if (err == 0) {
        if (renew_failures_)
            log_error("QP %#x: lease on peer QP %#x on node %u renewed after %u failed lookups",
                      qpn_, attr_.dest_qp_num, peer_node_, renew_failures_);
        renew_failures_ = 0;
        return;
    }
    const std::uint64_t now = eng_.clock();
    if (peer_.retry_renewal(err, now)) {
        // The lease still holds: this QP goes on writing (acknowledgements
        // above all; its peer gives up on a silent QP) and asks again soon.
        // One line for the first failure, one for the outcome.
        if (renew_failures_++ == 0)
            log_error(
                "QP %#x: renewing the lease on peer QP %#x on node %u failed (%s); trying "
                "again until it runs out",
                qpn_, attr_.dest_qp_num, peer_node_, tcaErrorString(err));
        return;
    }
    // The peer QP is gone (or its node): nothing more may be written.
    if (err == TCA_ENOTEXPORTED)
        log_debug("QP %#x: peer QP %#x on node %u is gone", qpn_, attr_.dest_qp_num, peer_node_);
    else
        log_error(
            "QP %#x: the lease on peer QP %#x on node %u ran out, not renewed in %u "
            "lookups (%s): no more writes to it",
            qpn_, attr_.dest_qp_num, peer_node_, renew_failures_ + 1, tcaErrorString(err));
    peer_lost_ = true;
}

}  // namespace pv
