// SPDX-License-Identifier: MIT
// Read proxy planning (pure): target checks, cutting a get every
// PEACH2_RP_MAX_PIECES local chunks and at PEACH2_RP_MAX_LEN, with each
// request's target address taken from the handle, the DMA alignment of
// every run, atomics' word checks; and the completion slot pool.
#include <peach2/peach2_hw.h>
#include <tca/tca.h>

#include <set>
#include <thread>
#include <vector>

#include "rp.hpp"
#include "test_util.hpp"

using namespace tca;
using tcatest::scattered;

namespace {

tcaHandle exported(std::uint32_t node, const std::vector<tcaChunk>& pieces, std::uint64_t off = 0,
                   std::uint64_t size = 0) {
    tcaHandle h{};
    EXPECT_EQ(0, make_handle(node, pieces, off, size, &h));
    attach_export(&h, 7, 0x1234);
    return h;
}

}  // namespace

TEST(RpPlan, TargetNeedsAnExportAndANode) {
    tcaHandle h = exported(1, scattered(1, 1, 4096));
    RpTarget t;
    ASSERT_EQ(0, rp_target(h, 2, PEACH2_RP_OP_READ, &t));
    EXPECT_EQ(1u, t.node);
    EXPECT_EQ(7u, t.export_id);
    EXPECT_EQ(0x1234u, t.key);
    EXPECT_EQ(TCA_ENODE, rp_target(h, 1, PEACH2_RP_OP_READ, &t));
    attach_export(&h, 0, 0);
    EXPECT_EQ(TCA_ENOTEXPORTED, rp_target(h, 2, PEACH2_RP_OP_READ, &t));
}

TEST(RpPlan, OneRequestListsTheLocalChunksItLandsIn) {
    // Remote: 3 pieces of 8 KiB, 1 MiB apart. Local: 5 pieces of 4 KiB.
    const tcaHandle src = exported(1, scattered(1, 3, 8192));
    const std::vector<tcaChunk> local = scattered(0, 5, 4096);
    const DmaSide dst{3, local, 0x10};
    std::vector<RpPiece> p;
    // Remote offset 0x810: the remote 8 KiB boundaries fall inside; the
    // target follows its own chunks, the driver lists the local ones.
    ASSERT_EQ(0, plan_get(dst, src, 0x810, 4 * 4096, &p));
    ASSERT_EQ(1u, p.size());
    EXPECT_EQ(0x10u, p[0].reply_offset);
    EXPECT_EQ(4u * 4096, p[0].len);
    std::uint64_t ga = 0;
    ASSERT_EQ(0, handle_address(src, 0x810, &ga));
    EXPECT_EQ(PEACH2_ADDR_OFFSET(ga), p[0].addr);
}

TEST(RpPlan, ARequestListsAtMostMaxPiecesLocalChunks) {
    // Local: MAX_PIECES + 3 scattered pages, the get starting inside the
    // first: the second request starts where the first's last run ends.
    const tcaHandle src = exported(1, {{PEACH2_NODE_BASE(1) + 0x1000000, 4u << 20}});
    const std::vector<tcaChunk> local = scattered(0, PEACH2_RP_MAX_PIECES + 3, 4096);
    std::vector<RpPiece> p;
    const std::uint64_t len = (PEACH2_RP_MAX_PIECES + 2) * 4096ull;
    ASSERT_EQ(0, plan_get(DmaSide{1, local, 0x100}, src, 0x100, len, &p));
    ASSERT_EQ(2u, p.size());
    EXPECT_EQ(PEACH2_RP_MAX_PIECES * 4096u - 0x100, p[0].len);
    EXPECT_EQ(0x100u, p[0].reply_offset);
    EXPECT_EQ(PEACH2_RP_MAX_PIECES * 4096u, p[1].reply_offset);
    EXPECT_EQ(0x1000000u + PEACH2_RP_MAX_PIECES * 4096u, p[1].addr);
    EXPECT_EQ(len, std::uint64_t{p[0].len} + p[1].len);
}

TEST(RpPlan, ASpanOfHandlesIsPlannedAsOne) {
    // Two handles of one export, as two lookups give them: the request goes
    // on across their boundary (the target follows its buffer); the
    // alignment of each run is checked at its own address.
    const std::vector<tcaChunk> remote = scattered(1, 4, 4096);
    const tcaHandle first = exported(1, {remote[0], remote[1]});
    const tcaHandle second = exported(1, {remote[2], remote[3]});
    const tcaHandle* const span[] = {&first, &second};
    const std::vector<tcaChunk> local = {{PEACH2_NODE_BASE(0) + 0x2000000, 4 * 4096}};
    std::vector<RpPiece> p;
    ASSERT_EQ(0, plan_get(DmaSide{1, local, 0x10}, span, 0x1010, 2 * 4096, &p));
    ASSERT_EQ(1u, p.size());
    EXPECT_EQ(PEACH2_ADDR_OFFSET(remote[1].global_addr + 0x10), p[0].addr);
    EXPECT_EQ(2u * 4096, p[0].len);
    // Starting in the second handle: its address.
    ASSERT_EQ(0, plan_get(DmaSide{1, local, 0x20}, span, 0x2020, 64, &p));
    EXPECT_EQ(PEACH2_ADDR_OFFSET(remote[2].global_addr + 0x20), p[1].addr);
    EXPECT_EQ(TCA_ERANGE, plan_get(DmaSide{1, local, 0}, span, 4 * 4096 - 16, 32, &p));
    EXPECT_EQ(TCA_EALIGN, plan_get(DmaSide{1, local, 4}, span, 0x2000, 64, &p));
}

TEST(RpPlan, CutsAtMaxLen) {
    const tcaHandle src = exported(1, {{PEACH2_NODE_BASE(1) + 0x1000000, 20u << 20}});
    const std::vector<tcaChunk> local = {{PEACH2_NODE_BASE(0) + 0x2000000, 20u << 20}};
    std::vector<RpPiece> p;
    ASSERT_EQ(0, plan_get(DmaSide{1, local, 0}, src, 0, 9u << 20, &p));
    ASSERT_EQ(3u, p.size());
    EXPECT_EQ(PEACH2_RP_MAX_LEN, p[0].len);
    EXPECT_EQ(PEACH2_RP_MAX_LEN, p[1].len);
    EXPECT_EQ(1u << 20, p[2].len);
    EXPECT_EQ(0x1000000u + PEACH2_RP_MAX_LEN, p[1].addr);
}

TEST(RpPlan, AlignmentAndRange) {
    const tcaHandle src = exported(1, scattered(1, 2, 4096));
    const std::vector<tcaChunk> local = scattered(0, 2, 4096);
    std::vector<RpPiece> p;
    EXPECT_EQ(TCA_EALIGN, plan_get(DmaSide{1, local, 4}, src, 0, 64, &p));
    EXPECT_EQ(TCA_EALIGN, plan_get(DmaSide{1, local, 0}, src, 0, 6, &p));
    EXPECT_EQ(TCA_EALIGN, plan_get(DmaSide{1, local, 2}, src, 2, 64, &p));
    EXPECT_EQ(TCA_ERANGE, plan_get(DmaSide{1, local, 0}, src, 8192 - 16, 32, &p));
    EXPECT_EQ(TCA_ERANGE, plan_get(DmaSide{1, local, 0}, src, ~0ull - 3, 8, &p));
    EXPECT_TRUE(p.empty()) << "nothing appended on error";
    // A sub-handle starting mid-page: the rule is about addresses.
    const tcaHandle mid = exported(1, scattered(1, 2, 4096), 0x24);
    EXPECT_EQ(0, plan_get(DmaSide{1, local, 0x24}, mid, 0, 64, &p));
    EXPECT_EQ(TCA_EALIGN, plan_get(DmaSide{1, local, 0}, mid, 0, 64, &p));
    EXPECT_EQ(0, plan_get(DmaSide{1, local, 0}, src, 0, 0, &p));
    EXPECT_EQ(1u, p.size()) << "len 0 adds nothing";
}

TEST(RpPlan, AtomicWord) {
    const tcaHandle h = exported(1, scattered(1, 2, 4096), 4);
    std::uint64_t addr = 0;
    EXPECT_EQ(TCA_EALIGN, plan_atomic(h, 0, &addr)) << "address 4 mod 8";
    ASSERT_EQ(0, plan_atomic(h, 4, &addr));
    EXPECT_EQ(0x100008u, addr);
    ASSERT_EQ(0, plan_atomic(h, 4092, &addr));
    EXPECT_EQ(0x200000u, addr) << "the second piece";
    EXPECT_EQ(TCA_ERANGE, plan_atomic(h, 8192 - 4 - 4, &addr));
    EXPECT_EQ(TCA_ERANGE, plan_atomic(h, ~0ull, &addr));
}

TEST(RpSlots, TakeGiveRetire) {
    SlotPool pool(4);
    std::set<std::uint32_t> got;
    std::uint32_t s = 0;
    for (int i = 0; i < 4; ++i) {
        ASSERT_TRUE(pool.take(&s));
        EXPECT_TRUE(got.insert(s).second);
    }
    EXPECT_FALSE(pool.take(&s));
    pool.retire(*got.begin());
    pool.give(*got.rbegin());
    EXPECT_EQ(1u, pool.free_count());
    EXPECT_EQ(1u, pool.retired_count());
    ASSERT_TRUE(pool.take(&s));
    EXPECT_EQ(*got.rbegin(), s);
    EXPECT_FALSE(pool.take(&s));
}

TEST(RpSlots, ThreadsNeverShareASlot) {
    SlotPool pool(64);
    std::vector<std::vector<std::uint32_t>> seen(4);
    std::vector<std::thread> ts;
    std::vector<int> owner(64, -1);
    std::atomic<int> clashes{0};
    for (int t = 0; t < 4; ++t)
        ts.emplace_back([&, t] {
            for (int i = 0; i < 20000; ++i) {
                std::uint32_t s = 0;
                if (!pool.take(&s))
                    continue;
                int expect = -1;
                if (!__atomic_compare_exchange_n(&owner[s], &expect, t, false, __ATOMIC_SEQ_CST,
                                                 __ATOMIC_SEQ_CST))
                    ++clashes;
                __atomic_store_n(&owner[s], -1, __ATOMIC_SEQ_CST);
                pool.give(s);
            }
        });
    for (auto& t : ts)
        t.join();
    EXPECT_EQ(0, clashes.load());
    EXPECT_EQ(64u, pool.free_count());
}
