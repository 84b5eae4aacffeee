// SPDX-License-Identifier: MIT
// Device list, open/close, and the query verbs (device, port, GID, P_Key).
#include "device.hpp"

#include <dirent.h>
#include <endian.h>
#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "context.hpp"
#include "identity.hpp"

namespace pv {
namespace {

// Devices live as long as the process: programs may keep an ibv_device
// pointer after ibv_free_device_list (the list array is what they free), and
// threads still running at exit() use the contexts' device pointers. Never
// destroyed, not even by static destructors.
std::mutex g_devices_lock;
std::vector<std::unique_ptr<Device>>& g_devices = *new std::vector<std::unique_ptr<Device>>;

Device* device_for(const std::string& path, std::uint32_t index) {
    for (auto& d : g_devices)
        if (d->path == path)
            return d.get();
    auto d = std::make_unique<Device>();
    d->path = path;
    d->index = index;
    d->abi.node_type = IBV_NODE_CA;
    d->abi.transport_type = IBV_TRANSPORT_IB;
    std::snprintf(d->abi.name, sizeof d->abi.name, "peach2_%u", index);
    std::snprintf(d->abi.dev_name, sizeof d->abi.dev_name, "uverbs%u", index);
    std::snprintf(d->abi.dev_path, sizeof d->abi.dev_path, "/sys/class/infiniband_verbs/uverbs%u",
                  index);
    std::snprintf(d->abi.ibdev_path, sizeof d->abi.ibdev_path, "/sys/class/infiniband/peach2_%u",
                  index);
    g_devices.push_back(std::move(d));
    return g_devices.back().get();
}

// The trailing number of ".../peach2-<n>" (0 if there is none).
std::uint32_t index_of(const std::string& path) {
    const auto dash = path.rfind('-');
    if (dash == std::string::npos)
        return 0;
    return static_cast<std::uint32_t>(std::strtoul(path.c_str() + dash + 1, nullptr, 10));
}

// $TCA_DEVICE names the one device libtca uses (tests, a second card);
// otherwise every /dev/peach2-<n> character device, in index order.
std::vector<Device*> scan() {
    std::lock_guard<std::mutex> g(g_devices_lock);
    std::vector<Device*> found;
    if (const char* env = std::getenv("TCA_DEVICE"); env && *env) {
        found.push_back(device_for(env, index_of(env)));
        return found;
    }
    std::vector<std::uint32_t> indices;
    if (DIR* d = ::opendir("/dev")) {
        while (const dirent* e = ::readdir(d)) {
            if (std::strncmp(e->d_name, PEACH2_DEV_PREFIX, sizeof PEACH2_DEV_PREFIX - 1))
                continue;
            const std::string path = std::string("/dev/") + e->d_name;
            struct stat st;
            if (::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode))
                indices.push_back(index_of(path));
        }
        ::closedir(d);
    }
    std::sort(indices.begin(), indices.end());
    for (std::uint32_t i : indices)
        found.push_back(device_for("/dev/" PEACH2_DEV_PREFIX + std::to_string(i), i));
    return found;
}

}  // namespace

bool port_up(const std::uint32_t link[3], std::uint32_t node_count) noexcept {
    if (node_count <= 1)
        return true;
    for (int i = 0; i < 3; ++i)
        if (link[i] & PEACH2_LINK_UP)
            return true;
    return false;
}

void device_attr(const Device& dev, const CardInfo& card, ibv_device_attr* a) {
    std::memset(a, 0, sizeof *a);
    std::snprintf(a->fw_ver, sizeof a->fw_ver, "%u.%u.0", card.hw_version >> 16,
                  card.hw_version & 0xffff);
    a->node_guid = htobe64(node_guid(card.node_id, dev.index));
    a->sys_image_guid = a->node_guid;
    a->max_mr_size = card.max_alloc ? std::uint64_t{1} << 32 : 0;
    a->page_size_cap = 4096;
    a->vendor_id = kVendorId;
    a->vendor_part_id = kVendorPartId;
    a->hw_ver = card.hw_version;
    a->max_qp = 1 << 16;
    a->max_qp_wr = kMaxQpWr;
    a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
                          IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_N_NOTIFY_CQ;
    a->max_sge = kMaxSge;
    a->max_sge_rd = kMaxSge;
    a->max_cq = 1 << 16;
    a->max_cqe = kMaxCqe;
    a->max_mr = 1 << 20;
    a->max_pd = 1 << 16;
    a->max_qp_rd_atom = kMaxRdAtom;
    a->max_res_rd_atom = kMaxRdAtom << 16;
    a->max_qp_init_rd_atom = kMaxRdAtom;
    a->atomic_cap = IBV_ATOMIC_HCA;
    a->max_ah = 1 << 16;
    a->max_srq = 1 << 16;
    a->max_srq_wr = kMaxQpWr;
    a->max_srq_sge = kMaxSge;
    a->max_pkeys = 1;
    a->local_ca_ack_delay = 15;
    a->phys_port_cnt = 1;
}

void port_attr(const CardInfo& card, ibv_port_attr* p) {
    std::memset(p, 0, sizeof *p);
    p->state = card.port_active ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    p->max_mtu = IBV_MTU_4096;
    p->active_mtu = IBV_MTU_4096;
    p->gid_tbl_len = 1;
    p->port_cap_flags = 0;
    p->max_msg_sz = 0x80000000u;
    p->pkey_tbl_len = 1;
    p->lid = node_lid(card.node_id);
    p->sm_lid = node_lid(0);
    p->lmc = 0;
    p->max_vl_num = 1;
    p->subnet_timeout = 18;
    p->active_width = 2;                       // 4X: PCIe Gen2 x8 is about QDR 4X
    p->active_speed = 4;                       // QDR
    p->phys_state = card.port_active ? 5 : 3;  // LinkUp : Disabled
    p->link_layer = IBV_LINK_LAYER_INFINIBAND;
}

}  // namespace pv

using namespace pv;

// ---- device list ---------------------------------------------------------------

PV_EXPORT ibv_device** ibv_get_device_list(int* num_devices) {
    const std::vector<Device*> devs = scan();
    auto** list = static_cast<ibv_device**>(std::calloc(devs.size() + 1, sizeof(ibv_device*)));
    if (!list) {
        errno = ENOMEM;
        return nullptr;
    }
    for (std::size_t i = 0; i < devs.size(); ++i)
        list[i] = &devs[i]->abi;
    if (num_devices)
        *num_devices = static_cast<int>(devs.size());
    return list;
}

PV_EXPORT void ibv_free_device_list(ibv_device** list) { std::free(list); }

PV_EXPORT const char* ibv_get_device_name(ibv_device* device) {
    return device ? device->name : nullptr;
}

PV_EXPORT int ibv_get_device_index(ibv_device* device) {
    return device ? static_cast<int>(owner<Device>(device)->index) : -1;
}

PV_EXPORT __be64 ibv_get_device_guid(ibv_device* device) {
    // Without opening the card we do not know the node id: open it briefly.
    if (!device)
        return 0;
    Device* d = owner<Device>(device);
    if (session_acquire(*d) != 0)
        return 0;
    const int node = tcaNodeId();
    session_release();
    return node < 0 ? 0 : htobe64(node_guid(static_cast<std::uint32_t>(node), d->index));
}

PV_EXPORT ibv_context* ibv_open_device(ibv_device* device) {
    if (!device) {
        errno = EINVAL;
        return nullptr;
    }
    Context* c = Context::open(owner<Device>(device));
    return c ? c->abi() : nullptr;
}

PV_EXPORT int ibv_close_device(ibv_context* context) {
    return Context::close(Context::of(context));
}

// ---- queries ---------------------------------------------------------------------

PV_EXPORT int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
    Context* c = Context::of(context);
    device_attr(c->device(), c->card(), attr);
    return 0;
}

namespace {

int query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size) {
    if (input && input->comp_mask)
        return EINVAL;
    if (attr_size < sizeof(attr->orig_attr))
        return EINVAL;
    ibv_device_attr_ex ex{};
    Context* c = Context::of(context);
    device_attr(c->device(), c->card(), &ex.orig_attr);
    ex.comp_mask = 0;
    ex.max_dm_size = 0;
    ex.raw_packet_caps = 0;
    ex.xrc_odp_caps = 0;
    ex.phys_port_cnt_ex = 1;
    ex.device_cap_flags_ex = ex.orig_attr.device_cap_flags;
    std::memcpy(attr, &ex, std::min(attr_size, sizeof ex));
    return 0;
}

int query_port(ibv_context* context, uint8_t port_num, ibv_port_attr* attr, size_t attr_len) {
    if (port_num != 1)
        return EINVAL;
    Context* c = Context::of(context);
    c->refresh_card();
    ibv_port_attr p;
    port_attr(c->card(), &p);
    std::memset(attr, 0, attr_len);
    std::memcpy(attr, &p, std::min(attr_len, sizeof p));
    return 0;
}

}  // namespace

namespace pv {
void fill_device_ops(verbs_context* v) {
    v->query_device_ex = query_device_ex;
    v->query_port = query_port;
}
}  // namespace pv

// The pre-1.1 entry (struct _compat_ibv_port_attr is the first part of
// struct ibv_port_attr); programs built against verbs.h call the context op.
PV_EXPORT int ibv_query_port(ibv_context* context, uint8_t port_num,
                             struct _compat_ibv_port_attr* port_attr) {
    const int rc = query_port(context, port_num, reinterpret_cast<ibv_port_attr*>(port_attr),
                              offsetof(ibv_port_attr, link_layer));
    if (rc) {
        errno = rc;
        return -1;
    }
    return 0;
}

PV_EXPORT int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
    if (port_num != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    Context* c = Context::of(context);
    *gid = node_gid(c->card().node_id, c->device().index);
    return 0;
}

PV_EXPORT int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index,
                                ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
    if (flags || port_num != 1 || gid_index != 0 || entry_size < sizeof(ibv_gid_entry))
        return EINVAL;
    Context* c = Context::of(context);
    ibv_gid_entry e{};
    e.gid = node_gid(c->card().node_id, c->device().index);
    e.gid_index = 0;
    e.port_num = 1;
    e.gid_type = IBV_GID_TYPE_IB;
    e.ndev_ifindex = 0;
    std::memcpy(entry, &e, sizeof e);
    return 0;
}

PV_EXPORT ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries,
                                       size_t max_entries, uint32_t flags, size_t entry_size) {
    if (flags || entry_size < sizeof(ibv_gid_entry))
        return -EINVAL;
    if (max_entries < 1)
        return -EINVAL;
    const int rc = _ibv_query_gid_ex(context, 1, 0, entries, 0, entry_size);
    return rc ? -rc : 1;
}

// libibverbs-private, used by ibv_devinfo: IBVERBS_GID_TYPE_IB (0).
// `type` is rdma-core's driver.h enum ibv_gid_type_sysfs (IB/RoCEv1 = 0).
PV_EXPORT int ibv_query_gid_type(ibv_context*, uint8_t port_num, unsigned int index, int* type) {
    if (port_num != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *type = 0;
    return 0;
}

PV_EXPORT int ibv_query_pkey(ibv_context*, uint8_t port_num, int index, __be16* pkey) {
    if (port_num != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *pkey = htobe16(0xffff);
    return 0;
}

PV_EXPORT int ibv_get_pkey_index(ibv_context*, uint8_t port_num, __be16 pkey) {
    if (port_num != 1 || (be16toh(pkey) & 0x7fff) != 0x7fff) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}
