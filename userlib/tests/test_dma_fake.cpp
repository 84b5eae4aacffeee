// SPDX-License-Identifier: MIT
// The DMA C API end to end against the fake driver (fake/fake_dma.c, loaded
// with LD_PRELOAD by ctest): local copies through own handles, remote puts
// split at the remote pieces, completion words, register mode as several
// runs, block-stride, chains, the start cache, restriction errors before the
// driver, the on-card descriptor limit, tcaPutAuto. Node 1's memory is read straight
// from the fake's file, as the peer would see it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <peach2/peach2_hw.h>
#include <sys/mman.h>
#include <tca/tca.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "context.hpp"
#include "handle.hpp"
#include "library.hpp"
#include "test_util.hpp"

namespace {

constexpr std::uint64_t kFakeMem = 64ull << 20;  // FAKE_MEM in fake_peach2.h

class FakeDma : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = tcatest::use_fake_device("dma");
        setenv("TCA_FAKE_CHUNK", "4096", 1);  // buffers of many chunks
    }
    static void TearDownTestSuite() {
        tcaFinalize();
        tcatest::remove_fake_device(dir_);
    }
    void SetUp() override {
        if (!getenv("LD_PRELOAD") || !strstr(getenv("LD_PRELOAD"), "fake_peach2"))
            FAIL() << "run under LD_PRELOAD=libfake_peach2.so (ctest does)";
        ASSERT_EQ(0, tcaInit());
        const int fd = open((dir_ + "/mem1").c_str(), O_RDONLY);
        ASSERT_GE(fd, 0);
        peer_ = static_cast<const unsigned char*>(
            mmap(nullptr, kFakeMem, PROT_READ, MAP_SHARED, fd, 0));
        close(fd);
        ASSERT_NE(MAP_FAILED, peer_);
    }
    void TearDown() override {
        for (void* p : bufs_)
            tcaFree(p);
        munmap(const_cast<unsigned char*>(peer_), kFakeMem);
    }
    unsigned char* alloc(std::size_t n) {
        void* p = nullptr;
        EXPECT_EQ(0, tcaMalloc(&p, n));
        bufs_.push_back(p);
        return static_cast<unsigned char*>(p);
    }
    // Node 1's memory: `n` pieces of `len` bytes, 1 MiB apart.
    static tcaHandle peer_handle(unsigned n, std::uint64_t len) {
        tcaHandle h{};
        EXPECT_EQ(0, tca::make_handle(1, tcatest::scattered(1, n, len), 0, 0, &h));
        return h;
    }
    // Byte `off` of a node-1 handle, as node 1 sees it.
    unsigned char peer_byte(const tcaHandle& h, std::uint64_t off) const {
        std::uint64_t ga = 0;
        EXPECT_EQ(0, tcaRemoteAddress(&h, off, &ga));
        return peer_[PEACH2_ADDR_OFFSET(ga)];
    }
    static void fill(unsigned char* p, std::size_t n, unsigned seed) {
        for (std::size_t i = 0; i < n; ++i)
            p[i] = static_cast<unsigned char>(i * 131 + seed * 7 + 1);
    }

    static std::string dir_;
    const unsigned char* peer_ = nullptr;
    std::vector<void*> bufs_;
};

std::string FakeDma::dir_;

}  // namespace

TEST_F(FakeDma, LocalCopyThroughOwnHandle) {
    unsigned char *a = alloc(16384), *b = alloc(16384);
    fill(a, 16384, 1);
    tcaHandle hb;
    ASSERT_EQ(0, tcaGetHandle(b, 0, &hb));
    ASSERT_EQ(0, tcaDmaPut(&hb, 0x30, a + 0x30, 12000, nullptr, nullptr));
    EXPECT_EQ(0, std::memcmp(a + 0x30, b + 0x30, 12000));
    EXPECT_EQ(0, b[0x2f]);
    EXPECT_EQ(0, b[0x30 + 12000]);
}

TEST_F(FakeDma, RemotePutWithCompletionWord) {
    unsigned char* src = alloc(65536);
    fill(src, 65536, 2);
    const tcaHandle dst = peer_handle(4, 4096);
    tcaDmaTicket t{};
    // Source and destination chunks out of phase (0x990 vs 0x190 into a
    // 4 KiB piece): the remote cuts do not coincide with the local ones.
    ASSERT_EQ(0, tcaDmaPutNotify(&dst, 0x190, src + 0x990, 3 * 4096, 4 * 4096 - 8,
                                 0xfeedf00d12345678ull, nullptr, &t));
    EXPECT_EQ(0, tcaDmaWait(&t, 1000));
    for (std::uint64_t i = 0; i < 3 * 4096; ++i)
        ASSERT_EQ(src[0x990 + i], peer_byte(dst, 0x190 + i)) << i;
    std::uint64_t word = 0;
    for (int k = 0; k < 8; ++k)
        word |= static_cast<std::uint64_t>(peer_byte(dst, 4 * 4096 - 8 + k)) << (8 * k);
    EXPECT_EQ(0xfeedf00d12345678ull, word);
}

TEST_F(FakeDma, RegisterModeBecomesSeveralRuns) {
    unsigned char* src = alloc(32768);
    fill(src, 32768, 3);
    const tcaHandle dst = peer_handle(3, 4096);
    tcaDmaOpts o{};
    o.flags = TCA_DMA_REG_MODE;
    o.channel = TCA_DMA_CHANNEL(2);
    tcaDmaTicket t{};
    ASSERT_EQ(0, tcaDmaPutNotify(&dst, 0, src, 8192, 8192, 77, &o, &t));
    EXPECT_EQ(3u, t.left) << "two data descriptors and the word: one run each";
    EXPECT_EQ(0, tcaDmaTest(&t));
    EXPECT_EQ(0u, t.left);
    EXPECT_EQ(0, tcaDmaWait(&t, 0)) << "collected: answers again without the driver";
    EXPECT_EQ(src[5000], peer_byte(dst, 5000));
    EXPECT_EQ(77, peer_byte(dst, 8192));
}

TEST_F(FakeDma, SourceByHandleAndBlockStride) {
    unsigned char *src = alloc(8192), *dstbuf = alloc(8192);
    fill(src, 8192, 4);
    tcaHandle hs, hd;
    ASSERT_EQ(0, tcaGetHandle(src, 4096, &hs));  // first chunk only
    ASSERT_EQ(0, tcaGetHandle(dstbuf, 4096, &hd));
    tcaDmaXfer x{};
    x.dst = &hd;
    x.src_handle = &hs;
    x.src_offset = 0;
    x.len = 256;  // 16 blocks of 16 bytes ...
    x.burst = 16;
    x.gap = 48;  // ... every 64 bytes of the destination
    x.stride = TCA_DMA_STRIDE_DST;
    ASSERT_EQ(0, tcaDmaStart(&x, 1, nullptr, nullptr));
    for (unsigned b = 0; b < 16; ++b) {
        EXPECT_EQ(0, std::memcmp(src + 16 * b, dstbuf + 64 * b, 16)) << b;
        EXPECT_EQ(0, dstbuf[64 * b + 16]) << "gap untouched";
    }
    // Gather back: the strided side is now the source.
    std::memset(dstbuf + 2048, 0, 256);
    x.dst_offset = 2048;
    x.src_handle = &hd;
    x.stride = TCA_DMA_STRIDE_SRC;
    ASSERT_EQ(0, tcaDmaStart(&x, 1, nullptr, nullptr));
    EXPECT_EQ(0, std::memcmp(src, dstbuf + 2048, 256));
    // Leaving the chunk is refused, not split.
    x.dst_offset = 4096 - 128;
    x.src_handle = &hs;
    x.stride = TCA_DMA_STRIDE_DST;
    tcaHandle whole;
    ASSERT_EQ(0, tcaGetHandle(dstbuf, 0, &whole));
    x.dst = &whole;
    EXPECT_EQ(TCA_ESTRIDE, tcaDmaStart(&x, 1, nullptr, nullptr));
}

TEST_F(FakeDma, RestrictionsAreCaughtBeforeTheDriver) {
    unsigned char* src = alloc(8192);
    const tcaHandle dst = peer_handle(1, 8192);
    EXPECT_EQ(TCA_EALIGN, tcaDmaPut(&dst, 0, src + 4, 64, nullptr, nullptr));  // low bits
    EXPECT_EQ(TCA_EALIGN, tcaDmaPut(&dst, 2, src + 2, 64, nullptr, nullptr));  // not x4
    EXPECT_EQ(TCA_EALIGN, tcaDmaPut(&dst, 0, src, 63, nullptr, nullptr));      // length
    EXPECT_EQ(TCA_ERANGE, tcaDmaPut(&dst, 8192 - 16, src, 32, nullptr, nullptr));
    EXPECT_EQ(TCA_ERANGE, tcaDmaPut(&dst, 0, src + 8192 - 16, 32, nullptr, nullptr));
    int stack[16] = {};
    EXPECT_EQ(TCA_ENOTBUF, tcaDmaPut(&dst, 0, stack, 64, nullptr, nullptr));
    tcaHandle bad = dst;
    bad.size += 4;
    EXPECT_EQ(TCA_EBADHANDLE, tcaDmaPut(&bad, 0, src, 64, nullptr, nullptr));
    tcaHandle far{};
    ASSERT_EQ(0, tca::make_handle(5, tcatest::scattered(5, 1, 4096), 0, 0, &far));
    EXPECT_EQ(TCA_ENODE, tcaDmaPut(&far, 0, src, 64, nullptr, nullptr));
    EXPECT_EQ(TCA_EALIGN, tcaDmaPutNotify(&dst, 0, src, 64, 4, 1, nullptr, nullptr));
    tcaDmaOpts o{};
    o.flags = TCA_DMA_REG_MODE | TCA_DMA_HOST_DESC;
    EXPECT_EQ(-EINVAL, tcaDmaPut(&dst, 0, src, 64, &o, nullptr));
    o = tcaDmaOpts{};
    o.channel = 9;
    EXPECT_EQ(-EINVAL, tcaDmaPut(&dst, 0, src, 64, &o, nullptr));
    // Another node's handle as the source: the card reads only this node.
    tcaDmaXfer x{};
    x.dst = &dst;
    x.src_handle = &dst;
    x.len = 64;
    EXPECT_EQ(TCA_ENOTBUF, tcaDmaStart(&x, 1, nullptr, nullptr));
    x.reserved = 1;
    EXPECT_EQ(-EINVAL, tcaDmaStart(&x, 1, nullptr, nullptr));
    EXPECT_EQ(-EINVAL, tcaDmaStart(nullptr, 1, nullptr, nullptr));
    tcaDmaTicket t{};
    EXPECT_EQ(0, tcaDmaStart(nullptr, 0, nullptr, &t));  // nothing to do
    EXPECT_EQ(0u, t.left);
}

TEST_F(FakeDma, OnCardDescriptorsAreLimited) {
    unsigned char* src = alloc(8192);
    const tcaHandle dst = peer_handle(1, 8192);
    std::vector<tcaDmaXfer> xs(PEACH2_DESC_MAX + 1);
    for (std::size_t i = 0; i < xs.size(); ++i) {
        xs[i].dst = &dst;
        xs[i].dst_offset = 4 * i;
        xs[i].src = src + 4 * i;
        xs[i].len = 4;
    }
    EXPECT_EQ(TCA_ENODESC, tcaDmaStart(xs.data(), xs.size(), nullptr, nullptr));
    EXPECT_EQ(0, tcaDmaStart(xs.data(), xs.size() - 1, nullptr, nullptr));
    tcaDmaOpts o{};
    o.flags = TCA_DMA_HOST_DESC;
    EXPECT_EQ(0, tcaDmaStart(xs.data(), xs.size(), &o, nullptr));
}

TEST_F(FakeDma, ChainsStartManyTimes) {
    unsigned char* src = alloc(8192);
    const tcaHandle dst = peer_handle(2, 4096);
    tcaDmaXfer x[2] = {};
    x[0].dst = &dst;
    x[0].src = src;
    x[0].len = 6000;  // crosses the remote boundary: 2 descriptors
    x[1].dst = &dst;
    x[1].src = src + 6016;
    x[1].dst_offset = 6016;
    x[1].len = 64;
    x[1].notify = &dst;
    x[1].notify_offset = 8184;
    x[1].notify_value = 5;
    tcaChain c{};
    ASSERT_EQ(0, tcaChainCreate(x, 2, nullptr, &c));
    EXPECT_NE(0u, c.id);
    EXPECT_EQ(4u, c.descriptors);
    for (unsigned round = 0; round < 3; ++round) {
        fill(src, 8192, 10 + round);  // the data is read at every start
        tcaDmaTicket t{};
        ASSERT_EQ(0, tcaChainStart(c, nullptr, &t));
        ASSERT_EQ(0, tcaDmaWait(&t, 1000));
        EXPECT_EQ(src[4100], peer_byte(dst, 4100));
        EXPECT_EQ(src[6016 + 63], peer_byte(dst, 6016 + 63));
    }
    tcaDmaOpts o{};
    o.flags = TCA_DMA_HOST_DESC;
    EXPECT_EQ(-EINVAL, tcaChainStart(c, &o, nullptr)) << "mode is fixed at creation";
    EXPECT_EQ(0, tcaChainDestroy(c));
    EXPECT_EQ(-ENOENT, tcaChainDestroy(c));
    EXPECT_EQ(-ENOENT, tcaChainStart(c, nullptr, nullptr));

    // Register mode: one driver chain per descriptor, started together.
    o.flags = TCA_DMA_REG_MODE;
    ASSERT_EQ(0, tcaChainCreate(x, 2, &o, &c));
    EXPECT_EQ(4u, c.descriptors);
    tcaDmaTicket t{};
    ASSERT_EQ(0, tcaChainStart(c, nullptr, &t));
    EXPECT_EQ(4u, t.left);
    EXPECT_EQ(0, tcaDmaWait(&t, 1000));
    EXPECT_EQ(0, tcaChainDestroy(c));
    EXPECT_EQ(-EINVAL, tcaChainCreate(x, 0, nullptr, &c));
}

// The start cache (dma_cache.cpp): chains kept, in the library's own context.
std::size_t cached_chains() {
    std::size_t n = 0;
    EXPECT_EQ(0, tca::with_context([&](tca::Context& c) {
        n = c.dma().cache().size();
        return 0;
    }));
    return n;
}

TEST_F(FakeDma, PutsRepeatedFromABufferSeeFreshDataAndEndWithIt) {
    constexpr std::size_t kLen = 3 * 4096 + 512;  // several chunks (TCA_FAKE_CHUNK)
    const tcaHandle dst = peer_handle(3, 8192);
    tcaDmaOpts o{};
    o.flags = TCA_DMA_HOST_DESC;
    const std::size_t before = cached_chains();
    unsigned char* src = alloc(kLen);
    for (unsigned round = 0; round < 4; ++round) {
        fill(src, kLen, 20 + round);  // a kept chain reads the source at every start
        ASSERT_EQ(0, tcaDmaPut(&dst, 0, src, kLen, &o, nullptr));
        for (std::size_t off : {std::size_t{0}, std::size_t{5000}, kLen - 1})
            ASSERT_EQ(src[off], peer_byte(dst, off)) << "round " << round << " byte " << off;
    }
    EXPECT_EQ(before + 1, cached_chains()) << "the list came again: kept as a chain";
    ASSERT_EQ(0, tcaFree(src));
    bufs_.pop_back();
    EXPECT_EQ(before, cached_chains()) << "its buffer freed: the chain went with it";

    // Registered memory: deregistering ends its chains too.
    std::vector<unsigned char> mem(kLen + 4096);
    unsigned char* reg = mem.data() + (4096 - reinterpret_cast<std::uintptr_t>(mem.data()) % 4096);
    ASSERT_EQ(0, tcaRegister(reg, kLen));
    for (unsigned round = 0; round < 3; ++round) {
        fill(reg, kLen, 40 + round);
        ASSERT_EQ(0, tcaDmaPut(&dst, 0, reg, kLen, &o, nullptr));
        ASSERT_EQ(reg[kLen - 1], peer_byte(dst, kLen - 1));
    }
    EXPECT_EQ(before + 1, cached_chains());
    ASSERT_EQ(0, tcaDeregister(reg, kLen));
    EXPECT_EQ(before, cached_chains());
}

TEST_F(FakeDma, AListStartedAgainIsPlannedAgainWhenWhatItNamesChanged) {
    // The same list twice is started from the plan kept for it (RepeatPlan):
    // each change below must make the next start plan again.
    constexpr std::size_t kLen = 2 * 4096;
    tcaHandle dst = peer_handle(2, 4096);
    unsigned char* src = alloc(kLen);
    for (unsigned round = 0; round < 2; ++round) {
        fill(src, kLen, 60 + round);
        ASSERT_EQ(0, tcaDmaPut(&dst, 0, src, kLen, nullptr, nullptr));
        ASSERT_EQ(src[kLen - 1], peer_byte(dst, kLen - 1));
    }
    // The handle rewritten in place (same pointer): the bytes go where it says now.
    const tcaHandle moved = peer_handle(6, 8192);
    dst = moved;
    fill(src, kLen, 62);
    ASSERT_EQ(0, tcaDmaPut(&dst, 0, src, kLen, nullptr, nullptr));
    for (std::size_t off : {std::size_t{0}, std::size_t{4096}, kLen - 1})
        ASSERT_EQ(src[off], peer_byte(moved, off)) << off;

    // A registration ended: the same pointer names no memory of ours any more.
    std::vector<unsigned char> mem(kLen + 4096);
    unsigned char* reg = mem.data() + (4096 - reinterpret_cast<std::uintptr_t>(mem.data()) % 4096);
    ASSERT_EQ(0, tcaRegister(reg, kLen));
    for (unsigned round = 0; round < 2; ++round) {
        fill(reg, kLen, 70 + round);
        ASSERT_EQ(0, tcaDmaPut(&dst, 0, reg, kLen, nullptr, nullptr));
        ASSERT_EQ(reg[kLen - 1], peer_byte(dst, kLen - 1));
    }
    ASSERT_EQ(0, tcaDeregister(reg, kLen));
    EXPECT_EQ(TCA_ENOTBUF, tcaDmaPut(&dst, 0, reg, kLen, nullptr, nullptr));
    // Registered again (a new driver buffer at the same address): it works again.
    ASSERT_EQ(0, tcaRegister(reg, kLen));
    fill(reg, kLen, 72);
    ASSERT_EQ(0, tcaDmaPut(&dst, 0, reg, kLen, nullptr, nullptr));
    ASSERT_EQ(reg[kLen - 1], peer_byte(dst, kLen - 1));
    ASSERT_EQ(0, tcaDeregister(reg, kLen));
}

TEST_F(FakeDma, PutAutoChoosesAndDeliversEveryByte) {
    unsigned char* src = alloc(65536);
    fill(src, 65536, 20);
    const tcaHandle dst = peer_handle(4, 16384);
    const std::size_t max = tcaPioMax();
    EXPECT_GT(max, 0u);
    // Above the threshold, unaligned head and tail: DMA body, PIO edges.
    ASSERT_EQ(0, tcaPutAuto(&dst, 3, src + 3, 40001));
    for (std::uint64_t i = 0; i < 40001; ++i)
        ASSERT_EQ(src[3 + i], peer_byte(dst, 3 + i)) << i;
    // Low bits differ: PIO only, still right.
    fill(src, 65536, 21);
    ASSERT_EQ(0, tcaPutAuto(&dst, 0, src + 4, 20000));
    for (std::uint64_t i = 0; i < 20000; ++i)
        ASSERT_EQ(src[4 + i], peer_byte(dst, i)) << i;
    // Source outside tcaMalloc memory: PIO.
    std::vector<unsigned char> heap(10000, 0x5a);
    ASSERT_EQ(0, tcaPutAuto(&dst, 64, heap.data(), heap.size()));
    EXPECT_EQ(0x5a, peer_byte(dst, 64 + 9999));
    EXPECT_EQ(TCA_ERANGE, tcaPutAuto(&dst, 65536 - 8, src, 16));
}
