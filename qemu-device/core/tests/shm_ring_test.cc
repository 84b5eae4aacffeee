// The same-host cable's shared-memory ring: a byte stream with
// backpressure, and a peer that scribbles over the shared memory breaks the
// ring (an error the transport reports) but never makes us touch memory
// outside it (the tests run under ASan/UBSan).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "peach2_shm_ring.h"

namespace {

constexpr size_t kData = 4096;

struct Shared {
    std::vector<unsigned char> mem = std::vector<unsigned char>(peach2_shm_ring_mem_size(kData));
    peach2_shm_ring* tx = nullptr;
    peach2_shm_ring* rx = nullptr;
    Shared() {
        char err[128] = "";
        tx = peach2_shm_ring_create(mem.data(), mem.size(), kData, err, sizeof err);
        rx = peach2_shm_ring_attach(mem.data(), mem.size(), err, sizeof err);
    }
    ~Shared() {
        peach2_shm_ring_free(tx);
        peach2_shm_ring_free(rx);
    }
    // The header's index words, as a misbehaving peer sees them.
    uint64_t& word(size_t off) { return *reinterpret_cast<uint64_t*>(mem.data() + off); }
};

constexpr size_t kHeadOff = 64, kTailOff = 128;

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
    std::vector<unsigned char> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<unsigned char>(i * 7 + seed);
    return v;
}

TEST(ShmRing, SizesAndHeaderChecks) {
    EXPECT_EQ(peach2_shm_ring_mem_size(4096), PEACH2_SHM_RING_HEADER + 4096u);
    EXPECT_EQ(peach2_shm_ring_mem_size(3000), 0u);
    EXPECT_EQ(peach2_shm_ring_mem_size(1024), 0u);
    std::vector<unsigned char> mem(peach2_shm_ring_mem_size(kData));
    char err[128] = "";
    EXPECT_EQ(peach2_shm_ring_attach(mem.data(), mem.size(), err, sizeof err), nullptr);
    EXPECT_NE(std::strstr(err, "magic"), nullptr) << err;
    peach2_shm_ring* tx = peach2_shm_ring_create(mem.data(), mem.size(), kData, err, sizeof err);
    ASSERT_NE(tx, nullptr);
    // A ring that claims more data than the memory holds is refused.
    EXPECT_EQ(peach2_shm_ring_attach(mem.data(), mem.size() - 1, err, sizeof err), nullptr);
    reinterpret_cast<uint64_t*>(mem.data())[1] = 1ull << 40;  // data_size
    EXPECT_EQ(peach2_shm_ring_attach(mem.data(), mem.size(), err, sizeof err), nullptr);
    EXPECT_NE(std::strstr(err, "size"), nullptr) << err;
    peach2_shm_ring_free(tx);
}

TEST(ShmRing, StreamWrapsAround) {
    Shared s;
    ASSERT_TRUE(s.tx && s.rx);
    // Odd sizes so that writes and reads straddle the end of the data.
    std::vector<unsigned char> sent, got;
    for (unsigned k = 0; k < 50; ++k) {
        const auto chunk = pattern(1000 + k, k);
        ASSERT_EQ(peach2_shm_ring_write(s.tx, chunk.data(), chunk.size()), chunk.size());
        sent.insert(sent.end(), chunk.begin(), chunk.end());
        std::vector<unsigned char> buf(777 + k);
        bool kick = true;
        size_t n;
        while ((n = peach2_shm_ring_read(s.rx, buf.data(), buf.size(), &kick)) > 0) {
            EXPECT_FALSE(kick);
            got.insert(got.end(), buf.begin(), buf.begin() + static_cast<long>(n));
        }
    }
    EXPECT_EQ(got, sent);
    EXPECT_EQ(peach2_shm_ring_error(s.tx), nullptr);
    EXPECT_EQ(peach2_shm_ring_error(s.rx), nullptr);
}

TEST(ShmRing, FullRingPushesBackAndAsksForAKick) {
    Shared s;
    const auto big = pattern(kData + 100, 3);
    EXPECT_EQ(peach2_shm_ring_write(s.tx, big.data(), big.size()), kData);
    EXPECT_EQ(peach2_shm_ring_write(s.tx, big.data(), 1), 0u);
    std::vector<unsigned char> buf(10);
    bool kick = false;
    EXPECT_EQ(peach2_shm_ring_read(s.rx, buf.data(), buf.size(), &kick), 10u);
    EXPECT_TRUE(kick);  // the producer waited: wake it
    EXPECT_EQ(peach2_shm_ring_read(s.rx, buf.data(), buf.size(), &kick), 10u);
    EXPECT_FALSE(kick);  // once per wait
    EXPECT_EQ(peach2_shm_ring_write(s.tx, big.data() + kData, 20), 20u);
    EXPECT_EQ(peach2_shm_ring_readable(s.rx), kData);
}

TEST(ShmRing, APollingConsumerNeedsNoKickAndLooksOnceMoreWhenItStops) {
    Shared s;
    const auto bytes = pattern(8, 1);
    EXPECT_TRUE(peach2_shm_ring_consumer_needs_kick(s.tx));  // asleep at first
    EXPECT_EQ(peach2_shm_ring_set_polling(s.rx, true), 0u);
    ASSERT_EQ(peach2_shm_ring_write(s.tx, bytes.data(), bytes.size()), bytes.size());
    EXPECT_FALSE(peach2_shm_ring_consumer_needs_kick(s.tx));
    // Written while it polled, not read yet: stopping says so (no lost wake-up).
    EXPECT_EQ(peach2_shm_ring_set_polling(s.rx, false), bytes.size());
    EXPECT_TRUE(peach2_shm_ring_consumer_needs_kick(s.tx));
    // A broken ring asks for nothing.
    s.word(kTailOff) = 1ull << 62;
    EXPECT_EQ(peach2_shm_ring_write(s.tx, bytes.data(), bytes.size()), 0u);
    EXPECT_FALSE(peach2_shm_ring_consumer_needs_kick(s.tx));
}

TEST(ShmRing, PeerIndexOutOfRangeBreaksTheRing) {
    {
        Shared s;  // the producer claims more than the ring holds
        s.word(kHeadOff) = kData + 1;
        std::vector<unsigned char> buf(64);
        bool kick;
        EXPECT_EQ(peach2_shm_ring_read(s.rx, buf.data(), buf.size(), &kick), 0u);
        EXPECT_NE(peach2_shm_ring_error(s.rx), nullptr);
        s.word(kHeadOff) = 8;  // and a broken ring stays broken
        EXPECT_EQ(peach2_shm_ring_read(s.rx, buf.data(), buf.size(), &kick), 0u);
    }
    {
        Shared s;  // the producer's index goes backwards
        const auto d = pattern(100, 1);
        peach2_shm_ring_write(s.tx, d.data(), d.size());
        std::vector<unsigned char> buf(100);
        bool kick;
        peach2_shm_ring_read(s.rx, buf.data(), buf.size(), &kick);
        s.word(kHeadOff) = 50;
        EXPECT_EQ(peach2_shm_ring_readable(s.rx), 0u);
        EXPECT_NE(peach2_shm_ring_error(s.rx), nullptr);
    }
    {
        Shared s;  // the consumer claims to have read bytes never written
        s.word(kTailOff) = 5000;
        const auto d = pattern(10, 1);
        EXPECT_EQ(peach2_shm_ring_write(s.tx, d.data(), d.size()), 0u);
        EXPECT_NE(peach2_shm_ring_error(s.tx), nullptr);
    }
}

TEST(ShmRing, HeaderRewrittenAfterAttachIsIgnored) {
    Shared s;
    reinterpret_cast<uint64_t*>(s.mem.data())[1] = 1ull << 30;  // data_size, after attach
    const auto d = pattern(kData, 9);
    EXPECT_EQ(peach2_shm_ring_write(s.tx, d.data(), d.size()), kData);
    std::vector<unsigned char> buf(kData);
    bool kick;
    EXPECT_EQ(peach2_shm_ring_read(s.rx, buf.data(), buf.size(), &kick), kData);
    EXPECT_EQ(buf, d);
}

// A peer that writes random words all over the shared memory while we
// read: whatever comes out, nothing outside the ring is touched (ASan) and
// at most the ring's size is ever readable.
TEST(ShmRing, GarbageFromAPeerNeverEscapesTheRing) {
    Shared s;
    std::mt19937_64 rng(13);
    std::vector<unsigned char> buf(3 * kData);
    for (int i = 0; i < 20000; ++i) {
        const size_t off = (rng() % (s.mem.size() / 8)) * 8;
        s.word(off) = (rng() & 1) ? rng() : rng() % (2 * kData);
        bool kick;
        EXPECT_LE(peach2_shm_ring_read(s.rx, buf.data(), buf.size(), &kick), kData);
        const size_t n = peach2_shm_ring_write(s.tx, buf.data(), rng() % (2 * kData));
        EXPECT_LE(n, kData);
    }
}

// Two threads, as two QEMUs: a long stream arrives whole and in order.
TEST(ShmRing, TwoThreadsStreamInOrder) {
    Shared s;
    constexpr size_t kTotal = 8u << 20;
    std::thread producer([&] {
        const auto src = pattern(kTotal, 5);
        size_t done = 0;
        while (done < kTotal)
            done += peach2_shm_ring_write(s.tx, src.data() + done,
                                          std::min<size_t>(1500, kTotal - done));
    });
    const auto want = pattern(kTotal, 5);
    std::vector<unsigned char> got(kTotal);
    size_t done = 0;
    while (done < kTotal) {
        bool kick;
        done += peach2_shm_ring_read(s.rx, got.data() + done, std::min<size_t>(999, kTotal - done),
                                     &kick);
    }
    producer.join();
    EXPECT_TRUE(got == want);
    EXPECT_EQ(peach2_shm_ring_error(s.rx), nullptr);
}

}  // namespace
