// SPDX-License-Identifier: MIT
// Mailbox records: checksum, and detection of torn reads (a mix of the
// words of two records, as a reader can see while the writer rewrites).
#include <array>
#include <cstring>
#include <random>

#include "exchange.hpp"
#include "test_util.hpp"

using namespace tca;

namespace {

constexpr std::size_t kWords = sizeof(MailboxRecord) / 8;
using Words = std::array<std::uint64_t, kWords>;

Words words_of(const MailboxRecord& r) {
    Words w;
    std::memcpy(w.data(), &r, sizeof r);
    return w;
}

MailboxRecord record_of(const Words& w) {
    MailboxRecord r;
    std::memcpy(&r, w.data(), sizeof r);
    return r;
}

MailboxRecord sample(std::uint64_t nonce, std::uint64_t ack, std::uint32_t tag = 7) {
    MailboxRecord r{};
    r.tag = tag;
    r.sender = 1;
    r.nonce = nonce;
    r.ack = ack;
    r.handle = tcatest::one_piece(1, 0x3000, 512);
    seal_record(r);
    return r;
}

}  // namespace

TEST(Record, FitsASlot) {
    EXPECT_LE(sizeof(MailboxRecord), PEACH2_MAILBOX_SLOT_SIZE);
    EXPECT_EQ(0u, sizeof(MailboxRecord) % 8);
}

TEST(Record, SealedIsValidZeroIsNot) {
    EXPECT_TRUE(record_valid(sample(11, 0)));
    MailboxRecord zero{};
    EXPECT_FALSE(record_valid(zero));
    MailboxRecord ones;
    std::memset(&ones, 0xff, sizeof ones);
    EXPECT_FALSE(record_valid(ones));
}

TEST(Record, EveryWordChangeIsDetected) {
    const Words good = words_of(sample(0x1234, 0x5678));
    for (std::size_t i = 0; i < kWords; ++i)
        for (std::uint64_t flip : {1ull, 1ull << 63, 0xffffffffull}) {
            Words w = good;
            w[i] ^= flip;
            EXPECT_FALSE(record_valid(record_of(w))) << "word " << i;
        }
}

// The realistic tear: a rewrite that changes only the ack (and thus the
// checksum). Every prefix/suffix split of old and new must be rejected
// unless it equals one of them.
TEST(Record, TornAckUpdateIsDetected) {
    const Words a = words_of(sample(0xabc, 0));
    const Words b = words_of(sample(0xabc, 0xdef));
    for (std::size_t split = 0; split <= kWords; ++split) {
        Words mixed;
        for (std::size_t i = 0; i < kWords; ++i)
            mixed[i] = i < split ? b[i] : a[i];
        const bool is_a = mixed == a, is_b = mixed == b;
        EXPECT_EQ(is_a || is_b, record_valid(record_of(mixed))) << "split " << split;
    }
}

TEST(Record, RandomTearsBetweenUnrelatedRecordsAreDetected) {
    const Words a = words_of(sample(0x1111, 0x2222, 1));
    const Words b = words_of(sample(0x3333, 0x4444, 2));
    std::mt19937_64 rng(42);
    for (int n = 0; n < 20000; ++n) {
        Words mixed;
        for (std::size_t i = 0; i < kWords; ++i)
            mixed[i] = (rng() & 1) ? a[i] : b[i];
        if (mixed == a || mixed == b)
            continue;
        ASSERT_FALSE(record_valid(record_of(mixed)));
    }
}
