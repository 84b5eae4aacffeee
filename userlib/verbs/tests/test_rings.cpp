// SPDX-License-Identifier: MIT
// Ring/PSN bookkeeping (rings.hpp): placement, wrap records, credits.
#include <gtest/gtest.h>

#include <cstring>

#include "rings.hpp"
#include "wire.hpp"

using namespace pv;

TEST(TxRings, LowLatencySlotsRunOutUntilAcked) {
    TxRings t(4, 4096);
    for (std::uint32_t i = 0; i < 4; ++i) {
        ASSERT_TRUE(t.ll_room());
        EXPECT_EQ(i, t.ll_slot());
        EXPECT_EQ(i + 1, t.push_ll());
    }
    EXPECT_FALSE(t.ll_room());
    EXPECT_TRUE(t.ack(1));
    ASSERT_TRUE(t.ll_room());
    EXPECT_EQ(0u, t.ll_slot());  // slot 0 again: packet 5
    EXPECT_EQ(5u, t.push_ll());
    EXPECT_FALSE(t.all_acked());
    EXPECT_TRUE(t.ack(5));
    EXPECT_TRUE(t.all_acked());
}

TEST(TxRings, AcksOutsideTheWindowAreIgnored) {
    TxRings t(4, 4096);
    t.push_ll();
    t.push_ll();
    EXPECT_FALSE(t.ack(3));  // more than sent
    EXPECT_TRUE(t.ack(1));
    EXPECT_FALSE(t.ack(1));  // not newer
    EXPECT_FALSE(t.ack(0));
    EXPECT_EQ(1u, t.acked());
}

TEST(TxRings, HighBandwidthRecordsWrapWithAWrapRecord) {
    TxRings t(4, 1024);
    TxRings::HbPlace p;
    ASSERT_TRUE(t.hb_place(448, &p));
    EXPECT_EQ(0u, p.offset);
    EXPECT_FALSE(p.wrap);
    t.push_hb(448, p);
    ASSERT_TRUE(t.hb_place(448, &p));
    EXPECT_EQ(448u, p.offset);
    t.push_hb(448, p);                  // head at 896: 128 bytes left before the end
    EXPECT_FALSE(t.hb_place(192, &p));  // would need the wrap and 192: only 128 free
    EXPECT_TRUE(t.ack(1));              // 448 bytes back
    ASSERT_TRUE(t.hb_place(192, &p));
    EXPECT_TRUE(p.wrap);
    EXPECT_EQ(896u, p.wrap_at);
    EXPECT_EQ(0u, p.offset);
    EXPECT_EQ(3u, t.push_hb(192, p));
    EXPECT_EQ(4u, t.hb_records());  // three packets and a WRAP
    // The wrap's 128 bytes are held until packet 3 is acked.
    EXPECT_TRUE(t.ack(2));
    ASSERT_TRUE(t.hb_place(448, &p));  // 192..640
    EXPECT_EQ(192u, p.offset);
    t.push_hb(448, p);
    EXPECT_FALSE(t.hb_place(512, &p));  // more than half the ring
    EXPECT_FALSE(t.hb_place(100, &p));  // not a multiple of 64
}

TEST(TxRings, ExactFitEndsAtZero) {
    TxRings t(4, 1024);
    TxRings::HbPlace p;
    ASSERT_TRUE(t.hb_place(512, &p));
    t.push_hb(512, p);
    ASSERT_TRUE(t.hb_place(512, &p));
    EXPECT_EQ(512u, p.offset);
    EXPECT_FALSE(p.wrap);
    t.push_hb(512, p);
    EXPECT_FALSE(t.hb_place(64, &p));  // full
    t.ack(1);
    ASSERT_TRUE(t.hb_place(64, &p));
    EXPECT_EQ(0u, p.offset);
    EXPECT_FALSE(p.wrap);
}

TEST(TxRings, SeqNumbersWrapAround) {
    EXPECT_TRUE(seq_before(0xfffffffeu, 1u));
    EXPECT_FALSE(seq_before(1u, 0xfffffffeu));
    EXPECT_FALSE(seq_before(5u, 5u));
}

TEST(RxRings, FollowsTheSenderThroughWraps) {
    TxRings tx(2, 1024);
    RxRings rx(2, 1024);
    TxRings::HbPlace p;
    // The receiver mirrors what the sender placed.
    for (int round = 0; round < 10; ++round) {
        ASSERT_TRUE(tx.hb_place(384, &p));
        const std::uint32_t records_before = tx.hb_records();
        tx.push_hb(384, p);
        ASSERT_TRUE(rx.hb_pending(tx.hb_records()));
        if (p.wrap) {
            EXPECT_EQ(p.wrap_at, rx.hb_offset());
            rx.skip_wrap();
        }
        EXPECT_EQ(p.offset, rx.hb_offset());
        EXPECT_EQ(tx.sent(), rx.expected());
        rx.consume_hb(384);
        EXPECT_FALSE(rx.hb_pending(tx.hb_records()));
        EXPECT_GE(tx.hb_records(), records_before + 1);
        ASSERT_TRUE(tx.ack(rx.consumed()));
    }
    // LL packets interleave with the same numbering.
    EXPECT_EQ(rx.expected(), tx.next_seq());
    tx.push_ll();
    EXPECT_EQ(0u, rx.ll_slot());
    rx.consume_ll();
    EXPECT_EQ(tx.sent(), rx.consumed());
}

// ---- the LL slot's packed layout (wire.hpp) ----------------------------------------

namespace {

using pv::wire::Header;

Header ll_header(std::uint8_t op, std::uint8_t flags, std::uint32_t len, std::uint32_t total,
                 std::uint32_t imm = 0) {
    Header h{};
    h.seq = 77;
    h.psn = 0xabcdef;
    h.op = op;
    h.flags = flags;
    h.len = len;
    h.total = total;
    h.imm = imm;
    return h;
}

}  // namespace

TEST(LlSlot, OnePacketSendIsPayloadHeadAndPairOnly) {
    using namespace pv::wire;
    // An 8-byte Send: payload and head, 16 bytes before the pair (two 8-byte
    // stores, the pair the third).
    const Header h = ll_header(kOpSend, kFirst | kLast, 8, 8);
    EXPECT_FALSE(ll_ext(h));
    EXPECT_EQ(kLlPairOff - 16, ll_start(h));
    // A fragment, immediate data or a Write with Immediate carry the ext word.
    EXPECT_TRUE(ll_ext(ll_header(kOpSend, kFirst, 8, 300)));
    EXPECT_TRUE(ll_ext(ll_header(kOpSend, kFirst | kLast | kImm, 8, 8)));
    EXPECT_TRUE(ll_ext(ll_header(kOpWriteImm, kFirst | kLast | kImm, 0, 1 << 20)));
    // The largest payload still fits with the ext word.
    EXPECT_EQ(kLlHeadOff - 8 - kLlPayload, ll_start(ll_header(kOpSend, kFirst, kLlPayload, 999)));
}

TEST(LlSlot, WhatIsPutIsGot) {
    using namespace pv::wire;
    const Header cases[] = {
        ll_header(kOpSend, kFirst | kLast, 8, 8),
        ll_header(kOpSend, kFirst | kLast | kSolicited, 0, 0),
        ll_header(kOpSend, kFirst | kLast | kImm, 13, 13, 0x12345678),
        ll_header(kOpWriteImm, kFirst | kLast | kImm, 0, 4096, 0xfeedbeef),
        ll_header(kOpSend, kFirst | kLast, kLlPayload, kLlPayload),
    };
    for (const Header& h : cases) {
        unsigned char slot[kLlSlot];
        std::memset(slot, 0xee, sizeof slot);
        for (std::uint32_t i = 0; i < h.len; ++i)
            slot[ll_start(h) + i] = static_cast<unsigned char>(i);
        ll_put(h, slot);
        Header got{};
        std::uint32_t payload = 0;
        ASSERT_TRUE(ll_get(slot, h.seq, &got, &payload));
        EXPECT_EQ(ll_start(h), payload);
        EXPECT_EQ(h.seq, got.seq);
        EXPECT_EQ(h.psn, got.psn);
        EXPECT_EQ(h.op, got.op);
        EXPECT_EQ(h.flags, got.flags);
        EXPECT_EQ(h.len, got.len);
        EXPECT_EQ(h.total, got.total);
        EXPECT_EQ((h.flags & kImm) ? h.imm : 0u, got.imm);
        for (std::uint32_t i = 0; i < h.len; ++i)
            ASSERT_EQ(static_cast<unsigned char>(i), slot[payload + i]);
    }
}

TEST(LlSlot, AHeadClaimingMoreThanASlotIsRefused) {
    using namespace pv::wire;
    unsigned char slot[kLlSlot] = {};
    // A peer's bytes: a length the slot cannot hold must not make the
    // receiver read before the slot.
    const std::uint64_t head = std::uint64_t{kOpSend} << 24 |
                               std::uint64_t{kFirst | kLast | kLlExt} << 32 |
                               std::uint64_t{kLlPayload + 1} << 40;
    std::memcpy(slot + kLlHeadOff, &head, 8);
    Header got{};
    std::uint32_t payload = 0;
    EXPECT_FALSE(ll_get(slot, 1, &got, &payload));
}
