// SPDX-License-Identifier: MIT
// Qp, send side: ibv_post_send, how each operation goes out (docs/verbs.md,
// "Operations"), and how it completes.
//
//   Send, Send with Immediate   a packet in the peer's low-latency ring (up
//                               to 216 bytes: PIO, or a prebuilt chain when a
//                               DMA run of this QP is still going) or one or
//                               more records in its high-bandwidth ring (DMA
//                               from our staging mirror of that ring, the
//                               PSN pair written by the same list)
//   RDMA Write                  straight into the remote MR: PIO up to
//                               pio_max bytes, else DMA from the source
//                               (zero-copy) or from a bounce buffer when the
//                               card's rules do not allow it
//   Write with Immediate        the same, then a WRITE_IMM packet after it
//   RDMA Read, atomics          read-proxy requests to the target's driver
//
// Sends and Write-Imm complete when the peer acknowledged their packet;
// Writes when their DMA run ended (the data left on the link, in order
// with everything after it); Reads and atomics when the proxy answered.
// Completions come out in posting order.
#include <peach2/peach2_dma_rules.h>
#include <peach2/peach2_hw.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine.hpp"
#include "log.hpp"
#include "qp.hpp"
#include "small_copy.hpp"

namespace pv {
namespace {

constexpr bool is_atomic(ibv_wr_opcode op) noexcept {
    return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

// The minimum RNR NAK timer encoding (InfiniBand spec table 45), in µs.
constexpr std::uint32_t kRnrDelayUs[32] = {
    655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
    480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};

// What a libtca error of a remote operation means to the requester.
ibv_wc_status remote_status(int rc, std::uint32_t card_status) noexcept {
    if (rc == TCA_ENOTEXPORTED)
        return IBV_WC_REM_ACCESS_ERR;
    if (rc == TCA_EREMOTE) {
        if (card_status == PEACH2_ERR_RP_RANGE)
            return IBV_WC_REM_ACCESS_ERR;
        if (card_status == PEACH2_ERR_RP_BAD_REQUEST || card_status == PEACH2_ERR_DMA_ALIGN)
            return IBV_WC_REM_INV_REQ_ERR;
    }
    if (rc == TCA_EALIGN || rc == TCA_ERANGE)
        return IBV_WC_REM_INV_REQ_ERR;
    return IBV_WC_RETRY_EXC_ERR;  // timeouts, unreachable nodes, links down
}

// A DMA run's card error in Verbs terms.
ibv_wc_status dma_status(std::uint32_t card) noexcept {
    switch (card) {
    case PEACH2_ERR_LINK_DOWN:
    case PEACH2_ERR_NO_ROUTE:
    case PEACH2_ERR_NO_SUCH_NODE:
    case PEACH2_ERR_DMA_ABORTED:
    case PEACH2_ERR_TX_OVERFLOW: return IBV_WC_RETRY_EXC_ERR;
    default: return IBV_WC_LOC_QP_OP_ERR;
    }
}

// The card's rules for a contiguous piece (peach2_dma_rules.h): zero-copy if they hold.
bool dma_ok(std::uint64_t src, std::uint64_t dst, std::uint64_t len) noexcept {
    return len > 0 && peach2_dma_align_rule(src, dst, len) == PEACH2_DMA_RULE_OK;
}

}  // namespace

// ---- posting -----------------------------------------------------------------------

int Qp::post_send(ibv_send_wr* wr, ibv_send_wr** bad, std::uint64_t now) {
    const bool ud = abi_.qp_base.qp_type == IBV_QPT_UD;
    for (; wr; wr = wr->next) {
        int err = 0;
        const ibv_qp_state s = state();
        std::uint64_t total = 0;
        for (int i = 0; i < wr->num_sge; ++i)
            total += wr->sg_list[i].length;
        const bool imm_ok = wr->opcode == IBV_WR_SEND || wr->opcode == IBV_WR_SEND_WITH_IMM;
        if (s != IBV_QPS_RTS && s != IBV_QPS_SQD && s != IBV_QPS_ERR)
            err = EINVAL;
        else if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > cap_.max_send_sge)
            err = EINVAL;
        else if (sq_.size() >= cap_.max_send_wr)
            err = ENOMEM;
        else if (ud && (!imm_ok || !wr->wr.ud.ah || total > wire::kUdMtu))
            err = EINVAL;
        else if (!ud && !imm_ok && wr->opcode != IBV_WR_RDMA_WRITE &&
                 wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM && wr->opcode != IBV_WR_RDMA_READ &&
                 !is_atomic(wr->opcode))
            err = EINVAL;
        else if (is_atomic(wr->opcode) && (wr->num_sge != 1 || total != 8))
            err = EINVAL;
        else if ((wr->send_flags & IBV_SEND_INLINE) &&
                 (total > cap_.max_inline_data || wr->opcode == IBV_WR_RDMA_READ ||
                  is_atomic(wr->opcode)))
            err = EINVAL;
        else if (total > 0x80000000ull)
            err = EINVAL;
        if (err) {
            log_debug("QP %#x: post_send refused (%s): opcode %d, %d SGEs, %llu bytes, state %d",
                      qpn_, std::strerror(err), wr->opcode, wr->num_sge,
                      static_cast<unsigned long long>(total), s);
            *bad = wr;
            return err;
        }
        SendOp& op = sq_.push_back();
        op.wr_id = wr->wr_id;
        op.opcode = wr->opcode;
        op.flags = wr->send_flags;
        op.imm = wr->imm_data;
        op.total = total;
        op.signaled = sq_sig_all_ || (wr->send_flags & IBV_SEND_SIGNALED);
        if (wr->send_flags & IBV_SEND_INLINE) {
            // Copied now: the program may reuse the buffer on return.
            unsigned char* to = op.inline_data.reserve(total);
            std::uint64_t at = 0;
            for (int i = 0; i < wr->num_sge; ++i) {
                small_copy(to + at,
                           reinterpret_cast<const void*>(wr->sg_list[i].addr),
                           wr->sg_list[i].length);
                at += wr->sg_list[i].length;
            }
        } else {
            op.nsge = static_cast<std::uint32_t>(wr->num_sge);
            copy_sges(wr->sg_list, static_cast<std::size_t>(wr->num_sge), op.sge.data());
        }
        if (ud) {
            const Ah* ah = reinterpret_cast<const Ah*>(wr->wr.ud.ah);
            op.ud_node = ah->node;
            op.ud_qpn = wr->wr.ud.remote_qpn;
            op.ud_qkey = wr->wr.ud.remote_qkey;
        } else if (is_atomic(wr->opcode)) {
            op.remote_addr = wr->wr.atomic.remote_addr;
            op.rkey = wr->wr.atomic.rkey;
            op.compare_add = wr->wr.atomic.compare_add;
            op.swap = wr->wr.atomic.swap;
        } else {
            op.remote_addr = wr->wr.rdma.remote_addr;
            op.rkey = wr->wr.rdma.rkey;
        }
    }
    if (state() == IBV_QPS_ERR) {
        flush();  // posted in ERR: flushed at once
    } else {
        // What was posted goes out, and what is complete now (a PIO Write)
        // completes. A whole pass (feedback, receives, timers, acks) only
        // when something still waits to start (credit may have come back)
        // or none ran for kPostPassNs (a program that posts and seldom
        // polls); otherwise the next poll_cq makes it, and the peer is not
        // kept waiting for work this verb need not do.
        // (An operation that already waited to start is not tried again
        // here with the credit it lacked: the pass reads feedback first.)
        const bool started = !sq_waits_ && advance_sq(now);
        if ((started || state() == IBV_QPS_ERR) && now - progressed_ns_ < kPostPassNs)
            complete_sq();
        else
            progress(now);
    }
    return 0;
}

// ---- moving operations along ---------------------------------------------------------

bool Qp::advance_sq(std::uint64_t now) {
    for (SendOp& op : sq_) {
        if (op.stage == SendOp::Stage::Done || op.stage == SendOp::Stage::Waiting)
            continue;
        const Start r = start(op, now);
        if (r == Start::Failed) {
            fail(op, op.status);
            break;
        }
        if (r == Start::Blocked || op.stage == SendOp::Stage::Sending) {
            sq_waits_ = true;  // later operations wait for this one (posting order)
            return false;
        }
    }
    sq_waits_ = false;
    return true;
}

Qp::Start Qp::start(SendOp& op, std::uint64_t now) {
    if (peer_lost_) {
        op.status = IBV_WC_RETRY_EXC_ERR;
        return Start::Failed;
    }
    Start r;
    switch (op.opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        r = abi_.qp_base.qp_type == IBV_QPT_UD ? start_ud(op) : start_send(op);
        break;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: r = start_write(op, now); break;
    case IBV_WR_RDMA_READ: r = start_read(op, now); break;
    default: r = start_atomic(op, now); break;
    }
    if (r == Start::Done && op.stage != SendOp::Stage::Sending)
        op.stage = SendOp::Stage::Waiting;
    if (r == Start::Done && tx_ && !tx_->all_acked() && progress_ns_ == 0)
        progress_ns_ = now;
    return r;
}

bool Qp::sge_ok(const SendOp& op, std::uint32_t need) const {
    if (!op.inline_data.empty() || op.total == 0)
        return true;
    for (std::uint32_t i = 0; i < op.nsge; ++i) {
        const ibv_sge& s = op.sge[i];
        if (s.length == 0)
            continue;
        const Mr* mr = eng_.find_mr(s.lkey);
        if (!mr || mr->pd != pd_ || !mr->covers(s.addr, s.length, need))
            return false;
    }
    return true;
}

// Copies bytes [from, from + len) of the operation's data to `to`.
void Qp::gather(const SendOp& op, std::uint64_t from, std::uint64_t len, unsigned char* to) const {
    if (!op.inline_data.empty() || op.nsge == 0) {
        if (len)
            small_copy(to, op.inline_data.data() + from, len);
        return;
    }
    std::uint64_t at = 0;
    for (std::uint32_t i = 0; i < op.nsge && len; ++i) {
        const ibv_sge& s = op.sge[i];
        if (from >= at + s.length) {
            at += s.length;
            continue;
        }
        const std::uint64_t skip = from - at;
        const std::uint64_t n = std::min<std::uint64_t>(s.length - skip, len);
        small_copy(to, reinterpret_cast<const unsigned char*>(s.addr) + skip, n);
        to += n;
        from += n;
        len -= n;
        at += s.length;
    }
}

const unsigned char* Qp::span(const SendOp& op, std::uint64_t from, std::uint64_t len) const {
    if (!op.inline_data.empty())
        return op.inline_data.data() + from;
    if (op.nsge == 0)
        return nullptr;
    std::uint64_t at = 0;
    for (std::uint32_t i = 0; i < op.nsge; ++i) {
        const ibv_sge& s = op.sge[i];
        if (from < at + s.length)
            return from + len <= at + s.length
                       ? reinterpret_cast<const unsigned char*>(s.addr) + (from - at)
                       : nullptr;
        at += s.length;
    }
    return nullptr;
}

// ---- DMA runs of this QP ---------------------------------------------------------------

int Qp::start_dma(std::vector<tcaDmaXfer>& xfers, std::uint32_t*) {
    tcaDmaOpts o{};
    o.flags = TCA_DMA_HOST_DESC;
    o.channel = TCA_DMA_CHANNEL(dma_channel_);
    tcaDmaTicket t{};
    const int rc = tcaDmaStart(xfers.data(), xfers.size(), &o, &t);
    if (rc)
        return rc;
    dma_.push_back(t);
    ++dma_started_;
    return 0;
}

void Qp::poll_dma() {
    while (!dma_.empty()) {
        const int rc = tcaDmaTest(&dma_.front());
        if (rc == 1)
            return;
        if (rc != 0 && !dma_status_) {
            dma_status_ =
                dma_.front().status ? dma_.front().status : std::uint32_t{PEACH2_ERR_DMA_ABORTED};
            log_debug("QP %#x: DMA run failed: %s (%s)", qpn_, tcaErrorString(rc),
                      tcaCardErrorName(dma_status_));
        }
        dma_.pop_front();
        ++dma_ended_;
    }
}

bool Qp::dma_idle() {
    poll_dma();
    return dma_.empty();
}

// ---- emitting packets -------------------------------------------------------------------

// One low-latency packet: header + `len` bytes of the operation from `from`
// (none for op == nullptr), built in our staging copy of the slot, then
// written by PIO (payload, then the PSN pair) or by the slot's prebuilt
// chain (the same two writes). The caller checked ll_room().
bool Qp::emit_ll(const wire::Header& hdr, const SendOp* op, std::uint64_t from, std::uint32_t len) {
    const std::uint32_t slot = tx_->ll_slot();
    const std::uint64_t off = wire::kCtrlBytes + std::uint64_t{slot} * wire::kLlSlot;
    unsigned char* s = stage_.bytes() + off;
    wire::Header h = hdr;
    h.seq = tx_->next_seq();
    h.psn = (attr_.sq_psn + h.seq - 1) & 0xffffff;
    h.len = len;
    // Packed against the slot's end (wire.hpp): payload, ext, head, pair.
    const std::uint32_t start = wire::ll_start(h);
    if (op && len)
        gather(*op, from, len, s + start);
    wire::ll_put(h, s);
    const std::uint64_t pair = wire::pack(wire::Pair{h.seq, rx_->consumed()});
    std::memcpy(s + wire::kLlPairOff, &pair, sizeof pair);

    if (loopback_ || (!eng_.tune().ll_dma && dma_idle())) {
        const std::size_t body = wire::kLlPairOff - start;
        volatile unsigned char*& at = ll_at_[slot];
        if (!at && peer_.direct(off, wire::kLlSlot, &at) == 0 && !at)
            at = kLlWalk;  // not one piece: the walk, for good
        if (at && at != kLlWalk) {
            // The latency path: the packet, then the pair, straight into
            // the slot's place in the window.
            pio_store(at + start, s + start, body);
            pio_store(at + wire::kLlPairOff, &pair, sizeof pair);
        } else if (peer_.put(off + start, s + start, body) ||  // the walk (or a failed lookup)
                   peer_.put(off + wire::kLlPairOff, &pair, sizeof pair)) {
            return false;
        }
    } else {
        std::vector<RemoteRange::Piece>& pieces = op_pieces_;
        if (peer_.pieces(off, wire::kLlSlot, &pieces) || pieces.size() != 1)
            return false;
        const RemoteRange::Piece& p = pieces[0];
        tcaChain& c = ll_chains_[slot];
        tcaDmaOpts o{};
        o.channel = TCA_DMA_CHANNEL(dma_channel_);
        if (!c.id) {
            // Two writes, the packet, then its pair: PCIe orders a card's
            // writes, not the bytes within one, so a pair in the packet's
            // own write could land before the head it vouches for.
            tcaDmaXfer x[2]{};
            for (tcaDmaXfer& w : x) {
                w.dst = p.h;
                w.dst_offset = p.hoff;
                w.src = s;
            }
            x[0].len = wire::kLlPairOff;
            x[1].dst_offset += wire::kLlPairOff;
            x[1].src = s + wire::kLlPairOff;
            x[1].len = sizeof pair;
            if (tcaChainCreate(x, 2, &o, &c) == TCA_ENODESC) {
                o.flags = TCA_DMA_HOST_DESC;  // on-card descriptor RAM is full
                if (tcaChainCreate(x, 2, &o, &c))
                    return false;
                o.flags = 0;
            }
        }
        tcaDmaTicket t{};
        int rc;
        while ((rc = tcaChainStart(c, &o, &t)) == -EBUSY) {
            // Its previous run has not ended (the credit came back first).
            if (dma_.empty())
                return false;
            tcaDmaWait(&dma_.front(), 1000);
            poll_dma();
        }
        if (rc)
            return false;
        dma_.push_back(t);
        ++dma_started_;
    }
    tx_->push_ll();
    acked_sent_ = rx_->consumed();  // the pair carried our acknowledgement
    ack_due_ns_ = 0;
    hb_owed_ = 0;
    return true;
}

// One high-bandwidth record (header + `len` bytes of the operation from
// `from`) as one DMA list: `pre` (e.g. an RDMA Write's data) first, then a
// WRAP record if the ring wraps, the record, and the PSN pair. False when
// the ring has no room (nothing was sent).
Qp::Emit Qp::emit_hb(const wire::Header& hdr, const SendOp* op, std::uint64_t from,
                     std::uint32_t len, std::vector<tcaDmaXfer>* pre, std::uint64_t* seq_out) {
    const std::uint64_t bytes = wire::hb_record_bytes(len, 0);
    TxRings::HbPlace at;
    if (!tx_->hb_place(bytes, &at))
        return Emit::NoRoom;
    const std::uint64_t hb_base =
        wire::kCtrlBytes + std::uint64_t{peer_info_.ll_slots} * wire::kLlSlot;
    // The records, built in our staging mirror at their offsets in the ring.
    if (at.wrap) {
        wire::Header w{};
        w.op = wire::kOpWrap;
        std::memcpy(stage_.bytes() + hb_base + at.wrap_at, &w, sizeof w);
    }
    unsigned char* rec = stage_.bytes() + hb_base + at.offset;
    wire::Header h = hdr;
    h.seq = tx_->next_seq();
    h.psn = (attr_.sq_psn + h.seq - 1) & 0xffffff;
    h.len = len;
    h.shift = 0;
    std::memcpy(rec, &h, sizeof h);
    if (op && len)
        gather(*op, from, len, rec + wire::kHbHeader);
    const std::uint64_t payload = (len + 3) & ~3u;

    // The PSN pair, after everything else.
    const std::uint32_t records = tx_->hb_records() + (at.wrap ? 2 : 1);
    const std::uint64_t pair = wire::pack(wire::Pair{records, rx_->consumed()});
    auto sent = [&] {
        *seq_out = tx_->push_hb(bytes, at);
        acked_sent_ = rx_->consumed();  // the pair carried our acknowledgement
        ack_due_ns_ = 0;
        hb_owed_ = 0;
        return Emit::Sent;
    };
    std::uint64_t list_bytes = (at.wrap ? wire::kHbHeader : 0) + wire::kHbHeader + payload;
    if (pre)
        for (const tcaDmaXfer& x : *pre)
            list_bytes += x.len;
    // Small records by PIO, like the low-latency ring's packets: a short DMA
    // run costs ~10 us of guest kernel time under TCG, as much as 1 KiB of
    // stores (tca_bench crossover: the two meet between 768 B and 1 KiB).
    // Only behind a finished DMA, so that the record cannot overtake one of
    // this QP's earlier runs.
    if (loopback_ || (!eng_.tune().ll_dma && list_bytes <= eng_.tune().pio_max + wire::kHbHeader &&
                      dma_idle())) {
        // What the DMA list below would carry, by PIO, but of a record's
        // 64-byte header only the 32 bytes a receiver reads (4 stores fewer
        // a record). The records first: a later part of the peer's area may
        // need a lookup, and if that fails nothing of `pre` has been written
        // (a record without its pair is never read). Each put ends with a
        // store fence, so the pair lands last.
        if (at.wrap && peer_.put(hb_base + at.wrap_at, stage_.bytes() + hb_base + at.wrap_at,
                                 sizeof(wire::Header)))
            return Emit::Error;
        if (peer_.put(hb_base + at.offset, rec, sizeof h) ||
            (len &&
             peer_.put(hb_base + at.offset + wire::kHbHeader, rec + wire::kHbHeader, payload)))
            return Emit::Error;
        if (pre)
            for (const tcaDmaXfer& x : *pre)
                if (put_at(*x.dst, x.dst_offset, x.src, x.len))
                    return Emit::Error;
        if (peer_.put(wire::kHbPairOff, &pair, sizeof pair))
            return Emit::Error;
        return sent();
    }

    // One DMA list: `pre`, the records from the mirror, the pair as its
    // completion word.
    std::vector<tcaDmaXfer>& xfers = hb_xfers_;
    if (pre)
        xfers = *pre;  // into the capacity it has
    else
        xfers.clear();
    std::vector<RemoteRange::Piece>& pieces = hb_pieces_;
    auto add = [&](std::uint64_t off, std::uint64_t n) {
        if (peer_.pieces(off, n, &pieces))
            return false;
        for (const RemoteRange::Piece& p : pieces) {
            tcaDmaXfer x{};
            x.dst = p.h;
            x.dst_offset = p.hoff;
            x.src = stage_.bytes() + off + p.pos;  // the mirror: same offset, same low bits
            x.len = p.len;
            xfers.push_back(x);
        }
        return true;
    };
    std::vector<RemoteRange::Piece>& ctrl = hb_ctrl_;
    if ((at.wrap && !add(hb_base + at.wrap_at, wire::kHbHeader)) ||
        !add(hb_base + at.offset, wire::kHbHeader + payload) ||
        peer_.pieces(wire::kHbPairOff, 8, &ctrl))
        return Emit::Error;
    xfers.back().notify = ctrl[0].h;
    xfers.back().notify_offset = ctrl[0].hoff;
    xfers.back().notify_value = pair;
    xfers.back().notify_len = 8;
    std::uint32_t status = 0;
    if (int rc = start_dma(xfers, &status)) {
        if (rc == -EAGAIN)
            return Emit::NoRoom;  // 1024 runs in flight: later
        log_debug("QP %#x: DMA of a ring record refused: %s", qpn_, tcaErrorString(rc));
        return Emit::Error;
    }
    return sent();
}

// ---- operations ---------------------------------------------------------------------------

Qp::Start Qp::start_send(SendOp& op) {
    if (!sge_ok(op, 0)) {
        op.status = IBV_WC_LOC_PROT_ERR;
        return Start::Failed;
    }
    wire::Header h{};
    h.op = wire::kOpSend;
    h.imm = op.imm;
    h.total = static_cast<std::uint32_t>(op.total);
    const std::uint8_t extra = (op.opcode == IBV_WR_SEND_WITH_IMM ? wire::kImm : 0) |
                               ((op.flags & IBV_SEND_SOLICITED) ? wire::kSolicited : 0);
    if (op.total <= wire::kLlPayload) {
        if (!tx_->ll_room())
            return Start::Blocked;
        h.flags = wire::kFirst | wire::kLast | extra;
        h.len = static_cast<std::uint32_t>(op.total);
        if (!emit_ll(h, &op, 0, h.len)) {
            op.status = IBV_WC_LOC_QP_OP_ERR;
            return Start::Failed;
        }
        op.wait_seq = tx_->sent();
        return Start::Done;
    }
    // Fragments of at most half the ring, as room comes back.
    const std::uint64_t frag = (tx_->max_packet() - wire::kHbHeader) & ~std::uint64_t{63};
    while (op.sent < op.total) {
        const std::uint64_t n = std::min(frag, op.total - op.sent);
        h.flags =
            (op.sent == 0 ? wire::kFirst : 0) | (op.sent + n == op.total ? wire::kLast | extra : 0);
        std::uint64_t seq = 0;
        const Emit e = emit_hb(h, &op, op.sent, static_cast<std::uint32_t>(n), nullptr, &seq);
        if (e == Emit::NoRoom) {
            if (op.sent)
                op.stage = SendOp::Stage::Sending;
            return Start::Blocked;
        }
        if (e == Emit::Error) {
            op.status = IBV_WC_LOC_QP_OP_ERR;
            return Start::Failed;
        }
        op.sent += n;
        op.wait_seq = static_cast<std::uint32_t>(seq);
    }
    op.stage = SendOp::Stage::Waiting;
    op.wait_dma = dma_started_;
    return Start::Done;
}

// The remote MR of `rkey`, looked up (again) when this QP has no lease on
// it: on first use, or when its lease ran out because it was left alone (or
// the renewer could not renew it in time).
int Qp::remote_mr(std::uint32_t rkey, std::uint64_t now, RemoteRange** out) {
    CachedMr& c = mr_cache_[rkey];
    auto& slot = c.range;
    const bool held = slot && slot->valid();
    if (!held || slot->expired(now)) {
        if (!held || slot->renew(now) != 0) {
            if (!slot)
                slot = std::make_unique<RemoteRange>();
            if (int rc = slot->open(peer_node_, TCA_NAME_KEY, rkey)) {
                mr_cache_.erase(rkey);
                return rc;
            }
        }
        c.lapsed = false;
    }
    c.used_ns = now;
    *out = slot.get();
    return 0;
}

// The remote MR an RDMA operation names, checked as the responder's HCA
// would: the key exists on the peer's node, belongs to the peer QP's PD
// (same process, same PD), allows `need` (IBV_ACCESS_REMOTE_*), and holds
// [remote_addr, remote_addr + total). *off: where remote_addr lies in the
// published range.
ibv_wc_status Qp::check_remote(SendOp& op, std::uint32_t need, std::uint64_t now, RemoteRange** out,
                               std::uint64_t* off) {
    *out = nullptr;
    RemoteRange* mr = nullptr;
    if (int rc = remote_mr(op.rkey, now, &mr)) {
        log_debug("QP %#x: rkey %#x on node %u: %s", qpn_, op.rkey, peer_node_, tcaErrorString(rc));
        return rc == TCA_ENOTEXPORTED ? IBV_WC_REM_ACCESS_ERR : IBV_WC_RETRY_EXC_ERR;
    }
    MrInfo mi;
    std::memcpy(&mi, mr->info().info, sizeof mi);
    const tcaNameInfo& qi = peer_.info();
    if (mi.magic != kMrMagic || mr->info().owner != qi.owner || mr->info().group != qi.group ||
        (mi.access & need) != need || op.remote_addr < mi.iova || op.total > mi.length ||
        op.remote_addr - mi.iova > mi.length - op.total) {
        log_debug("QP %#x: rkey %#x refuses %llu bytes at %#llx (access %#x, need %#x)", qpn_,
                  op.rkey, static_cast<unsigned long long>(op.total),
                  static_cast<unsigned long long>(op.remote_addr), mi.access, need);
        return IBV_WC_REM_ACCESS_ERR;
    }
    *off = op.remote_addr - mi.iova + mi.skew;
    *out = mr;
    return IBV_WC_SUCCESS;
}

Qp::Start Qp::start_write(SendOp& op, std::uint64_t now) {
    const bool imm = op.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    if (!sge_ok(op, 0)) {
        op.status = IBV_WC_LOC_PROT_ERR;
        return Start::Failed;
    }
    RemoteRange* mr = nullptr;
    std::uint64_t off = 0;
    if (op.total) {  // zero-length RDMA carries no valid rkey
        const ibv_wc_status st = check_remote(op, IBV_ACCESS_REMOTE_WRITE, now, &mr, &off);
        if (st != IBV_WC_SUCCESS) {
            op.status = st;
            return Start::Failed;
        }
    }
    wire::Header h{};
    h.op = wire::kOpWriteImm;
    h.flags = wire::kFirst | wire::kLast | wire::kImm |
              ((op.flags & IBV_SEND_SOLICITED) ? wire::kSolicited : 0);
    h.imm = op.imm;
    h.total = static_cast<std::uint32_t>(op.total);

    std::vector<RemoteRange::Piece>& pieces = write_pieces_;  // its capacity kept
    pieces.clear();
    if (mr) {
        if (int rc = mr->pieces(off, op.total, &pieces)) {
            op.status = remote_status(rc, 0);
            return Start::Failed;
        }
    }
    const std::uint64_t dst0 = mr ? global_at(*pieces[0].h, pieces[0].hoff) : 0;
    const std::uint64_t head = (4 - dst0 % 4) % 4;
    const std::uint64_t tail = (dst0 + op.total) % 4;
    const bool pio = loopback_ || op.total <= eng_.tune().pio_max || op.total < head + tail + 4;

    // Everything that needs room or an idle DMA queue is checked first:
    // nothing goes out unless all of it can.
    if (pio || head || tail) {
        if (!dma_idle())
            return Start::Blocked;  // PIO must not overtake this QP's DMA
    }
    if (imm) {
        TxRings::HbPlace room;
        if (pio ? !tx_->ll_room() : !tx_->hb_place(wire::kHbHeader, &room))
            return Start::Blocked;
    }

    auto put_range = [&](std::uint64_t from, std::uint64_t len) {
        // PIO of [from, from + len) of the data to the same offsets remotely,
        // from where the data lies if it is one piece (one SGE, inline data).
        std::vector<unsigned char> tmp;
        const unsigned char* src = span(op, from, len);
        if (!src) {
            tmp.resize(len);
            gather(op, from, len, tmp.data());
            src = tmp.data();
        }
        for (const RemoteRange::Piece& p : pieces) {
            const std::uint64_t lo = std::max(p.pos, from),
                                hi = std::min(p.pos + p.len, from + len);
            if (lo < hi && put_at(*p.h, p.hoff + (lo - p.pos), src + (lo - from), hi - lo))
                return false;
        }
        return true;
    };

    if (pio) {
        if (op.total && !put_range(0, op.total)) {
            op.status = IBV_WC_RETRY_EXC_ERR;
            return Start::Failed;
        }
        if (imm) {
            if (!emit_ll(h, nullptr, 0, 0)) {
                op.status = IBV_WC_LOC_QP_OP_ERR;
                return Start::Failed;
            }
            op.wait_seq = tx_->sent();
        }
        return Start::Done;
    }

    // DMA of the aligned body [head, total - tail); unaligned edges by PIO
    // (the queue is idle, so they cannot pass earlier DMA).
    std::vector<tcaDmaXfer>& xfers = write_xfers_;
    xfers.clear();
    const std::uint64_t body = op.total - head - tail;
    bool direct = op.inline_data.empty();
    if (direct) {
        // Zero-copy when every source piece meets the card's rules against
        // its destination.
        std::uint64_t at = 0;
        for (std::uint32_t i = 0; i < op.nsge && direct; ++i) {
            const ibv_sge& s = op.sge[i];
            for (const RemoteRange::Piece& p : pieces) {
                const std::uint64_t lo = std::max({p.pos, at, head});
                const std::uint64_t hi = std::min({p.pos + p.len, at + s.length, head + body});
                if (lo >= hi)
                    continue;
                const std::uint64_t src = s.addr + (lo - at);
                const std::uint64_t dst = global_at(*p.h, p.hoff + (lo - p.pos));
                if (!dma_ok(src, dst, hi - lo)) {
                    direct = false;
                    break;
                }
                tcaDmaXfer x{};
                x.dst = p.h;
                x.dst_offset = p.hoff + (lo - p.pos);
                x.src = reinterpret_cast<const void*>(src);
                x.len = hi - lo;
                xfers.push_back(x);
            }
            at += s.length;
        }
    }
    if (!direct) {
        // A bounce buffer placed with the destination's low 4 address bits.
        xfers.clear();
        if (int rc = get_bounce(body + 16, &op.bounce, false)) {
            if (rc == -EDQUOT)
                return Start::Blocked;  // the user's quarantined memory: later
            op.status = IBV_WC_LOC_QP_OP_ERR;
            return Start::Failed;
        }
        unsigned char* const b = op.bounce.p;
        const std::uint64_t boff = (dst0 + head) & 15;
        gather(op, head, body, b + boff);
        for (const RemoteRange::Piece& p : pieces) {
            const std::uint64_t lo = std::max(p.pos, head),
                                hi = std::min(p.pos + p.len, head + body);
            if (lo >= hi)
                continue;
            tcaDmaXfer x{};
            x.dst = p.h;
            x.dst_offset = p.hoff + (lo - p.pos);
            x.src = b + boff + (lo - head);
            x.len = hi - lo;
            xfers.push_back(x);
        }
    }
    if ((head && !put_range(0, head)) || (tail && !put_range(op.total - tail, tail))) {
        op.status = IBV_WC_RETRY_EXC_ERR;
        return Start::Failed;
    }
    if (imm) {
        std::uint64_t seq = 0;
        const Emit e = emit_hb(h, nullptr, 0, 0, &xfers, &seq);
        if (e == Emit::NoRoom) {
            // Nothing of the list went out; the edges did (written again,
            // the same bytes, on the next attempt).
            put_bounce(op.bounce);
            return Start::Blocked;
        }
        if (e == Emit::Error) {
            op.status = IBV_WC_LOC_QP_OP_ERR;
            return Start::Failed;
        }
        op.wait_seq = static_cast<std::uint32_t>(seq);
    } else {
        std::uint32_t status = 0;
        if (int rc = start_dma(xfers, &status)) {
            if (rc == -EAGAIN)
                return Start::Blocked;
            log_debug("QP %#x: RDMA Write DMA refused: %s", qpn_, tcaErrorString(rc));
            op.status = IBV_WC_LOC_QP_OP_ERR;
            return Start::Failed;
        }
    }
    op.wait_dma = dma_started_;
    return Start::Done;
}

// What a Read and an atomic both wait for before they start: one of
// max_rd_atomic, room in the target's read-proxy ring (below), and this QP's
// DMA runs ended (they must see its earlier Writes); then their local memory
// must be writable. Done: go on.
//
// The target's card queues requests in a ring its driver serves one at a
// time (256 entries by default, shared by every requester); what does not
// fit is answered RP_FULL and resubmitted after a growing backoff, while
// the ring drains and stands idle. A request lists up to 64 physically
// contiguous runs of the destination, so a Read of 1 MiB into malloc'ed
// memory is 1-5 requests (in a guest whose free memory is scattered: 16
// per 4 MiB), and max_rd_atomic Reads could still be hundreds of ring
// entries: a further Read waits while this QP has rp_window requests out.
Qp::Start Qp::rd_start_ready(SendOp& op) {
    if (rd_inflight_ >= std::max<std::uint32_t>(1, attr_.max_rd_atomic))
        return Start::Blocked;
    if (rd_inflight_ > 0) {
        std::uint64_t pieces = 0;
        for (const SendOp& o : sq_)
            for (const tcaRequest& r : o.rp)
                pieces += r.id ? r.pieces : 0;
        if (pieces >= eng_.tune().rp_window)
            return Start::Blocked;
    }
    if (!dma_idle())
        return Start::Blocked;
    if (!sge_ok(op, IBV_ACCESS_LOCAL_WRITE)) {
        op.status = IBV_WC_LOC_PROT_ERR;
        return Start::Failed;
    }
    return Start::Done;
}

Qp::Start Qp::start_read(SendOp& op, std::uint64_t now) {
    if (op.total == 0)
        return Start::Done;
    if (const Start r = rd_start_ready(op); r != Start::Done)
        return r;
    RemoteRange* mr = nullptr;
    std::uint64_t off = 0;
    const ibv_wc_status st = check_remote(op, IBV_ACCESS_REMOTE_READ, now, &mr, &off);
    if (st != IBV_WC_SUCCESS) {
        op.status = st;
        return Start::Failed;
    }
    // Zero-copy when the single destination meets the card's rules.
    std::vector<RemoteRange::Piece>& pieces = op_pieces_;
    bool direct = op.nsge == 1 && op.total % 4 == 0;
    if (direct) {
        if (int rc = mr->pieces(off, op.total, &pieces)) {
            op.status = remote_status(rc, 0);
            return Start::Failed;
        }
        for (const RemoteRange::Piece& p : pieces)
            direct = direct && dma_ok(op.sge[0].addr + p.pos, global_at(*p.h, p.hoff), p.len);
    }
    std::uint64_t r0 = off, len = op.total;
    if (!direct) {
        // Read the range rounded out to 4 bytes (the published range is,
        // too) into a bounce buffer with the source's low 4 bits.
        r0 = off & ~std::uint64_t{3};
        len = ((off + op.total + 3) & ~std::uint64_t{3}) - r0;
        if (int rc = mr->pieces(r0, len, &pieces)) {
            op.status = remote_status(rc, 0);
            return Start::Failed;
        }
        if (int rc = get_bounce(len + 16, &op.bounce, false)) {
            if (rc == -EDQUOT)
                return Start::Blocked;  // the user's quarantined memory: later
            op.status = IBV_WC_LOC_QP_OP_ERR;
            return Start::Failed;
        }
        op.bounce_off = global_at(*pieces[0].h, pieces[0].hoff) & 15;
    }
    // One get over the MR's handles (one per lookup of it, up to 14 of its
    // physically contiguous pieces each): the target reads its buffer
    // onwards from a request's first byte, so a Read is as many requests as
    // the local side needs, not one per handle it crosses.
    std::vector<const tcaHandle*>& handles = read_handles_;  // its capacity kept
    handles.clear();
    for (const RemoteRange::Piece& p : pieces)
        handles.push_back(p.h);
    unsigned char* dst = direct ? reinterpret_cast<unsigned char*>(op.sge[0].addr)
                                : op.bounce.p + op.bounce_off;
    op.rp.resize(1);
    const int rc =
        tcaGetSpanNB(dst, handles.data(), handles.size(), pieces[0].hoff, len, &op.rp[0]);
    if (rc) {
        log_debug("QP %#x: RDMA Read refused: %s", qpn_, tcaErrorString(rc));
        op.status = remote_status(rc, op.rp[0].status);
        op.rp.clear();
        return Start::Failed;
    }
    op.bounce_off += off - r0;  // where the first wanted byte sits
    op.counts_rd = true;
    ++rd_inflight_;
    return Start::Done;
}

Qp::Start Qp::start_atomic(SendOp& op, std::uint64_t now) {
    if (const Start r = rd_start_ready(op); r != Start::Done)
        return r;
    if (op.remote_addr % 8) {
        op.status = IBV_WC_REM_INV_REQ_ERR;
        return Start::Failed;
    }
    RemoteRange* mr = nullptr;
    std::uint64_t off = 0;
    const ibv_wc_status st = check_remote(op, IBV_ACCESS_REMOTE_ATOMIC, now, &mr, &off);
    if (st != IBV_WC_SUCCESS) {
        op.status = st;
        return Start::Failed;
    }
    std::vector<RemoteRange::Piece>& pieces = op_pieces_;
    if (int rc = mr->pieces(off, 8, &pieces); rc || pieces.size() != 1) {
        op.status = IBV_WC_REM_INV_REQ_ERR;
        return Start::Failed;
    }
    op.rp.resize(1);
    const int rc = op.opcode == IBV_WR_ATOMIC_CMP_AND_SWP
                       ? tcaCasNB(pieces[0].h, pieces[0].hoff, op.compare_add, op.swap, &op.rp[0])
                       : tcaFaaNB(pieces[0].h, pieces[0].hoff, op.compare_add, &op.rp[0]);
    if (rc) {
        op.status = remote_status(rc, op.rp[0].status);
        op.rp.clear();
        return Start::Failed;
    }
    op.counts_rd = true;
    ++rd_inflight_;
    return Start::Done;
}

// ---- bounce buffers -------------------------------------------------------------------------

// Called under the engine lock. Over the user's quota the driver would make
// a new buffer wait for the user's quarantined memory (up to ~6 s), and every
// QP of the process, their acknowledgements included, would wait with it:
// the peers give up ("stopped answering"). So unless the caller cannot go
// back (may_wait), such an allocation fails at once and the WR is started
// again later.
int Qp::get_bounce(std::uint64_t bytes, Bounce* out, bool may_wait) {
    auto alloc = [&](TcaBuffer& b, std::uint64_t n) {
        return may_wait ? b.alloc(n, true) : eng_.alloc_nowait(b, n);
    };
    if (bytes <= kBounceSlot && bounce_free_) {
        if (!bounce_area_.p)
            if (int rc = alloc(bounce_area_, kBounceSlots * kBounceSlot))
                return rc;
        const int slot = __builtin_ctz(bounce_free_);
        bounce_free_ &= ~(1u << slot);
        out->slot = slot;
        out->p = bounce_area_.bytes() + slot * kBounceSlot;  // 64-byte aligned
        return 0;
    }
    std::unique_ptr<TcaBuffer> b = eng_.take_bounce(bytes);
    if (!b) {
        b = std::make_unique<TcaBuffer>();
        if (int rc = alloc(*b, bytes))
            return rc;
    }
    out->p = b->bytes();
    out->own = std::move(b);
    return 0;
}

void Qp::put_bounce(Bounce& b, bool answered) noexcept {
    if (b.slot < 0 && !b.own) {  // none (most operations)
        b.p = nullptr;
        return;
    }
    if (b.slot >= 0)
        bounce_free_ |= 1u << b.slot;
    b.slot = -1;
    // A buffer a request may still answer into (one that failed or timed
    // out) is freed: libtca keeps it until no late answer can come.
    if (answered)
        eng_.keep_bounce(std::move(b.own));
    b.own.reset();
    b.p = nullptr;
}

// ---- completion ------------------------------------------------------------------------------

void Qp::poll_rp(SendOp& op) {
    if (op.rp.empty() || op.stage != SendOp::Stage::Waiting)
        return;
    bool pending = false;
    for (tcaRequest& r : op.rp) {
        if (r.id == 0)
            continue;
        const int rc = tcaTest(&r);
        if (rc == 1)
            pending = true;
    }
    if (pending)
        return;
    for (const tcaRequest& r : op.rp) {
        if (r.result != 0) {
            log_debug("QP %#x: %s failed: %s (%s)", qpn_,
                      op.opcode == IBV_WR_RDMA_READ ? "RDMA Read" : "atomic",
                      tcaErrorString(r.result), tcaCardErrorName(r.status));
            if (op.status == IBV_WC_SUCCESS)
                op.status = remote_status(r.result, r.status);
        }
    }
    if (op.status == IBV_WC_SUCCESS) {
        if (is_atomic(op.opcode)) {
            const std::uint64_t old = op.rp[0].value;
            std::memcpy(reinterpret_cast<void*>(op.sge[0].addr), &old, sizeof old);
        } else if (op.bounce.p) {
            // Scatter the wanted bytes to the destination SGEs.
            const unsigned char* from = op.bounce.p + op.bounce_off;
            for (std::uint32_t i = 0; i < op.nsge; ++i) {
                std::memcpy(reinterpret_cast<void*>(op.sge[i].addr), from, op.sge[i].length);
                from += op.sge[i].length;
            }
        }
    }
    op.rp.clear();
    put_bounce(op.bounce, op.status == IBV_WC_SUCCESS);
    if (op.counts_rd) {
        op.counts_rd = false;
        --rd_inflight_;
    }
    if (op.status != IBV_WC_SUCCESS)
        fail(op, op.status);
}

void Qp::fail(SendOp& op, ibv_wc_status st) {
    log_debug("QP %#x: WR %#llx ends with %s; QP in error", qpn_,
              static_cast<unsigned long long>(op.wr_id), ibv_wc_status_str(st));
    op.status = st;
    op.stage = SendOp::Stage::Done;
    to_error();  // everything still outstanding flushes
}

void Qp::complete_sq() {
    const ibv_qp_state s = state();
    for (SendOp& op : sq_) {
        if (op.stage != SendOp::Stage::Waiting || s == IBV_QPS_ERR)
            continue;
        if (op.wait_seq && tx_ && seq_before(tx_->acked(), op.wait_seq))
            continue;
        if (dma_ended_ < op.wait_dma || !op.rp.empty())
            continue;
        if (dma_status_ && op.wait_dma) {
            fail(op, dma_status(dma_status_));
            return;
        }
        op.stage = SendOp::Stage::Done;
        put_bounce(op.bounce, true);  // its DMA run ended: nothing reads it any more
    }
    while (!sq_.empty() && sq_.front().stage == SendOp::Stage::Done) {
        SendOp& op = sq_.front();
        if (op.signaled || op.status != IBV_WC_SUCCESS) {
            ibv_wc wc{};
            wc.wr_id = op.wr_id;
            wc.status = op.status;
            switch (op.opcode) {
            case IBV_WR_RDMA_WRITE:
            case IBV_WR_RDMA_WRITE_WITH_IMM: wc.opcode = IBV_WC_RDMA_WRITE; break;
            case IBV_WR_RDMA_READ:
                wc.opcode = IBV_WC_RDMA_READ;
                wc.byte_len = static_cast<std::uint32_t>(op.total);
                break;
            case IBV_WR_ATOMIC_CMP_AND_SWP:
                wc.opcode = IBV_WC_COMP_SWAP;
                wc.byte_len = 8;
                break;
            case IBV_WR_ATOMIC_FETCH_AND_ADD:
                wc.opcode = IBV_WC_FETCH_ADD;
                wc.byte_len = 8;
                break;
            default: wc.opcode = IBV_WC_SEND; break;
            }
            wc.qp_num = qpn_;
            eng_.push_cqe(scq_, wc, false);
        }
        sq_.pop_front();
    }
}

// ---- timers -------------------------------------------------------------------------------------

void Qp::check_timers(std::uint64_t now) {
    if (!tx_)
        return;
    if (peer_lost_) {
        for (SendOp& op : sq_)
            if (op.stage == SendOp::Stage::Waiting && (op.wait_seq || !op.rp.empty())) {
                fail(op, IBV_WC_RETRY_EXC_ERR);
                return;
            }
    }
    // RNR: time to tell the peer to try the packet again.
    if (rnr_seq_ && now >= rnr_resend_ns_) {
        ++rnr_attempt_;
        put_word(wire::kRetryOff, wire::pack(wire::Pair{rnr_seq_, rnr_attempt_}));
        rnr_seq_ = 0;
        progress_ns_ = now;
    }
    // Transport timeout: packets out, no acknowledgement for too long.
    if (tx_->all_acked() || attr_.timeout == 0) {
        progress_ns_ = now;
        return;
    }
    // (defensive: every time given to progress() is read under the engine
    // lock, so progress_ns_ does not run ahead of `now`)
    if (now < progress_ns_ || now - progress_ns_ < retry_after_ns())
        return;
    progress_ns_ = now;
    if (retries_left_ > 0) {
        --retries_left_;
        log_debug("QP %#x: no acknowledgement from QP %#x on node %u; %u retries left", qpn_,
                  attr_.dest_qp_num, peer_node_, retries_left_);
        return;
    }
    for (SendOp& op : sq_)
        if (op.stage == SendOp::Stage::Waiting || op.stage == SendOp::Stage::Sending) {
            log_error(
                "QP %#x: peer QP %#x on node %u stopped answering: transport retry counter "
                "exceeded",
                qpn_, attr_.dest_qp_num, peer_node_);
            fail(op, IBV_WC_RETRY_EXC_ERR);
            return;
        }
}

std::uint64_t Qp::retry_after_ns() const noexcept {
    const std::uint64_t ib_ns = 4096ull << std::min<std::uint32_t>(attr_.timeout, 31);
    return std::max<std::uint64_t>(ib_ns, eng_.tune().ack_timeout_min_ms * 1000000ull);
}

// Acknowledgements and NAKs the peer wrote into our control page.
void Qp::read_feedback(std::uint64_t now) {
    if (!tx_)
        return;
    ack_word_seen_ = load_ctrl(wire::kAckOff);
    const wire::Pair ack = wire::unpack(ack_word_seen_);
    if (tx_->ack(ack.acked)) {
        progress_ns_ = now;
        retries_left_ = attr_.retry_cnt;
        rnr_left_ = attr_.rnr_retry;
    }
    wire::Nak nak;
    const std::uint64_t raw = load_ctrl(wire::kNakOff);
    std::memcpy(&nak, &raw, sizeof nak);
    if (nak.count == nak_seen_)
        return;
    nak_seen_ = nak.count;
    progress_ns_ = now;
    if (!seq_before(tx_->acked(), nak.seq))
        return;  // about a packet acknowledged since
    SendOp* owner = nullptr;
    for (SendOp& op : sq_)
        if (op.stage == SendOp::Stage::Waiting && op.wait_seq &&
            !seq_before(op.wait_seq, nak.seq)) {
            owner = &op;
            break;
        }
    if (nak.kind == wire::kNakRnr) {
        if (attr_.rnr_retry != 7) {  // 7: retry for ever
            if (rnr_left_ == 0) {
                if (owner) {
                    log_debug("QP %#x: peer had no receive WR; RNR retries used up", qpn_);
                    fail(*owner, IBV_WC_RNR_RETRY_EXC_ERR);
                }
                return;
            }
            --rnr_left_;
        }
        rnr_seq_ = nak.seq;
        rnr_resend_ns_ = now + kRnrDelayUs[nak.rnr_timer & 31] * 1000ull;
        return;
    }
    if (owner)
        fail(*owner, nak.kind == wire::kNakPsn ? IBV_WC_RETRY_EXC_ERR : IBV_WC_REM_INV_REQ_ERR);
}

}  // namespace pv
