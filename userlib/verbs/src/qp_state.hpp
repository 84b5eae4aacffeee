// SPDX-License-Identifier: MIT
// The QP state machine of ibv_modify_qp (InfiniBand spec, "QP state
// transitions"): which transitions exist for RC and UD QPs and which
// attributes each one requires and allows. Pure: unit-tested.
#pragma once

#include <infiniband/verbs.h>

namespace pv {

// 0 with *next set, or EINVAL: no such transition from `cur`, a required
// attribute missing, an attribute the transition does not take, a
// CUR_STATE that is not the current state, or a value out of range
// (port, P_Key index, MTU, timers, retry counts, RD atomic depths).
int check_modify(ibv_qp_type type, ibv_qp_state cur, const ibv_qp_attr& attr, int mask,
                 ibv_qp_state* next) noexcept;

}  // namespace pv
