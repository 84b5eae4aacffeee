// The card's event trace (docs/trace-format.md): what each transaction
// records on the nodes it passes, read back with the model's reader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>

#include "cabled_pair.h"
#include "trace_reader.h"

namespace peach2::test {
namespace {

using trace::Record;
using trace::Type;

std::vector<Record> of_type(const std::vector<Record>& rs, Type t) {
    std::vector<Record> out;
    std::copy_if(rs.begin(), rs.end(), std::back_inserter(out),
                 [&](const Record& r) { return r.type == t; });
    return out;
}

class CardTraceTest : public CabledPair {
protected:
    std::string dir;

    void SetUp() override {
        CabledPair::SetUp();
        dir = (std::filesystem::temp_directory_path() /
               ("peach2-card-trace-" + std::to_string(getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                  .string();
        std::filesystem::create_directories(dir);
        peach2_core_reg_write(a.get(), PEACH2_REG_INT_MASK, 0, 4);
        peach2_core_reg_write(b.get(), PEACH2_REG_INT_MASK, 0, 4);
        open(a.get(), 0);
        open(b.get(), 1);
    }
    void TearDown() override { std::filesystem::remove_all(dir); }
    std::string path(uint32_t node) const { return dir + "/" + trace::file_name(node); }
    void open(peach2_core* c, uint32_t node, uint32_t ring = 0) {
        char err[256] = "";
        ASSERT_TRUE(peach2_core_trace_open(c, path(node).c_str(), ring, err, sizeof(err))) << err;
    }
    // Close both traces and read them back (which checks header, order, END).
    std::pair<trace::TraceFile, trace::TraceFile> finish() {
        peach2_core_trace_close(a.get());
        peach2_core_trace_close(b.get());
        std::string err;
        auto ta = trace::read_file(path(0), {}, &err);
        EXPECT_TRUE(ta) << err;
        auto tb = trace::read_file(path(1), {}, &err);
        EXPECT_TRUE(tb) << err;
        return {ta.value_or(trace::TraceFile{}), tb.value_or(trace::TraceFile{})};
    }
    // Every delivery on `to` of a packet from `from`'s node is one `from` sent,
    // with the same key, size and address.
    static void expect_matched(const trace::TraceFile& from, const trace::TraceFile& to) {
        const auto sends = of_type(from.records, Type::PktSend);
        for (const Record& r : of_type(to.records, Type::PktRecv)) {
            if (r.src_node != from.header.node)
                continue;
            const auto it = std::find_if(sends.begin(), sends.end(), [&](const Record& s) {
                return s.src_node == r.src_node && s.dst_node == r.dst_node && s.id == r.id;
            });
            ASSERT_NE(it, sends.end()) << "delivery of packet " << r.id << " has no send";
            EXPECT_EQ(it->len, r.len);
            EXPECT_EQ(it->addr, r.addr);
        }
    }
};

TEST_F(CardTraceTest, StartsWithTheCablesAndEndsClosedInOrder) {
    cpu_store(a.get(), PEACH2_NODE_BASE(1) + 0x100, std::vector<uint8_t>(8, 1).data(), 8);
    peach2_core_close_write(a.get());
    ASSERT_TRUE(pump());
    const auto [ta, tb] = finish();
    EXPECT_TRUE(ta.closed);
    EXPECT_EQ(ta.header.node, 0u);
    EXPECT_EQ(ta.header.nodes, 2u);
    ASSERT_FALSE(ta.records.empty());
    const Record& link = ta.records.front();
    EXPECT_EQ(link.type, Type::Link);
    EXPECT_EQ(link.port, trace::kPortE);
    EXPECT_EQ(link.flags, 1u);  // up
    EXPECT_EQ(link.dst_node, 1u);
    EXPECT_EQ(link.unit, trace::kPortW);
    EXPECT_EQ(tb.records.front().type, Type::Link);
    for (size_t i = 1; i < ta.records.size(); ++i) {
        EXPECT_EQ(ta.records[i].seq, ta.records[i - 1].seq + 1);
        EXPECT_GT(ta.records[i].t_emu_ns, ta.records[i - 1].t_emu_ns);  // the host's clock
    }
}

TEST_F(CardTraceTest, PioPacketsAreMatchedAcrossNodesByTheirNumber) {
    std::vector<uint8_t> data(300, 7);
    cpu_store(a.get(), PEACH2_NODE_BASE(1) + 0x1000, data.data(), data.size());
    peach2_core_close_write(a.get());
    cpu_store(a.get(), PEACH2_NODE_BASE(0) + 0x2000, data.data(), 8);  // loopback
    peach2_core_close_write(a.get());
    ASSERT_TRUE(pump());
    const auto [ta, tb] = finish();
    const auto sends = of_type(ta.records, Type::PktSend);
    ASSERT_EQ(sends.size(), 3u);  // 256 + 44 bytes (write combining), and the loopback
    EXPECT_EQ(trace::send_origin(sends[0]), trace::Origin::Pio);
    EXPECT_EQ(sends[0].port, trace::kPortE);
    EXPECT_EQ(sends[0].len, 256u);
    EXPECT_EQ(sends[1].len, 44u);
    EXPECT_EQ(sends[0].id, 0u);
    EXPECT_EQ(sends[1].id, 1u);
    EXPECT_EQ(sends[2].port, trace::kPortN);
    EXPECT_EQ(sends[2].dst_node, 0u);
    EXPECT_EQ(sends[2].id, 0u);  // its own stream: 0 -> 0
    const auto recvs = of_type(tb.records, Type::PktRecv);
    ASSERT_EQ(recvs.size(), 2u);
    EXPECT_EQ(recvs[0].port, trace::kPortW);
    EXPECT_EQ(trace::recv_kind(recvs[0]), trace::RecvKind::Memory);
    EXPECT_EQ(trace::recv_error(recvs[0]), 0u);
    expect_matched(ta, tb);
    expect_matched(ta, ta);  // the loopback delivery
    EXPECT_EQ(of_type(ta.records, Type::PktRecv).at(0).port, trace::kPortN);
}

TEST_F(CardTraceTest, DmaRunsRecordStartDescriptorsPacketsDoneAndInterrupt) {
    // On-card chain on channel 1: 5000 bytes to node 1, then an IMM word.
    const auto desc = [&](uint32_t idx, const peach2_desc& d) {
        uint8_t raw[32] = {};
        std::memcpy(raw, &d, sizeof(d));  // little-endian host, as the card's RAM
        for (int i = 0; i < 4; ++i) {
            uint64_t v;
            std::memcpy(&v, raw + 8 * i, 8);
            peach2_core_cardmem_write(a.get(), PEACH2_DESC_RAM_OFF + idx * 32 + 8 * i, v, 8);
        }
    };
    desc(0, {0x1000, PEACH2_NODE_BASE(1) + 0x10000, 5000, 0, 0, 1, 0});
    desc(1,
         {0x1234, PEACH2_NODE_BASE(1) + 0x20000, 8, 0, 0, 0, PEACH2_DESC_IMM | PEACH2_DESC_LAST});
    peach2_core_reg_write(a.get(), PEACH2_REG_DMA(1, PEACH2_DMA_HEAD_LO), 0, 8);
    peach2_core_reg_write(a.get(), PEACH2_REG_DMA(1, PEACH2_DMA_CTRL), PEACH2_DMA_CTRL_START_CHAIN,
                          4);
    ASSERT_TRUE(pump());
    // Register mode on channel 0, to itself.
    peach2_core_reg_write(a.get(), PEACH2_REG_DMA(0, PEACH2_DMA_SRC_LO), 0x3000, 8);
    peach2_core_reg_write(a.get(), PEACH2_REG_DMA(0, PEACH2_DMA_DST_LO),
                          PEACH2_NODE_BASE(0) + 0x4000, 8);
    peach2_core_reg_write(a.get(), PEACH2_REG_DMA(0, PEACH2_DMA_LEN), 64, 4);
    peach2_core_reg_write(a.get(), PEACH2_REG_DMA(0, PEACH2_DMA_CTRL), PEACH2_DMA_CTRL_START_REG,
                          4);
    ASSERT_TRUE(pump());
    const auto [ta, tb] = finish();

    const auto starts = of_type(ta.records, Type::DmaStart);
    ASSERT_EQ(starts.size(), 2u);
    EXPECT_EQ(starts[0].unit, 1u);
    EXPECT_EQ(starts[0].flags, static_cast<uint32_t>(trace::DmaMode::ChainCard));
    EXPECT_EQ(starts[0].arg, 0u);
    EXPECT_EQ(starts[1].flags, static_cast<uint32_t>(trace::DmaMode::Register));
    EXPECT_EQ(starts[1].arg, 1u);
    const auto descs = of_type(ta.records, Type::DmaDesc);
    ASSERT_EQ(descs.size(), 3u);
    EXPECT_EQ(trace::desc_where(descs[0]), trace::DmaMode::ChainCard);
    EXPECT_EQ(descs[0].len, 5000u);
    EXPECT_EQ(descs[0].id, 0x1000u);  // source
    EXPECT_TRUE(trace::desc_flags(descs[1]) & trace::kDescImm);
    EXPECT_EQ(descs[1].id, 0x1234u);  // the IMM value
    EXPECT_EQ(trace::desc_where(descs[2]), trace::DmaMode::Register);

    const auto sends = of_type(ta.records, Type::PktSend);
    uint32_t data_bytes = 0;
    for (const Record& s : sends) {
        if (s.arg != 0)
            continue;
        EXPECT_EQ(s.unit, 1u);
        if (trace::send_origin(s) == trace::Origin::Dma) {
            EXPECT_EQ(trace::send_desc_index(s), 0u);
            data_bytes += s.len;
        } else {
            EXPECT_EQ(trace::send_origin(s), trace::Origin::DmaImm);
            EXPECT_EQ(trace::send_desc_index(s), 1u);
        }
    }
    EXPECT_EQ(data_bytes, 5000u);
    const auto dones = of_type(ta.records, Type::DmaDone);
    ASSERT_EQ(dones.size(), 2u);
    EXPECT_EQ(dones[0].flags, 0u);
    EXPECT_EQ(dones[0].addr, 5008u);  // bytes
    EXPECT_EQ(dones[0].len, 2u);      // descriptors
    // The run's interrupt follows its end.
    const auto done_at = std::find(ta.records.begin(), ta.records.end(), dones[0]);
    const auto irq = std::find_if(done_at, ta.records.end(),
                                  [](const Record& r) { return r.type == Type::Irq; });
    ASSERT_NE(irq, ta.records.end());
    EXPECT_EQ(irq->unit, PEACH2_INT_VECTOR_DMA(1));
    EXPECT_EQ(irq->flags, static_cast<uint32_t>(PEACH2_INT_DMA(1)));
    expect_matched(ta, tb);
    EXPECT_EQ(of_type(tb.records, Type::PktRecv).size(), sends.size() - 1);  // -1: loopback
}

TEST_F(CardTraceTest, ReadProxyRequestsNameTheirPacketAndRefusalsTheAnswer) {
    constexpr uint64_t kRing = 0x80000;
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_RING_SIZE, 4, 4);
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_BASE_LO, kRing, 8);
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_CTRL, PEACH2_RP_ENABLE, 4);
    const auto request = [&](uint64_t seq) {
        peach2_rp_req r{};
        r.op = PEACH2_RP_OP_READ;
        r.version = PEACH2_RP_VERSION;
        r.len = 64;
        r.addr = 0x1000;
        r.seq = seq;
        r.reply = 0x2000;
        r.cpl = 0x3000;
        uint64_t words[8];
        std::memcpy(words, &r, sizeof(r));
        for (unsigned i = 0; i < 8; ++i)
            peach2_core_reg_write(a.get(), PEACH2_REG_RP_TX_REQ + 8 * i, words[i], 8);
        peach2_core_reg_write(a.get(), PEACH2_REG_RP_TX_SEND, 1, 4);
        ASSERT_TRUE(pump());
    };
    request(41);
    peach2_core_reg_write(b.get(), PEACH2_REG_RP_CTRL, 0, 4);  // the driver went away
    request(42);
    const auto [ta, tb] = finish();

    const auto reqs = of_type(ta.records, Type::RpRequest);
    ASSERT_EQ(reqs.size(), 2u);
    EXPECT_EQ(reqs[0].unit, PEACH2_RP_OP_READ);
    EXPECT_EQ(reqs[0].dst_node, 1u);
    EXPECT_EQ(reqs[0].arg, 41u);
    EXPECT_EQ(reqs[0].len, 64u);
    const auto sends = of_type(ta.records, Type::PktSend);
    ASSERT_EQ(sends.size(), 2u);
    EXPECT_EQ(trace::send_origin(sends[0]), trace::Origin::RpRequest);
    EXPECT_EQ(sends[0].id, reqs[0].id);  // the request names its packet
    EXPECT_EQ(sends[1].id, reqs[1].id);
    // The request record comes before its packet (the model pairs them so).
    EXPECT_LT(reqs[0].seq, sends[0].seq);

    const auto recvs = of_type(tb.records, Type::PktRecv);
    ASSERT_EQ(recvs.size(), 2u);
    EXPECT_EQ(trace::recv_kind(recvs[0]), trace::RecvKind::RpRing);
    EXPECT_EQ(trace::recv_error(recvs[0]), 0u);
    EXPECT_EQ(recvs[0].arg, 41u);
    EXPECT_EQ(recvs[0].unit, PEACH2_RP_OP_READ);
    EXPECT_EQ(trace::recv_error(recvs[1]), static_cast<uint8_t>(PEACH2_ERR_RP_OFF));
    // The queued request interrupts the driver; the refused one is answered
    // by the card after its delivery record: the body, then the tag.
    EXPECT_FALSE(of_type(tb.records, Type::Irq).empty());
    const auto answers = of_type(tb.records, Type::PktSend);
    ASSERT_EQ(answers.size(), 2u);
    for (const Record& s : answers) {
        EXPECT_EQ(trace::send_origin(s), trace::Origin::RpAnswer);
        EXPECT_EQ(s.arg, 42u);
        EXPECT_GT(s.seq, recvs[1].seq);
    }
    expect_matched(ta, tb);
    expect_matched(tb, ta);
}

TEST_F(CardTraceTest, AFullRingDropsAndCountsButNeverStopsTheCard) {
    peach2_core_trace_close(b.get());
    open(b.get(), 1, 64);  // the smallest ring
    const unsigned stores = 20000;
    for (unsigned i = 0; i < stores; ++i)  // each its own packet: 2 records each
        peach2_core_window_write(b.get(), PEACH2_NODE_BASE(1) + 0x100 * (i % 1024), i, 8);
    peach2_core_close_write(b.get());
    uint64_t events = 0, dropped = 0;
    peach2_core_trace_stats(b.get(), &events, &dropped);
    EXPECT_EQ(events, 1 + 2u * stores);  // the cable, then a send and a delivery each
    EXPECT_EQ(peach2_core_reg_read(b.get(), PEACH2_REG_TX_PKTS(PEACH2_PORT_N), 8), stores);
    const auto [ta, tb] = finish();
    // Whatever the writer kept up with: what is missing is counted, and the
    // gaps in seq are exactly where.
    EXPECT_EQ(tb.records.size() + tb.dropped, events);
    EXPECT_EQ(tb.dropped, dropped);
}

// Whatever a guest does, the trace reads back and every record fits what
// peach2-model accepts of its type (workload.cc checks the same).
TEST_F(CardTraceTest, RandomGuestInputLeavesATraceTheModelAccepts) {
    std::mt19937_64 rng(7);
    const auto below = [&](uint64_t n) { return rng() % n; };
    for (int i = 0; i < 20000; ++i) {
        peach2_core* c = below(2) ? a.get() : b.get();
        const uint64_t v = rng();
        switch (below(6)) {
        case 0: peach2_core_reg_write(c, PEACH2_REG_DMA_BASE + below(0x180), v, 4); break;
        case 1: peach2_core_cardmem_write(c, below(PEACH2_CARDMEM_SIZE / 8) * 8, v, 8); break;
        case 2:
            peach2_core_window_write(c, PEACH2_NODE_BASE(below(3)) + below(1 << 16), v, 8);
            break;
        case 3: peach2_core_reg_write(c, PEACH2_REG_RP_TX_REQ + below(64) / 4 * 4, v, 4); break;
        case 5: {  // a start, of whatever the registers and descriptor RAM hold
            const unsigned ch = static_cast<unsigned>(below(PEACH2_DMA_CHANNELS));
            peach2_core_reg_write(c, PEACH2_REG_DMA(ch, PEACH2_DMA_HEAD_LO), below(8), 8);
            peach2_core_reg_write(c, PEACH2_REG_DMA(ch, PEACH2_DMA_CTRL), 1u << below(2), 4);
            break;
        }
        case 4:
            if (below(20) == 0) {
                // Mostly a request the card sends (its version byte right),
                // sometimes whatever the random words made of it.
                if (below(4))
                    peach2_core_reg_write(c, PEACH2_REG_RP_TX_REQ,
                                          (v & 0xffff00ffu) | PEACH2_RP_VERSION << 8, 4);
                peach2_core_reg_write(c, PEACH2_REG_RP_TX_SEND, static_cast<uint32_t>(below(3)), 4);
            }
            break;
        }
        if (below(50) == 0) {
            ASSERT_TRUE(pump());
        }
    }
    ASSERT_TRUE(pump());
    const auto [ta, tb] = finish();
    for (const trace::TraceFile* t : {&ta, &tb}) {
        const uint32_t self = t->header.node;
        for (const Record& r : t->records) {
            switch (r.type) {
            case Type::PktSend:
                EXPECT_EQ(r.src_node, self);
                EXPECT_TRUE(r.len >= 1 && r.len <= trace::kMaxPacket) << r.len;
                EXPECT_EQ(r.port == trace::kPortN, r.dst_node == self);
                EXPECT_LT(r.dst_node, 2u);
                break;
            case Type::PktRecv:
                EXPECT_EQ(r.dst_node, self);
                EXPECT_LE(r.len, trace::kMaxPacket);
                break;
            case Type::DmaStart:
            case Type::DmaDesc:
            case Type::DmaDone: EXPECT_LT(r.unit, trace::kChannels); break;
            case Type::RpRequest: EXPECT_LT(r.dst_node, 2u); break;
            default: break;
            }
        }
    }
    for (const trace::TraceFile* from : {&ta, &tb})
        for (const trace::TraceFile* to : {&ta, &tb})
            expect_matched(*from, *to);
    // Not vacuous: packets both ways, DMA runs, read-proxy requests.
    EXPECT_GT(of_type(ta.records, Type::PktSend).size(), 100u);
    EXPECT_GT(of_type(tb.records, Type::PktRecv).size(), 100u);
    EXPECT_GT(of_type(ta.records, Type::DmaStart).size(), 10u);
    EXPECT_GT(of_type(tb.records, Type::RpRequest).size(), 10u);
}

TEST_F(CardTraceTest, OffRecordsNothingAndBadFilesAreRefusedWithAReason) {
    peach2_core_trace_close(a.get());
    peach2_core_window_write(a.get(), PEACH2_NODE_BASE(1), 1, 8);
    peach2_core_close_write(a.get());
    uint64_t events = 1, dropped = 1;
    peach2_core_trace_stats(a.get(), &events, &dropped);
    EXPECT_EQ(events, 0u);
    EXPECT_EQ(dropped, 0u);
    char err[256] = "";
    EXPECT_FALSE(
        peach2_core_trace_open(a.get(), (dir + "/no/such/dir/t").c_str(), 0, err, sizeof(err)));
    EXPECT_NE(std::string(err).find("cannot create"), std::string::npos) << err;
    EXPECT_FALSE(peach2_core_trace_open(a.get(), path(0).c_str(), 3, err, sizeof(err)));
    EXPECT_NE(std::string(err).find("ring"), std::string::npos) << err;
}

}  // namespace
}  // namespace peach2::test
