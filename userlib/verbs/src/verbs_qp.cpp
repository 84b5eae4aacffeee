// SPDX-License-Identifier: MIT
// Queue pairs, shared receive queues and address handles: the verbs, and
// the context operations the inline data-path calls of <infiniband/verbs.h>
// jump through (post_send, post_recv, poll_cq, req_notify_cq,
// post_srq_recv, create_qp_ex).
#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>

#include "context.hpp"
#include "engine.hpp"
#include "identity.hpp"
#include "log.hpp"
#include "objects.hpp"
#include "qp.hpp"

using namespace pv;

namespace pv {
int poll_cq(ibv_cq* cq, int num, ibv_wc* wc);
int req_notify_cq(ibv_cq* cq, int solicited_only);
}  // namespace pv

namespace {

Engine& engine_of(ibv_context* c) { return Context::of(c)->engine(); }

void attach(Cq* cq, Qp* qp) {
    if (std::find(cq->qps.begin(), cq->qps.end(), qp) == cq->qps.end())
        cq->qps.push_back(qp);
}

ibv_qp* create_qp(ibv_context* context, ibv_qp_init_attr_ex* a) {
    Engine& e = engine_of(context);
    if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd) {
        errno = EINVAL;
        return nullptr;
    }
    if (a->comp_mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS) || a->create_flags) {
        errno = EOPNOTSUPP;  // send_ops_flags (ibv_wr_*), XRC, RSS, ...
        return nullptr;
    }
    if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UD) {
        log_error("ibv_create_qp: QP type %d is not offered (RC and UD are)", a->qp_type);
        errno = EOPNOTSUPP;
        return nullptr;
    }
    const std::uint32_t inline_max = a->qp_type == IBV_QPT_UD ? wire::kUdMtu : kMaxInline;
    if (!a->send_cq || !a->recv_cq || a->cap.max_send_wr > static_cast<std::uint32_t>(kMaxQpWr) ||
        a->cap.max_send_sge > static_cast<std::uint32_t>(kMaxSge) ||
        a->cap.max_inline_data > inline_max ||
        (!a->srq && (a->cap.max_recv_wr > static_cast<std::uint32_t>(kMaxQpWr) ||
                     a->cap.max_recv_sge > static_cast<std::uint32_t>(kMaxSge)))) {
        errno = EINVAL;
        return nullptr;
    }
    Pd* pd = owner<Pd>(a->pd);
    Qp* qp = new (std::nothrow) Qp(e, pd, *a);
    if (!qp) {
        errno = ENOMEM;
        return nullptr;
    }
    // Its receive area is allocated and published without the engine's
    // lock (as in ibv_reg_mr: the driver may hold the allocation for
    // seconds, and the progress thread must go on acknowledging peers).
    if (int rc = qp->setup()) {
        delete qp;
        errno = rc;
        return nullptr;
    }
    std::lock_guard<EngineLock> g(e.lock());
    attach(owner<Cq>(a->send_cq), qp);
    attach(owner<Cq>(a->recv_cq), qp);
    e.qps.push_back(qp);
    ibv_qp_attr attr;
    ibv_qp_init_attr init;
    qp->query(&attr, 0, &init);
    a->cap = init.cap;
    return qp->abi();
}

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
    Engine& e = engine_of(qp->context);
    std::lock_guard<EngineLock> g(e.lock());
    return Qp::of(qp)->post_send(wr, bad, e.touch());
}

int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    Engine& e = engine_of(qp->context);
    std::lock_guard<EngineLock> g(e.lock());
    Qp* q = Qp::of(qp);
    bool progress_due = false;
    const int rc = q->post_recv(wr, bad, &progress_due);
    // A post_recv that moves nothing does not tell the progress thread that
    // the program drives progress: a program that only refills receives
    // (spinning on a flag) still gets its acknowledgements sent.
    if (progress_due)
        q->progress(e.touch());
    return rc;
}

int post_srq_recv(ibv_srq* abi, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    Engine& e = engine_of(abi->context);
    Srq* srq = owner<Srq>(abi);
    std::lock_guard<EngineLock> g(e.lock());
    e.touch();
    for (; wr; wr = wr->next) {
        int err = 0;
        if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > srq->max_sge)
            err = EINVAL;
        else if (srq->wrs.size() >= srq->max_wr)
            err = ENOMEM;
        if (err) {
            *bad = wr;
            return err;
        }
        srq->wrs.push_back().assign(*wr);
    }
    for (Qp* qp : e.qps)
        if (qp->srq() == srq)
            e.progress_qp(qp);
    return 0;
}

}  // namespace

namespace pv {

void fill_object_ops(verbs_context* v) {
    ibv_context_ops& o = v->context.ops;
    o.poll_cq = poll_cq;
    o.req_notify_cq = req_notify_cq;
    o.post_send = post_send;
    o.post_recv = post_recv;
    o.post_srq_recv = post_srq_recv;
    v->create_qp_ex = create_qp;
}

}  // namespace pv

// ---- QPs ------------------------------------------------------------------------------------

PV_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
    ibv_qp_init_attr_ex ex{};
    ex.qp_context = init->qp_context;
    ex.send_cq = init->send_cq;
    ex.recv_cq = init->recv_cq;
    ex.srq = init->srq;
    ex.cap = init->cap;
    ex.qp_type = init->qp_type;
    ex.sq_sig_all = init->sq_sig_all;
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    ibv_qp* qp = create_qp(pd->context, &ex);
    if (qp)
        init->cap = ex.cap;
    return qp;
}

PV_EXPORT int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
    Engine& e = engine_of(qp->context);
    Qp* q = Qp::of(qp);
    // Connecting looks up and allocates without the lock (Qp::Connection);
    // what it prepared is freed, if unused, after the lock is released.
    Qp::Connection conn;
    bool prepared;
    {
        std::lock_guard<EngineLock> g(e.lock());
        prepared = q->connects(*attr, mask);
    }
    if (prepared)
        q->prepare_connect(*attr, &conn);
    std::lock_guard<EngineLock> g(e.lock());
    e.touch();
    return q->modify(attr, mask, prepared ? &conn : nullptr);
}

PV_EXPORT int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
    Engine& e = engine_of(qp->context);
    std::lock_guard<EngineLock> g(e.lock());
    return Qp::of(qp)->query(attr, mask, init);
}

PV_EXPORT int ibv_query_qp_data_in_order(ibv_qp*, enum ibv_wr_opcode, uint32_t) {
    return 0;  // data of one operation may land in any order
}

PV_EXPORT int ibv_destroy_qp(ibv_qp* abi) {
    Engine& e = engine_of(abi->context);
    Qp* qp = Qp::of(abi);
    {
        std::lock_guard<EngineLock> g(e.lock());
        std::erase(e.qps, qp);
        std::erase(qp->send_cq()->qps, qp);
        std::erase(qp->recv_cq()->qps, qp);
        delete qp;
    }
    return 0;
}

PV_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp*) {
    errno = EOPNOTSUPP;  // the ibv_wr_* API is not offered: programs use ibv_post_send
    return nullptr;
}

// ---- SRQs ---------------------------------------------------------------------------------------

PV_EXPORT ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* init) {
    Engine& e = engine_of(pd->context);
    if (init->attr.max_wr < 1 || init->attr.max_wr > static_cast<std::uint32_t>(kMaxQpWr) ||
        init->attr.max_sge > static_cast<std::uint32_t>(kMaxSge)) {
        errno = EINVAL;
        return nullptr;
    }
    auto* srq = new (std::nothrow) Srq();
    if (!srq) {
        errno = ENOMEM;
        return nullptr;
    }
    srq->abi.context = pd->context;
    srq->abi.srq_context = init->srq_context;
    srq->abi.pd = pd;
    pthread_mutex_init(&srq->abi.mutex, nullptr);
    pthread_cond_init(&srq->abi.cond, nullptr);
    srq->pd = owner<Pd>(pd);
    srq->max_wr = init->attr.max_wr;
    srq->max_sge = std::max<std::uint32_t>(init->attr.max_sge, 1);
    srq->limit = init->attr.srq_limit;
    srq->limit_armed = srq->limit != 0;
    init->attr.max_sge = srq->max_sge;
    std::lock_guard<EngineLock> g(e.lock());
    srq->abi.handle = ++e.srqs;
    return &srq->abi;
}

PV_EXPORT int ibv_modify_srq(ibv_srq* abi, ibv_srq_attr* attr, int mask) {
    Engine& e = engine_of(abi->context);
    Srq* srq = owner<Srq>(abi);
    std::lock_guard<EngineLock> g(e.lock());
    if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
        return EINVAL;
    if (mask & IBV_SRQ_MAX_WR) {
        if (attr->max_wr < srq->wrs.size() || attr->max_wr > static_cast<std::uint32_t>(kMaxQpWr))
            return EINVAL;
        srq->max_wr = attr->max_wr;
    }
    if (mask & IBV_SRQ_LIMIT) {
        if (attr->srq_limit > srq->max_wr)
            return EINVAL;
        srq->limit = attr->srq_limit;
        srq->limit_armed = srq->limit != 0;
    }
    return 0;
}

PV_EXPORT int ibv_query_srq(ibv_srq* abi, ibv_srq_attr* attr) {
    Engine& e = engine_of(abi->context);
    Srq* srq = owner<Srq>(abi);
    std::lock_guard<EngineLock> g(e.lock());
    attr->max_wr = srq->max_wr;
    attr->max_sge = srq->max_sge;
    attr->srq_limit = srq->limit;
    return 0;
}

PV_EXPORT int ibv_destroy_srq(ibv_srq* abi) {
    Engine& e = engine_of(abi->context);
    Srq* srq = owner<Srq>(abi);
    std::lock_guard<EngineLock> g(e.lock());
    for (Qp* qp : e.qps)
        if (qp->srq() == srq)
            return EBUSY;
    pthread_mutex_destroy(&abi->mutex);
    pthread_cond_destroy(&abi->cond);
    --e.srqs;
    delete srq;
    return 0;
}

// ---- address handles ---------------------------------------------------------------------------

PV_EXPORT ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
    Engine& e = engine_of(pd->context);
    std::uint32_t node;
    if (attr->port_num > 1 ||
        !node_of(attr->dlid, attr->is_global, attr->grh.dgid, e.node_count(), &node)) {
        errno = EINVAL;
        return nullptr;
    }
    auto* ah = new (std::nothrow) Ah();
    if (!ah) {
        errno = ENOMEM;
        return nullptr;
    }
    ah->abi.context = pd->context;
    ah->abi.pd = pd;
    ah->attr = *attr;
    ah->node = node;
    std::lock_guard<EngineLock> g(e.lock());
    ah->abi.handle = ++e.ahs;
    return &ah->abi;
}

PV_EXPORT int ibv_destroy_ah(ibv_ah* abi) {
    Engine& e = engine_of(abi->context);
    std::lock_guard<EngineLock> g(e.lock());
    --e.ahs;
    delete owner<Ah>(abi);
    return 0;
}

// The address of the sender of a received UD datagram (its GRH: the first
// 40 bytes of the receive buffer hold the sender's GID).
PV_EXPORT int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                                  ibv_ah_attr* ah_attr) {
    Context* c = Context::of(context);
    *ah_attr = ibv_ah_attr{};
    ah_attr->dlid = wc->slid;
    ah_attr->sl = wc->sl;
    ah_attr->src_path_bits = wc->dlid_path_bits;
    ah_attr->port_num = port_num;
    if (wc->wc_flags & IBV_WC_GRH) {
        ah_attr->is_global = 1;
        ah_attr->grh.dgid = grh->sgid;
        ah_attr->grh.sgid_index = 0;
        ah_attr->grh.hop_limit = 0xff;
        ah_attr->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xfffff;
    }
    (void)c;
    return 0;
}

PV_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
    ibv_ah_attr attr;
    if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
        return nullptr;
    return ibv_create_ah(pd, &attr);
}
