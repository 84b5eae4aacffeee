// SPDX-License-Identifier: MIT
// run_exchange (the timed loop) with two real threads over shared memory
// standing in for the mailboxes: 8-byte stores and loads, so readers see
// tears exactly as over MMIO. Also the timeout path.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "exchange.hpp"
#include "test_util.hpp"

using namespace tca;

namespace {

constexpr std::size_t kWords = sizeof(MailboxRecord) / 8;

struct SharedSlot {
    std::atomic<std::uint64_t> w[kWords] = {};
};

class MemMailbox final : public MailboxIo {
public:
    MemMailbox(SharedSlot* out, SharedSlot* in) : out_(out), in_(in) {}
    void write(const MailboxRecord& r) noexcept override {
        std::uint64_t w[kWords];
        std::memcpy(w, &r, sizeof r);
        for (std::size_t i = 0; i < kWords; ++i)
            out_->w[i].store(w[i], std::memory_order_relaxed);
    }
    bool read(MailboxRecord* r) noexcept override {
        std::uint64_t w[kWords];
        for (std::size_t i = 0; i < kWords; ++i)
            w[i] = in_->w[i].load(std::memory_order_relaxed);
        std::memcpy(r, w, sizeof *r);
        return record_valid(*r);
    }

private:
    SharedSlot *out_, *in_;
};

ExchangeTiming fast(int timeout_ms) {
    ExchangeTiming t;
    t.poll = std::chrono::microseconds(20);
    t.rewrite = std::chrono::microseconds(200);
    t.rewrite_max = std::chrono::microseconds(3200);
    t.timeout_ms = timeout_ms;
    return t;
}

// One side: `count` exchanges in a row, tags alternating; results stored.
void run_side(std::uint32_t self, std::uint32_t peer, MailboxIo* io, unsigned count,
              std::chrono::milliseconds delay, std::vector<tcaHandle>* got, int* rc) {
    std::this_thread::sleep_for(delay);
    PeerHistory history;
    for (unsigned n = 0; n < count; ++n) {
        const tcaHandle mine = tcatest::one_piece(self, 0x1000ull * (n + 1), 8 + n);
        Handshake hs(self, peer, n % 2 ? 0x2222 : 0x1111, fresh_nonce(), mine, history);
        *rc = run_exchange(*io, hs, fast(5000));
        if (*rc)
            return;
        got->push_back(hs.theirs());
        history = hs.completed();
    }
}

}  // namespace

TEST(ExchangeLoop, TwoThreadsManyExchangesOneLate) {
    SharedSlot to0, to1;  // to0 = node 0's mailbox slot for node 1
    // Garbage and stale-looking data first: must be ignored.
    for (std::size_t i = 0; i < kWords; ++i) {
        to0.w[i] = 0xdeadbeef00000000ull + i;
        to1.w[i] = ~i;
    }
    MemMailbox io0(&to1, &to0), io1(&to0, &to1);
    std::vector<tcaHandle> got0, got1;
    int rc0 = -1, rc1 = -1;
    constexpr unsigned kCount = 25;
    std::thread t0(run_side, 0, 1, &io0, kCount, std::chrono::milliseconds(0), &got0, &rc0);
    std::thread t1(run_side, 1, 0, &io1, kCount, std::chrono::milliseconds(50), &got1, &rc1);
    t0.join();
    t1.join();
    ASSERT_EQ(0, rc0);
    ASSERT_EQ(0, rc1);
    ASSERT_EQ(kCount, got0.size());
    ASSERT_EQ(kCount, got1.size());
    for (unsigned n = 0; n < kCount; ++n) {
        const tcaHandle h0 = tcatest::one_piece(0, 0x1000ull * (n + 1), 8 + n);
        const tcaHandle h1 = tcatest::one_piece(1, 0x1000ull * (n + 1), 8 + n);
        EXPECT_EQ(0, std::memcmp(&got0[n], &h1, sizeof h1)) << n;
        EXPECT_EQ(0, std::memcmp(&got1[n], &h0, sizeof h0)) << n;
    }
}

TEST(ExchangeLoop, TimesOutWithoutPeer) {
    SharedSlot a, b;
    MemMailbox io(&a, &b);
    const tcaHandle mine = tcatest::one_piece(0, 0x1000, 8);
    Handshake hs(0, 1, 1, fresh_nonce(), mine, {});
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(-ETIMEDOUT, run_exchange(io, hs, fast(60)));
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_GE(ms, 60);
    EXPECT_LT(ms, 2000);
    // Our record was written for the peer to find.
    MailboxRecord r;
    MemMailbox peer_view(&b, &a);
    ASSERT_TRUE(peer_view.read(&r));
    EXPECT_EQ(0u, r.sender);
    EXPECT_EQ(0u, r.ack);
}

// Waiting alone for 300 ms: rewrites back off (200 µs doubling to 3.2 ms
// gives about 1 + 5 + (300 - 6.2) / 3.2 ≈ 98 writes, not 1500).
TEST(ExchangeLoop, RewritesBackOff) {
    struct Counting final : MailboxIo {
        int writes = 0;
        void write(const MailboxRecord&) noexcept override { ++writes; }
        bool read(MailboxRecord*) noexcept override { return false; }
    } io;
    const tcaHandle mine = tcatest::one_piece(0, 0x1000, 8);
    Handshake hs(0, 1, 1, fresh_nonce(), mine, {});
    EXPECT_EQ(-ETIMEDOUT, run_exchange(io, hs, fast(300)));
    EXPECT_GE(io.writes, 50);
    EXPECT_LE(io.writes, 110);
}

TEST(Nonce, NonZeroAndDistinct) {
    std::uint64_t prev = 0;
    for (int i = 0; i < 1000; ++i) {
        const std::uint64_t n = fresh_nonce();
        EXPECT_NE(0u, n);
        EXPECT_NE(prev, n);
        prev = n;
    }
}
