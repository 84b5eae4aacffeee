// The read proxy's card side: request engine, doorbell, ring, card answers,
// and the proxy DMA channel (docs/hardware.md, "Read proxy").
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "cabled_pair.h"
#include "packet.h"

namespace peach2::test {
namespace {

constexpr uint64_t kRing = 0x80000;  // ring in the target's fake memory
constexpr uint64_t kDoorbell = PEACH2_CARD_OFF + PEACH2_CARD_DOORBELL_OFF;

class ReadProxy : public CabledPair {
protected:
    void SetUp() override {
        CabledPair::SetUp();
        peach2_core_reg_write(a.get(), PEACH2_REG_INT_MASK, 0, 4);
        peach2_core_reg_write(b.get(), PEACH2_REG_INT_MASK, 0, 4);
    }
    static void ring_setup(peach2_core* c, uint32_t entries, uint64_t base = kRing) {
        peach2_core_reg_write(c, PEACH2_REG_RP_RING_SIZE, entries, 4);
        peach2_core_reg_write(c, PEACH2_REG_RP_BASE_LO, base, 8);
        peach2_core_reg_write(c, PEACH2_REG_RP_CTRL, PEACH2_RP_ENABLE, 4);
    }
    // The card interprets only cpl (and a READ's list count): any op will
    // do; CAS, so that both operands are plain data.
    static peach2_rp_req request(uint64_t seq, uint64_t cpl) {
        peach2_rp_req r{};
        r.op = PEACH2_RP_OP_CAS;
        r.version = PEACH2_RP_VERSION;
        r.src_node = 9;  // a lie the target card must overwrite
        r.export_id = 5;
        r.key = 0xfeedbeef;
        r.len = 64;
        r.addr = 0x1000;
        r.seq = seq;
        r.reply = 0x2000;
        r.cpl = cpl;
        r.operand[0] = 0x1111222233334444ull;
        r.operand[1] = 0x5a5a5a5a00000000ull;  // every 32-bit half matters
        return r;
    }
    static void send(peach2_core* c, const peach2_rp_req& r, uint32_t node) {
        uint64_t words[8];
        std::memcpy(words, &r, sizeof(r));
        for (unsigned i = 0; i < 8; ++i)
            peach2_core_reg_write(c, PEACH2_REG_RP_TX_REQ + 8 * i, words[i], 8);
        peach2_core_reg_write(c, PEACH2_REG_RP_TX_SEND, node, 4);
    }
    // A READ of `pieces` reply pieces, its list at kList in a's memory
    // (piece i: 0x100 * (i + 1) bytes at 0x40000 + 0x1000 * i).
    static constexpr uint64_t kList = 0x4000;
    peach2_rp_req listed_read(uint64_t seq, uint32_t pieces) {
        peach2_rp_req r = request(seq, 0x3000);
        r.op = PEACH2_RP_OP_READ;
        r.reply = 0;
        r.operand[0] = pieces;
        r.operand[1] = 0;
        r.len = 0;
        for (uint32_t i = 0; i < pieces; ++i) {
            const peach2_rp_piece p{0x40000 + 0x1000ull * i, 0x100 * (i + 1), 0};
            std::memcpy(ha.mem.data() + kList + i * sizeof(p), &p, sizeof(p));
            r.len += p.len;
        }
        peach2_core_reg_write(a.get(), PEACH2_REG_RP_TX_LIST_LO, kList, 8);
        return r;
    }
    static peach2_rp_req entry(const FakeHost& h, unsigned i) {
        peach2_rp_req r{};
        std::memcpy(&r, h.mem.data() + kRing + i * PEACH2_RP_ENTRY_SIZE, sizeof(r));
        return r;
    }
    static peach2_rp_cpl cpl_at(const FakeHost& h, uint64_t at) {
        peach2_rp_cpl c{};
        std::memcpy(&c, h.mem.data() + at, sizeof(c));
        return c;
    }
    static size_t count(const std::vector<unsigned>& irqs, unsigned v) {
        return static_cast<size_t>(std::count(irqs.begin(), irqs.end(), v));
    }
};

TEST_F(ReadProxy, CardAdvertisesTheReadProxy) {
    EXPECT_TRUE(reg(a.get(), PEACH2_REG_CAPS) & PEACH2_CAP_READ_PROXY);
}

TEST_F(ReadProxy, RequestLandsInTargetRingStampedWithItsRealSource) {
    ring_setup(b.get(), 4);
    const peach2_rp_req sent = request(77, 0x3000);
    send(a.get(), sent, 1);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_RESULT), 0u);
    ASSERT_TRUE(pump());

    const peach2_rp_req got = entry(hb, 0);
    EXPECT_EQ(got.src_node, 0u);
    peach2_rp_req expect = sent;
    expect.src_node = 0;
    EXPECT_EQ(std::memcmp(&got, &expect, sizeof(got)), 0);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 1u);
    EXPECT_TRUE(reg(b.get(), PEACH2_REG_INT_STATUS) & PEACH2_INT_RP);
    EXPECT_EQ(count(hb.irqs, PEACH2_INT_VECTOR_RP), 1u);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_SENT), 1u);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_RX_QUEUED), 1u);
    // Nothing was answered: serving is the driver's job.
    EXPECT_EQ(cpl_at(ha, 0x3000).tag, 0u);
}

TEST_F(ReadProxy, FullRingIsAnsweredByTheCardWithRpFull) {
    ring_setup(b.get(), 2);
    for (uint64_t i = 0; i < 3; ++i)
        send(a.get(), request(100 + i, 0x3000 + 32 * i), 1);
    ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 2u);
    EXPECT_EQ(cpl_at(ha, 0x3000).tag, 0u);
    EXPECT_EQ(cpl_at(ha, 0x3020).tag, 0u);
    const peach2_rp_cpl c = cpl_at(ha, 0x3040);
    EXPECT_EQ(c.tag, 102u);
    EXPECT_EQ(c.status, static_cast<uint32_t>(PEACH2_ERR_RP_FULL));
    EXPECT_EQ(c.len, 0u);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_RX_REFUSED), 1u);
    // Flow control, not an error: no error interrupt per refused request,
    // only a trace record (not counted).
    EXPECT_EQ(errors(b.get(), PEACH2_ERR_RP_FULL), 0u);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_ERR_COUNT), 0u);
    ASSERT_EQ(hb.errors.size(), 1u);
    EXPECT_EQ(hb.errors[0].e.code, static_cast<uint32_t>(PEACH2_ERR_RP_FULL));
    EXPECT_FALSE(hb.errors[0].e.counted);
    EXPECT_EQ(hb.errors[0].e.node, 0u);
    EXPECT_EQ(hb.errors[0].e.value, 102u);  // the request's tag
    // The tag is written after the body, as its own write.
    ASSERT_GE(ha.writes.size(), 2u);
    EXPECT_EQ(ha.writes.back(), (std::pair<uint64_t, size_t>{0x3040 + 24, 8}));
}

TEST_F(ReadProxy, DisabledRingIsAnsweredWithRpOff) {
    send(a.get(), request(5, 0x3000), 1);
    ASSERT_TRUE(pump());
    const peach2_rp_cpl c = cpl_at(ha, 0x3000);
    EXPECT_EQ(c.tag, 5u);
    EXPECT_EQ(c.status, static_cast<uint32_t>(PEACH2_ERR_RP_OFF));
    EXPECT_EQ(count(hb.irqs, PEACH2_INT_VECTOR_RP), 0u);
}

TEST_F(ReadProxy, HeadWriteCallsTheDriverBackWhileEntriesRemain) {
    ring_setup(b.get(), 4);
    send(a.get(), request(1, 0x3000), 1);
    send(a.get(), request(2, 0x3020), 1);
    ASSERT_TRUE(pump());
    ASSERT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 2u);
    const size_t irqs = count(hb.irqs, PEACH2_INT_VECTOR_RP);

    peach2_core_reg_write(b.get(), PEACH2_REG_INT_STATUS, PEACH2_INT_RP, 4);
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_HEAD, 1, 4);  // budget spent after one
    EXPECT_TRUE(reg(b.get(), PEACH2_REG_INT_STATUS) & PEACH2_INT_RP);
    EXPECT_EQ(count(hb.irqs, PEACH2_INT_VECTOR_RP), irqs + 1);

    peach2_core_reg_write(b.get(), PEACH2_REG_INT_STATUS, PEACH2_INT_RP, 4);
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_HEAD, 2, 4);
    EXPECT_FALSE(reg(b.get(), PEACH2_REG_INT_STATUS) & PEACH2_INT_RP);
    EXPECT_EQ(count(hb.irqs, PEACH2_INT_VECTOR_RP), irqs + 1);

    // HEAD past TAIL, or backwards over consumed entries, is refused and
    // changes nothing.
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_HEAD, 3, 4);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_HEAD), 2u);
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_HEAD, 1, 4);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_HEAD), 2u);
    EXPECT_EQ(errors(b.get(), PEACH2_ERR_BAD_COMMAND), 2u);
}

TEST_F(ReadProxy, RingWrapsAroundAndFreedEntriesAreReused) {
    ring_setup(b.get(), 2);
    for (uint64_t i = 0; i < 6; ++i) {
        send(a.get(), request(10 + i, 0x3000), 1);
        ASSERT_TRUE(pump());
        EXPECT_EQ(entry(hb, i % 2).seq, 10 + i);
        peach2_core_reg_write(b.get(), PEACH2_REG_RP_HEAD, static_cast<uint32_t>(i + 1), 4);
    }
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_RX_QUEUED), 6u);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_RX_REFUSED), 0u);
}

TEST_F(ReadProxy, ReadCarriesItsReplyListIntoTheEntriesAfterIt) {
    ring_setup(b.get(), 8);
    const peach2_rp_req sent = listed_read(40, 5);
    send(a.get(), sent, 1);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_RESULT), 0u);
    ASSERT_TRUE(pump());
    // The request, then 5 pieces in two entries (the second padded with 0).
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 3u);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_RX_QUEUED), 1u);
    EXPECT_EQ(count(hb.irqs, PEACH2_INT_VECTOR_RP), 1u);
    EXPECT_EQ(entry(hb, 0).operand[0], 5u);
    EXPECT_EQ(entry(hb, 0).len, sent.len);
    EXPECT_EQ(std::memcmp(hb.mem.data() + kRing + PEACH2_RP_ENTRY_SIZE, ha.mem.data() + kList,
                          5 * sizeof(peach2_rp_piece)),
              0);
    const uint8_t* pad = hb.mem.data() + kRing + PEACH2_RP_ENTRY_SIZE + 5 * sizeof(peach2_rp_piece);
    EXPECT_TRUE(std::all_of(pad, pad + 3 * sizeof(peach2_rp_piece), [](uint8_t x) { return !x; }));
}

TEST_F(ReadProxy, ReplyListWrapsAroundTheRingAndNeedsRoomForAllOfIt) {
    ring_setup(b.get(), 4);
    send(a.get(), request(1, 0x3000), 1);
    send(a.get(), request(2, 0x3020), 1);
    ASSERT_TRUE(pump());
    // Two entries used: a request of 5 pieces needs 3, and is refused.
    send(a.get(), listed_read(3, 5), 1);
    ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 2u);
    EXPECT_EQ(cpl_at(ha, 0x3000).tag, 3u);
    EXPECT_EQ(cpl_at(ha, 0x3000).status, static_cast<uint32_t>(PEACH2_ERR_RP_FULL));
    // Consumed: it fits, in entries 2, 3 and 0.
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_HEAD, 2, 4);
    send(a.get(), listed_read(4, 5), 1);
    ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 5u);
    EXPECT_EQ(entry(hb, 2).seq, 4u);
    EXPECT_EQ(
        std::memcmp(hb.mem.data() + kRing, ha.mem.data() + kList + 4 * sizeof(peach2_rp_piece),
                    sizeof(peach2_rp_piece)),
        0);
}

TEST_F(ReadProxy, ReplyListTheRequesterCannotSendIsRefusedAtItsCard) {
    ring_setup(b.get(), 8);
    peach2_rp_req r = listed_read(1, 2);
    r.operand[0] = PEACH2_RP_MAX_PIECES + 1;
    send(a.get(), r, 1);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_RESULT), static_cast<uint32_t>(PEACH2_ERR_BAD_COMMAND));
    r.operand[0] = 2;
    peach2_core_reg_write(a.get(), PEACH2_REG_RP_TX_LIST_LO, ha.mem.size() - 16, 8);
    send(a.get(), r, 1);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_RESULT), static_cast<uint32_t>(PEACH2_ERR_DMA_READ));
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_SENT), 0u);
    EXPECT_EQ(errors(a.get(), PEACH2_ERR_BAD_COMMAND), 1u);
    EXPECT_EQ(errors(a.get(), PEACH2_ERR_DMA_READ), 1u);
    ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 0u);
}

// A driver may write only the RP_TX_REQ words that changed since its last
// request; the version byte is how it learns that a reset cleared them.
TEST_F(ReadProxy, RequestOfAnotherVersionIsNotSent) {
    ring_setup(b.get(), 8);
    peach2_rp_req r = request(1, 0x3000);
    r.version = 0;  // the registers as a reset leaves them
    send(a.get(), r, 1);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_RESULT), static_cast<uint32_t>(PEACH2_ERR_BAD_COMMAND));
    r.version = PEACH2_RP_VERSION + 1;
    send(a.get(), r, 1);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_RESULT), static_cast<uint32_t>(PEACH2_ERR_BAD_COMMAND));
    EXPECT_EQ(errors(a.get(), PEACH2_ERR_BAD_COMMAND), 2u);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_SENT), 0u);
    // After a reset only the words written since count: seq alone is refused.
    r.version = PEACH2_RP_VERSION;
    send(a.get(), r, 1);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_RESULT), 0u);
    ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 1u);
    peach2_core_reset(a.get());
    peach2_core_reg_write(a.get(), PEACH2_REG_RP_TX_REQ + offsetof(peach2_rp_req, seq), 2, 8);
    peach2_core_reg_write(a.get(), PEACH2_REG_RP_TX_SEND, 1, 4);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_RESULT), static_cast<uint32_t>(PEACH2_ERR_BAD_COMMAND));
    ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 1u);
}

TEST_F(ReadProxy, ListNotTheOneTheRequestAnnouncesIsAnsweredBadRequest) {
    // A neighbour's card that sends 3 pieces for a READ that says 2.
    ring_setup(b.get(), 8);
    peach2_rp_req r = listed_read(1, 2);
    r.src_node = 0;
    std::vector<uint8_t> payload(sizeof(r) + 3 * sizeof(peach2_rp_piece), 0);
    std::memcpy(payload.data(), &r, sizeof(r));
    std::vector<uint8_t> bytes;  // sequence 1: after node 0's HELLO
    add_packet(bytes,
               pkt_hdr(PEACH2_PKT_RPREQ, 0, 1, static_cast<uint32_t>(payload.size()),
                       PEACH2_NODE_BASE(1) + kDoorbell, 1),
               payload);
    EXPECT_TRUE(peach2_core_link_receive(b.get(), PEACH2_PORT_W, bytes.data(), bytes.size()));
    ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 0u);
    EXPECT_EQ(cpl_at(ha, 0x3000).tag, 1u);
    EXPECT_EQ(cpl_at(ha, 0x3000).status, static_cast<uint32_t>(PEACH2_ERR_RP_BAD_REQUEST));
}

TEST_F(ReadProxy, BadRingSetupIsRefused) {
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_RING_SIZE, 3, 4);  // not a power of 2
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_BASE_LO, kRing, 8);
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_CTRL, PEACH2_RP_ENABLE, 4);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_CTRL), 0u);
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_RING_SIZE, PEACH2_RP_RING_MAX * 2, 4);
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_CTRL, PEACH2_RP_ENABLE, 4);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_CTRL), 0u);
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_RING_SIZE, 4, 4);
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_BASE_LO, kRing + 8, 8);  // unaligned
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_CTRL, PEACH2_RP_ENABLE, 4);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_CTRL), 0u);
    EXPECT_EQ(errors(b.get(), PEACH2_ERR_BAD_COMMAND), 3u);

    ring_setup(b.get(), 4);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_CTRL), PEACH2_RP_ENABLE);
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_RING_SIZE, 8, 4);  // while enabled
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_RING_SIZE), 4u);
    EXPECT_EQ(errors(b.get(), PEACH2_ERR_BAD_COMMAND), 4u);
}

TEST_F(ReadProxy, PioStoreToTheDoorbellIsRefused) {
    ring_setup(b.get(), 4);
    const peach2_rp_req forged = request(1, 0x3000);
    cpu_store(a.get(), PEACH2_NODE_BASE(1) + kDoorbell, reinterpret_cast<const uint8_t*>(&forged),
              sizeof(forged));
    peach2_core_service(a.get());
    ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 0u);
    EXPECT_GE(errors(b.get(), PEACH2_ERR_BAD_TARGET), 1u);
}

TEST_F(ReadProxy, UnanswerableRequestIsDroppedAndCounted) {
    ring_setup(b.get(), 4);
    send(a.get(), request(1, 0x3008), 1);            // completion not 32-byte aligned
    send(a.get(), request(2, PEACH2_HOST_SIZE), 1);  // completion outside host memory
    ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 0u);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_RX_DROPPED), 2u);
    EXPECT_EQ(errors(b.get(), PEACH2_ERR_RP_BAD_PACKET), 2u);
    EXPECT_EQ(cpl_at(ha, 0x3000).tag, 0u);
}

TEST_F(ReadProxy, RequestToItselfLoopsBackIntoItsOwnRing) {
    ring_setup(a.get(), 4);
    send(a.get(), request(3, 0x3000), 0);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_RESULT), 0u);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TAIL), 1u);
    EXPECT_EQ(entry(ha, 0).seq, 3u);
    EXPECT_EQ(entry(ha, 0).src_node, 0u);
}

TEST_F(ReadProxy, SendToMissingNodeOrDownLinkReportsWhy) {
    send(a.get(), request(1, 0x3000), 7);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_RESULT),
              static_cast<uint32_t>(PEACH2_ERR_NO_SUCH_NODE));
    peach2_core_link_connected(a.get(), PEACH2_PORT_E, false);
    send(a.get(), request(2, 0x3000), 1);
    EXPECT_NE(reg(a.get(), PEACH2_REG_RP_TX_RESULT), 0u);
    EXPECT_EQ(reg(a.get(), PEACH2_REG_RP_TX_SENT), 0u);
}

TEST_F(ReadProxy, ProxyChannelSendsRepliesAndHasItsOwnVector) {
    // What a driver does to answer: data, then the record body, then the tag.
    for (unsigned i = 0; i < 256; ++i)
        hb.mem[0x10000 + i] = static_cast<uint8_t>(i * 7);
    const uint32_t ch = PEACH2_DMA_PROXY_CHANNEL;
    peach2_core_reg_write(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_SRC_LO), 0x10000, 8);
    peach2_core_reg_write(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_DST_LO),
                          PEACH2_NODE_BASE(0) + 0x20000, 8);
    peach2_core_reg_write(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_LEN), 256, 4);
    peach2_core_reg_write(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_CTRL), PEACH2_DMA_CTRL_START_REG,
                          4);
    ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_STATUS)), PEACH2_DMA_ST_DONE);
    EXPECT_EQ(count(hb.irqs, PEACH2_INT_VECTOR_DMA(ch)), 1u);
    EXPECT_EQ(PEACH2_INT_VECTOR_DMA(ch), 5u);
    EXPECT_EQ(std::memcmp(ha.mem.data() + 0x20000, hb.mem.data() + 0x10000, 256), 0);
}

TEST_F(ReadProxy, NeighbourCannotClaimAnotherSourceNode) {
    // Node 0 lies that its request comes from node 1's other neighbour: with
    // hops 0 the source must be the neighbour itself, so the stream is dropped.
    ring_setup(b.get(), 4);
    peach2_rp_req r = request(1, 0x3000);
    std::vector<uint8_t> bytes;  // sequence 1: after node 0's HELLO
    add_packet(bytes,
               pkt_hdr(PEACH2_PKT_RPREQ, 5, 1, sizeof(r), PEACH2_NODE_BASE(1) + kDoorbell, 1),
               {reinterpret_cast<const uint8_t*>(&r), sizeof(r)});
    EXPECT_FALSE(peach2_core_link_receive(b.get(), PEACH2_PORT_W, bytes.data(), bytes.size()));
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 0u);
    EXPECT_EQ(errors(b.get(), PEACH2_ERR_BAD_PACKET), 1u);
}

TEST_F(ReadProxy, InjectedStallHoldsTheProxyChannelUntilAborted) {
    const uint32_t ch = PEACH2_DMA_PROXY_CHANNEL;
    const auto start = [&] {
        peach2_core_reg_write(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_SRC_LO), 0x10000, 8);
        peach2_core_reg_write(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_DST_LO),
                              PEACH2_NODE_BASE(0) + 0x20000, 8);
        peach2_core_reg_write(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_LEN), 64, 4);
        peach2_core_reg_write(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_CTRL),
                              PEACH2_DMA_CTRL_START_REG, 4);
    };
    hb.mem[0x10000] = 0x5a;
    peach2_core_reg_write(b.get(), PEACH2_REG_FAULT_PROXY_STALL, 1, 4);
    start();
    EXPECT_EQ(reg(b.get(), PEACH2_REG_FAULT_PROXY_STALL), 0u);
    for (int i = 0; i < 10; ++i)
        ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_STATUS)), PEACH2_DMA_ST_BUSY);
    EXPECT_EQ(ha.mem[0x20000], 0);
    peach2_core_reg_write(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_CTRL), PEACH2_DMA_CTRL_ABORT, 4);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_STATUS)) & PEACH2_DMA_ST_ERROR,
              PEACH2_DMA_ST_ERROR);
    // Only that one run: the next goes through.
    peach2_core_reg_write(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_STATUS), ~0u, 4);
    start();
    ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_STATUS)), PEACH2_DMA_ST_DONE);
    EXPECT_EQ(ha.mem[0x20000], 0x5a);
}

// A lost wake-up, on purpose: the message is withheld, the status bit set
// and taken as signalled, so the next request brings nothing either; the
// driver's clear of the bit lets the one after that through.
TEST_F(ReadProxy, InjectedLostInterruptWithholdsTheRequestMessage) {
    ring_setup(b.get(), 4);
    peach2_core_reg_write(b.get(), PEACH2_REG_FAULT_RP_INT_LOST, 1, 4);
    send(a.get(), request(1, 0x3000), 1);
    ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 1u);
    EXPECT_TRUE(reg(b.get(), PEACH2_REG_INT_STATUS) & PEACH2_INT_RP);
    EXPECT_EQ(count(hb.irqs, PEACH2_INT_VECTOR_RP), 0u);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_FAULT_RP_INT_LOST), 0u);

    send(a.get(), request(2, 0x3020), 1);
    ASSERT_TRUE(pump());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_TAIL), 2u);
    EXPECT_EQ(count(hb.irqs, PEACH2_INT_VECTOR_RP), 0u);

    peach2_core_reg_write(b.get(), PEACH2_REG_INT_STATUS, PEACH2_INT_RP, 4);
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_HEAD, 2, 4);
    send(a.get(), request(3, 0x3040), 1);
    ASSERT_TRUE(pump());
    EXPECT_EQ(count(hb.irqs, PEACH2_INT_VECTOR_RP), 1u);

    peach2_core_reg_write(b.get(), PEACH2_REG_FAULT_RP_INT_LOST, 5, 4);
    peach2_core_reset(b.get());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_FAULT_RP_INT_LOST), 0u);
}

TEST_F(ReadProxy, ResetForgetsTheRing) {
    ring_setup(b.get(), 4);
    peach2_core_reset(b.get());
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_CTRL), 0u);
    EXPECT_EQ(reg(b.get(), PEACH2_REG_RP_RING_SIZE), 0u);
    peach2_core_reg_write(b.get(), PEACH2_REG_INT_MASK, 0, 4);
    send(a.get(), request(9, 0x3000), 1);
    ASSERT_TRUE(pump());
    EXPECT_EQ(cpl_at(ha, 0x3000).status, static_cast<uint32_t>(PEACH2_ERR_RP_OFF));
}

}  // namespace
}  // namespace peach2::test
