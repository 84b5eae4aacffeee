// SPDX-License-Identifier: MIT
// The read-proxy C API (export, get, CAS/FAA, requests) against the fake
// driver (fake/fake_rp.c, loaded with LD_PRELOAD by ctest). The process is
// node 0 and gets from itself (the card loops such requests back): the
// fake serves them from its shared export table. Test controls and the log
// of submissions come from the fake through weak symbols.
#include <gtest/gtest.h>
#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>
#include <tca/tca.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "handle.hpp"
#include "library.hpp"
#include "rp.hpp"
#include "test_util.hpp"

extern "C" {
void fake_rp_control(const char* what, long value) __attribute__((weak));
unsigned fake_rp_log(peach2_rp_submit* out, unsigned max) __attribute__((weak));
}

namespace {

constexpr int kTimeoutMs = 300;  // TCA_RP_TIMEOUT_MS for this process

class FakeRp : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = tcatest::use_fake_device("rp");
        setenv("TCA_RP_TIMEOUT_MS", std::to_string(kTimeoutMs).c_str(), 1);
    }
    static void TearDownTestSuite() {
        tcaFinalize();
        tcatest::remove_fake_device(dir_);
    }
    void SetUp() override {
        if (!fake_rp_control || !fake_rp_log)
            FAIL() << "run under LD_PRELOAD=libfake_peach2.so (ctest does)";
        ASSERT_EQ(0, tcaInit());
        fake_rp_control("reset", 0);
    }
    void TearDown() override {
        if (fake_rp_control)
            fake_rp_control("reset", 0);
        for (void* p : bufs_)
            tcaFree(p);
    }
    // A buffer of `n` bytes in chunks of `chunk` bytes, filled with a
    // pattern (seed) or zero.
    unsigned char* alloc(std::size_t n, std::size_t chunk, int seed = -1) {
        setenv("TCA_FAKE_CHUNK", std::to_string(chunk).c_str(), 1);
        void* p = nullptr;
        EXPECT_EQ(0, tcaMalloc(&p, n));
        bufs_.push_back(p);
        auto* b = static_cast<unsigned char*>(p);
        if (b && seed >= 0)
            for (std::size_t i = 0; i < n; ++i)
                b[i] = static_cast<unsigned char>(i * 151 + i / 251 + seed);
        return b;
    }
    static std::vector<peach2_rp_submit> log() {
        std::vector<peach2_rp_submit> v(4096);
        const unsigned n = fake_rp_log(v.data(), static_cast<unsigned>(v.size()));
        v.resize(n < v.size() ? n : v.size());
        return v;
    }
    static tca::SlotPool& slots() {
        tca::RpState* rp = tca::context_if_open()->rp_if_ready();
        EXPECT_NE(nullptr, rp);
        return rp->areas().current().slots();
    }

    static std::string dir_;
    std::vector<void*> bufs_;
};

std::string FakeRp::dir_;

}  // namespace

TEST_F(FakeRp, ExportGivesAVersion2HandleWithTheExport) {
    unsigned char* src = alloc(65536, 65536, 1);
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(src + 4096, 8192, TCA_EXPORT_READ, &h));
    EXPECT_EQ(0, tcaHandleValidate(&h));
    EXPECT_EQ(2u, h.version);
    EXPECT_NE(0u, h.export_id);
    EXPECT_EQ(8192u, h.size);
    tcaHandle plain;
    ASSERT_EQ(0, tcaGetHandle(src + 4096, 8192, &plain));
    EXPECT_EQ(0u, plain.export_id);
    EXPECT_EQ(0, std::memcmp(plain.chunks, h.chunks, sizeof h.chunks));
    EXPECT_EQ(-EINVAL, tcaExport(src, 64, 0, &h));
    EXPECT_EQ(-EINVAL, tcaExport(src, 64, 4, &h));
    EXPECT_EQ(TCA_ERANGE, tcaExport(src, 65537, TCA_EXPORT_READ, &h));
    int stack = 0;
    EXPECT_EQ(TCA_ENOTBUF, tcaExport(&stack, 4, TCA_EXPORT_READ, &h));
}

TEST_F(FakeRp, GetListsTheLocalChunksInOneRequest) {
    unsigned char* src = alloc(3 * 16384, 16384, 2);  // remote side: 3 chunks
    unsigned char* dst = alloc(8 * 4096, 4096);       // local side: 4 KiB chunks
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ, &h));
    ASSERT_EQ(3u, h.nr_chunks);
    // 0x30 into dst and 0x16030 - 0x16000... : equal low 4 bits.
    const std::size_t off = 16384 - 0x1d0, len = 5 * 4096;
    ASSERT_EQ(0, tcaGet(dst + 0x30, &h, off, len));
    EXPECT_EQ(0, std::memcmp(dst + 0x30, src + off, len));
    EXPECT_EQ(0, dst[0x2f]);
    EXPECT_EQ(0, dst[0x30 + len]);
    // 0x30 .. 0x30 + 5 pages spans 6 chunks of dst: one request, whose
    // reply the driver lists chunk by chunk.
    const auto l = log();
    ASSERT_EQ(1u, l.size());
    const peach2_rp_submit& s = l[0];
    EXPECT_EQ(0u, s.node);
    EXPECT_EQ(static_cast<unsigned>(PEACH2_RP_OP_READ), s.op);
    EXPECT_EQ(h.export_id, s.export_id);
    EXPECT_EQ(h.export_key, s.key);
    EXPECT_EQ(0x30u, s.reply_offset);
    EXPECT_EQ(len, s.len);
    std::uint64_t ga = 0;
    ASSERT_EQ(0, tcaRemoteAddress(&h, off, &ga));
    EXPECT_EQ(PEACH2_ADDR_OFFSET(ga), s.addr);
    EXPECT_EQ(0u, s.cpl_offset % 32);
}

TEST_F(FakeRp, GetOverASpanOfHandlesIsOneRequest) {
    unsigned char* src = alloc(3 * 16384, 16384, 2);  // remote side: 3 chunks
    unsigned char* dst = alloc(8 * 4096, 4096);
    tcaHandle h, first, second, other;
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ, &h));
    // As two lookups of one name would give them: consecutive, one export.
    ASSERT_EQ(0, tcaSubHandle(&h, 0, 20000, &first));
    ASSERT_EQ(0, tcaSubHandle(&h, 20000, 0, &second));
    const tcaHandle* span[] = {&first, &second};
    const std::size_t off = 16384 - 0x1d0, len = 5 * 4096;  // crosses both ends
    tcaRequest r{};
    ASSERT_EQ(0, tcaGetSpanNB(dst + 0x30, span, 2, off, len, &r));
    EXPECT_EQ(0, tcaWait(&r, 0));
    EXPECT_EQ(1u, r.pieces);
    EXPECT_EQ(len, r.bytes);
    EXPECT_EQ(0, std::memcmp(dst + 0x30, src + off, len));
    const auto l = log();
    ASSERT_EQ(1u, l.size());
    EXPECT_EQ(len, l[0].len);
    std::uint64_t ga = 0;
    ASSERT_EQ(0, tcaRemoteAddress(&h, off, &ga));
    EXPECT_EQ(PEACH2_ADDR_OFFSET(ga), l[0].addr);
    // Past the span's end, no handles, another export: refused, nothing sent.
    EXPECT_EQ(TCA_ERANGE, tcaGetSpanNB(dst, span, 2, 3 * 16384 - 32, 64, &r));
    EXPECT_EQ(-EINVAL, tcaGetSpanNB(dst, span, 0, 0, 64, &r));
    unsigned char* more = alloc(16384, 16384);
    ASSERT_EQ(0, tcaExport(more, 0, TCA_EXPORT_READ, &other));
    const tcaHandle* mixed[] = {&first, &other};
    EXPECT_EQ(-EINVAL, tcaGetSpanNB(dst, mixed, 2, 0, 64, &r));
    EXPECT_EQ(1u, log().size()) << "nothing more reached the driver";
}

TEST_F(FakeRp, GetIntoMoreChunksThanAListHoldsIsCutAfterEachFullList) {
    const std::size_t chunks = PEACH2_RP_MAX_PIECES * 2 + 3, len = chunks * 4096 - 0x40;
    unsigned char* src = alloc(chunks * 4096, chunks * 4096, 3);
    unsigned char* dst = alloc(chunks * 4096, 4096);
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ, &h));
    ASSERT_EQ(0, tcaGet(dst + 0x40, &h, 0x40, len));
    EXPECT_EQ(0, std::memcmp(dst + 0x40, src + 0x40, len));
    const auto l = log();
    ASSERT_EQ(3u, l.size());
    EXPECT_EQ(PEACH2_RP_MAX_PIECES * 4096u - 0x40, l[0].len);
    EXPECT_EQ(PEACH2_RP_MAX_PIECES * 4096u, l[1].reply_offset);
    EXPECT_EQ(PEACH2_RP_MAX_PIECES * 4096u, l[1].len);
    EXPECT_EQ(3u * 4096, l[2].len);
}

TEST_F(FakeRp, GetSplitsAt4MiB) {
    const std::size_t n = 9u << 20;
    unsigned char* src = alloc(n, 16u << 20, 3);  // one chunk each
    unsigned char* dst = alloc(n, 16u << 20);
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ, &h));
    tcaRequest r{};
    ASSERT_EQ(0, tcaGetNB(dst + 16, &h, 16, n - 32, &r));
    EXPECT_EQ(0, tcaWait(&r, 0));
    EXPECT_EQ(3u, r.pieces);
    EXPECT_EQ(n - 32, r.bytes);
    EXPECT_EQ(0, std::memcmp(dst + 16, src + 16, n - 32));
    const auto l = log();
    ASSERT_EQ(3u, l.size());
    EXPECT_EQ(PEACH2_RP_MAX_LEN, l[0].len);
    EXPECT_EQ(PEACH2_RP_MAX_LEN, l[1].len);
    EXPECT_EQ(n - 32 - 2 * PEACH2_RP_MAX_LEN, l[2].len);
    EXPECT_EQ(l[0].addr + PEACH2_RP_MAX_LEN, l[1].addr);
}

TEST_F(FakeRp, ArgumentErrorsComeBeforeAnythingIsSent) {
    unsigned char *src = alloc(16384, 16384, 4), *dst = alloc(16384, 16384);
    tcaHandle h, plain;
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ | TCA_EXPORT_ATOMIC, &h));
    ASSERT_EQ(0, tcaGetHandle(src, 0, &plain));
    EXPECT_EQ(TCA_EALIGN, tcaGet(dst + 4, &h, 0, 64)) << "low 4 bits differ";
    EXPECT_EQ(TCA_EALIGN, tcaGet(dst, &h, 0, 62)) << "length";
    EXPECT_EQ(TCA_EALIGN, tcaGet(dst + 2, &h, 2, 64)) << "not 4-aligned";
    EXPECT_EQ(TCA_ERANGE, tcaGet(dst, &h, 16384 - 32, 64)) << "leaves the handle";
    EXPECT_EQ(TCA_ERANGE, tcaGet(dst + 16384 - 32, &h, 0, 64)) << "leaves dst";
    int stack[16] = {};
    EXPECT_EQ(TCA_ENOTBUF, tcaGet(stack, &h, 0, 64));
    EXPECT_EQ(TCA_ENOTEXPORTED, tcaGet(dst, &plain, 0, 64));
    tcaHandle far{};
    ASSERT_EQ(0, tca::make_handle(5, tcatest::scattered(5, 1, 4096), 0, 0, &far));
    tca::attach_export(&far, 9, 9);
    EXPECT_EQ(TCA_ENODE, tcaGet(dst, &far, 0, 64));
    tcaHandle bad = h;
    bad.size += 4;
    EXPECT_EQ(TCA_EBADHANDLE, tcaGet(dst, &bad, 0, 64));
    EXPECT_EQ(-EINVAL, tcaGet(nullptr, &h, 0, 64));
    tcaRequest r{};
    EXPECT_EQ(TCA_EALIGN, tcaGetNB(dst + 4, &h, 0, 64, &r));
    EXPECT_EQ(0u, r.id);
    EXPECT_EQ(TCA_EALIGN, tcaTest(&r)) << "an ended request answers with its outcome";
    EXPECT_EQ(TCA_EALIGN, tcaWait(&r, 0));
    EXPECT_TRUE(log().empty()) << "nothing reached the driver";
    EXPECT_EQ(0, tcaGet(dst, &h, 0, 0)) << "len 0";
}

TEST_F(FakeRp, FullQueueIsRetried) {
    unsigned char *src = alloc(16384, 16384, 5), *dst = alloc(16384, 16384);
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ, &h));
    fake_rp_control("full", 3);
    tcaRequest r{};
    ASSERT_EQ(0, tcaGetNB(dst, &h, 0, 4096, &r));
    EXPECT_EQ(0, tcaWait(&r, 0));
    EXPECT_EQ(3u, r.retries);
    EXPECT_EQ(0, std::memcmp(dst, src, 4096));
    const auto l = log();
    ASSERT_EQ(4u, l.size());
    for (const peach2_rp_submit& s : l)
        EXPECT_EQ(l[0].cpl_offset, s.cpl_offset) << "resubmitted in the same slot";
    EXPECT_LT(l[0].tag, l[3].tag);
    // Full for longer than the timeout: the request ends with -ETIMEDOUT.
    fake_rp_control("full", 1000000);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(-ETIMEDOUT, tcaGet(dst, &h, 0, 64));
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_GE(ms, kTimeoutMs - 5);
    EXPECT_LT(ms, kTimeoutMs + 2000);
}

TEST_F(FakeRp, TimeoutRetiresTheSlot) {
    unsigned char *src = alloc(16384, 16384, 6), *dst = alloc(16384, 16384);
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ, &h));
    ASSERT_EQ(0, tcaGet(dst, &h, 0, 64));  // creates the pool
    const std::uint32_t retired = slots().retired_count(), free_before = slots().free_count();
    fake_rp_control("drop", 1);
    EXPECT_EQ(-ETIMEDOUT, tcaGet(dst, &h, 0, 64));
    EXPECT_EQ(retired + 1, slots().retired_count());
    EXPECT_EQ(free_before - 1, slots().free_count());
    const std::uint64_t dead = log().back().cpl_offset;
    fake_rp_control("reset", 0);
    for (int i = 0; i < 50; ++i)
        ASSERT_EQ(0, tcaGet(dst, &h, 0, 64));
    for (const peach2_rp_submit& s : log())
        EXPECT_NE(dead, s.cpl_offset) << "a retired slot came back";
}

TEST_F(FakeRp, RefusalsMapToErrorsWithTheCode) {
    unsigned char *src = alloc(65536, 65536, 7), *dst = alloc(65536, 65536);
    tcaHandle part, whole, readonly;
    ASSERT_EQ(0, tcaExport(src + 4096, 4096, TCA_EXPORT_READ, &part));
    ASSERT_EQ(0, tcaGetHandle(src, 0, &whole));
    tca::attach_export(&whole, part.export_id, part.export_key);  // claims more than exported
    tcaRequest r{};
    ASSERT_EQ(0, tcaGetNB(dst, &whole, 0, 64, &r));
    EXPECT_EQ(TCA_EREMOTE, tcaWait(&r, 0));
    EXPECT_EQ(static_cast<unsigned>(PEACH2_ERR_RP_RANGE), r.status);
    EXPECT_STREQ("RP_RANGE", tcaCardErrorName(r.status));
    ASSERT_EQ(0, tcaGet(dst + 4096, &whole, 4096, 4096)) << "inside the export";

    tcaHandle forged = part;
    tca::attach_export(&forged, part.export_id, part.export_key + 1);
    ASSERT_EQ(0, tcaGetNB(dst, &forged, 0, 64, &r));
    EXPECT_EQ(TCA_ENOTEXPORTED, tcaWait(&r, 0)) << "wrong key";
    EXPECT_EQ(static_cast<unsigned>(PEACH2_ERR_RP_NOT_EXPORTED), r.status);

    ASSERT_EQ(0, tcaExport(src, 4096, TCA_EXPORT_READ, &readonly));
    std::uint64_t old = 0;
    EXPECT_EQ(TCA_ENOTEXPORTED, tcaFaa(&readonly, 0, 1, &old)) << "atomics not allowed";
    EXPECT_EQ(0, tcaUnexport(&readonly));
    EXPECT_EQ(TCA_ENOTEXPORTED, tcaUnexport(&readonly)) << "already gone";
    EXPECT_EQ(TCA_ENOTEXPORTED, tcaGet(dst, &readonly, 0, 64)) << "after unexport";
    EXPECT_EQ(TCA_ENOTEXPORTED,
              tcaUnexport(&whole) == 0 ? tcaGet(dst, &part, 0, 64) : TCA_ENOTEXPORTED);

    // Freeing the buffer ends its exports.
    unsigned char* gone = alloc(16384, 16384, 8);
    tcaHandle g;
    ASSERT_EQ(0, tcaExport(gone, 0, TCA_EXPORT_READ, &g));
    ASSERT_EQ(0, tcaGet(dst, &g, 0, 64));
    bufs_.pop_back();
    ASSERT_EQ(0, tcaFree(gone));
    EXPECT_EQ(TCA_ENOTEXPORTED, tcaGet(dst, &g, 0, 64));
    EXPECT_EQ(TCA_ENOTEXPORTED, tcaUnexport(&g)) << "the library forgot it too";
}

TEST_F(FakeRp, NonBlockingTestWaitCancel) {
    unsigned char *src = alloc(65536, 65536, 9), *dst = alloc(65536, 4096);
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ, &h));
    fake_rp_control("delay_us", 100000);
    tcaRequest r{};
    ASSERT_EQ(0, tcaGetNB(dst, &h, 0, 3 * 4096, &r));
    EXPECT_NE(0u, r.id);
    EXPECT_EQ(1u, r.pieces);  // three chunks of dst: one request, listing them
    EXPECT_EQ(1, tcaTest(&r));
    EXPECT_EQ(-ETIMEDOUT, tcaWait(&r, 1));
    EXPECT_NE(0u, r.id) << "still pending after the wait's own timeout";
    EXPECT_EQ(0, tcaWait(&r, 0));
    EXPECT_EQ(0u, r.id);
    EXPECT_EQ(3u * 4096, r.bytes);
    EXPECT_EQ(0, std::memcmp(dst, src, 3 * 4096));
    EXPECT_EQ(0, tcaTest(&r));

    // Several at once, collected in any order.
    std::vector<tcaRequest> rs(8);
    for (std::size_t i = 0; i < rs.size(); ++i)
        ASSERT_EQ(0, tcaGetNB(dst + 4096 * i, &h, 4096 * i, 4096, &rs[i]));
    for (std::size_t i = rs.size(); i-- > 0;)
        EXPECT_EQ(0, tcaWait(&rs[i], 0));

    // Cancel: the request ends, its slot is never used again.
    const std::uint32_t retired = slots().retired_count();
    ASSERT_EQ(0, tcaGetNB(dst, &h, 0, 64, &r));
    EXPECT_EQ(0, tcaCancel(&r));
    EXPECT_EQ(-ECANCELED, r.result);
    EXPECT_EQ(-ECANCELED, tcaTest(&r));
    EXPECT_EQ(retired + 1, slots().retired_count());
    EXPECT_EQ(0, tcaCancel(&r));
    fake_rp_control("reset", 0);
    tcaRequest unknown{};
    unknown.id = 123456789;
    EXPECT_EQ(-ENOENT, tcaTest(&unknown));
    EXPECT_EQ(-EINVAL, tcaWait(nullptr, 0));
}

TEST_F(FakeRp, Atomics) {
    auto* mem = reinterpret_cast<std::uint64_t*>(alloc(4096, 4096));
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(mem, 4096, TCA_EXPORT_ATOMIC, &h));
    std::uint64_t old = 99;
    for (std::uint64_t i = 0; i < 10; ++i) {
        ASSERT_EQ(0, tcaFaa(&h, 8, 3, &old));
        EXPECT_EQ(3 * i, old);
    }
    EXPECT_EQ(30u, mem[1]);
    ASSERT_EQ(0, tcaCas(&h, 8, 29, 1000, &old));
    EXPECT_EQ(30u, old) << "no swap";
    EXPECT_EQ(30u, mem[1]);
    ASSERT_EQ(0, tcaCas(&h, 8, 30, 1000, &old));
    EXPECT_EQ(30u, old);
    EXPECT_EQ(1000u, mem[1]);
    tcaRequest r{};
    ASSERT_EQ(0, tcaFaaNB(&h, 8, ~0ull, &r));  // wraps: -1
    EXPECT_EQ(0, tcaWait(&r, 0));
    EXPECT_EQ(1000u, r.value);
    ASSERT_EQ(0, tcaCasNB(&h, 8, 999, 5, &r));
    EXPECT_EQ(0, tcaWait(&r, 0));
    EXPECT_EQ(999u, r.value);
    EXPECT_EQ(5u, mem[1]);
    EXPECT_EQ(TCA_EREMOTE == 0, false);
    // Argument checks.
    EXPECT_EQ(TCA_EALIGN, tcaFaa(&h, 4, 1, &old));
    EXPECT_EQ(TCA_EALIGN, tcaCas(&h, 1, 1, 2, &old));
    EXPECT_EQ(TCA_ERANGE, tcaFaa(&h, 4096 - 4, 1, &old));
    EXPECT_EQ(TCA_ERANGE, tcaFaa(&h, 4096, 1, &old));
    EXPECT_EQ(TCA_ERANGE, tcaCasNB(&h, ~0ull - 3, 1, 2, &r)) << "overflow";
    EXPECT_EQ(-EINVAL, tcaFaa(&h, 0, 1, nullptr));
    EXPECT_EQ(-EINVAL, tcaCas(nullptr, 0, 1, 2, &old));
    EXPECT_EQ(-EINVAL, tcaFaaNB(&h, 0, 1, nullptr));
    tcaHandle plain;
    ASSERT_EQ(0, tcaGetHandle(mem, 4096, &plain));
    EXPECT_EQ(TCA_ENOTEXPORTED, tcaFaa(&plain, 0, 1, &old));
    EXPECT_EQ(5u, mem[1]) << "no failed call changed the word";
    const auto l = log();
    ASSERT_FALSE(l.empty());
    EXPECT_EQ(static_cast<unsigned>(PEACH2_RP_OP_CAS), l.back().op);
    EXPECT_EQ(8u, l.back().len);
    EXPECT_EQ(999u, l.back().operand[0]);
    EXPECT_EQ(5u, l.back().operand[1]);
    EXPECT_EQ(0u, l.back().reply_handle);
}

TEST_F(FakeRp, LinkQueueFullIsRetriedUntilTheDeadline) {
    auto* mem = reinterpret_cast<std::uint64_t*>(alloc(16384, 16384, 10));
    unsigned char* dst = alloc(16384, 16384);
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(mem, 0, TCA_EXPORT_READ | TCA_EXPORT_ATOMIC, &h));
    ASSERT_EQ(0, tcaGet(dst, &h, 0, 64));  // creates the pool
    const std::uint32_t free_before = slots().free_count(), retired = slots().retired_count();
    mem[0] = 7;
    const std::size_t logged = log().size();
    fake_rp_control("eagain", 5);
    tcaRequest r{};
    ASSERT_EQ(0, tcaCasNB(&h, 0, 7, 8, &r)) << "-EAGAIN from RP_SUBMIT is not an error";
    EXPECT_EQ(0, tcaWait(&r, 0));
    EXPECT_EQ(7u, r.value);
    EXPECT_EQ(8u, mem[0]);
    EXPECT_EQ(5u, r.retries);
    EXPECT_EQ(logged + 1, log().size()) << "sent once, when the queue had room";
    fake_rp_control("eagain", 3);
    ASSERT_EQ(0, tcaGet(dst, &h, 64, 4096));
    EXPECT_EQ(0, std::memcmp(dst, reinterpret_cast<unsigned char*>(mem) + 64, 4096));
    unsigned char* split = alloc(16384, 4096);  // 3 pieces
    fake_rp_control("eagain", 4);
    ASSERT_EQ(0, tcaGet(split, &h, 0, 3 * 4096));
    EXPECT_EQ(0, std::memcmp(split, mem, 3 * 4096));
    // Never clears: the request's deadline ends it; the slot comes back.
    fake_rp_control("eagain", 1000000000);
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t old = 0;
    EXPECT_EQ(-ETIMEDOUT, tcaFaa(&h, 0, 1, &old));
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_GE(ms, kTimeoutMs - 5);
    EXPECT_LT(ms, kTimeoutMs + 2000);
    EXPECT_EQ(8u, mem[0]);
    EXPECT_EQ(free_before, slots().free_count()) << "nothing was sent: the slot is free again";
    EXPECT_EQ(retired, slots().retired_count());
}

TEST_F(FakeRp, EfaultAfterSendingRetiresTheSlot) {
    unsigned char *src = alloc(16384, 16384, 11), *dst = alloc(16384, 16384);
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ, &h));
    ASSERT_EQ(0, tcaGet(dst, &h, 0, 64));
    const std::uint32_t retired = slots().retired_count();
    fake_rp_control("efault", 1);
    tcaRequest r{};
    EXPECT_EQ(0, tcaGetNB(dst, &h, 0, 64, &r)) << "it may have been sent";
    EXPECT_EQ(0u, r.id);
    EXPECT_EQ(-EFAULT, r.result);
    EXPECT_EQ(-EFAULT, tcaWait(&r, 0));
    EXPECT_EQ(retired + 1, slots().retired_count());
    const std::uint64_t dead = log().back().cpl_offset;
    fake_rp_control("efault", 1);
    EXPECT_EQ(-EFAULT, tcaGet(dst, &h, 0, 64));
    EXPECT_EQ(retired + 2, slots().retired_count());
    for (int i = 0; i < 20; ++i)
        ASSERT_EQ(0, tcaGet(dst, &h, 0, 64));
    const auto l = log();
    for (std::size_t i = l.size() - 20; i < l.size(); ++i)
        EXPECT_NE(dead, l[i].cpl_offset) << "a retired slot came back";
}

TEST_F(FakeRp, NonBlockingCallOnAPendingRequestIsBusy) {
    auto* mem = alloc(16384, 16384, 12);
    unsigned char* dst = alloc(16384, 16384);
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(mem, 0, TCA_EXPORT_READ | TCA_EXPORT_ATOMIC, &h));
    fake_rp_control("delay_us", 200000);
    tcaRequest r{};
    ASSERT_EQ(0, tcaGetNB(dst, &h, 0, 64, &r));
    ASSERT_NE(0u, r.id);
    const tcaRequest copy = r;
    EXPECT_EQ(-EBUSY, tcaGetNB(dst, &h, 0, 64, &r));
    EXPECT_EQ(-EBUSY, tcaGetNB(nullptr, &h, 0, 64, &r));
    EXPECT_EQ(-EBUSY, tcaCasNB(&h, 0, 0, 1, &r));
    EXPECT_EQ(-EBUSY, tcaFaaNB(&h, 0, 1, &r));
    EXPECT_EQ(0, std::memcmp(&copy, &r, sizeof r)) << "*req left alone";

    // A second thread collecting the same request at the same time.
    int first = 1;
    std::thread waiter([&] { first = tcaWait(&r, 0); });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    tcaRequest twin = copy;
    EXPECT_EQ(-EBUSY, tcaTest(&twin));
    EXPECT_EQ(-EBUSY, tcaCancel(&twin));
    waiter.join();
    EXPECT_EQ(0, first);
    EXPECT_EQ(0u, r.id);
    EXPECT_EQ(-ENOENT, tcaTest(&twin)) << "gone from the table";
    EXPECT_EQ(-ENOENT, tcaCancel(&twin));
    fake_rp_control("delay_us", 0);
    ASSERT_EQ(0, tcaFaaNB(&h, 0, 1, &r)) << "an ended request may be reused";
    EXPECT_EQ(0, tcaWait(&r, 0));
}

TEST_F(FakeRp, RequestIdsNeverRepeatAcrossFinalize) {
    unsigned char *src = alloc(16384, 16384, 13), *dst = alloc(16384, 16384);
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ, &h));
    fake_rp_control("drop", 1);
    tcaRequest stale{};
    ASSERT_EQ(0, tcaGetNB(dst, &h, 0, 64, &stale));
    ASSERT_NE(0u, stale.id);
    bufs_.clear();
    tcaFinalize();
    ASSERT_EQ(0, tcaInit());
    src = alloc(16384, 16384, 13);
    dst = alloc(16384, 16384);
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ, &h));
    fake_rp_control("delay_us", 50000);
    tcaRequest fresh{};
    ASSERT_EQ(0, tcaGetNB(dst, &h, 0, 64, &fresh));
    EXPECT_GT(fresh.id, stale.id);
    EXPECT_EQ(-ENOENT, tcaTest(&stale)) << "a stale request names nothing";
    EXPECT_EQ(0, tcaWait(&fresh, 0));
}

TEST_F(FakeRp, FreeRefusesABufferAPendingGetRepliesInto) {
    unsigned char* src = alloc(16384, 16384, 14);
    unsigned char* dst = alloc(16384, 16384);
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ, &h));
    fake_rp_control("delay_us", 100000);
    tcaRequest r{};
    ASSERT_EQ(0, tcaGetNB(dst, &h, 0, 64, &r));
    EXPECT_EQ(-EBUSY, tcaFree(dst));
    EXPECT_EQ(0, tcaWait(&r, 0));
    bufs_.pop_back();
    EXPECT_EQ(0, tcaFree(dst));
    // Past its deadline a request no longer holds the buffer.
    fake_rp_control("delay_us", 0);
    dst = alloc(16384, 16384);
    fake_rp_control("drop", 1);
    ASSERT_EQ(0, tcaGetNB(dst, &h, 0, 64, &r));
    EXPECT_EQ(-EBUSY, tcaFree(dst));
    std::this_thread::sleep_for(std::chrono::milliseconds(kTimeoutMs + 50));
    bufs_.pop_back();
    EXPECT_EQ(0, tcaFree(dst));
    EXPECT_EQ(-ETIMEDOUT, tcaWait(&r, 0));
}

// Pins end in any order, several per buffer: each buffer stays busy while
// one of its own gets is pending, and only then.
TEST_F(FakeRp, FreeWaitsForEveryGetIntoTheBufferInAnyOrder) {
    unsigned char* src = alloc(16384, 16384, 16);
    unsigned char* dst = alloc(16384, 16384);
    unsigned char* other = alloc(16384, 16384);
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ, &h));
    fake_rp_control("delay_us", 20000);
    tcaRequest r[3]{}, o{};
    for (int i = 0; i < 3; ++i)
        ASSERT_EQ(0, tcaGetNB(dst + 64 * i, &h, 64 * i, 64, &r[i]));
    ASSERT_EQ(0, tcaGetNB(other, &h, 0, 64, &o));
    EXPECT_EQ(0, tcaWait(&r[1], 0));
    EXPECT_EQ(-EBUSY, tcaFree(dst));
    EXPECT_EQ(0, tcaWait(&o, 0));
    bufs_.pop_back();
    EXPECT_EQ(0, tcaFree(other)) << "its only get ended";
    EXPECT_EQ(0, tcaWait(&r[2], 0));
    EXPECT_EQ(-EBUSY, tcaFree(dst));
    EXPECT_EQ(0, tcaWait(&r[0], 0));
    bufs_.pop_back();
    EXPECT_EQ(0, tcaFree(dst));
}

TEST_F(FakeRp, RetiredSlotsGetAFreshArea) {
    const std::size_t n = 1u << 20;
    unsigned char* src = alloc(n, n, 15);
    unsigned char* dst = alloc(n, 4096);  // 256 chunks: a get of 64 B per chunk
    tcaHandle h;
    ASSERT_EQ(0, tcaExport(src, 0, TCA_EXPORT_READ, &h));
    ASSERT_EQ(0, tcaGet(dst, &h, 0, 64));
    fake_rp_control("drop", 1000000000);  // a target that never answers
    std::uint64_t timed_out = 0;
    for (int batch = 0; batch < 3; ++batch) {
        std::vector<tcaRequest> rs(2048);
        for (std::size_t i = 0; i < rs.size(); ++i) {
            tcaRequest& r = rs[i];
            const std::size_t at = (i % 256) * 4096;
            ASSERT_EQ(0, tcaGetNB(dst + at, &h, at, 64, &r)) << "batch " << batch;
            ASSERT_EQ(1u, r.pieces);
        }
        for (tcaRequest& r : rs) {
            EXPECT_EQ(-ETIMEDOUT, tcaWait(&r, 0));
            timed_out += r.pieces;
        }
    }
    EXPECT_GT(timed_out, 4096u);
    fake_rp_control("reset", 0);
    std::memset(dst, 0, n);
    ASSERT_EQ(0, tcaGet(dst, &h, 0, n)) << "the pool was not exhausted";
    EXPECT_EQ(0, std::memcmp(dst, src, n));
    EXPECT_GE(tca::context_if_open()->rp_if_ready()->areas().count(), 3u);
}
