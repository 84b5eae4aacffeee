// SPDX-License-Identifier: MIT
// Registered memory and names (tcaRegister, tcaPublish, tcaLookupName)
// against the fake driver (fake/fake_names.c, LD_PRELOADed by ctest). The
// process is node 0 and looks up its own names (the card loops such
// requests back).
#include <gtest/gtest.h>
#include <peach2/peach2_uapi.h>
#include <tca/tca.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "test_util.hpp"

// The fake driver's read-proxy test control (fake/fake_rp.c).
extern "C" void fake_rp_control(const char* what, long value) __attribute__((weak));

namespace {

class FakeNames : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = tcatest::use_fake_device("names");
        setenv("TCA_RP_TIMEOUT_MS", "500", 1);
        setenv("TCA_FAKE_CHUNK", "8192", 1);  // registrations come out in pieces
    }
    static void TearDownTestSuite() {
        tcaFinalize();
        tcatest::remove_fake_device(dir_);
    }
    void SetUp() override { ASSERT_EQ(0, tcaInit()); }

    static std::string dir_;
};
std::string FakeNames::dir_;

// Heap memory, registered: its contents survive, DMA reads it and a store
// through its handle (as another node would make) lands in it.
TEST_F(FakeNames, RegisteredHeapMemoryIsDmaSourceAndTarget) {
    constexpr std::size_t kLen = 40000;  // not page aligned, several pieces
    std::unique_ptr<unsigned char[]> mem(new unsigned char[kLen + 100]);
    unsigned char* p = mem.get() + 37;
    for (std::size_t i = 0; i < kLen; ++i)
        p[i] = static_cast<unsigned char>(i * 7 + 3);
    ASSERT_EQ(0, tcaRegister(p, kLen));
    for (std::size_t i = 0; i < kLen; ++i)
        ASSERT_EQ(p[i], static_cast<unsigned char>(i * 7 + 3)) << i;

    tcaHandle h;
    ASSERT_EQ(0, tcaGetHandle(p, kLen, &h));
    EXPECT_GT(h.nr_chunks, 1u);
    const char msg[] = "through the window";
    ASSERT_EQ(0, tcaPut(&h, 9000, msg, sizeof msg));
    EXPECT_EQ(0, std::memcmp(p + 9000, msg, sizeof msg));

    // DMA from the registered memory into a tcaMalloc buffer.
    void* dst = nullptr;
    ASSERT_EQ(0, tcaMalloc(&dst, 65536));
    tcaHandle dh;
    ASSERT_EQ(0, tcaGetHandle(dst, 0, &dh));
    unsigned char* src = mem.get() + 100;  // 4-byte aligned (new[] aligns to 16)
    const std::size_t off = reinterpret_cast<std::uintptr_t>(src) % 16;
    ASSERT_EQ(0, tcaDmaPut(&dh, off, src, 16384, nullptr, nullptr));
    EXPECT_EQ(0, std::memcmp(static_cast<unsigned char*>(dst) + off, src, 16384));

    EXPECT_EQ(TCA_ENOTBUF, tcaDeregister(p, kLen - 5000));  // not a registration
    EXPECT_EQ(0, tcaDeregister(p, kLen));
    EXPECT_EQ(TCA_ENOTBUF, tcaDeregister(p, kLen));
    EXPECT_EQ(0, tcaFree(dst));
}

TEST_F(FakeNames, OverlappingRegistrationsFindTheOneThatHoldsTheRange) {
    std::vector<unsigned char> v(100000);
    ASSERT_EQ(0, tcaRegister(v.data(), 10000));
    ASSERT_EQ(0, tcaRegister(v.data() + 5000, 90000));
    tcaHandle h;
    EXPECT_EQ(0, tcaGetHandle(v.data() + 6000, 50000, &h));
    EXPECT_EQ(0, tcaGetHandle(v.data() + 100, 100, &h));
    EXPECT_EQ(0, tcaDeregister(v.data(), 10000));
    EXPECT_EQ(TCA_ENOTBUF, tcaGetHandle(v.data() + 100, 100, &h));  // only that one held it
    EXPECT_EQ(0, tcaDeregister(v.data() + 5000, 90000));
}

// Registration moves whole pages into the fake's memory file, and the
// rest of a page is often someone else's heap: ibv_srq_pingpong registers
// 64-byte buffers next to the Verbs engine's mutex, which the engine's
// thread takes all the time. A write by another thread during the move must
// not be lost (a lost mutex word left that thread asleep for good).
TEST_F(FakeNames, WritesOfOtherThreadsToTheSamePageSurviveRegistration) {
    struct Page {
        unsigned char buf[64];
        std::mutex lock;
        std::atomic<std::uint64_t> count{0};
    };
    for (int round = 0; round < 20; ++round) {
        void* mem = std::aligned_alloc(4096, 4096);
        ASSERT_NE(nullptr, mem);
        Page* page = new (mem) Page;
        std::atomic<bool> stop{false}, ended{false};
        std::uint64_t done = 0;
        std::thread writer([&] {
            while (!stop.load(std::memory_order_relaxed)) {
                std::lock_guard<std::mutex> g(page->lock);
                page->count.fetch_add(1);
                ++done;
            }
            ended = true;
        });
        while (page->count.load() < 1000)
            std::this_thread::yield();
        ASSERT_EQ(0, tcaRegister(page->buf, sizeof page->buf)) << "round " << round;
        // A lost write shows as a mutex that stays locked, a writer that
        // sleeps for good (its wake-up went to the old page) or a count short.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        bool locked = false;
        while (!(locked = page->lock.try_lock()) && std::chrono::steady_clock::now() < deadline)
            std::this_thread::yield();
        ASSERT_TRUE(locked) << "round " << round << ": the mutex stayed locked";
        page->lock.unlock();
        stop = true;
        while (!ended && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (!ended) {
            writer.detach();  // asleep for good: nothing left to do but report it
            FAIL() << "round " << round << ": the writer never woke up";
        }
        writer.join();
        EXPECT_EQ(done, page->count.load()) << "round " << round << ": increments lost";
        EXPECT_EQ(0, tcaDeregister(page->buf, sizeof page->buf));
        page->~Page();
        std::free(mem);
    }
}

TEST_F(FakeNames, LookupReturnsPiecesFlagsInfoAndExport) {
    void* buf = nullptr;
    ASSERT_EQ(0, tcaMalloc(&buf, 60000));
    auto* b = static_cast<unsigned char*>(buf);
    for (int i = 0; i < 60000; ++i)
        b[i] = static_cast<unsigned char>(i);
    const char info[] = "ring geometry";
    std::uint32_t name = 0;
    ASSERT_EQ(0, tcaPublish(b + 1000, 50000, TCA_NAME_KEY, TCA_NAME_WRITE | TCA_NAME_READ, 42, info,
                            sizeof info, &name));
    EXPECT_NE(0u, name);

    tcaNameInfo n;
    ASSERT_EQ(0, tcaLookupName(0, TCA_NAME_KEY, name, 0, &n));
    EXPECT_EQ(TCA_NAME_KEY, n.kind);
    EXPECT_EQ(name, n.name);
    EXPECT_EQ(TCA_NAME_WRITE | TCA_NAME_READ, n.flags);
    EXPECT_EQ(42u, n.group);
    EXPECT_EQ(50000u, n.size);
    EXPECT_GT(n.lease_ms, 0u);
    EXPECT_EQ(0, std::memcmp(n.info, info, sizeof info));
    EXPECT_EQ(50000u, n.handle.size);
    EXPECT_NE(0u, n.handle.export_id);

    // The handle names the published bytes: a get through its export reads them.
    void* dst = nullptr;
    ASSERT_EQ(0, tcaMalloc(&dst, 4096));
    ASSERT_EQ(0,
              tcaGet(static_cast<unsigned char*>(dst) + (1000 + 2000) % 16, &n.handle, 2000, 256));
    EXPECT_EQ(0, std::memcmp(static_cast<unsigned char*>(dst) + (3000 % 16), b + 3000, 256));

    // From an offset on.
    ASSERT_EQ(0, tcaLookupName(0, TCA_NAME_KEY, name, 30000, &n));
    EXPECT_EQ(30000u, n.offset);
    EXPECT_EQ(20000u, n.handle.size);

    EXPECT_EQ(TCA_EREMOTE, tcaLookupName(0, TCA_NAME_KEY, name, 50000, &n));  // RP_RANGE
    EXPECT_EQ(TCA_ENOTEXPORTED, tcaLookupName(0, TCA_NAME_QP, name, 0, &n));  // other kind
    EXPECT_EQ(0, tcaUnpublish(TCA_NAME_KEY, name));
    EXPECT_EQ(TCA_ENOTEXPORTED, tcaLookupName(0, TCA_NAME_KEY, name, 0, &n));
    EXPECT_EQ(-ENOENT, tcaUnpublish(TCA_NAME_KEY, name));

    // Freeing the buffer ends its names.
    ASSERT_EQ(0, tcaPublish(b, 100, TCA_NAME_QP, 0, 0, nullptr, 0, &name));
    EXPECT_LT(name, 1u << 24);
    ASSERT_EQ(0, tcaLookupName(0, TCA_NAME_QP, name, 0, &n));
    EXPECT_EQ(0u, n.handle.export_id);
    EXPECT_EQ(0, tcaFree(buf));
    EXPECT_EQ(TCA_ENOTEXPORTED, tcaLookupName(0, TCA_NAME_QP, name, 0, &n));
    EXPECT_EQ(0, tcaFree(dst));
}

// A LOOKUP whose answer does not come within 100 ms is sent again (each
// try waiting twice as long as the one before), the earlier tries still
// awaited: one that was lost costs 100 ms, not the request timeout (500 ms
// here), a slow answer is taken when it comes, and the late answers of the
// other tries (each lands in a buffer of its own) spoil nothing after.
TEST_F(FakeNames, LookupWhoseAnswerIsLateIsSentAgain) {
    ASSERT_NE(nullptr, fake_rp_control) << "needs the fake driver's test control";
    void* buf = nullptr;
    ASSERT_EQ(0, tcaMalloc(&buf, 8192));
    std::uint32_t name = 0;
    ASSERT_EQ(0, tcaPublish(buf, 8192, TCA_NAME_KEY, TCA_NAME_WRITE, 7, nullptr, 0, &name));
    tcaNameInfo n;
    const auto ms_since = [](std::chrono::steady_clock::time_point t0) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - t0)
            .count();
    };

    ASSERT_EQ(0, tcaLookupName(0, TCA_NAME_KEY, name, 0, &n));
    EXPECT_EQ(1u, n.tries);
    EXPECT_EQ(1u, n.answered_by);

    fake_rp_control("drop", 1);  // the first request is never answered
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(0, tcaLookupName(0, TCA_NAME_KEY, name, 0, &n));
    EXPECT_EQ(name, n.name);
    EXPECT_EQ(8192u, n.size);
    EXPECT_EQ(2u, n.tries);
    EXPECT_EQ(2u, n.answered_by);
    EXPECT_GE(ms_since(t0), 95);
    EXPECT_LT(ms_since(t0), 450);

    fake_rp_control("delay_us", 300000);  // every answer 300 ms late
    t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(0, tcaLookupName(0, TCA_NAME_KEY, name, 0, &n));
    EXPECT_EQ(name, n.name);
    EXPECT_EQ(7u, n.group);
    EXPECT_GE(n.tries, 2u);
    EXPECT_EQ(1u, n.answered_by);
    // The first try's answer, not the resend's (100 ms later): a slow target
    // is no slower for the resends.
    EXPECT_GE(ms_since(t0), 295);
    EXPECT_LT(ms_since(t0), 390);
    fake_rp_control("reset", 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the late answers land
    ASSERT_EQ(0, tcaLookupName(0, TCA_NAME_KEY, name, 0, &n));
    EXPECT_EQ(name, n.name);

    // No answer at all: the request timeout ends it (tries of 100, 200 and
    // the last 200 ms).
    fake_rp_control("drop", 1000000);
    t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(-ETIMEDOUT, tcaLookupName(0, TCA_NAME_KEY, name, 0, &n));
    EXPECT_GE(ms_since(t0), 495);
    EXPECT_LT(ms_since(t0), 900);
    fake_rp_control("reset", 0);
    EXPECT_EQ(0, tcaFree(buf));
}

TEST_F(FakeNames, ArgumentErrors) {
    std::uint32_t name;
    char c = 0;
    EXPECT_EQ(-EINVAL, tcaPublish(&c, 1, 7, 0, 0, nullptr, 0, &name));
    EXPECT_EQ(-EINVAL, tcaPublish(&c, 1, TCA_NAME_KEY, 1u << 5, 0, nullptr, 0, &name));
    EXPECT_EQ(-EINVAL, tcaPublish(&c, 1, TCA_NAME_KEY, 0, 0, &c, TCA_NAME_INFO + 1, &name));
    EXPECT_EQ(TCA_ENOTBUF, tcaPublish(&c, 1, TCA_NAME_KEY, 0, 0, nullptr, 0, &name));
    tcaNameInfo n;
    EXPECT_EQ(TCA_ENODE, tcaLookupName(5, TCA_NAME_KEY, 1, 0, &n));
    EXPECT_EQ(-EINVAL, tcaRegister(nullptr, 10));
    EXPECT_EQ(-EINVAL, tcaRegister(&c, 0));
    int local = 0;  // the fake cannot move the caller's own stack
    EXPECT_EQ(-EFAULT, tcaRegister(&local, sizeof local));
}

}  // namespace
