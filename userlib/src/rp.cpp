// SPDX-License-Identifier: MIT
// The read proxy: the C API (tcaGet, tcaCas, tcaFaa and their NB forms,
// tcaTest/tcaWait/tcaCancel, tcaExport/tcaUnexport) and a request's life:
// its pieces submitted, answered, resubmitted after RP_FULL, retired at the
// deadline. A request is checked and planned under the library mutex
// (buffers must not change meanwhile; a get pins its destination buffer
// against tcaFree), then submitted and polled without it. Blocking calls
// keep their request to themselves; non-blocking ones park it in the
// context's table under tcaRequest.id (entered before anything is sent, so
// that an error return means nothing was sent). One caller at a time may
// poll or cancel a parked request: a concurrent second one gets -EBUSY.
#include "rp.hpp"

#include <peach2/peach2_uapi.h>
#include <sched.h>
#include <tca/tca.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <vector>

#include "context.hpp"
#include "handle.hpp"
#include "library.hpp"

namespace tca {

// ---- one request in flight -----------------------------------------------------

RpOp::RpOp(DriverPort& port, CplAreas& areas, const RpTarget& t, std::uint32_t reply_buffer,
           std::span<const RpPiece> pieces, std::uint64_t deadline_ns, RpPin pin)
    : port_(port),
      areas_(areas),
      target_(t),
      reply_buffer_(reply_buffer),
      deadline_ns_(deadline_ns),
      pin_(std::move(pin)) {
    if (pieces.size() == 1) {
        one_.p = pieces[0];
        pieces_ = {&one_, 1};
    } else {
        many_.resize(pieces.size());
        for (std::size_t i = 0; i < pieces.size(); ++i)
            many_[i].p = pieces[i];
        pieces_ = many_;
    }
    out_.pieces = static_cast<std::uint32_t>(pieces_.size());
    pin_.set_deadline(deadline_ns);
}

void RpOp::back_off(Piece& pc, std::uint64_t now_ns) {
    ++out_.retries;
    pc.state = State::Backoff;
    pc.resend_ns = now_ns + pc.backoff_ns;
    pc.backoff_ns = std::min(pc.backoff_ns * 2, kMaxBackoffNs);
}

RpOp::Sent RpOp::submit(Piece& pc, std::uint64_t now_ns) {
    peach2_rp_submit s{};
    s.node = target_.node;
    s.op = target_.op;
    s.export_id = target_.export_id;
    s.key = target_.key;
    s.addr = pc.p.addr;
    const bool reply = target_.op == PEACH2_RP_OP_READ || target_.op == PEACH2_RP_OP_LOOKUP;
    s.len = reply ? pc.p.len : 8;
    if (reply) {
        s.reply_handle = reply_buffer_;
        s.reply_offset = pc.p.reply_offset;
    }
    s.cpl_handle = pc.slot.area->buffer();
    s.cpl_offset = pc.slot.area->offset_of(pc.slot.slot);
    s.operand[0] = target_.operand[0];
    s.operand[1] = target_.operand[1];
    int rc;
    do
        rc = port_.call(PEACH2_IOC_RP_SUBMIT, &s);
    while (rc == -EINTR);
    if (rc == 0) {
        pc.tag = s.tag;
        pc.state = State::InFlight;
        sent_any_ = true;
        return Sent::Yes;
    }
    if (rc == -EAGAIN) {
        // The link's send queue was full: nothing was sent. Keep the
        // slot and try again after a backoff, until the deadline.
        back_off(pc, now_ns);
        link_free_ns_ = pc.resend_ns;  // no new pieces before then either
        return Sent::Retry;
    }
    if (rc == -EFAULT) {
        // Copying the tag back failed: the request may be out, and its
        // answer will come to this slot under a tag we do not know.
        sent_any_ = true;
        pc.slot.area->slots().retire(pc.slot.slot);
    } else {
        pc.slot.area->slots().give(pc.slot.slot);  // never sent
    }
    pc.state = State::Done;
    fail(rc, 0);
    return Sent::Failed;
}

void RpOp::fail(int rc, std::uint32_t status) {
    if (error_ == 0) {
        error_ = rc;
        out_.status = status;
    }
}

void RpOp::send_more(std::uint64_t now_ns) {
    if (now_ns < link_free_ns_)
        return;  // the link's send queue was full: wait for the backoff
    while (error_ == 0 && next_unsent_ < pieces_.size() && in_flight_ < kWindow) {
        Piece& pc = pieces_[next_unsent_];
        if (!areas_.take(&pc.slot)) {
            // Nothing of ours in flight to wait for: give up now rather
            // than spin until the deadline.
            if (in_flight_ == 0)
                fail(-EAGAIN, 0);
            return;
        }
        pc.backoff_ns = kFirstBackoffNs;
        const Sent r = submit(pc, now_ns);
        ++next_unsent_;
        if (r == Sent::Failed)
            return;
        ++in_flight_;  // InFlight, or Backoff holding its slot
        if (r == Sent::Retry)
            return;  // the link is busy: no more now
    }
}

void RpOp::answered(Piece& pc, std::uint64_t now_ns) {
    const peach2_rp_cpl c = pc.slot.area->read(pc.slot.slot);
    if (c.status == PEACH2_ERR_RP_FULL && error_ == 0) {
        // The target's queue was full; the card answered by itself. The
        // slot is ours again: resubmit into it after a backoff.
        back_off(pc, now_ns);
        return;
    }
    pc.slot.area->slots().give(pc.slot.slot);
    pc.state = State::Done;
    --in_flight_;
    if (c.status == PEACH2_ERR_RP_NOT_EXPORTED) {
        fail(TCA_ENOTEXPORTED, c.status);
    } else if (c.status != 0) {
        fail(TCA_EREMOTE, c.status);
    } else if (target_.op == PEACH2_RP_OP_READ || target_.op == PEACH2_RP_OP_LOOKUP) {
        if (c.len != pc.p.len)
            fail(TCA_EDEVICE, 0);  // success must deliver everything
        else
            out_.bytes += c.len;
    } else {
        out_.value = c.value;
    }
}

int RpOp::start(std::uint64_t now_ns) {
    send_more(now_ns);
    return poll(now_ns);
}

int RpOp::poll(std::uint64_t now_ns) {
    if (ended_)
        return out_.result;
    for (Piece& pc : pieces_) {
        if (pc.state == State::InFlight && pc.slot.area->tag(pc.slot.slot) == pc.tag) {
            answered(pc, now_ns);
        } else if (pc.state == State::Backoff) {
            if (error_ != 0) {  // not resent after an error
                pc.slot.area->slots().give(pc.slot.slot);
                pc.state = State::Done;
                --in_flight_;
            } else if (now_ns >= pc.resend_ns && now_ns < deadline_ns_ &&
                       submit(pc, now_ns) == Sent::Failed) {
                --in_flight_;  // submit() dealt with the slot
            }
        }
    }
    send_more(now_ns);
    if (const int rc = finish_if_done(); rc != 1)
        return rc;
    if (now_ns >= deadline_ns_) {
        fail(-ETIMEDOUT, 0);
        abandon(error_);
        return out_.result;
    }
    return 1;
}

int RpOp::finish_if_done() {
    if (in_flight_ != 0)
        return 1;
    if (error_ == 0 && next_unsent_ < pieces_.size())
        return 1;
    end(error_);
    return out_.result;
}

void RpOp::end(int rc) {
    ended_ = true;
    out_.result = rc;
    pin_.release();
}

void RpOp::abandon(int rc) {
    for (Piece& pc : pieces_) {
        if (pc.state == State::InFlight)
            pc.slot.area->slots().retire(pc.slot.slot);  // a late answer may still come
        else if (pc.state == State::Backoff)
            pc.slot.area->slots().give(pc.slot.slot);  // nothing in flight in it
        pc.state = State::Done;
    }
    in_flight_ = 0;
    end(rc);
}

void RpOp::cancel() {
    if (!ended_)
        abandon(-ECANCELED);
}

// ---- waiting -------------------------------------------------------------------

namespace {

constexpr std::uint64_t kDefaultTimeoutMs = 10000;
constexpr std::uint64_t kSpinNs = 50000;     // then yield
constexpr std::uint64_t kYieldNs = 2000000;  // then sleep
constexpr long kSleepNs = 50000;

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

std::uint64_t timeout_from_env() noexcept {
    const char* s = std::getenv("TCA_RP_TIMEOUT_MS");
    if (!s || !*s)
        return kDefaultTimeoutMs;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s, &end, 10);
    return (*end || v == 0 || v > 86400000ull) ? kDefaultTimeoutMs : v;
}

}  // namespace

std::uint64_t monotonic_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t rp_timeout_ms() noexcept {
    static const std::uint64_t value = timeout_from_env();
    return value;
}

int wait_op(RpOp& op, std::uint64_t limit_ns) {
    const std::uint64_t start = monotonic_ns();
    for (unsigned n = 0;; ++n) {
        const std::uint64_t now = monotonic_ns();
        const int rc = op.poll(now);
        if (rc != 1)
            return rc;
        if (limit_ns != 0 && now >= limit_ns)
            return 1;
        const std::uint64_t waited = now - start;
        if (waited < kSpinNs) {
            for (int i = 0; i < 32; ++i)
                cpu_relax();
        } else if (waited < kYieldNs) {
            sched_yield();
        } else {
            const timespec ts{0, kSleepNs};
            nanosleep(&ts, nullptr);
        }
    }
}

// ---- the table of parked requests ----------------------------------------------

namespace {

std::atomic<std::uint64_t> last_id{0};  // process-wide, never reset

}  // namespace

std::uint64_t RpState::add(std::shared_ptr<RpOp> op) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uint64_t id = last_id.fetch_add(1, std::memory_order_relaxed) + 1;
    ops_.emplace(id, std::move(op));
    return id;
}

std::shared_ptr<RpOp> RpState::find(std::uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = ops_.find(id);
    return it == ops_.end() ? nullptr : it->second;
}

std::shared_ptr<RpOp> RpState::take(std::uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = ops_.find(id);
    if (it == ops_.end())
        return nullptr;
    std::shared_ptr<RpOp> op = std::move(it->second);
    ops_.erase(it);
    return op;
}

}  // namespace tca

// ---- the C API: get and atomics ------------------------------------------------

using namespace tca;

namespace {

// A request that ended before (or while) it was submitted.
void ended(tcaRequest* req, const RpOutcome& o) {
    tcaRequest r{};
    r.result = o.result;
    r.status = o.status;
    r.value = o.value;
    r.bytes = o.bytes;
    r.retries = o.retries;
    r.pieces = o.pieces;
    *req = r;
}

int refused(tcaRequest* req, int rc) {
    if (req) {
        RpOutcome o;
        o.result = rc;
        ended(req, o);
    }
    return rc;
}

// Everything a request needs, built under the library mutex.
struct Prepared {
    RpState* rp = nullptr;
    RpTarget target;
    std::uint32_t reply_buffer = 0;
    std::vector<RpPiece> pieces;
    RpPin pin;  // the get's destination buffer
};

// The parked request *req names (nullptr if none), and the table it is in.
// Lock-free: tcaFinalize must not run concurrently (tca.h).
std::shared_ptr<RpOp> parked(const tcaRequest& req, RpState** table) {
    Context* c = context_if_open();
    *table = c ? c->rp_if_ready() : nullptr;
    return *table && req.id ? (*table)->find(req.id) : nullptr;
}

// Is *req a request still in this process's table (not to be overwritten)?
bool still_pending(const tcaRequest& req) {
    RpState* rp = nullptr;
    return parked(req, &rp) != nullptr;
}

// The exclusive right to poll or cancel a parked request.
class Claim {
public:
    explicit Claim(RpOp& op) noexcept : op_(op), held_(op.claim()) {}
    Claim(const Claim&) = delete;
    Claim& operator=(const Claim&) = delete;
    ~Claim() {
        if (held_)
            op_.unclaim();
    }
    explicit operator bool() const noexcept { return held_; }

private:
    RpOp& op_;
    bool held_;
};

// srcs: one handle (tcaGetNB), or consecutive handles of one export
// (tcaGetSpanNB).
int prepare_get(void* dst, std::span<const tcaHandle* const> srcs, std::uint64_t off,
                std::uint64_t len, Prepared* p) {
    if (srcs.empty())
        return -EINVAL;
    for (const tcaHandle* h : srcs) {
        if (!h)
            return -EINVAL;
        if (int rc = validate_handle(*h))
            return rc;
        if (h->node != srcs[0]->node || h->export_id != srcs[0]->export_id ||
            h->export_key != srcs[0]->export_key)
            return -EINVAL;
    }
    return with_context([&](Context& c) {
        if (int rc = rp_target(*srcs[0], c.node_count(), PEACH2_RP_OP_READ, &p->target))
            return rc;
        DmaSide side;
        if (int rc = c.local_side(dst, len, &side))
            return rc;
        if (int rc = plan_get(side, srcs, off, len, &p->pieces))
            return rc;
        p->reply_buffer = side.buffer;
        if (int rc = c.rp(&p->rp))
            return rc;
        p->pin = p->rp->pins().pin(side.buffer);
        return 0;
    });
}

int prepare_atomic(const tcaHandle& h, std::uint64_t off, std::uint32_t op, std::uint64_t a,
                   std::uint64_t b, Prepared* p) {
    if (int rc = validate_handle(h))
        return rc;
    return with_context([&](Context& c) {
        if (int rc = rp_target(h, c.node_count(), op, &p->target))
            return rc;
        RpPiece piece;
        if (int rc = plan_atomic(h, off, &piece.addr))
            return rc;
        piece.len = 8;
        p->pieces.push_back(piece);
        p->target.operand[0] = a;
        p->target.operand[1] = b;
        return c.rp(&p->rp);
    });
}

// When a request started at now_ns gives up (TCA_RP_TIMEOUT_MS).
std::uint64_t deadline_after(std::uint64_t now_ns) {
    return now_ns + rp_timeout_ms() * 1000000ull;
}

std::shared_ptr<RpOp> make_op(Prepared& p) {
    return std::make_shared<RpOp>(p.rp->port(), p.rp->areas(), p.target, p.reply_buffer, p.pieces,
                                  deadline_after(monotonic_ns()), std::move(p.pin));
}

// Non-blocking: park the request (allocations first: nothing may fail once
// a piece is out), start it, and take it out again if it ended already.
int submit_nb(Prepared& p, tcaRequest* req) {
    std::shared_ptr<RpOp> op = make_op(p);
    int rc;
    std::uint64_t id;
    {
        Claim claim(*op);  // nobody polls it before it started
        id = p.rp->add(op);
        rc = op->start(monotonic_ns());
    }
    if (rc != 1) {
        // Answered already (a fast target), or nothing could be sent.
        p.rp->take(id);
        ended(req, op->outcome());
        return op->sent_any() ? 0 : rc;
    }
    tcaRequest r{};
    r.pieces = op->outcome().pieces;
    r.id = id;
    *req = r;
    return 0;
}

// Blocking: start and wait; the outcome in *out. Nobody else sees the
// request, so it lives on the stack (a shared one costs an allocation and
// atomic counts, ~0.3 us of a get under TCG).
int submit_wait(Prepared& p, RpOutcome* out) {
    const std::uint64_t now = monotonic_ns();
    RpOp op(p.rp->port(), p.rp->areas(), p.target, p.reply_buffer, p.pieces, deadline_after(now),
            std::move(p.pin));
    int rc = op.start(now);
    if (rc == 1)
        rc = wait_op(op, 0);
    *out = op.outcome();
    return rc;
}

// Polls (timeout_ms < 0: once) or waits for a parked request.
int collect(tcaRequest* req, int timeout_ms, bool once) {
    if (!req)
        return -EINVAL;
    if (req->id == 0)
        return req->result;
    RpState* rp = nullptr;
    const std::shared_ptr<RpOp> op = parked(*req, &rp);
    if (!op)
        return -ENOENT;
    const Claim claim(*op);
    if (!claim)
        return -EBUSY;  // another thread is polling or cancelling it
    int rc;
    if (once) {
        rc = op->poll(monotonic_ns());
    } else {
        const std::uint64_t limit =
            timeout_ms > 0 ? monotonic_ns() + static_cast<std::uint64_t>(timeout_ms) * 1000000ull
                           : 0;
        rc = wait_op(*op, limit);
    }
    if (rc == 1)
        return once ? 1 : -ETIMEDOUT;
    rp->take(req->id);  // gone already if it was cancelled meanwhile
    ended(req, op->outcome());
    return rc;
}

// The NB calls' common path: a still pending *req is left alone (-EBUSY);
// a refusal before anything was sent ends *req with its code.
template <typename Prepare>
int start_nb(tcaRequest* req, bool args_ok, Prepare prepare) {
    if (!req)
        return -EINVAL;
    return guarded([&] {
        if (still_pending(*req))
            return -EBUSY;  // *req left alone
        if (!args_ok)
            return refused(req, -EINVAL);
        Prepared p;
        if (int rc = prepare(&p))
            return refused(req, rc);
        return submit_nb(p, req);
    });
}

// tcaCas/tcaFaa: one atomic, waited for; the old value in *old.
int atomic_wait(const tcaHandle* h, size_t offset, std::uint32_t op, std::uint64_t a,
                std::uint64_t b, std::uint64_t* old) {
    if (!h || !old)
        return -EINVAL;
    return guarded([&] {
        Prepared p;
        if (int rc = prepare_atomic(*h, offset, op, a, b, &p))
            return rc;
        RpOutcome o;
        const int rc = submit_wait(p, &o);
        if (rc == 0)
            *old = o.value;
        return rc;
    });
}

}  // namespace

extern "C" {

int tcaGetNB(void* dst, const tcaHandle* src, size_t src_offset, size_t len, tcaRequest* req) {
    const tcaHandle* const one[] = {src};
    return start_nb(req, dst && src,
                    [&](Prepared* p) { return prepare_get(dst, one, src_offset, len, p); });
}

int tcaGetSpanNB(void* dst, const tcaHandle* const* srcs, size_t count, size_t src_offset,
                 size_t len, tcaRequest* req) {
    return start_nb(req, dst && srcs && count, [&](Prepared* p) {
        return prepare_get(dst, {srcs, count}, src_offset, len, p);
    });
}

int tcaGet(void* dst, const tcaHandle* src, size_t src_offset, size_t len) {
    if (!dst || !src)
        return -EINVAL;
    return guarded([&] {
        Prepared p;
        const tcaHandle* const one[] = {src};
        if (int rc = prepare_get(dst, one, src_offset, len, &p))
            return rc;
        RpOutcome o;
        return submit_wait(p, &o);
    });
}

int tcaCasNB(const tcaHandle* h, size_t offset, uint64_t compare, uint64_t swap, tcaRequest* req) {
    return start_nb(req, h != nullptr, [&](Prepared* p) {
        return prepare_atomic(*h, offset, PEACH2_RP_OP_CAS, compare, swap, p);
    });
}

int tcaCas(const tcaHandle* h, size_t offset, uint64_t compare, uint64_t swap, uint64_t* old) {
    return atomic_wait(h, offset, PEACH2_RP_OP_CAS, compare, swap, old);
}

int tcaFaaNB(const tcaHandle* h, size_t offset, uint64_t add, tcaRequest* req) {
    return start_nb(req, h != nullptr, [&](Prepared* p) {
        return prepare_atomic(*h, offset, PEACH2_RP_OP_FAA, add, 0, p);
    });
}

int tcaFaa(const tcaHandle* h, size_t offset, uint64_t add, uint64_t* old) {
    return atomic_wait(h, offset, PEACH2_RP_OP_FAA, add, 0, old);
}

int tcaTest(tcaRequest* req) {
    return guarded([&] { return collect(req, 0, true); });
}

int tcaWait(tcaRequest* req, int timeout_ms) {
    return guarded([&] { return collect(req, timeout_ms, false); });
}

int tcaCancel(tcaRequest* req) {
    if (!req)
        return -EINVAL;
    if (req->id == 0)
        return 0;
    return guarded([&] {
        RpState* rp = nullptr;
        const std::shared_ptr<RpOp> op = parked(*req, &rp);
        if (!op)
            return -ENOENT;
        const Claim claim(*op);
        if (!claim)
            return -EBUSY;  // another thread is polling it
        rp->take(req->id);
        op->cancel();
        ended(req, op->outcome());
        return 0;
    });
}

int tcaRequestTimeoutMs(void) { return static_cast<int>(rp_timeout_ms()); }

}  // extern "C"

// ---- the C API: tcaExport / tcaUnexport ----------------------------------------

namespace {

// The public flags in the driver's terms (kept apart: the C API must not
// change when the ABI does).
int export_flags(std::uint32_t flags, std::uint32_t* out) {
    if (flags == 0 || flags & ~(TCA_EXPORT_READ | TCA_EXPORT_ATOMIC))
        return -EINVAL;
    *out = ((flags & TCA_EXPORT_READ) ? PEACH2_EXPORT_READ : 0u) |
           ((flags & TCA_EXPORT_ATOMIC) ? PEACH2_EXPORT_ATOMIC : 0u);
    return 0;
}

}  // namespace

extern "C" {

int tcaExport(const void* ptr, size_t size, uint32_t flags, tcaHandle* out) {
    if (!ptr || !out)
        return -EINVAL;
    std::uint32_t f = 0;
    if (int rc = export_flags(flags, &f))
        return rc;
    return guarded([&] {
        return with_context([&](Context& c) { return c.export_range(ptr, size, f, out); });
    });
}

int tcaUnexport(const tcaHandle* h) {
    if (!h)
        return -EINVAL;
    if (int rc = validate_handle(*h))
        return rc;
    if (h->export_id == 0)
        return TCA_ENOTEXPORTED;
    return guarded([&] {
        return with_context([&](Context& c) {
            if (h->node != c.node_id())
                return TCA_ENOTEXPORTED;
            return c.unexport(h->export_id, h->export_key);
        });
    });
}

}  // extern "C"
