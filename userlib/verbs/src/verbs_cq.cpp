// SPDX-License-Identifier: MIT
// Completion queues, completion channels, async events.
//
// A completion channel's fd is an eventfd in semaphore mode: one count per
// CQ event, so that poll/epoll on it works and ibv_get_cq_event blocks (or
// answers EAGAIN when the program made the fd non-blocking) exactly like on
// a kernel channel. Events come from push_cqe() for armed CQs, in the
// program's calls or in the engine's progress thread.
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <new>

#include "context.hpp"
#include "engine.hpp"
#include "objects.hpp"
#include "qp.hpp"

using namespace pv;

namespace {

Engine& engine_of(ibv_context* c) { return Context::of(c)->engine(); }

}  // namespace

PV_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
    Engine& e = engine_of(context);
    auto* ch = new (std::nothrow) Channel();
    if (!ch) {
        errno = ENOMEM;
        return nullptr;
    }
    ch->abi.fd = ::eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    if (ch->abi.fd < 0) {
        delete ch;
        return nullptr;
    }
    ch->abi.context = context;
    ch->engine = &e;
    std::lock_guard<EngineLock> g(e.lock());
    ++e.channels;
    return &ch->abi;
}

PV_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* abi) {
    Channel* ch = owner<Channel>(abi);
    Engine& e = *ch->engine;
    std::lock_guard<EngineLock> g(e.lock());
    if (abi->refcnt) {
        errno = EBUSY;
        return -1;
    }
    ::close(abi->fd);
    --e.channels;
    delete ch;
    return 0;
}

PV_EXPORT ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context,
                                ibv_comp_channel* channel, int comp_vector) {
    Engine& e = engine_of(context);
    if (cqe < 1 || cqe > kMaxCqe || comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
        errno = EINVAL;
        return nullptr;
    }
    auto* cq = new (std::nothrow) Cq();
    if (!cq) {
        errno = ENOMEM;
        return nullptr;
    }
    cq->abi.context = context;
    cq->abi.channel = channel;
    cq->abi.cq_context = cq_context;
    cq->abi.cqe = cqe;
    pthread_mutex_init(&cq->abi.mutex, nullptr);
    pthread_cond_init(&cq->abi.cond, nullptr);
    cq->capacity = static_cast<std::uint32_t>(cqe);
    std::lock_guard<EngineLock> g(e.lock());
    if (channel) {
        cq->channel = owner<Channel>(channel);
        ++channel->refcnt;
    }
    cq->abi.handle = static_cast<std::uint32_t>(e.cqs.size() + 1);
    e.cqs.push_back(cq);
    return &cq->abi;
}

PV_EXPORT int ibv_destroy_cq(ibv_cq* abi) {
    Engine& e = engine_of(abi->context);
    Cq* cq = owner<Cq>(abi);
    {
        std::lock_guard<EngineLock> g(e.lock());
        if (!cq->qps.empty())
            return EBUSY;
        // Events still queued on the channel for it go away with it.
        if (cq->channel) {
            auto& ev = cq->channel->events;
            ev.erase(std::remove(ev.begin(), ev.end(), abi), ev.end());
            --cq->channel->abi.refcnt;
        }
        std::erase(e.cqs, cq);
    }
    // As libibverbs: wait until every event handed out was acknowledged.
    pthread_mutex_lock(&abi->mutex);
    while (abi->comp_events_completed != cq->events_reported)
        pthread_cond_wait(&abi->cond, &abi->mutex);
    pthread_mutex_unlock(&abi->mutex);
    pthread_mutex_destroy(&abi->mutex);
    pthread_cond_destroy(&abi->cond);
    delete cq;
    return 0;
}

PV_EXPORT int ibv_resize_cq(ibv_cq* abi, int cqe) {
    Engine& e = engine_of(abi->context);
    Cq* cq = owner<Cq>(abi);
    std::lock_guard<EngineLock> g(e.lock());
    if (cqe < 1 || cqe > kMaxCqe || static_cast<std::size_t>(cqe) < cq->entries.size())
        return EINVAL;
    cq->capacity = static_cast<std::uint32_t>(cqe);
    abi->cqe = cqe;
    return 0;
}

PV_EXPORT int ibv_get_cq_event(ibv_comp_channel* abi, ibv_cq** cq, void** cq_context) {
    Channel* ch = owner<Channel>(abi);
    std::uint64_t n;
    ch->engine->event_waiters(1);
    const ssize_t got = ::read(abi->fd, &n, sizeof n);
    ch->engine->event_waiters(-1);
    if (got != sizeof n)
        return -1;  // errno: EAGAIN (non-blocking fd), EINTR
    std::lock_guard<EngineLock> g(ch->engine->lock());
    if (ch->events.empty()) {
        errno = EAGAIN;  // its CQ was destroyed meanwhile
        return -1;
    }
    *cq = ch->events.front();
    ch->events.pop_front();
    *cq_context = (*cq)->cq_context;
    ++owner<Cq>(*cq)->events_reported;
    return 0;
}

PV_EXPORT void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_broadcast(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

namespace pv {

int poll_cq(ibv_cq* abi, int num, ibv_wc* wc) {
    Engine& e = engine_of(abi->context);
    Cq* cq = owner<Cq>(abi);
    std::lock_guard<EngineLock> g(e.lock());
    // Completions already here are returned as they are, as an HCA's CQ
    // would: progress runs when the program wants more than the CQ holds.
    // (A ping-pong's Send completion brings its receive's with it; the
    // poll for that one then costs no pass over the QPs.) A program that
    // drains a long backlog one entry at a time still gets a pass every
    // kMaxPollsWithoutPass polls: its peers wait for its acknowledgements.
    if (num <= 0 || cq->entries.size() < static_cast<std::size_t>(num) ||
        ++cq->polls_without_pass >= Cq::kMaxPollsWithoutPass) {
        cq->polls_without_pass = 0;
        e.progress_cq(cq, e.touch());
    }
    int n = 0;
    while (n < num && !cq->entries.empty()) {
        wc[n++] = cq->entries.front();
        cq->entries.pop_front();
    }
    return n;
}

int req_notify_cq(ibv_cq* abi, int solicited_only) {
    Engine& e = engine_of(abi->context);
    Cq* cq = owner<Cq>(abi);
    {
        std::lock_guard<EngineLock> g(e.lock());
        if (!cq->channel)
            return EINVAL;
        cq->armed = true;
        cq->solicited_only = solicited_only != 0;
    }
    e.cq_armed();  // the progress thread now polls for it
    return 0;
}

}  // namespace pv

// ---- async events ------------------------------------------------------------------------

PV_EXPORT int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
    return engine_of(context).get_async_event(event);
}

PV_EXPORT void ibv_ack_async_event(ibv_async_event* event) {
    // Count acknowledgements like libibverbs, for destroy verbs that wait.
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: {
        ibv_cq* cq = event->element.cq;
        pthread_mutex_lock(&cq->mutex);
        ++cq->async_events_completed;
        pthread_cond_broadcast(&cq->cond);
        pthread_mutex_unlock(&cq->mutex);
        break;
    }
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: {
        ibv_qp* qp = event->element.qp;
        pthread_mutex_lock(&qp->mutex);
        ++qp->events_completed;
        pthread_cond_broadcast(&qp->cond);
        pthread_mutex_unlock(&qp->mutex);
        break;
    }
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: {
        ibv_srq* srq = event->element.srq;
        pthread_mutex_lock(&srq->mutex);
        ++srq->events_completed;
        pthread_cond_broadcast(&srq->cond);
        pthread_mutex_unlock(&srq->mutex);
        break;
    }
    default: break;
    }
}
