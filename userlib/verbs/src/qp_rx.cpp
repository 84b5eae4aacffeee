// SPDX-License-Identifier: MIT
// Qp, receive side: packets from the peer's rings in sequence order, into
// receive WRs; acknowledgements and NAKs back to the peer (docs/verbs.md,
// "Receiving").
#include <algorithm>
#include <cstring>

#include "engine.hpp"
#include "identity.hpp"
#include "log.hpp"
#include "qp.hpp"
#include "small_copy.hpp"

namespace pv {

std::uint64_t Qp::load_ctrl(std::uint32_t off) const noexcept {
    return __atomic_load_n(reinterpret_cast<const std::uint64_t*>(area_.bytes() + off),
                           __ATOMIC_ACQUIRE);
}

// One 8-byte store into the peer's control page (PIO: acks, NAKs and retry
// tokens carry no data, so they may pass this QP's DMA).
void Qp::put_word(std::uint64_t off, std::uint64_t v) {
    if (peer_.valid() && !peer_lost_)
        peer_.put(off, &v, sizeof v);
}

// An explicit acknowledgement costs a link packet, and most are not needed:
// the pair of our next packet carries the count anyway (a ping-pong never
// sends one). So one goes out only when the sender may run short of ring
// space (a quarter of a ring consumed since the last), when forced, or
// kAckDelayNs after the first unacknowledged packet (the sender's Send
// completions wait for it).
void Qp::send_ack(bool force) {
    if (!rx_ || !peer_.valid())
        return;
    const std::uint32_t owed = rx_->consumed() - acked_sent_;
    if (owed == 0) {
        ack_due_ns_ = 0;
        return;
    }
    if (!force && owed < std::max<std::uint32_t>(1, ll_slots_ / 4) && hb_owed_ < hb_bytes_ / 4) {
        // Unforced acks come at the end of progress(): its clock read.
        const std::uint64_t now = progressed_ns_;
        if (!ack_due_ns_)
            ack_due_ns_ = now + kAckDelayNs;
        if (now < ack_due_ns_)
            return;
    }
    acked_sent_ = rx_->consumed();
    ack_due_ns_ = 0;
    hb_owed_ = 0;
    put_word(wire::kAckOff, wire::pack(wire::Pair{0, acked_sent_}));
}

void Qp::send_nak(std::uint32_t seq, std::uint8_t kind) {
    wire::Nak n{seq, kind, static_cast<std::uint8_t>(attr_.min_rnr_timer), ++nak_count_};
    std::uint64_t v;
    std::memcpy(&v, &n, sizeof v);
    put_word(wire::kNakOff, v);
}

RecvWr* Qp::next_recv() {
    if (srq_)
        return srq_->wrs.empty() ? nullptr : &srq_->wrs.front();
    return rq_.empty() ? nullptr : &rq_.front();
}

void Qp::pop_recv() {
    if (!srq_) {
        rq_.pop_front();
        return;
    }
    srq_->wrs.pop_front();
    if (srq_->limit && srq_->limit_armed && srq_->wrs.size() < srq_->limit) {
        srq_->limit_armed = false;
        ibv_async_event ev{};
        ev.element.srq = &srq_->abi;
        ev.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
        eng_.async_event(ev);
    }
}

void Qp::complete_recv(const RecvWr& wr, ibv_wc_status st, const wire::Header& h,
                       std::uint32_t byte_len) {
    ibv_wc wc{};
    wc.wr_id = wr.wr_id;
    wc.status = st;
    wc.opcode = h.op == wire::kOpWriteImm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
    wc.byte_len = byte_len;
    wc.qp_num = qpn_;
    if (st == IBV_WC_SUCCESS && (h.flags & wire::kImm)) {
        wc.imm_data = h.imm;
        wc.wc_flags |= IBV_WC_WITH_IMM;
    }
    if (abi_.qp_base.qp_type == IBV_QPT_UD) {
        wc.src_qp = h.src_qpn;
        wc.slid = node_lid(h.src_node);
        wc.wc_flags |= IBV_WC_GRH;
    } else {
        wc.src_qp = attr_.dest_qp_num;
        wc.slid = node_lid(peer_node_);
    }
    eng_.push_cqe(rcq_, wc, (h.flags & wire::kSolicited) != 0);
}

void Qp::poll_rx() {
    const ibv_qp_state s = state();
    if (!rx_ || (s != IBV_QPS_RTR && s != IBV_QPS_RTS && s != IBV_QPS_SQD))
        return;
    const unsigned char* ll = area_.bytes() + wire::kCtrlBytes;
    const unsigned char* hb = ll + std::uint64_t{ll_slots_} * wire::kLlSlot;
    for (;;) {
        const std::uint32_t want = rx_->expected();
        const unsigned char* slot = ll + std::uint64_t{rx_->ll_slot()} * wire::kLlSlot;
        const wire::Pair lp = wire::unpack(__atomic_load_n(
            reinterpret_cast<const std::uint64_t*>(slot + wire::kLlPairOff), __ATOMIC_ACQUIRE));
        wire::Header h;
        if (lp.sent == want) {
            if (tx_ && tx_->ack(lp.acked))
                progress_ns_ = progressed_ns_;
            std::uint32_t payload = 0;
            if (!wire::ll_get(slot, want, &h, &payload) || !take_packet(slot + payload, h, 0))
                break;
            continue;
        }
        const wire::Pair hp = wire::unpack(load_ctrl(wire::kHbPairOff));
        if (tx_ && tx_->ack(hp.acked))
            progress_ns_ = progressed_ns_;
        bool took = false;
        while (rx_->hb_pending(hp.sent)) {
            const unsigned char* rec = hb + rx_->hb_offset();
            std::memcpy(&h, rec, sizeof h);
            if (h.op == wire::kOpWrap) {
                rx_->skip_wrap();
                continue;
            }
            if (h.seq == want && h.shift < 16 && h.len <= hb_bytes_ / 2)
                took = take_packet(rec + wire::kHbHeader + h.shift, h,
                                   wire::hb_record_bytes(h.len, h.shift));
            break;
        }
        if (!took)
            break;
    }
}

bool Qp::rx_ready() const noexcept {
    if (!rx_)
        return false;
    const unsigned char* slot =
        area_.bytes() + wire::kCtrlBytes + std::uint64_t{rx_->ll_slot()} * wire::kLlSlot;
    const wire::Pair lp = wire::unpack(__atomic_load_n(
        reinterpret_cast<const std::uint64_t*>(slot + wire::kLlPairOff), __ATOMIC_ACQUIRE));
    return lp.sent == rx_->expected() ||
           rx_->hb_pending(wire::unpack(load_ctrl(wire::kHbPairOff)).sent);
}

// Handles the packet with the expected seq (its payload at `payload`; an HB
// record of hb_bytes bytes, 0 for an LL slot). False if it stays where it is
// (no receive WR: RNR; or a PSN the connection does not expect).
bool Qp::take_packet(const unsigned char* payload, const wire::Header& h, std::uint64_t hb_bytes) {
    const std::uint32_t psn = (attr_.rq_psn + h.seq - 1) & 0xffffff;
    if (h.psn != psn) {
        if (rnr_waiting_ != h.seq) {
            log_error(
                "QP %#x: packet %u carries PSN %#x, expected %#x: the peers exchanged other PSNs",
                qpn_, h.seq, h.psn, psn);
            rnr_waiting_ = h.seq;
            send_nak(h.seq, wire::kNakPsn);
        }
        return false;
    }
    const bool first = (h.flags & wire::kFirst) || h.op == wire::kOpWriteImm;
    if (first && !cur_valid_) {
        RecvWr* wr = next_recv();
        const wire::RetryToken tok = [&] {
            wire::RetryToken t;
            const std::uint64_t v = load_ctrl(wire::kRetryOff);
            std::memcpy(&t, &v, sizeof t);
            return t;
        }();
        const bool retried = tok.seq == h.seq && tok.attempt != retry_seen_;
        if (rnr_waiting_ == h.seq) {
            // We sent an RNR NAK for it: only the sender's retry counts.
            if (!retried)
                return false;
            retry_seen_ = tok.attempt;
            if (!wr) {
                send_nak(h.seq, wire::kNakRnr);
                return false;
            }
        } else if (!wr) {
            log_debug("QP %#x: packet %u finds no receive WR: RNR NAK", qpn_, h.seq);
            rnr_waiting_ = h.seq;
            send_nak(h.seq, wire::kNakRnr);
            return false;
        }
        rnr_waiting_ = 0;
        cur_.assign(*wr);
        pop_recv();
        cur_valid_ = true;
        cur_len_ = 0;
        cur_status_ = IBV_WC_SUCCESS;
        std::uint64_t room = 0;
        for (std::uint32_t i = 0; i < cur_.nsge; ++i)
            room += cur_.sge[i].length;
        if (h.op == wire::kOpSend && h.total > room)
            cur_status_ = IBV_WC_LOC_LEN_ERR;
    }
    if (!cur_valid_) {  // a middle fragment without a first: cannot happen
        log_error("QP %#x: fragment %u without its first packet; dropped", qpn_, h.seq);
    } else if (h.op == wire::kOpSend) {
        if (cur_status_ == IBV_WC_SUCCESS && cur_len_ + h.len <= h.total) {
            // Scatter into the receive WR's SGEs from byte cur_len_ on.
            std::uint64_t at = 0, from = cur_len_, left = h.len;
            for (std::uint32_t i = 0; i < cur_.nsge && left; ++i) {
                const ibv_sge& s = cur_.sge[i];
                if (from >= at + s.length) {
                    at += s.length;
                    continue;
                }
                const std::uint64_t skip = from - at,
                                    n = std::min<std::uint64_t>(s.length - skip, left);
                small_copy(reinterpret_cast<unsigned char*>(s.addr) + skip, payload, n);
                payload += n;
                from += n;
                left -= n;
                at += s.length;
            }
        }
        cur_len_ += h.len;
    }
    if (hb_bytes) {
        rx_->consume_hb(hb_bytes);
        hb_owed_ += hb_bytes;
    } else
        rx_->consume_ll();
    if (cur_valid_ && ((h.flags & wire::kLast) || h.op == wire::kOpWriteImm)) {
        cur_valid_ = false;
        const std::uint32_t len =
            h.op == wire::kOpWriteImm ? h.total : static_cast<std::uint32_t>(cur_len_);
        complete_recv(cur_, cur_status_, h, len);
        if (cur_status_ != IBV_WC_SUCCESS) {
            // The sender learns of it as a remote invalid request.
            send_nak(h.seq, wire::kNakInvalid);
            send_ack(true);
            to_error();
            return false;
        }
    }
    return true;
}

}  // namespace pv
