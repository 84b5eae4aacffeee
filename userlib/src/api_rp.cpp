// SPDX-License-Identifier: MIT
// C API: one-sided get and remote atomics (read proxy). A request is
// checked and planned under the library mutex (buffers must not change
// meanwhile; a get pins its destination buffer against tcaFree), then
// submitted and polled without it. Blocking calls keep their request to
// themselves; non-blocking ones park it in the context's table under
// tcaRequest.id (entered before anything is sent, so that an error return
// means nothing was sent). One caller at a time may poll or cancel a parked
// request: a concurrent second one gets -EBUSY.
#include "api_guard.hpp"
#include "handle.hpp"
#include "library.hpp"
#include "rp_plan.hpp"
#include "rp_wait.hpp"

#include <tca/tca.h>

#include <peach2/peach2_hw.h>

#include <cerrno>
#include <memory>
#include <vector>

using namespace tca;

namespace {

// A request that ended before (or while) it was submitted.
void ended(tcaRequest *req, const RpOutcome &o)
{
	tcaRequest r{};
	r.result = o.result;
	r.status = o.status;
	r.value = o.value;
	r.bytes = o.bytes;
	r.retries = o.retries;
	r.pieces = o.pieces;
	*req = r;
}

int refused(tcaRequest *req, int rc)
{
	if (req) {
		RpOutcome o;
		o.result = rc;
		ended(req, o);
	}
	return rc;
}

// Everything a request needs, built under the library mutex.
struct Prepared {
	RpState *rp = nullptr;
	RpTarget target;
	std::uint32_t reply_buffer = 0;
	std::vector<RpPiece> pieces;
	RpPin pin; // the get's destination buffer
};

// Is *req a request still in this process's table (not to be overwritten)?
bool still_pending(const tcaRequest &req)
{
	if (req.id == 0)
		return false;
	Context *c = context_if_open();
	RpState *rp = c ? c->rp_if_ready() : nullptr;
	return rp && rp->known(req.id);
}

// The exclusive right to poll or cancel a parked request.
class Claim {
public:
	explicit Claim(RpOp &op) noexcept : op_(op), held_(op.claim()) {}
	Claim(const Claim &) = delete;
	Claim &operator=(const Claim &) = delete;
	~Claim()
	{
		if (held_)
			op_.unclaim();
	}
	explicit operator bool() const noexcept { return held_; }

private:
	RpOp &op_;
	bool held_;
};

int prepare_get(void *dst, const tcaHandle &src, std::uint64_t off, std::uint64_t len, Prepared *p)
{
	if (int rc = validate_handle(src))
		return rc;
	return with_context([&](Context &c) {
		if (int rc = rp_target(src, c.node_count(), PEACH2_RP_OP_READ, &p->target))
			return rc;
		DmaSide side;
		if (int rc = c.local_side(dst, len, &side))
			return rc;
		if (int rc = plan_get(side, src, off, len, &p->pieces))
			return rc;
		p->reply_buffer = side.buffer;
		if (int rc = c.rp(&p->rp))
			return rc;
		p->pin = p->rp->pins().pin(side.buffer);
		return 0;
	});
}

int prepare_atomic(const tcaHandle &h, std::uint64_t off, std::uint32_t op, std::uint64_t a,
		   std::uint64_t b, Prepared *p)
{
	if (int rc = validate_handle(h))
		return rc;
	return with_context([&](Context &c) {
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

std::shared_ptr<RpOp> make_op(Prepared &p)
{
	const std::uint64_t deadline = monotonic_ns() + rp_timeout_ms() * 1000000ull;
	return std::make_shared<RpOp>(p.rp->port(), p.rp->areas(), p.target, p.reply_buffer,
				      std::move(p.pieces), deadline, std::move(p.pin));
}

// Non-blocking: park the request (allocations first: nothing may fail once
// a piece is out), start it, and take it out again if it ended already.
int submit_nb(Prepared &p, tcaRequest *req)
{
	std::shared_ptr<RpOp> op = make_op(p);
	int rc;
	std::uint64_t id;
	{
		Claim claim(*op); // nobody polls it before it started
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

// Blocking: start and wait; the outcome in *out.
int submit_wait(Prepared &p, RpOutcome *out)
{
	std::shared_ptr<RpOp> op = make_op(p);
	int rc = op->start(monotonic_ns());
	if (rc == 1)
		rc = wait_op(*op, 0);
	*out = op->outcome();
	return rc;
}

// Polls (timeout_ms < 0: once) or waits for a parked request.
int collect(tcaRequest *req, int timeout_ms, bool once)
{
	if (!req)
		return -EINVAL;
	if (req->id == 0)
		return req->result;
	Context *c = context_if_open();
	RpState *rp = c ? c->rp_if_ready() : nullptr;
	const std::shared_ptr<RpOp> op = rp ? rp->find(req->id) : nullptr;
	if (!op)
		return -ENOENT;
	const Claim claim(*op);
	if (!claim)
		return -EBUSY; // another thread is polling or cancelling it
	int rc;
	if (once) {
		rc = op->poll(monotonic_ns());
	} else {
		const std::uint64_t limit =
			timeout_ms > 0 ? monotonic_ns() + static_cast<std::uint64_t>(timeout_ms) * 1000000ull : 0;
		rc = wait_op(*op, limit);
	}
	if (rc == 1)
		return once ? 1 : -ETIMEDOUT;
	rp->take(req->id); // gone already if it was cancelled meanwhile
	ended(req, op->outcome());
	return rc;
}

// The NB calls' common path: a still pending *req is left alone (-EBUSY);
// a refusal before anything was sent ends *req with its code.
template <typename Prepare>
int start_nb(tcaRequest *req, bool args_ok, Prepare prepare)
{
	if (!req)
		return -EINVAL;
	return guarded([&] {
		if (still_pending(*req))
			return -EBUSY; // *req left alone
		if (!args_ok)
			return refused(req, -EINVAL);
		Prepared p;
		if (int rc = prepare(&p))
			return refused(req, rc);
		return submit_nb(p, req);
	});
}

// tcaCas/tcaFaa: one atomic, waited for; the old value in *old.
int atomic_wait(const tcaHandle *h, size_t offset, std::uint32_t op, std::uint64_t a, std::uint64_t b,
		std::uint64_t *old)
{
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

} // namespace

extern "C" {

int tcaGetNB(void *dst, const tcaHandle *src, size_t src_offset, size_t len, tcaRequest *req)
{
	return start_nb(req, dst && src,
			[&](Prepared *p) { return prepare_get(dst, *src, src_offset, len, p); });
}

int tcaGet(void *dst, const tcaHandle *src, size_t src_offset, size_t len)
{
	if (!dst || !src)
		return -EINVAL;
	return guarded([&] {
		Prepared p;
		if (int rc = prepare_get(dst, *src, src_offset, len, &p))
			return rc;
		RpOutcome o;
		return submit_wait(p, &o);
	});
}

int tcaCasNB(const tcaHandle *h, size_t offset, uint64_t compare, uint64_t swap, tcaRequest *req)
{
	return start_nb(req, h != nullptr, [&](Prepared *p) {
		return prepare_atomic(*h, offset, PEACH2_RP_OP_CAS, compare, swap, p);
	});
}

int tcaCas(const tcaHandle *h, size_t offset, uint64_t compare, uint64_t swap, uint64_t *old)
{
	return atomic_wait(h, offset, PEACH2_RP_OP_CAS, compare, swap, old);
}

int tcaFaaNB(const tcaHandle *h, size_t offset, uint64_t add, tcaRequest *req)
{
	return start_nb(req, h != nullptr,
			[&](Prepared *p) { return prepare_atomic(*h, offset, PEACH2_RP_OP_FAA, add, 0, p); });
}

int tcaFaa(const tcaHandle *h, size_t offset, uint64_t add, uint64_t *old)
{
	return atomic_wait(h, offset, PEACH2_RP_OP_FAA, add, 0, old);
}

int tcaTest(tcaRequest *req)
{
	return guarded([&] { return collect(req, 0, true); });
}

int tcaWait(tcaRequest *req, int timeout_ms)
{
	return guarded([&] { return collect(req, timeout_ms, false); });
}

int tcaCancel(tcaRequest *req)
{
	if (!req)
		return -EINVAL;
	if (req->id == 0)
		return 0;
	return guarded([&] {
		Context *c = context_if_open();
		RpState *rp = c ? c->rp_if_ready() : nullptr;
		const std::shared_ptr<RpOp> op = rp ? rp->find(req->id) : nullptr;
		if (!op)
			return -ENOENT;
		const Claim claim(*op);
		if (!claim)
			return -EBUSY; // another thread is polling it
		rp->take(req->id);
		op->cancel();
		ended(req, op->outcome());
		return 0;
	});
}

int tcaRequestTimeoutMs(void)
{
	return static_cast<int>(rp_timeout_ms());
}

} // extern "C"
