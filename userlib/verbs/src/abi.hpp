// SPDX-License-Identifier: MIT
// The rdma-core 44 ABI as this library sees it: <infiniband/verbs.h> from
// Debian's libibverbs-dev, minus the macros that rename the functions we
// define, and the link between each ABI struct and the object around it.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>

// verbs.h turns these calls into inline wrappers; we define the real ones.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define PV_EXPORT extern "C" __attribute__((visibility("default")))

namespace pv {

// Every object we hand out starts with its ABI struct, so the pointer the
// program gives back is also a pointer to our object.
template <class Obj, class Abi>
Obj* owner(Abi* abi) noexcept {
    return reinterpret_cast<Obj*>(abi);
}

// The version of the extended context the programs compile against.
static_assert(offsetof(verbs_context, context) == 320, "rdma-core 44 verbs_context layout");
static_assert(sizeof(verbs_context) == 648, "rdma-core 44 verbs_context layout");
static_assert(sizeof(ibv_device) == 664, "rdma-core 44 ibv_device layout");

}  // namespace pv
