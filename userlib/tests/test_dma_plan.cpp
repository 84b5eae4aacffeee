// SPDX-License-Identifier: MIT
// Planning DMA descriptors: cuts at every chunk boundary of either side and
// at PEACH2_DMA_MAX_LEN, the driver's names for each side, completion
// words, block-stride in one chunk, and every restriction per piece.
#include <peach2/peach2_hw.h>
#include <tca/tca.h>

#include <cerrno>
#include <vector>

#include "dma.hpp"
#include "test_util.hpp"

using namespace tca;
using tcatest::scattered;

namespace {

constexpr std::uint32_t kSelf = 0, kPeer = 1;

// A local buffer of `n` driver chunks of `len` bytes each (never adjacent).
struct LocalBuf {
    std::uint32_t id;
    std::vector<tcaChunk> pieces;
    DmaSide at(std::uint64_t off) const { return DmaSide{id, pieces, off}; }
};

LocalBuf local(std::uint32_t id, unsigned n, std::uint64_t len) {
    return LocalBuf{id, scattered(kSelf, n, len)};
}

DmaSide remote(const tcaHandle& h, std::uint64_t off) {
    return DmaSide{0, {h.chunks, h.nr_chunks}, off};
}

tcaHandle remote_handle(unsigned n, std::uint64_t len, std::uint64_t offset = 0,
                        std::uint64_t size = 0) {
    const auto pieces = scattered(kPeer, n, len);
    tcaHandle h{};
    EXPECT_EQ(0, make_handle(kPeer, pieces, offset, size, &h));
    return h;
}

// Concatenation check: the entries cover [0, len) in order without gaps.
void expect_tiles(const std::vector<peach2_xfer>& v, std::uint64_t src_off, std::uint64_t len) {
    std::uint64_t pos = 0;
    for (const peach2_xfer& x : v) {
        EXPECT_EQ(src_off + pos, x.src_offset);
        EXPECT_GT(x.len, 0u);
        EXPECT_EQ(0u, x.flags);
        pos += x.len;
    }
    EXPECT_EQ(len, pos);
}

}  // namespace

TEST(DmaPlan, PieceAt) {
    const auto p = scattered(0, 3, 4096);
    std::uint64_t a = 0, room = 0;
    ASSERT_TRUE(piece_at(p, 0, &a, &room));
    EXPECT_EQ(p[0].global_addr, a);
    EXPECT_EQ(4096u, room);
    ASSERT_TRUE(piece_at(p, 5000, &a, &room));
    EXPECT_EQ(p[1].global_addr + 904, a);
    EXPECT_EQ(4096u - 904, room);
    EXPECT_FALSE(piece_at(p, 3 * 4096, &a, &room));
}

TEST(DmaPlan, PieceWalkFindsWhatPieceAtFinds) {
    // Pieces of unequal lengths, one of them empty, walked in uneven steps.
    std::vector<tcaChunk> p = scattered(0, 4, 4096);
    p[1].len = 100;
    p[2].len = 0;
    const std::uint64_t total = 4096 + 100 + 0 + 4096;
    for (std::uint64_t start : {0ull, 4095ull, 4096ull, 4196ull, 5000ull}) {
        PieceWalk walk(p, start);
        for (std::uint64_t off = start, step = 1; off <= total; off += step, step = step * 3 + 1) {
            std::uint64_t a = 0, room = 0, want_a = 0, want_room = 0;
            const bool in = piece_at(p, off, &want_a, &want_room);
            EXPECT_EQ(in, walk.at(&a, &room)) << start << " " << off;
            EXPECT_EQ(want_a, a) << start << " " << off;
            EXPECT_EQ(want_room, room) << start << " " << off;
            walk.skip(step);
        }
    }
}

TEST(DmaPlan, AMemoPlansAListAsRequestsPlannedAlone) {
    // A fragmented source walked by requests in order (an RDMA Write cut at
    // its destination's pieces), with gaps, backwards, from another buffer
    // in between and past the end: with the memo or without, the same.
    LocalBuf src = local(3, 40, 4096), other = local(4, 8, 4096);
    src.pieces[5].len = 1024;
    src.pieces[6].len = 12288;
    const tcaHandle dst = remote_handle(2, 1 << 20);
    struct Req {
        const LocalBuf* buf;
        std::uint64_t off, len;
    };
    const std::vector<Req> list = {
        {&src, 0, 4096},     {&src, 4096, 8192},  {&src, 12288, 3072}, {&src, 20480, 4096},
        {&src, 20480, 64},   {&src, 64, 4096},    {&other, 0, 8192},   {&src, 24576, 40960},
        {&src, 65536, 4},    {&other, 8192, 64},  {&src, 150000, 16},  {&src, 163840, 16},
        {&src, 160000, 4096}};
    PlanMemo memo;
    std::uint64_t dst_off = 0;
    for (const Req& q : list) {
        DmaRequest r;
        r.src = q.buf->at(q.off);
        r.dst = remote(dst, dst_off + q.off % 16);
        r.len = q.len;
        std::vector<peach2_xfer> alone, with_memo;
        const int rc = plan_request(r, &alone);
        EXPECT_EQ(rc, plan_request(r, &with_memo, &memo)) << q.off;
        ASSERT_EQ(alone.size(), with_memo.size()) << q.off;
        for (std::size_t i = 0; i < alone.size(); ++i) {
            EXPECT_EQ(alone[i].src_offset, with_memo[i].src_offset) << q.off << " " << i;
            EXPECT_EQ(alone[i].dst, with_memo[i].dst) << q.off << " " << i;
            EXPECT_EQ(alone[i].len, with_memo[i].len) << q.off << " " << i;
        }
        dst_off += 65536;
    }
}

TEST(DmaPlan, RemoteSplitsAtTheRemoteChunkBoundaries) {
    const LocalBuf src = local(7, 1, 1 << 20);
    const tcaHandle dst = remote_handle(4, 8192);  // 4 pieces of 8 KiB
    DmaRequest r;
    r.src = src.at(0x100);
    r.dst = remote(dst, 0x1100);  // 16 bytes apart... same low 4 bits
    r.len = 3 * 8192;
    std::vector<peach2_xfer> v;
    ASSERT_EQ(0, plan_request(r, &v));
    ASSERT_EQ(4u, v.size());  // 0x1100..0x2000, 8 KiB, 8 KiB, the rest
    expect_tiles(v, 0x100, r.len);
    EXPECT_EQ(8192u - 0x1100, v[0].len);
    EXPECT_EQ(dst.chunks[0].global_addr + 0x1100, v[0].dst);
    for (unsigned i = 1; i < 4; ++i) {
        EXPECT_EQ(dst.chunks[i].global_addr, v[i].dst) << i;  // a piece starts anew
        EXPECT_EQ(0u, v[i].dst_handle);
        EXPECT_EQ(7u, v[i].src_handle);
    }
    EXPECT_EQ(0x1100u, v[3].len);
}

TEST(DmaPlan, LocalSplitsAtBothSidesChunkBoundaries) {
    const LocalBuf src = local(3, 4, 0x1000), dst = local(9, 3, 0x2000);
    DmaRequest r;
    r.src = src.at(0x800);
    r.dst = dst.at(0x1c00);  // own memory: the driver names it by buffer + offset
    r.len = 0x3000;
    std::vector<peach2_xfer> v;
    ASSERT_EQ(0, plan_request(r, &v));
    // Cuts where the source reaches 0x1000, 0x2000, 0x3000 (positions 0x800,
    // 0x1800, 0x2800) and the destination 0x2000, 0x4000 (0x400, 0x2400).
    const std::uint64_t want_len[] = {0x400, 0x400, 0x1000, 0xc00, 0x400, 0x800};
    ASSERT_EQ(6u, v.size());
    expect_tiles(v, 0x800, r.len);
    std::uint64_t pos = 0;
    for (unsigned i = 0; i < 6; ++i) {
        EXPECT_EQ(want_len[i], v[i].len) << i;
        EXPECT_EQ(9u, v[i].dst_handle);
        EXPECT_EQ(0x1c00 + pos, v[i].dst) << "buffer offset, not an address";
        pos += v[i].len;
    }
}

TEST(DmaPlan, LongPiecesAreCutAtTheDescriptorLimit) {
    const std::uint64_t big = 3ull * PEACH2_DMA_MAX_LEN / 2;
    const LocalBuf src = local(1, 1, 2 * big);
    const tcaHandle dst = remote_handle(1, 2 * big);
    DmaRequest r;
    r.src = src.at(0);
    r.dst = remote(dst, 0);
    r.len = big;
    std::vector<peach2_xfer> v;
    ASSERT_EQ(0, plan_request(r, &v));
    ASSERT_EQ(2u, v.size());
    EXPECT_EQ(PEACH2_DMA_MAX_LEN, v[0].len);
    EXPECT_EQ(big - PEACH2_DMA_MAX_LEN, v[1].len);
}

TEST(DmaPlan, NotifyComesLastAsAnImmediate) {
    const LocalBuf src = local(2, 1, 65536);
    const tcaHandle dst = remote_handle(2, 4096);
    DmaRequest r;
    r.src = src.at(0);
    r.dst = remote(dst, 0);
    r.len = 6000;  // crosses the remote boundary: two data pieces
    r.notify = true;
    r.notify_at = remote(dst, 8000);
    r.notify_value = 0x1122334455667788ull;
    std::vector<peach2_xfer> v;
    ASSERT_EQ(0, plan_request(r, &v));
    ASSERT_EQ(3u, v.size());
    const peach2_xfer& n = v.back();
    EXPECT_EQ(PEACH2_XFER_IMM, n.flags);
    EXPECT_EQ(0u, n.src_handle);
    EXPECT_EQ(8u, n.len);
    EXPECT_EQ(dst.chunks[1].global_addr + 8000 - 4096, n.dst);
    EXPECT_EQ(r.notify_value, n.imm);

    // 4-byte word: the low half; a word alone (no data) is fine.
    r.len = 0;
    r.notify_len = 4;
    v.clear();
    ASSERT_EQ(0, plan_request(r, &v));
    ASSERT_EQ(1u, v.size());
    EXPECT_EQ(0x55667788u, v[0].imm);
    EXPECT_EQ(4u, v[0].len);

    // Misaligned word, word beyond the end, bad size.
    r.notify_len = 8;
    r.notify_at = remote(dst, 8004);
    EXPECT_EQ(TCA_EALIGN, plan_request(r, &v));
    r.notify_at = remote(dst, 8192 - 4);
    EXPECT_EQ(TCA_ERANGE, plan_request(r, &v));
    r.notify_len = 2;
    r.notify_at = remote(dst, 0);
    EXPECT_EQ(-EINVAL, plan_request(r, &v));
    EXPECT_EQ(1u, v.size()) << "failed plans append nothing";
}

TEST(DmaPlan, NotifyIntoOwnMemoryUsesTheBuffer) {
    const LocalBuf buf = local(5, 2, 4096);
    DmaRequest r;
    r.notify = true;
    r.notify_at = buf.at(4096 + 64);
    r.notify_value = 42;
    std::vector<peach2_xfer> v;
    ASSERT_EQ(0, plan_request(r, &v));
    ASSERT_EQ(1u, v.size());
    EXPECT_EQ(5u, v[0].dst_handle);
    EXPECT_EQ(4096u + 64, v[0].dst);
}

TEST(DmaPlan, EveryPieceMustKeepTheRestrictions) {
    const LocalBuf src = local(1, 1, 1 << 20);
    const tcaHandle dst = remote_handle(3, 4096);
    DmaRequest r;
    r.src = src.at(0);
    r.dst = remote(dst, 0);
    r.len = 64;
    std::vector<peach2_xfer> v;
    EXPECT_EQ(0, plan_request(r, &v));
    r.len = 66;
    EXPECT_EQ(TCA_EALIGN, plan_request(r, &v));  // length
    r.len = 64;
    r.src = src.at(8);
    EXPECT_EQ(TCA_EALIGN, plan_request(r, &v));  // low 4 bits differ
    r.dst = remote(dst, 8);
    EXPECT_EQ(0, plan_request(r, &v));
    r.src = src.at(2);
    r.dst = remote(dst, 2);
    EXPECT_EQ(TCA_EALIGN, plan_request(r, &v));  // equal but not 4-aligned

    // A handle starting mid-chunk is aligned after the cut too: the next
    // piece starts at a chunk start, and so does the source offset there.
    const auto pieces = scattered(kPeer, 2, 4096);
    tcaHandle mid{};
    ASSERT_EQ(0, make_handle(kPeer, pieces, 0x10, 0, &mid));
    r.src = src.at(0x10);
    r.dst = remote(mid, 0);
    r.len = 8000;
    v.clear();
    ASSERT_EQ(0, plan_request(r, &v));
    ASSERT_EQ(2u, v.size());
    // Pieces whose length is no multiple of 16 (no real buffer has them):
    // aligned at the start, misaligned after the cut; caught there.
    const tcaChunk odd_pieces[] = {{PEACH2_NODE_BASE(kPeer) + 0x100000, 4100},
                                   {PEACH2_NODE_BASE(kPeer) + 0x200000, 4096}};
    tcaHandle odd{};
    ASSERT_EQ(0, make_handle(kPeer, odd_pieces, 0, 0, &odd));
    r.src = src.at(0);
    r.dst = remote(odd, 0);
    EXPECT_EQ(TCA_EALIGN, plan_request(r, &v));
    EXPECT_EQ(2u, v.size());
}

TEST(DmaPlan, RangesAreChecked) {
    const LocalBuf src = local(1, 2, 4096);
    const tcaHandle dst = remote_handle(1, 4096);
    DmaRequest r;
    r.src = src.at(4096);
    r.dst = remote(dst, 0);
    r.len = 4096;
    std::vector<peach2_xfer> v;
    EXPECT_EQ(0, plan_request(r, &v));
    r.len = 4100;
    EXPECT_EQ(TCA_ERANGE, plan_request(r, &v));  // past both
    r.src = src.at(0);
    EXPECT_EQ(TCA_ERANGE, plan_request(r, &v));  // past the destination
    r.len = 8;
    r.dst = remote(dst, UINT64_MAX - 3);
    EXPECT_EQ(TCA_ERANGE, plan_request(r, &v));  // wraps
}

TEST(DmaPlan, BlockStrideIsOneDescriptorInOneChunk) {
    const LocalBuf src = local(4, 2, 65536);
    const tcaHandle dst = remote_handle(2, 65536);
    DmaRequest r;
    r.src = src.at(0x40);
    r.dst = remote(dst, 0x40);
    r.len = 64 * 16;  // 16 blocks of 64
    r.burst = 64;
    r.gap = 192;
    r.stride = TCA_DMA_STRIDE_DST;  // scatter: 15 * 256 + 64 bytes of destination
    std::vector<peach2_xfer> v;
    ASSERT_EQ(0, plan_request(r, &v));
    ASSERT_EQ(1u, v.size());
    EXPECT_EQ(64u, v[0].burst);
    EXPECT_EQ(192u, v[0].gap);
    EXPECT_EQ(PEACH2_XFER_STRIDE_DST, v[0].flags);
    EXPECT_EQ(dst.chunks[0].global_addr + 0x40, v[0].dst);
    EXPECT_EQ(0x40u, v[0].src_offset);

    // The strided destination would leave its chunk: refused, not split.
    r.dst = remote(dst, 65536 - 15 * 256);
    r.src = src.at(65536 - 15 * 256);
    EXPECT_EQ(TCA_ESTRIDE, plan_request(r, &v));
    // ... even though the contiguous source would fit.
    r.stride = TCA_DMA_STRIDE_SRC;
    r.dst = remote(dst, 0);
    r.src = src.at(65536 - 1024);
    EXPECT_EQ(TCA_ESTRIDE, plan_request(r, &v));  // gather leaves the source chunk
    r.src = src.at(0);
    EXPECT_EQ(0, plan_request(r, &v));
    EXPECT_EQ(PEACH2_XFER_STRIDE_SRC, v.back().flags);
    // Span past the end of the memory: a range error.
    r.stride = TCA_DMA_STRIDE_DST;
    r.dst = remote(dst, 2 * 65536 - 1024);
    r.src = src.at(0);
    EXPECT_EQ(TCA_ERANGE, plan_request(r, &v));
    // One-sided gap not a multiple of 16.
    r.dst = remote(dst, 0);
    r.gap = 8;
    EXPECT_EQ(TCA_ESTRIDE, plan_request(r, &v));
}

TEST(DmaPlan, ZeroLengthWithoutNotifyIsNothing) {
    DmaRequest r;
    std::vector<peach2_xfer> v;
    EXPECT_EQ(0, plan_request(r, &v));
    EXPECT_TRUE(v.empty());
}

TEST(DmaPlan, AKeptPlanHoldsForTheSameListHandlesContextAndGeneration) {
    // RepeatPlan compares; what it keeps is whatever planning gave.
    tcaHandle dst = remote_handle(2, 4096), notify = remote_handle(1, 4096);
    const unsigned char source[64] = {};
    tcaDmaXfer x[2]{};
    x[0].dst = &dst;
    x[0].src = source;
    x[0].len = 64;
    x[1].dst = &dst;
    x[1].dst_offset = 4096;
    x[1].src = source;
    x[1].len = 32;
    x[1].notify = &notify;
    std::vector<peach2_xfer> planned(3);
    planned[1].len = 7;  // anything: kept and returned as it is
    const auto* ctx = reinterpret_cast<const tca::Context*>(&dst);  // only compared
    RepeatPlan last;
    EXPECT_FALSE(last.holds(ctx, 5, x)) << "nothing kept yet";
    EXPECT_TRUE(last.keep(ctx, 5, x, &planned));
    EXPECT_TRUE(last.holds(ctx, 5, x));
    ASSERT_EQ(3u, last.entries().size());
    EXPECT_EQ(7u, last.entries()[1].len);

    EXPECT_FALSE(last.holds(ctx, 6, x)) << "a buffer came or went";
    EXPECT_FALSE(last.holds(reinterpret_cast<const tca::Context*>(&notify), 5, x))
        << "another context";
    EXPECT_FALSE(last.holds(ctx, 5, std::span<const tcaDmaXfer>(x, 1))) << "a shorter list";
    tcaDmaXfer y[2] = {x[0], x[1]};
    y[1].len = 36;
    EXPECT_FALSE(last.holds(ctx, 5, y)) << "a field of a transfer";
    // A named handle rewritten in place (same pointers), then back.
    dst.chunks[0].global_addr += 4096;
    EXPECT_FALSE(last.holds(ctx, 5, x)) << "the destination's bytes";
    dst.chunks[0].global_addr -= 4096;
    EXPECT_TRUE(last.holds(ctx, 5, x));
    notify.size ^= 1;
    EXPECT_FALSE(last.holds(ctx, 5, x)) << "the notify handle's bytes";
    notify.size ^= 1;
    EXPECT_TRUE(last.holds(ctx, 5, x));

    // A list longer than kMaxXfers is not kept; nor is anything before it.
    std::vector<tcaDmaXfer> many(RepeatPlan::kMaxXfers + 1, x[0]);
    std::vector<peach2_xfer> more(4);
    EXPECT_FALSE(last.keep(ctx, 5, many, &more));
    EXPECT_EQ(4u, more.size()) << "a plan not kept is left to its caller";
    EXPECT_FALSE(last.holds(ctx, 5, many));
    EXPECT_FALSE(last.holds(ctx, 5, x));
}
