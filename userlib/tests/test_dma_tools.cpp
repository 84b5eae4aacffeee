// SPDX-License-Identifier: MIT
// The DMA programs' pure parts: tca_bench's protocol (completion words,
// iteration counts, layout), the stamped block checksum, and tca_check
// dma's random shapes and lane check.
#include <gtest/gtest.h>
#include <tca/tca.h>

#include <cstring>
#include <set>
#include <vector>

#include "../tools/bench/protocol.hpp"
#include "../tools/check/dma_shape.hpp"
#include "../tools/common/block_sum.hpp"
#include "../tools/common/pattern.hpp"
#include "dma.hpp"

TEST(DmaBenchProtocol, WordsAreUniqueAndNeverZero) {
    using namespace tcabench;
    std::set<std::uint64_t> seen;
    for (unsigned phase = 0; phase < 2 * tcatools::kModes; ++phase)
        for (unsigned si = 0; si < 12; ++si)
            for (std::uint64_t m = 0; m < 300; ++m) {
                const std::uint64_t w = word_value(phase, si, m);
                EXPECT_NE(0u, w);
                EXPECT_TRUE(seen.insert(w).second);
            }
    EXPECT_NE(phase_of(Mode::Reg, tcabench::Test::Stream),
              phase_of(Mode::Card, tcabench::Test::Latency));
}

TEST(DmaBenchProtocol, IterationsShrinkForBigMessages) {
    using namespace tcabench;
    EXPECT_EQ(200u, latency_iters(4, 200, 32 << 20, 5));
    EXPECT_EQ(32u, latency_iters(1 << 20, 200, 32 << 20, 5));
    EXPECT_EQ(5u, latency_iters(8 << 20, 200, 32 << 20, 5));  // at least min
    EXPECT_EQ(3u, latency_iters(8 << 20, 3, 32 << 20, 5));    // never more than asked
    EXPECT_EQ(4096u, stream_messages(4, 128 << 20));
    EXPECT_EQ(128u, stream_messages(1 << 20, 128 << 20));
    EXPECT_EQ(16u, stream_messages(16 << 20, 128 << 20));
}

TEST(DmaBenchProtocol, Layout) {
    using namespace tcabench;
    const Layout l = Layout::make(5000, 4);
    EXPECT_EQ(8192u, l.slot_bytes);  // whole 4 KiB blocks
    EXPECT_EQ(3u * 8192, l.slot_offset(3));
    EXPECT_EQ(4u * 8192 + 64 * 4, l.word_offset(l.credit_word()));
    EXPECT_EQ(l.words_offset() + l.words_bytes(), l.rx_bytes());
    EXPECT_EQ(0u, l.slot_offset(1) % 16) << "slots keep the low 4 address bits";
    // Seeds differ per message and direction.
    EXPECT_NE(payload_seed(0, 0, 8, 1, Dir::PingToPong), payload_seed(0, 0, 8, 1, Dir::PongToPing));
    EXPECT_NE(payload_seed(0, 0, 8, 1, Dir::PingToPong), payload_seed(0, 0, 8, 2, Dir::PingToPong));
    // A small size still gets a whole page per slot, the words a line each.
    const Layout small = Layout::make(100, 2);
    EXPECT_EQ(4096u, small.slot_bytes);
    EXPECT_EQ(0u, small.word_offset(0) % 64);
    EXPECT_EQ(small.word_offset(0) + 64, small.word_offset(1));
    EXPECT_GE(small.rx_bytes(), small.word_offset(small.credit_word()) + 8);
}

TEST(BlockSum, DetectsStaleBlocksAndChangedBytes) {
    using namespace tcatools;
    const std::size_t len = 5 * kStampBlock + 512;
    std::vector<unsigned char> buf(len);
    fill_pattern(buf, 77);
    stamp_blocks(buf.data(), len, 1000);
    const BlockSum want = pattern_sum(77, len);
    std::size_t bad = 0;
    EXPECT_TRUE(check_blocks(buf.data(), len, 1000, want, &bad));
    // A block left over from the previous message: its stamp is stale.
    std::vector<unsigned char> prev = buf;
    stamp_blocks(prev.data(), len, 999);
    std::memcpy(buf.data() + 3 * kStampBlock, prev.data() + 3 * kStampBlock, kStampBlock);
    EXPECT_FALSE(check_blocks(buf.data(), len, 1000, want, &bad));
    EXPECT_EQ(3u, bad);
    // One byte anywhere else: the checksum.
    stamp_blocks(buf.data(), len, 1000);
    for (std::size_t at : {std::size_t{8}, kStampBlock + 100, len - 1}) {
        std::vector<unsigned char> b = buf;
        b[at] ^= 0x10;
        EXPECT_FALSE(check_blocks(b.data(), len, 1000, want, &bad)) << at;
        EXPECT_EQ(static_cast<std::size_t>(-1), bad);
    }
    // Two words swapped (position matters).
    std::vector<unsigned char> b = buf;
    std::swap_ranges(b.begin() + 16, b.begin() + 24, b.begin() + 24);
    EXPECT_FALSE(check_blocks(b.data(), len, 1000, want, &bad));
}

TEST(DmaCheckShape, RandomShapesAreLegalAndFit) {
    using namespace tcacheck;
    Rng rng(12345);
    unsigned strided = 0, small = 0, big = 0;
    for (int i = 0; i < 20000; ++i) {
        const std::uint64_t src_room = 8192, dst_room = 4096 + 16 * (i % 64);
        const Shape s = random_shape(rng, src_room, dst_room, 4, 2048);
        ASSERT_GT(s.len, 0u);
        ASSERT_EQ(0u, s.len % 4);
        ASSERT_EQ(0u, s.src_off % 4);
        ASSERT_EQ(s.src_off % 16, s.dst_off % 16) << "low 4 bits";
        ASSERT_LE(s.src_off + src_span(s), src_room);
        ASSERT_LE(s.dst_off + dst_span(s), dst_room);
        std::uint64_t sspan = 0, dspan = 0;
        ASSERT_EQ(0, tca::check_stride(s.len, s.stride, s.burst, s.gap, &sspan, &dspan))
            << "the library accepts the shape";
        ASSERT_EQ(sspan, src_span(s));
        ASSERT_EQ(dspan, dst_span(s));
        strided += s.burst ? 1 : 0;
        small += s.len <= 64 ? 1 : 0;
        big += s.len >= 1024 ? 1 : 0;
    }
    EXPECT_GT(strided, 5000u);
    EXPECT_GT(small, 2000u);
    EXPECT_GT(big, 1000u);
    // A minimum length holds when it fits.
    const Shape s = random_shape(rng, 1 << 20, 1 << 20, 65536, 65536);
    EXPECT_GE(s.len, 65536u);
}

TEST(DmaCheckShape, BytesMapAsTheCardMovesThem) {
    using namespace tcacheck;
    Shape s{100 * 16, 4, 40, 16, 32, TCA_DMA_STRIDE_DST};
    std::vector<std::pair<std::uint64_t, std::uint64_t>> v;
    for_each_byte(s, [&](std::uint64_t a, std::uint64_t b) { v.emplace_back(a, b); });
    ASSERT_EQ(40u, v.size());
    EXPECT_EQ(std::make_pair(std::uint64_t{1600}, std::uint64_t{4}), v[0]);
    EXPECT_EQ(std::make_pair(std::uint64_t{1616}, std::uint64_t{4 + 48}), v[16]);  // next block
    EXPECT_EQ(std::make_pair(std::uint64_t{1639}, std::uint64_t{4 + 96 + 7}), v[39]);
    EXPECT_EQ(96u + 8, dst_span(s));
    EXPECT_EQ(40u, src_span(s));
    s.stride = TCA_DMA_STRIDE_SRC | TCA_DMA_STRIDE_DST;
    v.clear();
    for_each_byte(s, [&](std::uint64_t a, std::uint64_t b) { v.emplace_back(a, b); });
    EXPECT_EQ(1600u + 48, v[16].first);
}

TEST(DmaCheckLane, FindsWrongMissingAndStrayBytes) {
    using namespace tcacheck;
    const std::uint64_t guard = 64, data = 1024;
    std::vector<std::uint8_t> pristine(data + 2 * guard);
    fill_lane_pristine(pristine, guard, 2);
    const Shape s{8, 8, 100, 20, 12, TCA_DMA_STRIDE_DST};
    const std::uint64_t seed = 5;
    std::vector<std::uint8_t> good = pristine;
    for_each_byte(s, [&](std::uint64_t a, std::uint64_t b) {
        good[guard + b] = tcatools::pattern_byte(seed, a);
    });
    std::uint64_t where = 0;
    EXPECT_EQ(kOk, check_lane(good, pristine, guard, s, seed, &where));
    std::vector<std::uint8_t> w = good;
    w[guard + 8 + 20 + 12] ^= 1;  // first byte of block 2
    EXPECT_EQ(kTargetMismatch, check_lane(w, pristine, guard, s, seed, &where));
    EXPECT_EQ(guard + 40, where);
    w = good;
    w[guard + 8 + 20] ^= 1;  // in the gap
    EXPECT_EQ(kStrayWrite, check_lane(w, pristine, guard, s, seed, &where));
    w = good;
    w[3] ^= 1;  // front guard
    EXPECT_EQ(kStrayWrite, check_lane(w, pristine, guard, s, seed, &where));
    EXPECT_EQ(3u, where);
    // Nothing written at all: caught unless every byte happened to match.
    EXPECT_NE(kOk, check_lane(pristine, pristine, guard, s, seed, &where));
}
