// SPDX-License-Identifier: MIT
// Fifo<T> (fifo.hpp): order across wrap-around and growth, slots reset when
// their element leaves, a recycled SendOp keeps its buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "fifo.hpp"
#include "qp.hpp"

using namespace pv;

namespace {
std::vector<int> contents(const Fifo<int>& f) {
    std::vector<int> v;
    for (int x : f)
        v.push_back(x);
    return v;
}
}  // namespace

TEST(Fifo, KeepsOrderAcrossWrapAroundAndGrowth) {
    Fifo<int> f;
    EXPECT_TRUE(f.empty());
    int next_in = 0, next_out = 0;
    // Push and pop unevenly so that head wraps before the buffer grows.
    for (int round = 0; round < 50; ++round) {
        for (int k = 0; k < 3 + round % 5; ++k)
            f.push_back(next_in++);
        for (int k = 0; k < 2 + round % 3 && !f.empty(); ++k) {
            ASSERT_EQ(next_out, f.front());
            f.pop_front();
            ++next_out;
        }
        std::vector<int> want;
        for (int x = next_out; x < next_in; ++x)
            want.push_back(x);
        ASSERT_EQ(want, contents(f)) << "round " << round;
        ASSERT_EQ(want.size(), f.size());
    }
    f.clear();
    EXPECT_TRUE(f.empty());
    EXPECT_EQ(contents(f), std::vector<int>{});
}

TEST(Fifo, PoppedSlotIsResetSoItReleasesWhatItHeld) {
    Fifo<std::shared_ptr<int>> f;
    auto held = std::make_shared<int>(7);
    f.push_back(held);
    EXPECT_EQ(2, held.use_count());
    f.pop_front();
    EXPECT_EQ(1, held.use_count());     // released on leaving, not on slot reuse
    EXPECT_EQ(nullptr, f.push_back());  // and the slot comes back clean
}

TEST(Fifo, RecycledSendOpKeepsItsInlineBufferButNotItsData) {
    Fifo<SendOp> sq;
    SendOp& op = sq.push_back();
    op.wr_id = 42;
    std::fill_n(op.inline_data.reserve(100), 100, 0xab);  // beyond the op's own 64 bytes
    const unsigned char* buf = op.inline_data.data();
    op.bounce.own = std::make_unique<TcaBuffer>();
    op.nsge = 3;
    op.stage = SendOp::Stage::Done;
    op.signaled = true;
    op.wait_seq = 7;
    sq.pop_front();
    for (int k = 1; k < 8; ++k) {  // once round the 8 slots of a first growth
        sq.push_back();
        sq.pop_front();
    }
    SendOp& again = sq.push_back();  // slot 0 again
    EXPECT_EQ(0u, again.wr_id);
    EXPECT_EQ(0u, again.nsge);  // the SGE array is left as it was: none of it is valid
    EXPECT_EQ(SendOp::Stage::New, again.stage);
    EXPECT_FALSE(again.signaled);
    EXPECT_EQ(0u, again.wait_seq);
    EXPECT_TRUE(again.inline_data.empty());
    EXPECT_EQ(nullptr, again.bounce.own);
    EXPECT_EQ(buf, again.inline_data.reserve(100));  // no new allocation
    // A small payload stays in the op itself.
    unsigned char* small = again.inline_data.reserve(8);
    EXPECT_NE(buf, small);
    EXPECT_EQ(small, again.inline_data.data());
    EXPECT_FALSE(again.inline_data.empty());
}

// A receive WR is copied and recycled by its valid SGEs only: what it
// carries must be exactly what was posted, and a recycled slot is empty.
TEST(Fifo, RecvWrCarriesItsValidSgesAndComesBackEmpty) {
    ibv_sge sges[3] = {{0x1000, 10, 1}, {0x2000, 20, 2}, {0x3000, 30, 3}};
    ibv_recv_wr wr{};
    wr.wr_id = 99;
    wr.sg_list = sges;
    wr.num_sge = 3;
    Fifo<RecvWr> rq;
    rq.push_back().assign(wr);
    RecvWr cur;
    cur.assign(rq.front());
    EXPECT_EQ(99u, cur.wr_id);
    ASSERT_EQ(3u, cur.nsge);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(sges[i].addr, cur.sge[i].addr);
        EXPECT_EQ(sges[i].length, cur.sge[i].length);
        EXPECT_EQ(sges[i].lkey, cur.sge[i].lkey);
    }
    rq.pop_front();
    for (int k = 1; k < 8; ++k) {  // round the 8 slots of a first growth
        rq.push_back();
        rq.pop_front();
    }
    const RecvWr& again = rq.push_back();  // slot 0 again
    EXPECT_EQ(0u, again.wr_id);
    EXPECT_EQ(0u, again.nsge);
    wr.num_sge = 1;  // a shorter WR in a slot that held a longer one
    cur.assign(wr);
    EXPECT_EQ(1u, cur.nsge);
}
