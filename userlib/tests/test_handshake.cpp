// SPDX-License-Identifier: MIT
// The tcaExchange handshake state machine against an in-memory model of two
// mailboxes: simultaneous and late starts, stale records from earlier runs,
// torn (word-by-word) delivery in random interleavings, back-to-back
// exchanges, and tags that never pair.
#include <array>
#include <cstring>
#include <deque>
#include <optional>
#include <random>
#include <string>

#include "exchange.hpp"
#include "test_util.hpp"

using namespace tca;

namespace {

constexpr std::size_t kWords = sizeof(MailboxRecord) / 8;
using Slot = std::array<std::uint64_t, kWords>;

bool same(const tcaHandle& a, const tcaHandle& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Two nodes, each with the one mailbox slot the other writes. A write is a
// queue of 8-byte stores in address order (one in-order link); the
// scheduler delivers some of them at a time, so readers can see tears.
class Sim {
public:
    struct Side {
        std::uint32_t id = 0, peer = 0;
        std::vector<tcaHandle> mine;  // handle offered in exchange n
        std::vector<std::uint32_t> tags;
        std::vector<tcaHandle> got;  // handle received in exchange n
        std::optional<Handshake> hs;
        PeerHistory history;
        std::deque<std::pair<std::size_t, std::uint64_t>> in_flight;
        std::uint64_t last_ack = ~0ull;
        int since_write = 0;
        bool active = true;
        bool done() const { return got.size() == mine.size(); }
    };

    Sim(std::uint64_t seed, std::uint32_t id0, std::uint32_t id1, unsigned exchanges,
        bool alternate_tags)
        : rng_(seed) {
        side_[0].id = side_[1].peer = id0;
        side_[1].id = side_[0].peer = id1;
        for (int s = 0; s < 2; ++s)
            for (unsigned n = 0; n < exchanges; ++n) {
                side_[s].mine.push_back(
                    tcatest::one_piece(side_[s].id, 0x10000ull * (n + 1), 64 + n + 1000 * s));
                side_[s].tags.push_back(alternate_tags && n % 2 ? 0xbbbb : 0xaaaa);
            }
    }

    Side& side(int i) { return side_[i]; }
    Slot& mailbox(int i) { return mailbox_[i]; }

    // A valid record "from an earlier run" in side i's mailbox.
    void plant_stale(int i, std::uint32_t tag) {
        MailboxRecord r{};
        r.tag = tag;
        r.sender = side_[i].peer;
        r.nonce = rng_() | 1;
        r.ack = rng_() | 1;
        r.prev_tag = tag;
        r.prev_nonce = rng_() | 1;
        r.prev_ack = rng_() | 1;
        r.handle = tcatest::one_piece(side_[i].peer, 0x7770000, 99);
        seal_record(r);
        std::memcpy(mailbox_[i].data(), &r, sizeof r);
    }

    void tick(int i) {
        Side& s = side_[i];
        if (!s.active || s.done())
            return;
        if (!s.hs) {
            const std::size_t n = s.got.size();
            s.hs.emplace(s.id, s.peer, s.tags[n], rng_() | 1, s.mine[n], s.history);
            s.last_ack = ~0ull;
        }
        const MailboxRecord out = s.hs->outgoing();
        if (out.ack != s.last_ack || ++s.since_write >= kRewriteEvery) {
            enqueue(s, out);
            s.last_ack = out.ack;
            s.since_write = 0;
        }
        MailboxRecord in;
        std::memcpy(&in, mailbox_[i].data(), sizeof in);
        if (record_valid(in) && s.hs->observe(in)) {
            if (s.hs->needs_final_write())
                enqueue(s, s.hs->outgoing());
            s.got.push_back(s.hs->theirs());
            s.history = s.hs->completed();
            s.hs.reset();
        }
    }

    // Applies up to k of side i's pending stores to the peer's mailbox.
    void deliver(int i, std::size_t k) {
        Side& s = side_[i];
        for (; k > 0 && !s.in_flight.empty(); --k) {
            mailbox_[1 - i][s.in_flight.front().first] = s.in_flight.front().second;
            s.in_flight.pop_front();
        }
    }

    // Random schedule; `torn`: deliver a few words at a time. Returns the
    // number of steps until both sides finished, or -1 at the budget.
    long run(long budget, bool torn, long late_start = 0) {
        side_[1].active = late_start == 0;
        for (long step = 0; step < budget; ++step) {
            if (step == late_start)
                side_[1].active = true;
            if (side_[0].done() && side_[1].done())
                return step;
            const int who = static_cast<int>(rng_() & 1);
            switch (rng_() % 3) {
            case 0: tick(who); break;
            default: deliver(who, torn ? 1 + rng_() % 8 : kWords * 4); break;
            }
        }
        return -1;
    }

    // Each side's n-th result is the other's n-th handle.
    void expect_paired() const {
        for (int s = 0; s < 2; ++s) {
            ASSERT_EQ(side_[s].mine.size(), side_[s].got.size());
            for (std::size_t n = 0; n < side_[s].got.size(); ++n)
                EXPECT_TRUE(same(side_[s].got[n], side_[1 - s].mine[n]))
                    << "side " << s << " exchange " << n;
        }
    }

private:
    static constexpr int kRewriteEvery = 5;

    void enqueue(Side& s, const MailboxRecord& r) {
        Slot w;
        std::memcpy(w.data(), &r, sizeof r);
        for (std::size_t i = 0; i < kWords; ++i)
            s.in_flight.emplace_back(i, w[i]);
    }

    std::mt19937_64 rng_;
    std::array<Side, 2> side_;
    std::array<Slot, 2> mailbox_{};
};

}  // namespace

TEST(Handshake, BothStartTogether) {
    Sim sim(1, 0, 1, 1, false);
    ASSERT_GE(sim.run(100000, false), 0);
    sim.expect_paired();
}

TEST(Handshake, OneSideStartsLate) {
    Sim sim(2, 3, 9, 1, false);
    ASSERT_GE(sim.run(200000, false, 20000), 0);
    sim.expect_paired();
}

TEST(Handshake, StaleRecordsFromAnEarlierRunAreIgnored) {
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
        Sim sim(100 + seed, 0, 1, 1, false);
        sim.plant_stale(0, 0xaaaa);
        sim.plant_stale(1, 0xaaaa);
        ASSERT_GE(sim.run(200000, seed % 2 == 0, seed % 3 ? 0 : 5000), 0) << "seed " << seed;
        sim.expect_paired();
    }
}

// Many seeds, word-by-word delivery, ten back-to-back exchanges with the
// same tag (the hardest case: a side that finished can immediately
// overwrite its final ack with the next exchange's record).
TEST(Handshake, RandomTornSchedulesBackToBackSameTag) {
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
        Sim sim(seed, 1, 0, 10, false);
        if (seed % 4 == 0) {
            sim.plant_stale(0, 0xaaaa);
            sim.plant_stale(1, 0xaaaa);
        }
        ASSERT_GE(sim.run(2000000, true, seed % 5 == 0 ? 3000 : 0), 0) << "seed " << seed;
        sim.expect_paired();
        if (HasFailure())
            FAIL() << "seed " << seed;
    }
}

TEST(Handshake, RandomSchedulesAlternatingTags) {
    for (std::uint64_t seed = 0; seed < 100; ++seed) {
        Sim sim(5000 + seed, 2, 5, 8, true);
        ASSERT_GE(sim.run(2000000, seed % 2 == 1), 0) << "seed " << seed;
        sim.expect_paired();
        if (HasFailure())
            FAIL() << "seed " << seed;
    }
}

TEST(Handshake, DifferentTagsNeverPair) {
    Sim sim(7, 0, 1, 1, false);
    sim.side(1).tags[0] = 0x1234;
    EXPECT_EQ(-1, sim.run(50000, false));
    EXPECT_TRUE(sim.side(0).got.empty());
    EXPECT_TRUE(sim.side(1).got.empty());
}

TEST(Handshake, AbsentPeerNeverCompletes) {
    Sim sim(8, 0, 1, 1, false);
    sim.plant_stale(0, 0xaaaa);  // an old record is all there is
    EXPECT_EQ(-1, sim.run(50000, false, 1L << 40));
    EXPECT_TRUE(sim.side(0).got.empty());
}

// The interleaving that makes the `prev` fields necessary, step by step.
TEST(Handshake, PeerMovesOnBeforeSeeingOurFinalAck) {
    const tcaHandle a1 = tcatest::one_piece(0, 0x1000, 10), a2 = tcatest::one_piece(0, 0x2000, 20);
    const tcaHandle b1 = tcatest::one_piece(1, 0x1000, 30), b2 = tcatest::one_piece(1, 0x2000, 40);
    const std::uint32_t tag = 77;
    Handshake A(0, 1, tag, 0xa1, a1, {}), B(1, 0, tag, 0xb1, b1, {});

    EXPECT_FALSE(B.observe(A.outgoing()));     // B learns A's nonce
    const MailboxRecord b_rec = B.outgoing();  // ... and acks it
    EXPECT_EQ(0xa1u, b_rec.ack);
    ASSERT_TRUE(A.observe(b_rec));  // A is done, directly
    EXPECT_TRUE(A.needs_final_write());
    EXPECT_TRUE(same(b1, A.theirs()));
    // A's final ack is overwritten before B reads it: A starts over.
    Handshake A2(0, 1, tag, 0xa2, a2, A.completed());
    EXPECT_FALSE(A2.observe(b_rec));  // A2 sees B's old record...
    const MailboxRecord a2_rec = A2.outgoing();
    EXPECT_EQ(0xb1u, a2_rec.ack);  // ...and acks B's old nonce
    // B must finish the first exchange with A's *first* handle.
    ASSERT_TRUE(B.observe(a2_rec));
    EXPECT_FALSE(B.needs_final_write());
    EXPECT_TRUE(same(a1, B.theirs()));
    // The second exchange then pairs correctly.
    Handshake B2(1, 0, tag, 0xb2, b2, B.completed());
    bool a_done = false, b_done = false;
    for (int i = 0; i < 4 && !(a_done && b_done); ++i) {
        if (!a_done)
            a_done = A2.observe(B2.outgoing());
        if (!b_done)
            b_done = B2.observe(A2.outgoing());
    }
    ASSERT_TRUE(a_done && b_done);
    EXPECT_TRUE(same(b2, A2.theirs()));
    EXPECT_TRUE(same(a2, B2.theirs()));
}

TEST(Handshake, IgnoresRecordsFromOtherSendersAndZeroNonce) {
    const tcaHandle h = tcatest::one_piece(0, 0x1000, 10);
    Handshake A(0, 1, 5, 0xa1, h, {});
    MailboxRecord r{};
    r.tag = 5;
    r.sender = 2;  // not the peer
    r.nonce = 9;
    r.ack = 0xa1;
    seal_record(r);
    EXPECT_FALSE(A.observe(r));
    r.sender = 1;
    r.nonce = 0;
    seal_record(r);
    EXPECT_FALSE(A.observe(r));
    r.nonce = 9;
    seal_record(r);
    EXPECT_TRUE(A.observe(r));
}
