// SPDX-License-Identifier: MIT
// Entry points this library has no use for but must define.
//
// Programs are linked BIND_NOW, so every symbol any loaded library imports
// from libibverbs must exist. perftest and UCX load libmlx5 and libefa, whose
// IBVERBS_PRIVATE_34 imports are rdma-core's provider interface (kernel
// commands, driver registration). Their providers never see one of our
// devices, so these fail cleanly (EOPNOTSUPP) or do nothing. Public verbs
// without a PEACH2 meaning (multicast, imports of other processes' objects,
// dma-buf) fail the same way.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "abi.hpp"

// ---- rdma-core's provider interface (IBVERBS_PRIVATE_34) ---------------------------

// A provider library's constructor registers it: nothing to register with.
PV_EXPORT void verbs_register_driver_34(const void*) {}

extern "C" {
__attribute__((visibility("default"))) bool verbs_allow_disassociate_destroy = false;
}

PV_EXPORT void __verbs_log(void*, const char*, ...) {}

PV_EXPORT void verbs_set_ops(void*, const void*) {}

PV_EXPORT void verbs_init_cq(void*, void*, void*, void*) {}

PV_EXPORT void verbs_uninit_context(void*) {}

PV_EXPORT void* _verbs_init_and_alloc_context(void*, int, size_t, void*, unsigned int) {
    errno = EOPNOTSUPP;
    return nullptr;
}

PV_EXPORT void* verbs_open_device(void*, void*) {
    errno = EOPNOTSUPP;
    return nullptr;
}

PV_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void*) { return num_attrs; }

PV_EXPORT int ibv_read_ibdev_sysfs_file(char*, size_t, void*, const char*, ...) {
    errno = ENOENT;
    return -1;
}

// Kernel commands: there is no kernel Verbs device behind us.
#define PV_NO_KERNEL_CMD(name) \
    PV_EXPORT int name(void) { \
        errno = EOPNOTSUPP;    \
        return EOPNOTSUPP;     \
    }
PV_NO_KERNEL_CMD(execute_ioctl)
PV_NO_KERNEL_CMD(ibv_cmd_advise_mr)
PV_NO_KERNEL_CMD(ibv_cmd_alloc_dm)
PV_NO_KERNEL_CMD(ibv_cmd_alloc_mw)
PV_NO_KERNEL_CMD(ibv_cmd_alloc_pd)
PV_NO_KERNEL_CMD(ibv_cmd_attach_mcast)
PV_NO_KERNEL_CMD(ibv_cmd_close_xrcd)
PV_NO_KERNEL_CMD(ibv_cmd_create_ah)
PV_NO_KERNEL_CMD(ibv_cmd_create_counters)
PV_NO_KERNEL_CMD(ibv_cmd_create_cq)
PV_NO_KERNEL_CMD(ibv_cmd_create_cq_ex)
PV_NO_KERNEL_CMD(ibv_cmd_create_flow)
PV_NO_KERNEL_CMD(ibv_cmd_create_flow_action_esp)
PV_NO_KERNEL_CMD(ibv_cmd_create_qp)
PV_NO_KERNEL_CMD(ibv_cmd_create_qp_ex)
PV_NO_KERNEL_CMD(ibv_cmd_create_qp_ex2)
PV_NO_KERNEL_CMD(ibv_cmd_create_rwq_ind_table)
PV_NO_KERNEL_CMD(ibv_cmd_create_srq)
PV_NO_KERNEL_CMD(ibv_cmd_create_srq_ex)
PV_NO_KERNEL_CMD(ibv_cmd_create_wq)
PV_NO_KERNEL_CMD(ibv_cmd_dealloc_mw)
PV_NO_KERNEL_CMD(ibv_cmd_dealloc_pd)
PV_NO_KERNEL_CMD(ibv_cmd_dereg_mr)
PV_NO_KERNEL_CMD(ibv_cmd_destroy_ah)
PV_NO_KERNEL_CMD(ibv_cmd_destroy_counters)
PV_NO_KERNEL_CMD(ibv_cmd_destroy_cq)
PV_NO_KERNEL_CMD(ibv_cmd_destroy_flow)
PV_NO_KERNEL_CMD(ibv_cmd_destroy_flow_action)
PV_NO_KERNEL_CMD(ibv_cmd_destroy_qp)
PV_NO_KERNEL_CMD(ibv_cmd_destroy_rwq_ind_table)
PV_NO_KERNEL_CMD(ibv_cmd_destroy_srq)
PV_NO_KERNEL_CMD(ibv_cmd_destroy_wq)
PV_NO_KERNEL_CMD(ibv_cmd_detach_mcast)
PV_NO_KERNEL_CMD(ibv_cmd_free_dm)
PV_NO_KERNEL_CMD(ibv_cmd_get_context)
PV_NO_KERNEL_CMD(ibv_cmd_modify_cq)
PV_NO_KERNEL_CMD(ibv_cmd_modify_flow_action_esp)
PV_NO_KERNEL_CMD(ibv_cmd_modify_qp)
PV_NO_KERNEL_CMD(ibv_cmd_modify_qp_ex)
PV_NO_KERNEL_CMD(ibv_cmd_modify_srq)
PV_NO_KERNEL_CMD(ibv_cmd_modify_wq)
PV_NO_KERNEL_CMD(ibv_cmd_open_qp)
PV_NO_KERNEL_CMD(ibv_cmd_open_xrcd)
PV_NO_KERNEL_CMD(ibv_cmd_poll_cq)
PV_NO_KERNEL_CMD(ibv_cmd_post_recv)
PV_NO_KERNEL_CMD(ibv_cmd_post_send)
PV_NO_KERNEL_CMD(ibv_cmd_post_srq_recv)
PV_NO_KERNEL_CMD(ibv_cmd_query_context)
PV_NO_KERNEL_CMD(ibv_cmd_query_device_any)
PV_NO_KERNEL_CMD(ibv_cmd_query_mr)
PV_NO_KERNEL_CMD(ibv_cmd_query_port)
PV_NO_KERNEL_CMD(ibv_cmd_query_qp)
PV_NO_KERNEL_CMD(ibv_cmd_query_srq)
PV_NO_KERNEL_CMD(ibv_cmd_read_counters)
PV_NO_KERNEL_CMD(ibv_cmd_reg_dm_mr)
PV_NO_KERNEL_CMD(ibv_cmd_reg_dmabuf_mr)
PV_NO_KERNEL_CMD(ibv_cmd_reg_mr)
PV_NO_KERNEL_CMD(ibv_cmd_req_notify_cq)
PV_NO_KERNEL_CMD(ibv_cmd_rereg_mr)
PV_NO_KERNEL_CMD(ibv_cmd_resize_cq)
#undef PV_NO_KERNEL_CMD

// ---- historical helpers other rdma-core libraries link against --------------------

// Conversions from kernel structs we never receive: leave the output zeroed.
PV_EXPORT void ibv_copy_ah_attr_from_kern(ibv_ah_attr* dst, const void*) {
    std::memset(dst, 0, sizeof *dst);
}
PV_EXPORT void ibv_copy_qp_attr_from_kern(ibv_qp_attr* dst, const void*) {
    std::memset(dst, 0, sizeof *dst);
}
PV_EXPORT void ibv_copy_path_rec_from_kern(void*, const void*) {}
PV_EXPORT void ibv_copy_path_rec_to_kern(void*, const void*) {}

PV_EXPORT const char* ibv_get_sysfs_path(void) { return "/sys"; }

// No sysfs for our devices (ibv_devinfo asks for board_id and goes on).
PV_EXPORT int ibv_read_sysfs_file(const char*, const char*, char*, size_t) {
    errno = ENOENT;
    return -1;
}

PV_EXPORT void ibv_register_driver(const char*, void*) {}

// ---- public verbs without a meaning here --------------------------------------------

PV_EXPORT ibv_context* ibv_import_device(int) {
    errno = EOPNOTSUPP;
    return nullptr;
}
PV_EXPORT ibv_pd* ibv_import_pd(ibv_context*, uint32_t) {
    errno = EOPNOTSUPP;
    return nullptr;
}
PV_EXPORT void ibv_unimport_pd(ibv_pd*) {}
PV_EXPORT ibv_mr* ibv_import_mr(ibv_pd*, uint32_t) {
    errno = EOPNOTSUPP;
    return nullptr;
}
PV_EXPORT void ibv_unimport_mr(ibv_mr*) {}
PV_EXPORT ibv_dm* ibv_import_dm(ibv_context*, uint32_t) {
    errno = EOPNOTSUPP;
    return nullptr;
}
PV_EXPORT void ibv_unimport_dm(ibv_dm*) {}

PV_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
    errno = EOPNOTSUPP;
    return nullptr;
}

PV_EXPORT int ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }
PV_EXPORT int ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }

PV_EXPORT int ibv_resolve_eth_l2_from_gid(ibv_context*, ibv_ah_attr*, uint8_t[6], uint16_t*) {
    return EOPNOTSUPP;
}

PV_EXPORT int ibv_set_ece(ibv_qp*, ibv_ece*) {
    errno = EOPNOTSUPP;
    return EOPNOTSUPP;
}
PV_EXPORT int ibv_query_ece(ibv_qp*, ibv_ece*) {
    errno = EOPNOTSUPP;
    return EOPNOTSUPP;
}

// ---- fork support ---------------------------------------------------------------------
// Registered pages stay pinned for the card; a child that writes them after
// fork() would get copies the card does not see. As in libibverbs, ask the
// kernel not to share registered ranges with children when asked to.

PV_EXPORT int ibv_fork_init(void) { return 0; }

PV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }

namespace {
int fork_advice(void* base, size_t size, int advice) {
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto start = reinterpret_cast<std::uintptr_t>(base) & ~(page - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(base) + size + page - 1) & ~(page - 1);
    return ::madvise(reinterpret_cast<void*>(start), end - start, advice) ? errno : 0;
}
}  // namespace

PV_EXPORT int ibv_dontfork_range(void* base, size_t size) {
    return fork_advice(base, size, MADV_DONTFORK);
}

PV_EXPORT int ibv_dofork_range(void* base, size_t size) {
    return fork_advice(base, size, MADV_DOFORK);
}
