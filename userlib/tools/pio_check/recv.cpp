// SPDX-License-Identifier: MIT
// `tca_pio_check recv`: owns the target buffer, checks after every write
// that exactly the addressed bytes changed and hold the right values.
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "canary.hpp"
#include "common.hpp"
#include "wire.hpp"

#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

namespace piocheck {
namespace {

struct RecvOptions : PeerOptions {
	std::uint64_t size = 16384;
	std::uint64_t guard = 4096;
};

const char *status_text(std::uint64_t s)
{
	switch (s) {
	case kOk: return "ok";
	case kTargetMismatch: return "wrong data inside the written range";
	case kStrayWrite: return "a byte outside the written range changed";
	case kBadRequest: return "bad request";
	default: return "?";
	}
}

class Receiver {
public:
	// Writes the canary: do it before the peer can know the buffer's address.
	Receiver(const RecvOptions &o, unsigned char *buf, const volatile Ctrl *ctrl)
		: o_(o), buf_(buf), ctrl_(ctrl), pristine_(o.size + 2 * o.guard)
	{
		fill_pristine(pristine_, o.guard);
		std::memcpy(buf_, pristine_.data(), pristine_.size());
	}

	// Verifies the whole buffer after write k of [offset, offset + len),
	// puts it back to pristine, and reports. Returns the status. `when`
	// names the moment in the report when there was no write (len 0).
	std::uint64_t check(std::uint64_t k, std::uint64_t offset, std::uint64_t len, std::int64_t *where,
			    const char *when = nullptr)
	{
		const std::span<const std::uint8_t> now(buf_, pristine_.size());
		const std::uint64_t st = check_after_write(now, pristine_, o_.guard, k, offset, len, where);
		if (st != kOk) {
			const std::uint64_t b = static_cast<std::uint64_t>(*where + static_cast<std::int64_t>(o_.guard));
			const std::uint8_t want = (*where >= static_cast<std::int64_t>(offset) &&
						   *where < static_cast<std::int64_t>(offset + len))
							  ? written_byte(k, static_cast<std::uint64_t>(*where))
							  : pristine_[b];
			char what[96];
			if (when)
				std::snprintf(what, sizeof what, "%s", when);
			else
				std::snprintf(what, sizeof what, "write #%" PRIu64 " (offset %" PRIu64
					      ", len %" PRIu64 ")", k, offset, len);
			std::fprintf(stderr,
				     "%s recv: FAIL %s: %s: first difference at data offset %" PRId64
				     "%s: got 0x%02x, expected 0x%02x\n",
				     kProg, what, status_text(st), *where,
				     *where < 0 || *where >= static_cast<std::int64_t>(o_.size) ? " (guard)" : "",
				     buf_[b], want);
		}
		std::memcpy(buf_ + o_.guard + offset, pristine_.data() + o_.guard + offset, len);
		return st;
	}

	void set_ack_handle(const tcaHandle &h) { ack_ = h; }

	bool ack(std::uint64_t status, std::int64_t where, std::uint64_t seq)
	{
		const std::uint64_t head[2] = {status, static_cast<std::uint64_t>(where)};
		if (!tcatools::ok_or_report(kProg, tcaPut(&ack_, 0, head, sizeof head), "put ack"))
			return false;
		return put_u64(ack_, offsetof(Ack, seq), seq, "put ack seq");
	}

	// Waits for the next Ctrl.seq after `last`: false on timeout or garbage.
	bool wait(std::uint64_t last, std::uint64_t *seq)
	{
		const auto verdict = tcatools::spin_until(
			&ctrl_->seq, static_cast<std::uint64_t>(o_.timeout_ms) * 1000000ull,
			[&](std::uint64_t v) {
				if (v == last)
					return tcatools::Spin::Timeout;
				return v == last + 1 || v == (kEndBit | last) ? tcatools::Spin::Done
									     : tcatools::Spin::Rejected;
			},
			seq);
		if (verdict == tcatools::Spin::Timeout)
			std::fprintf(stderr, "%s recv: error: no write from node %d within %d ms after #%" PRIu64 "\n",
				     kProg, o_.peer, o_.timeout_ms, last);
		else if (verdict == tcatools::Spin::Rejected)
			std::fprintf(stderr, "%s recv: error: out of sequence: seq 0x%" PRIx64 " after %" PRIu64 "\n",
				     kProg, *seq, last);
		return verdict == tcatools::Spin::Done;
	}

	std::uint64_t ctrl_word(const volatile std::uint64_t *w) const { return tcatools::load_acquire(w); }

private:
	const RecvOptions &o_;
	unsigned char *buf_;
	const volatile Ctrl *ctrl_;
	tcaHandle ack_{};
	std::vector<std::uint8_t> pristine_;
};

int parse(int argc, char **argv, RecvOptions *o)
{
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (take_peer_option(a, o))
			continue;
		if (a.is("--size"))
			a.value_u64(&o->size);
		else if (a.is("--guard"))
			a.value_u64(&o->guard);
		else
			a.unknown();
	}
	if (a.ok() && (o->size == 0 || o->size > (256ull << 20) || o->guard > (16ull << 20))) {
		std::fprintf(stderr, "%s recv: error: need 1 <= --size <= 256M and --guard <= 16M\n", kProg);
		return 1;
	}
	return a.ok() ? 0 : 1;
}

} // namespace

int cmd_recv(int argc, char **argv)
{
	RecvOptions o;
	if (parse(argc, argv, &o))
		return 1;
	Finalizer fin; // declared first: runs after the buffers are freed
	int self = -1;
	if (!open_and_check_peer(o, &self))
		return 1;
	TcaBuffer data, ctrl;
	if (!data.allocate(o.size + 2 * o.guard, "tcaMalloc(data)") ||
	    !ctrl.allocate(sizeof(Ctrl), "tcaMalloc(ctrl)"))
		return 1;
	tcaHandle data_h, ctrl_h, ack_h, ignored;
	if (!tcatools::ok_or_report(kProg, tcaGetHandle(data.get() + o.guard, o.size, &data_h), "handle(data)") ||
	    !tcatools::ok_or_report(kProg, tcaGetHandle(ctrl.get(), sizeof(Ctrl), &ctrl_h), "handle(ctrl)"))
		return 1;
	const auto *ctrl_rec = reinterpret_cast<const volatile Ctrl *>(ctrl.get());
	std::printf("%s recv: node %d: %" PRIu64 " data bytes in %u chunk(s) between guards of %" PRIu64
		    " bytes; waiting for node %d\n",
		    kProg, self, o.size, static_cast<unsigned>(data_h.nr_chunks), o.guard, o.peer);
	std::fflush(stdout);
	Receiver rx(o, data.get(), ctrl_rec);
	if (!exchange(o, data_h, &ack_h, kTagData, o.exchange_timeout_ms, "exchange(data)"))
		return 1;
	if (ack_h.size < sizeof(Ack)) {
		std::fprintf(stderr, "%s recv: error: sender's ack buffer is too small\n", kProg);
		return 1;
	}
	rx.set_ack_handle(ack_h);
	// Nothing may have landed yet. This is the moment to look: the sender
	// writes only after the second exchange, which cannot complete on its
	// side before we have entered it (it needs our ack of its new nonce).
	std::int64_t where = 0;
	if (rx.check(0, 0, 0, &where, "before the first write") != kOk)
		return 1;
	if (!exchange(o, ctrl_h, &ignored, kTagCtrl, o.timeout_ms, "exchange(ctrl)"))
		return 1;
	std::uint64_t last = 0, seq = 0;
	for (;;) {
		if (!rx.wait(last, &seq))
			return 1;
		if (seq & kEndBit) {
			const std::uint64_t st = rx.check(last, 0, 0, &where, "after the last write");
			if (!rx.ack(st, where, seq) || st != kOk)
				return 1;
			break;
		}
		const std::uint64_t off = rx.ctrl_word(&ctrl_rec->offset);
		const std::uint64_t len = rx.ctrl_word(&ctrl_rec->len);
		std::uint64_t st = kBadRequest;
		if (len > 0 && off < o.size && len <= o.size - off)
			st = rx.check(seq - 1, off, len, &where);
		else
			std::fprintf(stderr, "%s recv: error: write #%" PRIu64 " outside the data: offset %" PRIu64
				     " len %" PRIu64 "\n", kProg, seq - 1, off, len);
		if (!rx.ack(st, where, seq) || st != kOk)
			return 1;
		last = seq;
	}
	if (!exchange(o, data_h, &ignored, kTagDone, o.timeout_ms, "final barrier"))
		return 1;
	std::printf("%s recv: PASS: %" PRIu64 " writes from node %d verified; each changed exactly the "
		    "addressed bytes; guards of %" PRIu64 " bytes intact\n",
		    kProg, last, o.peer, o.guard);
	return 0;
}

} // namespace piocheck
