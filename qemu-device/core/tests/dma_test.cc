// The chaining DMA controller: modes, block-stride, completion, every error.
#include <gtest/gtest.h>

#include "fake_host.h"
#include "packet.h"
#include "peach2/peach2_dma_rules.h"

namespace peach2::test {
namespace {

constexpr uint64_t kHost = PEACH2_DMA_HEAD_HOST;

struct Dma {
    peach2_core* c;
    unsigned ch = 0;
    void w(uint32_t r, uint64_t v, unsigned size = 4) {
        peach2_core_reg_write(c, PEACH2_REG_DMA(ch, r), v, size);
    }
    uint32_t r(uint32_t reg_off) { return reg(c, PEACH2_REG_DMA(ch, reg_off)); }
    uint32_t status() { return r(PEACH2_DMA_STATUS); }
    uint32_t code() { return (status() >> PEACH2_DMA_ST_CODE_SHIFT) & 0xff; }
    bool busy() { return status() & PEACH2_DMA_ST_BUSY; }
    void reg_mode(uint64_t src, uint64_t dst, uint32_t len, uint32_t block = 0,
                  uint32_t flags = 0) {
        w(PEACH2_DMA_SRC_LO, src, 8);
        w(PEACH2_DMA_DST_LO, dst, 8);
        w(PEACH2_DMA_LEN, len);
        w(PEACH2_DMA_BLOCK, block);
        w(PEACH2_DMA_FLAGS, flags);
        w(PEACH2_DMA_CTRL, PEACH2_DMA_CTRL_START_REG);
    }
    void chain(uint64_t head) {
        w(PEACH2_DMA_HEAD_LO, head, 8);
        w(PEACH2_DMA_CTRL, PEACH2_DMA_CTRL_START_CHAIN);
    }
    // Run the bottom half until the channel stops; returns the number of runs.
    int run(int max_runs = 100000) {
        int runs = 0;
        while (busy() && runs < max_runs) {
            peach2_core_service(c);
            ++runs;
        }
        return runs;
    }
};

class DmaTest : public ::testing::Test {
protected:
    FakeHost host;
    CorePtr core;
    Dma dma{nullptr};
    void SetUp() override {
        host.mem.assign(4 << 20, 0);
        core = make_core(host, 0, 2);
        dma.c = core.get();
        ASSERT_EQ(allow(core.get(), 0, host.mem.size()), 0u);
        peach2_core_reg_write(core.get(), PEACH2_REG_INT_MASK, 0, 4);
        for (size_t i = 0; i < 0x10000; ++i)
            host.mem[i] = static_cast<uint8_t>(i * 13 + 5);
    }
    void card_desc(uint32_t idx, const peach2_desc& d) {
        uint8_t b[32];
        encode_desc(b, d);
        for (int i = 0; i < 4; ++i) {
            uint64_t v;
            std::memcpy(&v, b + 8 * i, 8);
            peach2_core_cardmem_write(core.get(), PEACH2_DESC_RAM_OFF + idx * 32 + 8 * i, v, 8);
        }
    }
    void host_desc(uint64_t addr, const peach2_desc& d) { encode_desc(host.mem.data() + addr, d); }
    static void encode_desc(uint8_t* b, const peach2_desc& d) {
        const auto put = [&](size_t off, uint64_t v, unsigned n) {
            for (unsigned i = 0; i < n; ++i)
                b[off + i] = static_cast<uint8_t>(v >> (8 * i));
        };
        put(0, d.src, 8);
        put(8, d.dst, 8);
        put(16, d.len, 4);
        put(20, d.burst, 2);
        put(22, d.gap, 2);
        put(24, d.next, 4);
        put(28, d.flags, 4);
    }
    bool same(uint64_t a, uint64_t b, size_t n) {
        return std::memcmp(host.mem.data() + a, host.mem.data() + b, n) == 0;
    }
    bool zero(uint64_t a, size_t n) {
        return std::all_of(host.mem.begin() + a, host.mem.begin() + a + n,
                           [](uint8_t x) { return !x; });
    }
    uint32_t errors(peach2_err e) { return reg(core.get(), PEACH2_REG_ERR_BY_CODE(e)); }
};

TEST_F(DmaTest, RegisterModeCopiesAndInterruptsOnItsVector) {
    dma.reg_mode(0x1000, 0x100000, 4096);
    EXPECT_TRUE(dma.busy());  // nothing runs inside the register write
    EXPECT_TRUE(zero(0x100000, 4096));
    dma.run();
    EXPECT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
    EXPECT_TRUE(same(0x1000, 0x100000, 4096));
    EXPECT_EQ(dma.r(PEACH2_DMA_BYTES_LO), 4096u);
    EXPECT_EQ(dma.r(PEACH2_DMA_DONE_DESCS), 1u);
    EXPECT_TRUE(reg(core.get(), PEACH2_REG_INT_STATUS) & PEACH2_INT_DMA(0));
    ASSERT_FALSE(host.irqs.empty());
    EXPECT_EQ(host.irqs.back(), PEACH2_INT_VECTOR_DMA(0));
    dma.w(PEACH2_DMA_STATUS, PEACH2_DMA_ST_DONE);
    EXPECT_EQ(dma.status(), 0u);
}

// One descriptor per card-side rule of peach2_dma_rules.h, each breaking
// only that rule: the run ends with the rule's card error and moves nothing.
TEST_F(DmaTest, EveryDescriptorRuleEndsWithItsCardError) {
    const uint32_t ssrc = PEACH2_DESC_STRIDE_SRC, sdst = PEACH2_DESC_STRIDE_DST;
    const struct {
        peach2_dma_rule rule;
        peach2_desc d;
    } cases[] = {
        {PEACH2_DMA_RULE_FLAGS, {0x1000, 0x100000, 64, 0, 0, 0, 1u << 7}},
        {PEACH2_DMA_RULE_ZERO_LEN, {0x1000, 0x100000, 0, 0, 0, 0, 0}},
        {PEACH2_DMA_RULE_IMM_LEN, {7, 0x100000, 6, 0, 0, 0, PEACH2_DESC_IMM}},
        {PEACH2_DMA_RULE_IMM_FIELDS, {7, 0x100000, 4, 16, 0, 0, PEACH2_DESC_IMM}},
        {PEACH2_DMA_RULE_TOO_LONG, {0x1000, 0x100000, PEACH2_DMA_MAX_LEN + 4, 0, 0, 0, 0}},
        {PEACH2_DMA_RULE_SRC_ALIGN, {0x1002, 0x100002, 64, 0, 0, 0, 0}},
        {PEACH2_DMA_RULE_DST_ALIGN, {0x1000, 0x100002, 64, 0, 0, 0, 0}},
        {PEACH2_DMA_RULE_LEN_ALIGN, {0x1000, 0x100000, 62, 0, 0, 0, 0}},
        {PEACH2_DMA_RULE_LOW_BITS, {0x1000, 0x100004, 64, 0, 0, 0, 0}},
        {PEACH2_DMA_RULE_BLOCK_FIELDS, {0x1000, 0x100000, 64, 0, 16, 0, 0}},
        {PEACH2_DMA_RULE_BLOCK_ALIGN, {0x1000, 0x100000, 64, 6, 0, 0, sdst}},
        {PEACH2_DMA_RULE_BLOCK_GAP16, {0x1000, 0x100000, 64, 16, 8, 0, ssrc}},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(peach2_dma_rule_name(c.rule));
        ASSERT_EQ(peach2_desc_rule(&c.d), c.rule);
        peach2_desc d = c.d;
        d.flags |= PEACH2_DESC_LAST;
        card_desc(0, d);
        dma.chain(0);
        dma.run();
        EXPECT_EQ(dma.status() & PEACH2_DMA_ST_ERROR, PEACH2_DMA_ST_ERROR);
        EXPECT_EQ(dma.code(), static_cast<uint32_t>(peach2_dma_rule_err(c.rule)));
        EXPECT_EQ(dma.r(PEACH2_DMA_BYTES_LO), 0u);
        dma.w(PEACH2_DMA_STATUS, PEACH2_DMA_ST_ERROR);
    }
    EXPECT_TRUE(zero(0x100000, 4096));
}

TEST_F(DmaTest, OnCardChainRunsEveryDescriptor) {
    card_desc(0, {0x1000, 0x100000, 64, 0, 0, 7, 0});
    card_desc(7, {0x2000, 0x100040, 128, 0, 0, 3, 0});
    card_desc(3, {0x3000, 0x1000c0, 4, 0, 0, 0, PEACH2_DESC_LAST});
    dma.chain(0);
    dma.run();
    EXPECT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
    EXPECT_EQ(dma.r(PEACH2_DMA_DONE_DESCS), 3u);
    EXPECT_TRUE(same(0x1000, 0x100000, 64));
    EXPECT_TRUE(same(0x2000, 0x100040, 128));
    EXPECT_TRUE(same(0x3000, 0x1000c0, 4));
    EXPECT_TRUE(zero(0x1000c4, 64));
}

TEST_F(DmaTest, HostChainAndMixedChain) {
    host_desc(0x20000, {0x1000, 0x110000, 256, 0, 0, 5, 0});  // -> on-card 5
    card_desc(5, {0x2000, 0x110100, 256, 0, 0, 0x20020, PEACH2_DESC_NEXT_HOST});
    host_desc(0x20020, {0x3000, 0x110200, 256, 0, 0, 0, PEACH2_DESC_LAST});
    dma.chain(kHost | 0x20000);
    dma.run();
    EXPECT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
    EXPECT_TRUE(same(0x1000, 0x110000, 256));
    EXPECT_TRUE(same(0x2000, 0x110100, 256));
    EXPECT_TRUE(same(0x3000, 0x110200, 256));
}

TEST_F(DmaTest, FullOnCardChainOf1024RunsInBoundedSlices) {
    for (uint32_t i = 0; i < PEACH2_DESC_MAX; ++i)
        card_desc(i, {0x1000 + 16u * i, 0x200000 + 16u * i, 16, 0, 0, i + 1,
                      i + 1 == PEACH2_DESC_MAX ? PEACH2_DESC_LAST : 0u});
    dma.chain(0);
    peach2_core_service(core.get());
    EXPECT_TRUE(dma.busy());  // one run does a bounded amount of work
    const int runs = 1 + dma.run();
    EXPECT_GE(runs, 4);
    EXPECT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
    EXPECT_EQ(dma.r(PEACH2_DMA_DONE_DESCS), PEACH2_DESC_MAX);
    EXPECT_TRUE(same(0x1000, 0x200000, 16 * PEACH2_DESC_MAX));
    EXPECT_EQ(host.irqs.size(), 1u);  // one interrupt for the whole chain
}

TEST_F(DmaTest, BlockStrideGathersAColumn) {
    // A 16-row matrix with 64-byte rows; take 16 bytes of each row.
    dma.reg_mode(0x4000, 0x120000, 16 * 16, 16 | (48u << 16), PEACH2_DESC_STRIDE_SRC);
    dma.run();
    ASSERT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
    for (int row = 0; row < 16; ++row)
        EXPECT_TRUE(same(0x4000 + 64 * row, 0x120000 + 16 * row, 16)) << row;
}

TEST_F(DmaTest, BlockStrideScattersAndStridesBothSides) {
    dma.reg_mode(0x4000, 0x130000, 64, 16 | (48u << 16), PEACH2_DESC_STRIDE_DST);
    dma.run();
    ASSERT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
    for (int b = 0; b < 4; ++b) {
        EXPECT_TRUE(same(0x4000 + 16 * b, 0x130000 + 64 * b, 16));
        EXPECT_TRUE(zero(0x130010 + 64 * b, 48));
    }
    // Both sides strided: any gap that keeps 4-byte alignment is fine.
    dma.w(PEACH2_DMA_STATUS, PEACH2_DMA_ST_DONE);
    dma.reg_mode(0x5000, 0x140000, 24, 8 | (4u << 16),
                 PEACH2_DESC_STRIDE_SRC | PEACH2_DESC_STRIDE_DST);
    dma.run();
    ASSERT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
    for (int b = 0; b < 3; ++b)
        EXPECT_TRUE(same(0x5000 + 12 * b, 0x140000 + 12 * b, 8));
}

TEST_F(DmaTest, ImmediateWritesACompletionWordAfterTheData) {
    card_desc(0, {0x1000, 0x150000, 4096, 0, 0, 1, 0});
    card_desc(1, {0xc0ffee0012345678ull, 0x151000, 8, 0, 0, 0, PEACH2_DESC_IMM | PEACH2_DESC_LAST});
    dma.chain(0);
    dma.run();
    ASSERT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
    EXPECT_TRUE(same(0x1000, 0x150000, 4096));
    uint64_t word;
    std::memcpy(&word, host.mem.data() + 0x151000, 8);
    EXPECT_EQ(word, 0xc0ffee0012345678ull);
    ASSERT_GE(host.writes.size(), 2u);
    EXPECT_EQ(host.writes.back().first, 0x151000u);  // the word came last
}

TEST_F(DmaTest, FourChannelsRunConcurrently) {
    Dma ch[4] = {{core.get(), 0}, {core.get(), 1}, {core.get(), 2}, {core.get(), 3}};
    for (unsigned i = 0; i < 4; ++i)
        ch[i].reg_mode(0x1000 * (i + 1), 0x300000 + 0x40000 * i, 256 * 1024 - 4096 * (i + 1));
    peach2_core_service(core.get());
    for (unsigned i = 0; i < 4; ++i)
        EXPECT_GT(ch[i].r(PEACH2_DMA_BYTES_LO), 0u) << "channel " << i << " made progress";
    for (auto& c : ch)
        c.run();
    for (unsigned i = 0; i < 4; ++i) {
        EXPECT_EQ(ch[i].status(), PEACH2_DMA_ST_DONE);
        EXPECT_TRUE(same(0x1000 * (i + 1), 0x300000 + 0x40000 * i, 256 * 1024 - 4096 * (i + 1)));
    }
}

struct BadCase {
    const char* what;
    peach2_desc d;
    peach2_err code;
};

TEST_F(DmaTest, EveryRestrictionEndsWithItsCodeAndWritesNothing) {
    const BadCase cases[] = {
        {"src misaligned", {0x1002, 0x160002, 16, 0, 0, 0, PEACH2_DESC_LAST}, PEACH2_ERR_DMA_ALIGN},
        {"low 4 bits differ",
         {0x1004, 0x160008, 16, 0, 0, 0, PEACH2_DESC_LAST},
         PEACH2_ERR_DMA_ALIGN},
        {"length not x4", {0x1000, 0x160000, 10, 0, 0, 0, PEACH2_DESC_LAST}, PEACH2_ERR_DMA_ALIGN},
        {"zero length", {0x1000, 0x160000, 0, 0, 0, 0, PEACH2_DESC_LAST}, PEACH2_ERR_DMA_ZERO_LEN},
        {"reserved flag",
         {0x1000, 0x160000, 16, 0, 0, 0, PEACH2_DESC_LAST | 0x100},
         PEACH2_ERR_DMA_BAD_DESC},
        {"too long",
         {0x1000, 0x160000, PEACH2_DMA_MAX_LEN + 4, 0, 0, 0, PEACH2_DESC_LAST},
         PEACH2_ERR_DMA_BAD_DESC},
        {"gap without burst",
         {0x1000, 0x160000, 16, 0, 16, 0, PEACH2_DESC_LAST},
         PEACH2_ERR_DMA_BAD_DESC},
        {"burst without side",
         {0x1000, 0x160000, 16, 8, 16, 0, PEACH2_DESC_LAST},
         PEACH2_ERR_DMA_BAD_DESC},
        {"one-sided gap not x16",
         {0x1000, 0x160000, 32, 8, 8, 0, PEACH2_DESC_LAST | PEACH2_DESC_STRIDE_SRC},
         PEACH2_ERR_DMA_ALIGN},
        {"burst not x4",
         {0x1000, 0x160000, 32, 6, 16, 0, PEACH2_DESC_LAST | PEACH2_DESC_STRIDE_DST},
         PEACH2_ERR_DMA_ALIGN},
        {"IMM of 6 bytes",
         {1, 0x160000, 6, 0, 0, 0, PEACH2_DESC_LAST | PEACH2_DESC_IMM},
         PEACH2_ERR_DMA_BAD_DESC},
        {"source outside RAM",
         {0x7ffff000, 0x160000, 64, 0, 0, 0, PEACH2_DESC_LAST},
         PEACH2_ERR_DMA_READ},
        {"no such node",
         {0x1000, PEACH2_NODE_BASE(9), 64, 0, 0, 0, PEACH2_DESC_LAST},
         PEACH2_ERR_NO_SUCH_NODE},
    };
    for (const auto& bc : cases) {
        const uint32_t count_before = errors(bc.code);
        card_desc(10, bc.d);
        dma.chain(10);
        dma.run();
        EXPECT_EQ(dma.status() & 0xff, PEACH2_DMA_ST_ERROR) << bc.what;
        EXPECT_EQ(dma.code(), static_cast<uint32_t>(bc.code)) << bc.what;
        EXPECT_EQ(dma.r(PEACH2_DMA_ERR_DESC_LO), 10u) << bc.what;
        EXPECT_EQ(errors(bc.code), count_before + 1) << bc.what;
        EXPECT_TRUE(zero(0x160000, 64)) << bc.what;
        dma.w(PEACH2_DMA_STATUS, PEACH2_DMA_ST_ERROR);
        EXPECT_EQ(dma.status(), 0u);
    }
}

TEST_F(DmaTest, RegisterModeIsValidatedAtStart) {
    dma.reg_mode(0x1001, 0x160001, 16);
    EXPECT_EQ(dma.code(), static_cast<uint32_t>(PEACH2_ERR_DMA_ALIGN));
    EXPECT_FALSE(dma.busy());
    dma.w(PEACH2_DMA_STATUS, PEACH2_DMA_ST_ERROR);
    dma.reg_mode(0x1000, 0x160000, 16, 0, PEACH2_DESC_NEXT_HOST);  // chain bits make no sense
    EXPECT_EQ(dma.code(), static_cast<uint32_t>(PEACH2_ERR_DMA_BAD_DESC));
}

TEST_F(DmaTest, LoopsAreDetectedOnCardAndInHostMemory) {
    card_desc(0, {0x1000, 0x170000, 4, 0, 0, 1, 0});
    card_desc(1, {0x1000, 0x170000, 4, 0, 0, 0, 0});  // back to 0
    dma.chain(0);
    dma.run();
    EXPECT_EQ(dma.code(), static_cast<uint32_t>(PEACH2_ERR_DMA_LOOP));
    EXPECT_EQ(dma.r(PEACH2_DMA_DONE_DESCS), 2u);
    dma.w(PEACH2_DMA_STATUS, PEACH2_DMA_ST_ERROR);
    host_desc(0x30000, {0x1000, 0x170000, 4, 0, 0, 0x30000, PEACH2_DESC_NEXT_HOST});  // self
    dma.chain(kHost | 0x30000);
    dma.run();
    EXPECT_EQ(dma.code(), static_cast<uint32_t>(PEACH2_ERR_DMA_LOOP));
}

TEST_F(DmaTest, HostLoopsAreFoundAcrossArraysAndOverlaps) {
    // Two arrays read in turns: 0x30000 -> 0x40000 -> 0x30020 -> 0x40020 ->
    // then `last_next`. Each descriptor is read once, so it runs, until a
    // descriptor byte is read again.
    const auto chain = [&](uint32_t last_next) {
        constexpr uint32_t kH = PEACH2_DESC_NEXT_HOST;
        host_desc(0x30000, {0x1000, 0x170000, 4, 0, 0, 0x40000, kH});
        host_desc(0x40000, {0x1000, 0x170000, 4, 0, 0, 0x30020, kH});
        host_desc(0x30020, {0x1000, 0x170000, 4, 0, 0, 0x40020, kH});
        host_desc(0x40020, {0x1000, 0x170000, 4, 0, 0, last_next, kH});
        host_desc(0x50000, {0x1000, 0x170000, 4, 0, 0, 0, PEACH2_DESC_LAST});
        dma.chain(kHost | 0x30000);
        dma.run();
        const uint32_t code = dma.code(), done = dma.r(PEACH2_DMA_DONE_DESCS);
        dma.w(PEACH2_DMA_STATUS, dma.status() & (PEACH2_DMA_ST_DONE | PEACH2_DMA_ST_ERROR));
        return std::pair{code, done};
    };
    const auto ok = std::pair{uint32_t{PEACH2_ERR_NONE}, 5u};
    const auto loop = std::pair{uint32_t{PEACH2_ERR_DMA_LOOP}, 4u};
    EXPECT_EQ(chain(0x50000), ok);
    EXPECT_EQ(chain(0x30000), loop);  // the first array's start
    EXPECT_EQ(chain(0x30020), loop);  // the previous descriptor but one
    EXPECT_EQ(chain(0x40000), loop);  // the second array's start
    EXPECT_EQ(chain(0x40020), loop);  // itself
    EXPECT_EQ(chain(0x30010), loop);  // half of one read before
    EXPECT_EQ(chain(0x2fff0), loop);  // the half before the first
    host_desc(0x30040, {0x1000, 0x170000, 4, 0, 0, 0x50000, PEACH2_DESC_NEXT_HOST});
    EXPECT_EQ(chain(0x30040), std::pair(uint32_t{PEACH2_ERR_NONE}, 6u));  // not read yet
    // An array read from its second descriptor, then its first, then the
    // second again: in order, into what was read before.
    host_desc(0x60020, {0x1000, 0x170000, 4, 0, 0, 0x60000, PEACH2_DESC_NEXT_HOST});
    host_desc(0x60000, {0x1000, 0x170000, 4, 0, 0, 0x60020, PEACH2_DESC_NEXT_HOST});
    dma.chain(kHost | 0x60020);
    dma.run();
    EXPECT_EQ(dma.code(), static_cast<uint32_t>(PEACH2_ERR_DMA_LOOP));
    EXPECT_EQ(dma.r(PEACH2_DMA_DONE_DESCS), 2u);
}

TEST_F(DmaTest, IndexOutOfCardMemoryAndBadHostDescriptors) {
    dma.chain(PEACH2_DESC_MAX);
    dma.run();
    EXPECT_EQ(dma.code(), static_cast<uint32_t>(PEACH2_ERR_DMA_BAD_INDEX));
    dma.w(PEACH2_DMA_STATUS, PEACH2_DMA_ST_ERROR);
    dma.chain(kHost | 0x7fff0000);  // outside RAM
    dma.run();
    EXPECT_EQ(dma.code(), static_cast<uint32_t>(PEACH2_ERR_DMA_READ));
    dma.w(PEACH2_DMA_STATUS, PEACH2_DMA_ST_ERROR);
    dma.chain(kHost | 0x30008);  // not 16-byte aligned
    dma.run();
    EXPECT_EQ(dma.code(), static_cast<uint32_t>(PEACH2_ERR_DMA_ALIGN));
}

TEST_F(DmaTest, ChainLongerThanTheLimitEnds) {
    // 65537 distinct host descriptors: the chain limit ends it, not a loop.
    const uint64_t base = 0x100000;
    host.mem.resize(base + 32ull * (PEACH2_DMA_MAX_CHAIN + 2));
    for (uint64_t i = 0; i <= PEACH2_DMA_MAX_CHAIN; ++i)
        host_desc(base + 32 * i,
                  {0x1000, 0x50000, 4, 0, 0, static_cast<uint32_t>(base + 32 * (i + 1)),
                   PEACH2_DESC_NEXT_HOST});
    dma.chain(kHost | base);
    dma.run();
    EXPECT_EQ(dma.code(), static_cast<uint32_t>(PEACH2_ERR_DMA_CHAIN_LONG));
    EXPECT_EQ(dma.r(PEACH2_DMA_DONE_DESCS), PEACH2_DMA_MAX_CHAIN);
}

TEST_F(DmaTest, BusyChannelRefusesStartsAndParameterChanges) {
    dma.reg_mode(0x0, 0x200000, 2 << 20);
    dma.w(PEACH2_DMA_CTRL, PEACH2_DMA_CTRL_START_REG);
    dma.w(PEACH2_DMA_LEN, 4);
    EXPECT_EQ(errors(PEACH2_ERR_DMA_BUSY), 2u);
    EXPECT_EQ(dma.r(PEACH2_DMA_LEN), 2u << 20);
    dma.w(PEACH2_DMA_CTRL, PEACH2_DMA_CTRL_START_REG | PEACH2_DMA_CTRL_START_CHAIN);
    EXPECT_EQ(errors(PEACH2_ERR_BAD_COMMAND), 1u);
    dma.run();
    EXPECT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
}

TEST_F(DmaTest, AbortStopsATransferMidway) {
    dma.reg_mode(0x0, 0x200000, 2 << 20);
    peach2_core_service(core.get());
    EXPECT_TRUE(dma.busy());
    dma.w(PEACH2_DMA_CTRL, PEACH2_DMA_CTRL_ABORT);
    EXPECT_FALSE(dma.busy());
    EXPECT_EQ(dma.code(), static_cast<uint32_t>(PEACH2_ERR_DMA_ABORTED));
    const uint32_t moved = dma.r(PEACH2_DMA_BYTES_LO);
    EXPECT_GT(moved, 0u);
    EXPECT_LT(moved, 2u << 20);
    peach2_core_service(core.get());
    EXPECT_EQ(dma.r(PEACH2_DMA_BYTES_LO), moved);  // nothing after the abort
}

TEST_F(DmaTest, LongTransfersContinueAfterAPauseNotAtOnce) {
    dma.reg_mode(0x0, 0x200000, 2 << 20);
    const int services = host.services;
    peach2_core_service(core.get());  // one bounded slice
    EXPECT_TRUE(dma.busy());
    EXPECT_EQ(host.defers, 1);           // continue later, with the I/O lock free meanwhile
    EXPECT_EQ(host.services, services);  // not straight away
    dma.run();
    EXPECT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
    EXPECT_GE(host.defers, 3);
}

// The first slice a caller runs where it started a run (QEMU: in the vCPU)
// moves no more than it was allowed; the bottom half does the rest.
TEST_F(DmaTest, BoundedSliceMovesAtMostItsBudgetThenDefers) {
    dma.reg_mode(0x0, 0x200000, 256 * 1024);
    peach2_core_service_bounded(core.get(), 64 * 1024);
    EXPECT_TRUE(dma.busy());
    EXPECT_EQ(dma.r(PEACH2_DMA_BYTES_LO), 64u * 1024);
    EXPECT_EQ(host.defers, 1);
    EXPECT_TRUE(same(0x0, 0x200000, 64 * 1024));
    EXPECT_TRUE(zero(0x200000 + 64 * 1024, 4096));
    dma.run();
    EXPECT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
    EXPECT_TRUE(same(0x0, 0x200000, 256 * 1024));
    // A small run ends within its first slice, interrupt and all.
    dma.w(PEACH2_DMA_STATUS, PEACH2_DMA_ST_DONE);
    peach2_core_reg_write(core.get(), PEACH2_REG_INT_STATUS, PEACH2_INT_DMA(0), 4);
    host.irqs.clear();
    dma.reg_mode(0x1000, 0x300000, 4096);
    peach2_core_service_bounded(core.get(), 64 * 1024);
    EXPECT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
    EXPECT_TRUE(same(0x1000, 0x300000, 4096));
    ASSERT_FALSE(host.irqs.empty());
    EXPECT_EQ(host.irqs.back(), PEACH2_INT_VECTOR_DMA(0));
}

// A bound above the bottom half's slice (512 KiB) is honoured: QEMU's
// dma-start-kib lets a 1 MiB run end inside its start.
TEST_F(DmaTest, BoundedSliceLargerThanTheUsualSliceEndsTheRun) {
    dma.reg_mode(0x0, 0x200000, 1 << 20);
    peach2_core_service_bounded(core.get(), 1 << 20);
    EXPECT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
    EXPECT_EQ(host.defers, 0);
    EXPECT_TRUE(same(0x0, 0x200000, 1 << 20));
    ASSERT_FALSE(host.irqs.empty());
    EXPECT_EQ(host.irqs.back(), PEACH2_INT_VECTOR_DMA(0));
}

TEST_F(DmaTest, ResetStopsChannels) {
    dma.reg_mode(0x0, 0x200000, 2 << 20);
    peach2_core_reset(core.get());
    EXPECT_EQ(dma.status(), 0u);
    peach2_core_service(core.get());
    EXPECT_EQ(dma.r(PEACH2_DMA_BYTES_LO), 0u);
}

TEST_F(DmaTest, DestinationsGoThroughTheInboundFilter) {
    peach2_core_reg_write(core.get(), PEACH2_REG_IN_CMD, PEACH2_IN_CMD_CLEAR, 4);
    dma.reg_mode(0x1000, 0x160000, 64);
    dma.run();
    EXPECT_EQ(dma.code(), static_cast<uint32_t>(PEACH2_ERR_NOT_REGISTERED));
    EXPECT_TRUE(zero(0x160000, 64));
}

// Two cards: DMA into the peer's memory, with flow control on the link.
TEST(DmaRemote, LargeTransferFlowsWithBackpressureAndArrivesIntact) {
    FakeHost ha, hb;
    ha.mem.assign(16 << 20, 0);
    hb.mem.assign(16 << 20, 0);
    for (size_t i = 0; i < ha.mem.size(); ++i)
        ha.mem[i] = static_cast<uint8_t>((i >> 3) ^ (i * 7));
    CorePtr a = make_core(ha, 0, 2), b = make_core(hb, 1, 2);
    ASSERT_EQ(allow(b.get(), 0, hb.mem.size()), 0u);
    peach2_core_link_attach(a.get(), PEACH2_PORT_E);
    peach2_core_link_attach(b.get(), PEACH2_PORT_W);
    peach2_core_link_connected(a.get(), PEACH2_PORT_E, true);
    peach2_core_link_connected(b.get(), PEACH2_PORT_W, true);
    bool accepted = true;
    carry(a.get(), PEACH2_PORT_E, b.get(), PEACH2_PORT_W, accepted);
    carry(b.get(), PEACH2_PORT_W, a.get(), PEACH2_PORT_E, accepted);
    Dma dma{a.get()};
    const uint32_t len = 12 << 20;
    dma.reg_mode(0x100000, PEACH2_NODE_BASE(1) + 0x200000, len);
    for (int i = 0; i < 200; ++i)
        peach2_core_service(a.get());  // nobody drains the link yet
    EXPECT_TRUE(dma.busy());           // paused, not failed
    EXPECT_EQ(reg(a.get(), PEACH2_REG_ERR_COUNT), 0u);
    const void* p = nullptr;
    EXPECT_LT(peach2_core_link_tx_peek(a.get(), PEACH2_PORT_E, &p), size_t{6} << 20);
    while (dma.busy() || peach2_core_link_tx_peek(a.get(), PEACH2_PORT_E, &p)) {
        peach2_core_service(a.get());
        carry(a.get(), PEACH2_PORT_E, b.get(), PEACH2_PORT_W, accepted);
    }
    EXPECT_TRUE(accepted);
    EXPECT_EQ(dma.status(), PEACH2_DMA_ST_DONE);
    EXPECT_EQ(0, std::memcmp(ha.mem.data() + 0x100000, hb.mem.data() + 0x200000, len));
    EXPECT_EQ(reg(b.get(), PEACH2_REG_ERR_COUNT), 0u);
}

}  // namespace
}  // namespace peach2::test
