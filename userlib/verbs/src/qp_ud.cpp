// SPDX-License-Identifier: MIT
// Qp, UD: datagrams into a shared ring of the destination QP's area
// (wire.hpp, "UD receive ring"). A sender reserves a slot with one remote
// compare-and-swap through the read proxy (its guess of the reservation
// word usually holds), writes the datagram and its pair, and is done: UD
// has no acknowledgements. A full ring, a missing QP, a wrong Q_Key or no
// receive WR drop the datagram, as InfiniBand may.
#include <endian.h>

#include <cstring>

#include "engine.hpp"
#include "identity.hpp"
#include "log.hpp"
#include "qp.hpp"

namespace pv {
namespace {

// Datagrams stuck in a reserved slot nobody writes (the sender died between
// reserving and writing) are skipped after this long.
constexpr std::uint64_t kUdStuckNs = 1000000000ull;
constexpr int kUdCasTries = 16;
// A destination whose lookup failed is not looked up again for this long:
// a sender that goes on sending to a QP that is gone (UCX's wire-up
// resending to a rank that has left) made a read-proxy round trip per
// datagram, with the engine's lock held.
constexpr std::uint64_t kUdGoneNs = 1000000000ull;
// Past this many destinations, those gone longer than that are forgotten.
constexpr std::size_t kUdDestsKept = 256;

}  // namespace

Qp::UdDest* Qp::ud_dest(std::uint32_t node, std::uint32_t qpn) {
    const std::uint64_t id = std::uint64_t{node} << 32 | qpn;
    auto& d = ud_dests_[id];
    const std::uint64_t now = eng_.clock();
    if (d && now < d->gone_until)
        return nullptr;
    if (d && d->range.valid() && !d->range.expired(now))
        return d.get();
    if (d && d->range.valid() && d->range.renew(now) == 0)
        return d.get();
    d = std::make_unique<UdDest>();
    const int rc = d->range.open(node, TCA_NAME_QP, qpn);
    QpInfo info{};
    if (rc == 0)
        std::memcpy(&info, d->range.info().info, sizeof info);
    if (rc == 0 && info.magic == kQpMagic && info.version == wire::kVersion &&
        info.type == IBV_QPT_UD && info.ud_slots != 0 &&
        d->range.size() >= wire::kCtrlBytes + std::uint64_t{info.ud_slots} * wire::kUdSlot) {
        d->slots = info.ud_slots;
        return d.get();
    }
    if (rc != 0 && rc != TCA_ENOTEXPORTED) {
        ud_dests_.erase(id);  // unreachable for now (timeout, link): the next datagram asks again
        return nullptr;
    }
    // Not there, or not a UD QP: remembered for a while.
    d->range.close();
    d->gone_until = now + kUdGoneNs;
    if (ud_dests_.size() > kUdDestsKept)
        std::erase_if(ud_dests_, [&](const auto& e) {
            return !e.second->range.valid() && e.second->gone_until <= now;
        });
    return nullptr;
}

Qp::Start Qp::start_ud(SendOp& op) {
    if (!sge_ok(op, 0)) {
        op.status = IBV_WC_LOC_PROT_ERR;
        return Start::Failed;
    }
    if (!dma_idle() && op.total <= eng_.tune().pio_max)
        return Start::Blocked;  // keep datagrams of this QP in order
    UdDest* d = ud_dest(op.ud_node, op.ud_qpn);
    if (!d) {
        log_debug("QP %#x: datagram to QP %#x on node %u dropped: no such UD QP", qpn_, op.ud_qpn,
                  op.ud_node);
        return Start::Done;  // gone, as on a fabric
    }
    std::vector<RemoteRange::Piece> word;
    if (d->range.pieces(wire::kUdTailOff, 8, &word))
        return Start::Done;
    // Reserve a slot: tail + 1, unless the ring is full.
    std::uint32_t slot_seq = 0;
    bool reserved = false;
    for (int i = 0; i < kUdCasTries && !reserved; ++i) {
        const std::uint64_t w = d->word;
        const std::uint32_t tail = static_cast<std::uint32_t>(w),
                            head = static_cast<std::uint32_t>(w >> 32);
        std::uint64_t old = 0;
        if (tail - head >= d->slots) {
            // Full as far as we know: look again (an add of 0).
            if (tcaFaa(word[0].h, word[0].hoff, 0, &old))
                return Start::Done;
            d->word = old;
            if (static_cast<std::uint32_t>(old) - static_cast<std::uint32_t>(old >> 32) >=
                d->slots) {
                log_debug("QP %#x: datagram to QP %#x on node %u dropped: its ring is full", qpn_,
                          op.ud_qpn, op.ud_node);
                return Start::Done;
            }
            continue;
        }
        const std::uint64_t want =
            (w & 0xffffffff00000000ull) | static_cast<std::uint32_t>(tail + 1);
        if (tcaCas(word[0].h, word[0].hoff, w, want, &old))
            return Start::Done;  // unreachable: dropped
        if (old == w) {
            d->word = want;
            slot_seq = tail + 1;
            reserved = true;
        } else {
            d->word = old;
        }
    }
    if (!reserved)
        return Start::Done;

    // The peer's slot is reserved: no going back now. A datagram's bounce is
    // one of the QP's slots (allocated by setup()) unless all 16 are in
    // flight; only then may this allocation wait.
    if (get_bounce(wire::kUdSlot, &op.bounce, true)) {
        op.status = IBV_WC_LOC_QP_OP_ERR;
        return Start::Failed;
    }
    unsigned char* b = op.bounce.p;
    wire::Header h{};
    h.seq = slot_seq;
    h.op = wire::kOpUdSend;
    h.flags = wire::kFirst | wire::kLast | (op.opcode == IBV_WR_SEND_WITH_IMM ? wire::kImm : 0) |
              ((op.flags & IBV_SEND_SOLICITED) ? wire::kSolicited : 0);
    h.len = static_cast<std::uint32_t>(op.total);
    h.imm = op.imm;
    h.total = (op.ud_qkey & 0x80000000u) ? attr_.qkey : op.ud_qkey;  // high bit: our own Q_Key
    h.src_qpn = qpn_;
    h.src_node = eng_.node_id();
    std::memcpy(b, &h, sizeof h);
    gather(op, 0, op.total, b + wire::kUdHeader);
    const std::uint64_t pair = wire::pack(wire::Pair{slot_seq, 0});
    std::memcpy(b + wire::kUdPairOff, &pair, sizeof pair);

    const std::uint64_t off =
        wire::kCtrlBytes + std::uint64_t{(slot_seq - 1) % d->slots} * wire::kUdSlot;
    std::vector<RemoteRange::Piece> pieces;
    if (d->range.pieces(off, wire::kUdSlot, &pieces)) {
        put_bounce(op.bounce);
        return Start::Done;
    }
    const std::uint64_t body = wire::kUdHeader + ((op.total + 7) & ~std::uint64_t{7});
    // PIO when small, and always to this node (no DMA between its processes).
    if ((op.total <= eng_.tune().pio_max && dma_idle()) || op.ud_node == eng_.node_id()) {
        for (const RemoteRange::Piece& p : pieces) {
            if (p.pos < body)
                put_at(*p.h, p.hoff, b + p.pos, std::min(p.len, body - p.pos));
            if (p.pos <= wire::kUdPairOff && wire::kUdPairOff < p.pos + p.len)
                put_at(*p.h, p.hoff + (wire::kUdPairOff - p.pos), &pair, sizeof pair);
        }
        put_bounce(op.bounce);
        return Start::Done;
    }
    std::vector<tcaDmaXfer> xfers;
    const tcaHandle* pair_h = nullptr;
    std::uint64_t pair_off = 0;
    for (const RemoteRange::Piece& p : pieces) {
        if (p.pos < body) {
            tcaDmaXfer x{};
            x.dst = p.h;
            x.dst_offset = p.hoff;
            x.src = b + p.pos;
            x.len = std::min(p.len, body - p.pos);
            xfers.push_back(x);
        }
        if (p.pos <= wire::kUdPairOff && wire::kUdPairOff < p.pos + p.len) {
            pair_h = p.h;
            pair_off = p.hoff + (wire::kUdPairOff - p.pos);
        }
    }
    xfers.back().notify = pair_h;
    xfers.back().notify_offset = pair_off;
    xfers.back().notify_value = pair;
    xfers.back().notify_len = 8;
    std::uint32_t status = 0;
    if (start_dma(xfers, &status)) {
        put_bounce(op.bounce);
        op.status = IBV_WC_LOC_QP_OP_ERR;
        return Start::Failed;
    }
    op.wait_dma = dma_started_;
    return Start::Done;
}

void Qp::poll_ud() {
    const ibv_qp_state s = state();
    if (s != IBV_QPS_RTR && s != IBV_QPS_RTS && s != IBV_QPS_SQD)
        return;
    auto* word = reinterpret_cast<std::uint64_t*>(area_.bytes() + wire::kUdTailOff);
    const ibv_gid self = node_gid(eng_.node_id());
    for (;;) {
        const std::uint64_t w = __atomic_load_n(word, __ATOMIC_ACQUIRE);
        const std::uint32_t tail = static_cast<std::uint32_t>(w),
                            head = static_cast<std::uint32_t>(w >> 32);
        if (tail == head) {
            ud_stuck_ns_ = 0;
            return;
        }
        const unsigned char* slot =
            area_.bytes() + wire::kCtrlBytes + std::uint64_t{head % ud_slots_} * wire::kUdSlot;
        const wire::Pair p = wire::unpack(__atomic_load_n(
            reinterpret_cast<const std::uint64_t*>(slot + wire::kUdPairOff), __ATOMIC_ACQUIRE));
        if (p.sent != head + 1) {
            const std::uint64_t now = eng_.clock();
            if (!ud_stuck_ns_)
                ud_stuck_ns_ = now;
            if (now - ud_stuck_ns_ < kUdStuckNs)
                return;
            log_debug("QP %#x: slot %u reserved but never written: skipped", qpn_, head);
        } else {
            wire::Header h;
            std::memcpy(&h, slot, sizeof h);
            RecvWr* wr = next_recv();
            if (h.op == wire::kOpUdSend && h.total == attr_.qkey && h.len <= wire::kUdMtu && wr) {
                RecvWr r = *wr;
                pop_recv();
                std::uint64_t room = 0;
                for (std::uint32_t i = 0; i < r.nsge; ++i)
                    room += r.sge[i].length;
                if (room < wire::kGrh + h.len) {
                    complete_recv(r, IBV_WC_LOC_LEN_ERR, h, 0);
                } else {
                    // The GRH first, then the payload, across the SGEs.
                    unsigned char grh[wire::kGrh] = {};
                    ibv_grh g{};
                    g.version_tclass_flow = htobe32(6u << 28);
                    g.paylen = htobe16(static_cast<std::uint16_t>(h.len));
                    g.next_hdr = 0x1b;
                    g.hop_limit = 64;
                    g.sgid = node_gid(h.src_node);
                    g.dgid = self;
                    std::memcpy(grh, &g, sizeof grh);
                    std::uint64_t pos = 0;
                    const unsigned char* payload = slot + wire::kUdHeader;
                    for (std::uint32_t i = 0; i < r.nsge; ++i) {
                        auto* to = reinterpret_cast<unsigned char*>(r.sge[i].addr);
                        for (std::uint32_t k = 0;
                             k < r.sge[i].length && pos < wire::kGrh + h.len;) {
                            if (pos < wire::kGrh) {
                                const std::uint64_t n =
                                    std::min<std::uint64_t>(wire::kGrh - pos, r.sge[i].length - k);
                                std::memcpy(to + k, grh + pos, n);
                                k += static_cast<std::uint32_t>(n);
                                pos += n;
                            } else {
                                const std::uint64_t n = std::min<std::uint64_t>(
                                    wire::kGrh + h.len - pos, r.sge[i].length - k);
                                std::memcpy(to + k, payload + (pos - wire::kGrh), n);
                                k += static_cast<std::uint32_t>(n);
                                pos += n;
                            }
                        }
                    }
                    complete_recv(r, IBV_WC_SUCCESS, h, wire::kGrh + h.len);
                }
            }
        }
        ud_stuck_ns_ = 0;
        __atomic_fetch_add(word, std::uint64_t{1} << 32, __ATOMIC_ACQ_REL);
    }
}

}  // namespace pv
