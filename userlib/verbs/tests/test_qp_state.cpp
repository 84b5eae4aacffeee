// SPDX-License-Identifier: MIT
// The QP state machine (qp_state.hpp) against the transitions and attribute
// masks rc_pingpong, perftest and UCX use, and the ones they must not.
#include <gtest/gtest.h>

#include "qp_state.hpp"

using namespace pv;

namespace {

constexpr int kInit = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

ibv_qp_attr to(ibv_qp_state s) {
    ibv_qp_attr a{};
    a.qp_state = s;
    a.port_num = 1;
    a.path_mtu = IBV_MTU_1024;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.min_rnr_timer = 12;
    a.max_rd_atomic = 1;
    a.max_dest_rd_atomic = 1;
    return a;
}

int step(ibv_qp_type t, ibv_qp_state cur, const ibv_qp_attr& a, int mask, ibv_qp_state* next) {
    return check_modify(t, cur, a, mask, next);
}

}  // namespace

TEST(QpState, RcResetInitRtrRts) {
    ibv_qp_state s = IBV_QPS_RESET;
    ASSERT_EQ(0, step(IBV_QPT_RC, s, to(IBV_QPS_INIT), kInit, &s));
    EXPECT_EQ(IBV_QPS_INIT, s);
    ASSERT_EQ(0, step(IBV_QPT_RC, s, to(IBV_QPS_RTR), kRtr, &s));
    EXPECT_EQ(IBV_QPS_RTR, s);
    ASSERT_EQ(0, step(IBV_QPT_RC, s, to(IBV_QPS_RTS), kRts, &s));
    EXPECT_EQ(IBV_QPS_RTS, s);
    // RTS -> RTS with optional attributes only, and without a state.
    ASSERT_EQ(0, step(IBV_QPT_RC, s, to(IBV_QPS_RTS), IBV_QP_MIN_RNR_TIMER, &s));
    EXPECT_EQ(IBV_QPS_RTS, s);
}

TEST(QpState, UdTakesQkeyAndSqPsn) {
    ibv_qp_state s = IBV_QPS_RESET;
    const int init = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
    ASSERT_EQ(0, step(IBV_QPT_UD, s, to(IBV_QPS_INIT), init, &s));
    ASSERT_EQ(0, step(IBV_QPT_UD, s, to(IBV_QPS_RTR), IBV_QP_STATE, &s));
    ASSERT_EQ(0, step(IBV_QPT_UD, s, to(IBV_QPS_RTS), IBV_QP_STATE | IBV_QP_SQ_PSN, &s));
    EXPECT_EQ(IBV_QPS_RTS, s);
    // An RC-only attribute on a UD transition.
    ibv_qp_state t = IBV_QPS_RESET;
    EXPECT_EQ(EINVAL, step(IBV_QPT_UD, t, to(IBV_QPS_INIT), kInit, &t));
}

TEST(QpState, MissingOrExtraAttributesAreRefused) {
    ibv_qp_state s = IBV_QPS_INIT;
    EXPECT_EQ(EINVAL, step(IBV_QPT_RC, s, to(IBV_QPS_RTR), kRtr & ~IBV_QP_DEST_QPN, &s));
    EXPECT_EQ(EINVAL, step(IBV_QPT_RC, s, to(IBV_QPS_RTR), kRtr | IBV_QP_SQ_PSN, &s));
    EXPECT_EQ(IBV_QPS_INIT, s);  // unchanged on failure
    s = IBV_QPS_RESET;
    EXPECT_EQ(EINVAL, step(IBV_QPT_RC, s, to(IBV_QPS_INIT), kInit & ~IBV_QP_PORT, &s));
}

TEST(QpState, SkippingStatesIsRefused) {
    ibv_qp_state s = IBV_QPS_RESET;
    EXPECT_EQ(EINVAL, step(IBV_QPT_RC, s, to(IBV_QPS_RTR), kRtr, &s));
    EXPECT_EQ(EINVAL, step(IBV_QPT_RC, s, to(IBV_QPS_RTS), kRts, &s));
    s = IBV_QPS_INIT;
    EXPECT_EQ(EINVAL, step(IBV_QPT_RC, s, to(IBV_QPS_RTS), kRts, &s));
    s = IBV_QPS_ERR;
    EXPECT_EQ(EINVAL, step(IBV_QPT_RC, s, to(IBV_QPS_RTS), kRts, &s));
}

TEST(QpState, ResetAndErrorFromAnywhere) {
    for (ibv_qp_state from : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_ERR}) {
        ibv_qp_state s = from;
        EXPECT_EQ(0, step(IBV_QPT_RC, s, to(IBV_QPS_ERR), IBV_QP_STATE, &s));
        EXPECT_EQ(IBV_QPS_ERR, s);
        s = from;
        EXPECT_EQ(0, step(IBV_QPT_RC, s, to(IBV_QPS_RESET), IBV_QP_STATE, &s));
        EXPECT_EQ(IBV_QPS_RESET, s);
        s = from;
        EXPECT_EQ(EINVAL, step(IBV_QPT_RC, s, to(IBV_QPS_ERR), IBV_QP_STATE | IBV_QP_PORT, &s));
    }
}

TEST(QpState, ValuesOutOfRange) {
    ibv_qp_state s = IBV_QPS_RESET;
    ibv_qp_attr a = to(IBV_QPS_INIT);
    a.port_num = 2;
    EXPECT_EQ(EINVAL, step(IBV_QPT_RC, s, a, kInit, &s));
    s = IBV_QPS_RTR;
    a = to(IBV_QPS_RTS);
    a.retry_cnt = 8;
    EXPECT_EQ(EINVAL, step(IBV_QPT_RC, s, a, kRts, &s));
    a = to(IBV_QPS_RTS);
    a.max_rd_atomic = 200;
    EXPECT_EQ(EINVAL, step(IBV_QPT_RC, s, a, kRts, &s));
    a = to(IBV_QPS_RTS);
    a.cur_qp_state = IBV_QPS_INIT;  // not the current state
    EXPECT_EQ(EINVAL, step(IBV_QPT_RC, s, a, kRts | IBV_QP_CUR_STATE, &s));
    EXPECT_EQ(EINVAL, step(IBV_QPT_UC, s, a, kRts, &s));  // UC is not offered
}
