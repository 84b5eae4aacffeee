// SPDX-License-Identifier: MIT
#include "qp_state.hpp"

#include <cerrno>

#include "device.hpp"

namespace pv {
namespace {

struct Rule {
    ibv_qp_state from;
    ibv_qp_state to;
    int rc_req, rc_opt;  // RC
    int ud_req, ud_opt;  // UD
};

constexpr int S = IBV_QP_STATE;
constexpr int kAnyToReset = S;

// Every attribute mask bit not listed in a rule is refused for it.
constexpr Rule kRules[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, S | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0,
     S | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, S | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0,
     S | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY},
    {IBV_QPS_INIT, IBV_QPS_RTR,
     S | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
         IBV_QP_MIN_RNR_TIMER,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX, S, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    {IBV_QPS_RTR, IBV_QPS_RTS,
     S | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
         IBV_QP_MAX_QP_RD_ATOMIC,
     IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
         IBV_QP_PATH_MIG_STATE,
     S | IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0,
     S | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
         IBV_QP_MIN_RNR_TIMER,
     0, S | IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {IBV_QPS_RTS, IBV_QPS_SQD, S, IBV_QP_EN_SQD_ASYNC_NOTIFY, S, IBV_QP_EN_SQD_ASYNC_NOTIFY},
    {IBV_QPS_SQD, IBV_QPS_RTS, S,
     IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
         IBV_QP_MIN_RNR_TIMER,
     S, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {IBV_QPS_SQD, IBV_QPS_SQD, 0,
     S | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
         IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ACCESS_FLAGS |
         IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE | IBV_QP_ALT_PATH,
     0, S | IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    {IBV_QPS_SQE, IBV_QPS_RTS, S, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS, S,
     IBV_QP_CUR_STATE | IBV_QP_QKEY},
};

bool is_state(int s) noexcept { return s >= IBV_QPS_RESET && s <= IBV_QPS_ERR; }

int check_values(const ibv_qp_attr& a, int mask) noexcept {
    if ((mask & IBV_QP_PORT) && a.port_num != 1)
        return EINVAL;
    if ((mask & IBV_QP_PKEY_INDEX) && a.pkey_index != 0)
        return EINVAL;
    if ((mask & IBV_QP_PATH_MTU) && (a.path_mtu < IBV_MTU_256 || a.path_mtu > IBV_MTU_4096))
        return EINVAL;
    if ((mask & IBV_QP_TIMEOUT) && a.timeout > 31)
        return EINVAL;
    if ((mask & IBV_QP_RETRY_CNT) && a.retry_cnt > 7)
        return EINVAL;
    if ((mask & IBV_QP_RNR_RETRY) && a.rnr_retry > 7)
        return EINVAL;
    if ((mask & IBV_QP_MIN_RNR_TIMER) && a.min_rnr_timer > 31)
        return EINVAL;
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a.max_rd_atomic > kMaxRdAtom)
        return EINVAL;
    if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a.max_dest_rd_atomic > kMaxRdAtom)
        return EINVAL;
    if ((mask & IBV_QP_ACCESS_FLAGS) &&
        (a.qp_access_flags & ~(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                               IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE)))
        return EINVAL;
    if ((mask & IBV_QP_AV) && a.ah_attr.port_num != 0 && a.ah_attr.port_num != 1)
        return EINVAL;
    return 0;
}

}  // namespace

int check_modify(ibv_qp_type type, ibv_qp_state cur, const ibv_qp_attr& attr, int mask,
                 ibv_qp_state* next) noexcept {
    if (type != IBV_QPT_RC && type != IBV_QPT_UD)
        return EINVAL;
    ibv_qp_state to = cur;
    if (mask & IBV_QP_STATE) {
        if (!is_state(attr.qp_state))
            return EINVAL;
        to = attr.qp_state;
    }
    if ((mask & IBV_QP_CUR_STATE) && attr.cur_qp_state != cur)
        return EINVAL;
    if (int rc = check_values(attr, mask))
        return rc;

    // To RESET or ERR from anywhere: the state alone.
    if ((mask & IBV_QP_STATE) && (to == IBV_QPS_RESET || to == IBV_QPS_ERR)) {
        if (mask & ~(kAnyToReset | IBV_QP_CUR_STATE))
            return EINVAL;
        *next = to;
        return 0;
    }
    for (const Rule& r : kRules) {
        if (r.from != cur || r.to != to)
            continue;
        const int req = type == IBV_QPT_RC ? r.rc_req : r.ud_req;
        const int opt = type == IBV_QPT_RC ? r.rc_opt : r.ud_opt;
        if ((mask & req) != req || (mask & ~(req | opt)))
            return EINVAL;
        if (!(mask & IBV_QP_STATE) && req)  // a transition needs the state
            return EINVAL;
        *next = to;
        return 0;
    }
    return EINVAL;
}

}  // namespace pv
