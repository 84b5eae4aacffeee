// One card, no links: registers, local delivery, errors, interrupts.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "fake_host.h"

namespace peach2::test {
namespace {

class CardTest : public ::testing::Test {
protected:
    FakeHost host;
    CorePtr core = make_core(host, 0, 2);
    peach2_core* c() { return core.get(); }
    // Fake RAM is 1 MiB; the range goes past it so that the memory system's
    // own refusal can be tested too.
    void SetUp() override { ASSERT_EQ(allow(c(), 0, 2 << 20), 0u); }
    uint32_t errors(peach2_err code) { return reg(c(), PEACH2_REG_ERR_BY_CODE(code)); }
};

TEST(CardConfig, RejectsBadConfigWithMessage) {
    FakeHost host;
    const peach2_core_host cb = host.callbacks();
    char err[128] = "";
    peach2_core_config cfg{2, 2, 0};
    EXPECT_EQ(peach2_core_new(&cfg, &cb, err, sizeof(err)), nullptr);
    EXPECT_NE(std::string(err).find("node-id"), std::string::npos);
    cfg = {0, 17, 0};
    EXPECT_EQ(peach2_core_new(&cfg, &cb, err, sizeof(err)), nullptr);
    cfg = {0, 0, 0};
    EXPECT_EQ(peach2_core_new(&cfg, &cb, err, sizeof(err)), nullptr);
}

TEST_F(CardTest, IdentityRegisters) {
    EXPECT_EQ(reg(c(), PEACH2_REG_ID), PEACH2_ID_MAGIC);
    EXPECT_EQ(reg(c(), PEACH2_REG_VERSION) >> 16, PEACH2_VERSION_MAJOR);
    EXPECT_EQ(reg(c(), PEACH2_REG_NODE_ID), 0u);
    EXPECT_EQ(reg(c(), PEACH2_REG_NODE_COUNT), 2u);
    EXPECT_EQ(reg(c(), PEACH2_REG_SLICE_SHIFT), PEACH2_SLICE_SHIFT);
    EXPECT_EQ(reg(c(), PEACH2_REG_HOST_SHIFT), PEACH2_HOST_SHIFT);
    EXPECT_EQ(reg(c(), PEACH2_REG_LINK(0)), 0u);
    EXPECT_EQ(reg(c(), PEACH2_REG_ERR_COUNT), 0u);
}

TEST_F(CardTest, ScratchAnd64BitAccess) {
    peach2_core_reg_write(c(), PEACH2_REG_SCRATCH, 0xdeadbeef, 4);
    EXPECT_EQ(reg(c(), PEACH2_REG_SCRATCH), 0xdeadbeefu);
    // 8-byte read of ID + VERSION.
    const uint64_t v = peach2_core_reg_read(c(), PEACH2_REG_ID, 8);
    EXPECT_EQ(static_cast<uint32_t>(v), PEACH2_ID_MAGIC);
    EXPECT_EQ(static_cast<uint32_t>(v >> 32) >> 16, PEACH2_VERSION_MAJOR);
}

TEST_F(CardTest, BadRegisterAccessIsAnErrorNotACrash) {
    EXPECT_EQ(peach2_core_reg_read(c(), 0xffc, 4), 0u);
    peach2_core_reg_write(c(), PEACH2_REG_ID, 1, 4);           // read-only
    peach2_core_reg_write(c(), PEACH2_REG_SCRATCH + 1, 1, 4);  // misaligned
    peach2_core_reg_read(c(), PEACH2_REG_SCRATCH, 2);          // wrong size
    peach2_core_reg_read(c(), ~0ull - 3, 4);                   // absurd offset
    EXPECT_EQ(errors(PEACH2_ERR_BAD_REG), 5u);
    EXPECT_EQ(reg(c(), PEACH2_REG_ID), PEACH2_ID_MAGIC);
}

TEST_F(CardTest, LocalStoresCoalesceAndLandAtTheBusAddress) {
    std::vector<uint8_t> msg(600);
    for (size_t i = 0; i < msg.size(); ++i)
        msg[i] = static_cast<uint8_t>(i * 7 + 1);
    cpu_store(c(), PEACH2_NODE_BASE(0) + 0x1000, msg.data(), msg.size());
    peach2_core_service(c());
    EXPECT_EQ(0, std::memcmp(host.mem.data() + 0x1000, msg.data(), msg.size()));
    // 600 contiguous bytes: packets of at most 256 bytes, in order.
    ASSERT_EQ(host.writes.size(), 3u);
    EXPECT_EQ(host.writes[0], std::make_pair(uint64_t{0x1000}, size_t{256}));
    EXPECT_EQ(host.writes[1], std::make_pair(uint64_t{0x1100}, size_t{256}));
    EXPECT_EQ(host.writes[2], std::make_pair(uint64_t{0x1200}, size_t{88}));
    EXPECT_EQ(host.mem[0x1000 + 600], 0);  // nothing past the end
    EXPECT_EQ(host.mem[0xfff], 0);
    EXPECT_EQ(errors(PEACH2_ERR_NONE), 0u);
}

TEST_F(CardTest, WindowStoresReportWhatTheyLeftPending) {
    // A local store opens a write-combining buffer and asks for no service
    // itself: the caller closes it when the CPU fences or goes idle.
    EXPECT_FALSE(peach2_core_write_open(c()));
    EXPECT_EQ(peach2_core_window_write(c(), 0x100, 1, 8), PEACH2_WINDOW_WC_OPEN);
    EXPECT_TRUE(peach2_core_write_open(c()));
    EXPECT_EQ(host.services, 0);
    // A non-contiguous local store delivers the old buffer at once (loopback).
    EXPECT_EQ(peach2_core_window_write(c(), 0x800, 2, 8), PEACH2_WINDOW_WC_OPEN);
    EXPECT_EQ(host.mem[0x100], 1);
    peach2_core_close_write(c());
    EXPECT_FALSE(peach2_core_write_open(c()));
    EXPECT_EQ(host.mem[0x800], 2);
    EXPECT_EQ(host.services, 0);
    EXPECT_EQ(peach2_core_tx_pending(c()), 0u);  // nothing for a link: all local
}

// Stores and fences run in a vCPU's MMIO exit: they close write-combining
// buffers and nothing else. A DMA run waits for the bottom half.
TEST_F(CardTest, StoresAndClosingAWriteNeverRunDma) {
    host.mem.assign(host.mem.size(), 0x5a);  // already allowed by SetUp
    peach2_core_reg_write(c(), PEACH2_REG_DMA(0, PEACH2_DMA_SRC_LO), 0x10000, 8);
    peach2_core_reg_write(c(), PEACH2_REG_DMA(0, PEACH2_DMA_DST_LO), 0x20000, 8);
    peach2_core_reg_write(c(), PEACH2_REG_DMA(0, PEACH2_DMA_LEN), 4096, 4);
    peach2_core_reg_write(c(), PEACH2_REG_DMA(0, PEACH2_DMA_CTRL), PEACH2_DMA_CTRL_START_REG, 4);
    EXPECT_EQ(host.services, 1);  // the start asks for the bottom half
    const size_t writes = host.writes.size();
    for (uint64_t a = 0x100; a < 0x900; a += 0x100)  // each store closes the last
        peach2_core_window_write(c(), a, 1, 8);
    peach2_core_close_write(c());
    EXPECT_EQ(host.writes.size(), writes + 8);  // the 8 stores, no DMA packet
    EXPECT_EQ(reg(c(), PEACH2_REG_DMA(0, PEACH2_DMA_BYTES_LO)), 0u);
    EXPECT_TRUE(reg(c(), PEACH2_REG_DMA(0, PEACH2_DMA_STATUS)) & PEACH2_DMA_ST_BUSY);
    EXPECT_EQ(host.defers, 0);
    peach2_core_service(c());
    EXPECT_EQ(reg(c(), PEACH2_REG_DMA(0, PEACH2_DMA_STATUS)), PEACH2_DMA_ST_DONE);
}

// Every error also reaches the host as a typed record (QEMU: a trace event
// per code), with the facts that go with it.
TEST_F(CardTest, ErrorsReachTheHostTyped) {
    peach2_core_window_write(c(), PEACH2_NODE_BASE(9) + 0x40, 42, 8);
    peach2_core_close_write(c());
    peach2_core_reg_read(c(), 0x3c, 2);
    ASSERT_EQ(host.errors.size(), 2u);
    const peach2_core_error& store = host.errors[0].e;
    EXPECT_EQ(store.code, static_cast<uint32_t>(PEACH2_ERR_NO_SUCH_NODE));
    EXPECT_TRUE(store.counted);
    EXPECT_EQ(store.addr, PEACH2_NODE_BASE(9) + 0x40);
    EXPECT_EQ(store.node, 9u);
    EXPECT_EQ(store.port, PEACH2_CORE_NONE);
    EXPECT_EQ(store.channel, PEACH2_CORE_NONE);
    EXPECT_NE(host.errors[0].what.find("node 9"), std::string::npos);
    const peach2_core_error& reg_access = host.errors[1].e;
    EXPECT_EQ(reg_access.code, static_cast<uint32_t>(PEACH2_ERR_BAD_REG));
    EXPECT_EQ(reg_access.addr, 0x3cu);
    EXPECT_EQ(reg_access.value, 2u);  // the access size
}

TEST_F(CardTest, StoresNeverCrossA4KiBBoundary) {
    const uint8_t b[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    cpu_store(c(), 0x1ff8, b, 16);
    peach2_core_service(c());
    ASSERT_EQ(host.writes.size(), 2u);
    EXPECT_EQ(host.writes[0], std::make_pair(uint64_t{0x1ff8}, size_t{8}));
    EXPECT_EQ(host.writes[1], std::make_pair(uint64_t{0x2000}, size_t{8}));
    // An unaligned 8-byte store across the boundary is split, not lost.
    peach2_core_window_write(c(), 0x2ffd, 0x0807060504030201ull, 8);
    peach2_core_service(c());
    EXPECT_EQ(host.mem[0x2ffd], 1);
    EXPECT_EQ(host.mem[0x3004], 8);
}

TEST_F(CardTest, StoresOfMixedSizesMergeByteForByte) {
    // Each store copies a whole word into the combining buffer; only its
    // own bytes count, whatever the value holds above its size.
    const std::pair<unsigned, uint64_t> stores[] = {{1, 0xffffffffffffff01ull},
                                                    {2, 0xffffffffffff0302ull},
                                                    {4, 0xffffffff07060504ull},
                                                    {8, 0x0f0e0d0c0b0a0908ull},
                                                    {1, 0xeeeeeeeeeeeeee10ull}};
    uint64_t off = 0x400;
    for (const auto& [size, val] : stores) {
        peach2_core_window_write(c(), off, val, size);
        off += size;
    }
    peach2_core_service(c());
    ASSERT_EQ(host.writes.size(), 1u);
    EXPECT_EQ(host.writes[0], std::make_pair(uint64_t{0x400}, size_t{16}));
    for (unsigned i = 0; i < 16; ++i)
        EXPECT_EQ(host.mem[0x400 + i], i + 1) << "byte " << i;
    EXPECT_EQ(host.mem[0x410], 0);  // nothing past the last store
}

TEST_F(CardTest, AppendContinuesOnlyTheOpenWrite) {
    EXPECT_FALSE(peach2_core_window_append(c(), 0x108, 1, 8));  // nothing open
    EXPECT_EQ(peach2_core_window_write(c(), 0x100, 0x0101010101010101ull, 8),
              PEACH2_WINDOW_WC_OPEN);
    EXPECT_TRUE(peach2_core_window_append(c(), 0x108, 0x0202020202020202ull, 8));
    EXPECT_TRUE(peach2_core_window_append(c(), 0x110, 0x0303, 2));
    EXPECT_FALSE(peach2_core_window_append(c(), 0x118, 4, 8));  // a gap
    EXPECT_FALSE(peach2_core_window_append(c(), 0x112, 4, 3));  // no such size
    EXPECT_TRUE(host.writes.empty());                           // all held back
    peach2_core_close_write(c());
    EXPECT_FALSE(peach2_core_window_append(c(), 0x112, 4, 8));  // closed
    ASSERT_EQ(host.writes.size(), 1u);
    EXPECT_EQ(host.writes[0], std::make_pair(uint64_t{0x100}, size_t{18}));
    for (unsigned i = 0; i < 18; ++i)
        EXPECT_EQ(host.mem[0x100 + i], i / 8 + 1) << "byte " << i;
    EXPECT_EQ(host.mem[0x112], 0);
    // Never past the buffer's size nor into the next page: those stores
    // close the write, which only the serialised call may do.
    EXPECT_EQ(peach2_core_window_write(c(), 0x2f00, 0, 8), PEACH2_WINDOW_WC_OPEN);
    for (uint64_t off = 0x2f08; off < 0x2f00 + PEACH2_WC_MAX; off += 8)
        ASSERT_TRUE(peach2_core_window_append(c(), off, off, 8));
    EXPECT_FALSE(peach2_core_window_append(c(), 0x2f00 + PEACH2_WC_MAX, 0, 8));
    peach2_core_close_write(c());
    EXPECT_EQ(peach2_core_window_write(c(), 0x2ff8, 0, 8), PEACH2_WINDOW_WC_OPEN);
    EXPECT_FALSE(peach2_core_window_append(c(), 0x3000, 0, 8));
    EXPECT_FALSE(peach2_core_window_append(c(), 0x2ffc, 0, 8));  // overlaps
    EXPECT_EQ(errors(PEACH2_ERR_NONE), 0u);
}

// A vCPU appends without the BQL while another thread (holding it) closes
// writes, as the write-combining timer and a fence do: every byte lands
// once, where it was stored, and the later value of a word wins.
TEST_F(CardTest, AppendsBesideClosesLoseNothing) {
    std::mutex bql;
    std::atomic<bool> done{false};
    constexpr uint64_t kBase = 0x10000, kBytes = 256 * 1024;
    std::thread closer([&] {
        while (!done.load()) {
            const std::lock_guard lock(bql);
            peach2_core_close_write(c());
        }
    });
    uint64_t appended = 0;
    for (int pass = 0; pass < 2; ++pass) {
        for (uint64_t off = 0; off < kBytes; off += 8) {
            const uint64_t val = (off << 8) | static_cast<uint64_t>(pass + 1);
            if (peach2_core_window_append(c(), kBase + off, val, 8)) {
                ++appended;
                continue;
            }
            const std::lock_guard lock(bql);
            peach2_core_window_write(c(), kBase + off, val, 8);
        }
    }
    done = true;
    closer.join();
    peach2_core_close_write(c());
    EXPECT_GT(appended, 0u);
    uint64_t bytes = 0;
    for (const auto& w : host.writes)
        bytes += w.second;
    EXPECT_EQ(bytes, 2 * kBytes);
    for (uint64_t off = 0; off < kBytes; off += 8) {
        uint64_t v = 0;
        std::memcpy(&v, host.mem.data() + kBase + off, 8);
        ASSERT_EQ(v, (off << 8) | 2u) << "offset " << off;
    }
}

TEST_F(CardTest, NonContiguousStoresKeepTheirOrder) {
    peach2_core_window_write(c(), 0x100, 0x11, 1);
    peach2_core_window_write(c(), 0x200, 0x22, 1);
    peach2_core_window_write(c(), 0x100, 0x33, 1);  // overwrites the first
    peach2_core_service(c());
    EXPECT_EQ(host.mem[0x100], 0x33);
    EXPECT_EQ(host.mem[0x200], 0x22);
}

TEST_F(CardTest, StoreToNonexistentNodeIsReportedWithAddress) {
    peach2_core_reg_write(c(), PEACH2_REG_INT_MASK, 0, 4);
    const uint64_t addr = PEACH2_NODE_BASE(9) + 0x40;
    peach2_core_window_write(c(), addr, 42, 8);
    peach2_core_service(c());
    EXPECT_EQ(reg(c(), PEACH2_REG_ERR_COUNT), 1u);
    EXPECT_EQ(errors(PEACH2_ERR_NO_SUCH_NODE), 1u);
    EXPECT_EQ(reg(c(), PEACH2_REG_LAST_ERR), static_cast<uint32_t>(PEACH2_ERR_NO_SUCH_NODE));
    EXPECT_EQ(reg(c(), PEACH2_REG_ERR_STATUS), PEACH2_ERR_VALID | PEACH2_ERR_NO_SUCH_NODE);
    const uint64_t latched = reg(c(), PEACH2_REG_ERR_ADDR_LO) |
                             static_cast<uint64_t>(reg(c(), PEACH2_REG_ERR_ADDR_HI)) << 32;
    EXPECT_EQ(latched, addr);
    EXPECT_TRUE(reg(c(), PEACH2_REG_INT_STATUS) & PEACH2_INT_ERROR);
    EXPECT_EQ(host.irqs, std::vector<unsigned>{0});
    EXPECT_TRUE(host.writes.empty());
    ASSERT_FALSE(host.logs.empty());
    EXPECT_NE(host.logs.back().find("no such node"), std::string::npos);
}

TEST_F(CardTest, ErrorStatusLatchesTheFirstErrorUntilCleared) {
    peach2_core_window_write(c(), PEACH2_NODE_BASE(9), 1, 4);
    peach2_core_service(c());
    peach2_core_window_read(c(), 0, 4);
    EXPECT_EQ(reg(c(), PEACH2_REG_ERR_STATUS) & 0xff,
              static_cast<uint32_t>(PEACH2_ERR_NO_SUCH_NODE));
    EXPECT_EQ(reg(c(), PEACH2_REG_LAST_ERR), static_cast<uint32_t>(PEACH2_ERR_READ_UNSUPPORTED));
    EXPECT_EQ(reg(c(), PEACH2_REG_ERR_COUNT), 2u);
    peach2_core_reg_write(c(), PEACH2_REG_ERR_STATUS, PEACH2_ERR_VALID, 4);
    EXPECT_EQ(reg(c(), PEACH2_REG_ERR_STATUS), 0u);
    EXPECT_EQ(reg(c(), PEACH2_REG_ERR_COUNT), 2u);  // the counter is not cleared
}

TEST_F(CardTest, InterruptsRespectMaskAndAreNotRepeatedUntilCleared) {
    peach2_core_window_write(c(), PEACH2_NODE_BASE(9), 1, 4);
    peach2_core_service(c());
    EXPECT_TRUE(host.irqs.empty());  // masked at reset
    peach2_core_reg_write(c(), PEACH2_REG_INT_MASK, ~PEACH2_INT_ERROR, 4);
    EXPECT_EQ(host.irqs.size(), 1u);  // pending + unmasked: delivered now
    peach2_core_window_write(c(), PEACH2_NODE_BASE(9), 1, 4);
    peach2_core_service(c());
    EXPECT_EQ(host.irqs.size(), 1u);  // same bit still pending
    peach2_core_reg_write(c(), PEACH2_REG_INT_STATUS, PEACH2_INT_ERROR, 4);
    EXPECT_EQ(reg(c(), PEACH2_REG_INT_STATUS), 0u);
    peach2_core_window_write(c(), PEACH2_NODE_BASE(9), 1, 4);
    peach2_core_service(c());
    EXPECT_EQ(host.irqs.size(), 2u);
}

TEST_F(CardTest, WindowIsWriteOnly) {
    EXPECT_EQ(peach2_core_window_read(c(), 0x10, 4), 0xffffffffu);
    EXPECT_EQ(peach2_core_window_read(c(), 0x10, 8), ~0ull);
    EXPECT_EQ(errors(PEACH2_ERR_READ_UNSUPPORTED), 2u);
}

TEST_F(CardTest, RemoteNodeWithNoLinkIsReportedAsNoRoute) {
    peach2_core_window_write(c(), PEACH2_NODE_BASE(1), 1, 4);
    peach2_core_service(c());
    EXPECT_EQ(errors(PEACH2_ERR_NO_ROUTE), 1u);
    peach2_core_link_attach(c(), PEACH2_PORT_E);  // cabled but not connected
    peach2_core_window_write(c(), PEACH2_NODE_BASE(1), 1, 4);
    peach2_core_service(c());
    EXPECT_EQ(errors(PEACH2_ERR_LINK_DOWN), 1u);
}

TEST_F(CardTest, MailboxGpuAndUnmappedRegions) {
    peach2_core_window_write(c(), PEACH2_NODE_BASE(0) + PEACH2_CARD_OFF + 0x10, 0xabcd, 4);
    peach2_core_service(c());
    EXPECT_EQ(peach2_core_cardmem_read(c(), PEACH2_MAILBOX_OFF + 0x10, 4), 0xabcdu);
    EXPECT_TRUE(reg(c(), PEACH2_REG_INT_STATUS) & PEACH2_INT_MAILBOX);
    peach2_core_window_write(c(), PEACH2_NODE_BASE(0) + PEACH2_GPU_OFF, 1, 4);
    peach2_core_service(c());
    EXPECT_EQ(errors(PEACH2_ERR_NO_GPU), 1u);
    peach2_core_window_write(c(), PEACH2_NODE_BASE(0) + PEACH2_CARD_OFF + PEACH2_CARD_SIZE, 1, 4);
    peach2_core_service(c());
    EXPECT_EQ(errors(PEACH2_ERR_BAD_TARGET), 1u);
}

TEST_F(CardTest, RejectedHostWriteIsReported) {
    peach2_core_window_write(c(), host.mem.size() - 2, 0xffffffff, 4);  // past fake RAM
    peach2_core_service(c());
    EXPECT_EQ(errors(PEACH2_ERR_DMA_WRITE), 1u);
}

TEST_F(CardTest, CardMemoryBounds) {
    peach2_core_cardmem_write(c(), PEACH2_CARDMEM_SIZE - 4, 0x12345678, 4);
    EXPECT_EQ(peach2_core_cardmem_read(c(), PEACH2_CARDMEM_SIZE - 4, 4), 0x12345678u);
    peach2_core_cardmem_write(c(), PEACH2_CARDMEM_SIZE - 2, 1, 4);
    EXPECT_EQ(peach2_core_cardmem_read(c(), PEACH2_CARDMEM_SIZE, 4), 0u);
    EXPECT_EQ(errors(PEACH2_ERR_BAD_REG), 2u);
}

TEST_F(CardTest, CountersCountHostTraffic) {
    const uint8_t b[16] = {};
    cpu_store(c(), 0x40, b, 16);
    peach2_core_service(c());
    const auto cnt = [&](uint64_t off) { return peach2_core_reg_read(c(), off, 8); };
    EXPECT_EQ(cnt(PEACH2_REG_RX_PKTS(PEACH2_PORT_N)), 1u);
    EXPECT_EQ(cnt(PEACH2_REG_RX_BYTES(PEACH2_PORT_N)), 16u);
    EXPECT_EQ(cnt(PEACH2_REG_TX_PKTS(PEACH2_PORT_N)), 1u);
    EXPECT_EQ(cnt(PEACH2_REG_TX_BYTES(PEACH2_PORT_N)), 16u);
}

TEST_F(CardTest, InboundFilterRefusesUnregisteredMemory) {
    FakeHost h2;
    CorePtr c2 = make_core(h2, 0, 2);
    peach2_core_window_write(c2.get(), 0x1000, 0xff, 1);  // nothing registered yet
    peach2_core_service(c2.get());
    EXPECT_EQ(h2.mem[0x1000], 0);
    EXPECT_EQ(reg(c2.get(), PEACH2_REG_ERR_BY_CODE(PEACH2_ERR_NOT_REGISTERED)), 1u);
    ASSERT_EQ(allow(c2.get(), 0x1000, 0xff0), 0u);  // ends at 0x1ff0
    EXPECT_EQ(reg(c2.get(), PEACH2_REG_IN_COUNT), 1u);
    const uint8_t b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    cpu_store(c2.get(), 0x1fec, b, 8);  // one packet straddling the end of the range
    cpu_store(c2.get(), 0x1800, b, 8);  // inside
    peach2_core_service(c2.get());
    EXPECT_EQ(h2.mem[0x1800], 1);
    EXPECT_EQ(h2.mem[0x1fec], 0);  // the packet was refused whole
    EXPECT_EQ(reg(c2.get(), PEACH2_REG_ERR_BY_CODE(PEACH2_ERR_NOT_REGISTERED)), 2u);
}

TEST_F(CardTest, InboundFilterCommandsAreValidated) {
    EXPECT_NE(allow(c(), 0x100, 0x100), 0u);     // overlaps the SetUp range
    EXPECT_NE(allow(c(), 4 << 20, 0), 0u);       // empty
    EXPECT_NE(allow(c(), ~0ull - 10, 100), 0u);  // wraps
    EXPECT_EQ(allow(c(), 4 << 20, 4096), 0u);
    EXPECT_EQ(reg(c(), PEACH2_REG_IN_COUNT), 2u);
    peach2_core_reg_write(c(), PEACH2_REG_IN_BASE_LO, 5 << 20, 8);
    peach2_core_reg_write(c(), PEACH2_REG_IN_CMD, PEACH2_IN_CMD_REMOVE, 4);  // not a base
    EXPECT_EQ(reg(c(), PEACH2_REG_IN_RESULT), static_cast<uint32_t>(PEACH2_ERR_BAD_COMMAND));
    peach2_core_reg_write(c(), PEACH2_REG_IN_BASE_LO, 4 << 20, 8);
    peach2_core_reg_write(c(), PEACH2_REG_IN_CMD, PEACH2_IN_CMD_REMOVE, 4);
    EXPECT_EQ(reg(c(), PEACH2_REG_IN_RESULT), 0u);
    peach2_core_reg_write(c(), PEACH2_REG_IN_CMD, 77, 4);  // unknown command
    EXPECT_EQ(errors(PEACH2_ERR_BAD_COMMAND), 5u);
    peach2_core_reg_write(c(), PEACH2_REG_IN_CMD, PEACH2_IN_CMD_CLEAR, 4);
    EXPECT_EQ(reg(c(), PEACH2_REG_IN_COUNT), 0u);
    peach2_core_reg_write(c(), PEACH2_REG_IN_CTRL, 0, 4);  // filter off: all accepted
    peach2_core_window_write(c(), 0x3000, 0x5a, 1);
    peach2_core_service(c());
    EXPECT_EQ(host.mem[0x3000], 0x5a);
}

TEST_F(CardTest, ResetClearsErrorsAndCardMemory) {
    peach2_core_window_write(c(), PEACH2_NODE_BASE(9), 1, 4);
    peach2_core_cardmem_write(c(), PEACH2_MAILBOX_OFF, 7, 4);
    peach2_core_reset(c());
    EXPECT_EQ(reg(c(), PEACH2_REG_ERR_COUNT), 0u);
    EXPECT_EQ(peach2_core_cardmem_read(c(), PEACH2_MAILBOX_OFF, 4), 0u);
    EXPECT_EQ(reg(c(), PEACH2_REG_INT_MASK), ~0u);
    EXPECT_EQ(reg(c(), PEACH2_REG_IN_COUNT), 0u);
    EXPECT_EQ(reg(c(), PEACH2_REG_IN_CTRL), PEACH2_IN_ENABLE);
    // The open write-combining buffer was discarded, not delivered.
    peach2_core_service(c());
    EXPECT_TRUE(host.writes.empty());
}

}  // namespace
}  // namespace peach2::test
