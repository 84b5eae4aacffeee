// SPDX-License-Identifier: MIT
// `tca_dma_check recv`: owns the lanes and checks every transfer the sender
// makes into them (wire.hpp), all lanes at once.
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "../common/tca_buffer.hpp"
#include "common.hpp"
#include "lane_check.hpp"
#include "wire.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

namespace dmacheck {
namespace {

struct RecvOptions : PeerOptions {
	std::uint64_t lanes = kMaxLanes;
	std::uint64_t lane_size = 65536; // data bytes per lane
	std::uint64_t guard = 4096;
};

struct Lane {
	std::uint64_t base = 0;      // region offset in the buffer
	std::vector<std::uint8_t> pristine;
	std::uint64_t last = 0;      // last sequence word seen
	std::uint64_t checked = 0;
	bool ended = false;
};

class Receiver {
public:
	Receiver(const RecvOptions &o, unsigned char *buf, const unsigned char *ctrl)
		: o_(o), buf_(buf), ctrl_(ctrl), lanes_(o.lanes)
	{
		const std::uint64_t region = o.lane_size + 2 * o.guard;
		for (unsigned l = 0; l < o.lanes; ++l) {
			Lane &ln = lanes_[l];
			ln.base = l * region;
			ln.pristine.resize(region);
			fill_lane_pristine(ln.pristine, o.guard, l);
			std::memcpy(buf_ + ln.base, ln.pristine.data(), region);
		}
	}

	void set_ack_handle(const tcaHandle &h) { ack_ = h; }
	std::uint64_t total_checked() const
	{
		std::uint64_t n = 0;
		for (const Lane &l : lanes_)
			n += l.checked;
		return n;
	}

	// One pass over the lanes: handles every new sequence word. Returns
	// false on a failed check or protocol error (printed); *progress tells
	// whether anything happened, *done whether every lane has ended.
	bool poll(bool *progress, bool *done)
	{
		*progress = false;
		*done = true;
		for (unsigned l = 0; l < lanes_.size(); ++l) {
			Lane &ln = lanes_[l];
			if (ln.ended)
				continue;
			*done = false;
			const std::uint64_t v = tcatools::load_acquire(ctrl_ + l * kCtrlSlot + kWordOff);
			if (v == ln.last)
				continue;
			*progress = true;
			if (!handle(l, v))
				return false;
		}
		return true;
	}

private:
	std::span<const std::uint8_t> region(const Lane &ln) const
	{
		return {buf_ + ln.base, ln.pristine.size()};
	}

	bool handle(unsigned l, std::uint64_t v)
	{
		Lane &ln = lanes_[l];
		std::uint64_t where = 0, st = kOk;
		if (v == (kEndBit | ln.last)) {
			// The end: nothing may have changed since the last check.
			if (std::memcmp(buf_ + ln.base, ln.pristine.data(), ln.pristine.size()) != 0) {
				st = kStrayWrite;
				while (buf_[ln.base + where] == ln.pristine[where])
					++where;
			}
			ln.ended = true;
		} else if (v == ln.last + 1) {
			st = check(l, ln.last, &where);
			++ln.checked;
		} else {
			std::fprintf(stderr, "%s recv: FAIL lane %u: sequence word 0x%" PRIx64 " after %"
				     PRIu64 "\n", kProg, l, v, ln.last);
			return false;
		}
		ln.last = v;
		const std::uint64_t head[2] = {st, where};
		const std::uint64_t off = l * kAckSlot;
		if (!tcatools::ok_or_report(kProg, tcaPut(&ack_, off, head, sizeof head), "put ack") ||
		    !tcatools::ok_or_report(kProg, tcaPut(&ack_, off + offsetof(Ack, seq), &v, sizeof v),
					    "put ack seq"))
			return false;
		return st == kOk;
	}

	std::uint64_t check(unsigned l, std::uint64_t k, std::uint64_t *where)
	{
		Lane &ln = lanes_[l];
		Ctrl c;
		std::memcpy(&c, ctrl_ + l * kCtrlSlot, sizeof c); // written before the word
		const Shape s{c.src_off, c.dst_off, c.len, c.burst, c.gap, c.stride};
		if (c.k != k || c.len == 0 || c.stride > 3 || dst_span(s) > o_.lane_size ||
		    c.dst_off > o_.lane_size - dst_span(s)) {
			std::fprintf(stderr, "%s recv: FAIL lane %u transfer %" PRIu64 ": bad Ctrl record "
				     "(k %" PRIu64 ", dst %" PRIu64 ", len %" PRIu64 ")\n",
				     kProg, l, k, c.k, c.dst_off, c.len);
			return kBadRequest;
		}
		const std::uint64_t st = check_lane(region(ln), ln.pristine, o_.guard, s, c.seed, where);
		if (st != kOk) {
			const auto at = static_cast<std::int64_t>(*where) - static_cast<std::int64_t>(o_.guard);
			std::fprintf(stderr, "%s recv: FAIL lane %u transfer %" PRIu64 " (%s, src %" PRIu64
				     ", dst %" PRIu64 ", len %" PRIu64 ", burst %u, gap %u, stride %u): %s at "
				     "data offset %" PRId64 "%s\n",
				     kProg, l, k, mode_name(c.mode), c.src_off, c.dst_off, c.len, c.burst,
				     c.gap, c.stride,
				     st == kTargetMismatch ? "wrong byte" : "byte outside the transfer changed",
				     at,
				     at < 0 || at >= static_cast<std::int64_t>(o_.lane_size) ? " (guard)" : "");
		}
		// Back to pristine for the next transfer.
		std::memcpy(buf_ + ln.base + o_.guard + c.dst_off,
			    ln.pristine.data() + o_.guard + c.dst_off, dst_span(s));
		return st;
	}

	const RecvOptions &o_;
	unsigned char *buf_;
	const unsigned char *ctrl_;
	std::vector<Lane> lanes_;
	tcaHandle ack_{};
};

int parse(int argc, char **argv, RecvOptions *o)
{
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (take_peer_option(a, o))
			continue;
		if (a.is("--lanes"))
			a.value_u64(&o->lanes);
		else if (a.is("--lane-size"))
			a.value_u64(&o->lane_size);
		else if (a.is("--guard"))
			a.value_u64(&o->guard);
		else
			a.unknown();
	}
	if (a.ok() && (o->lanes < 1 || o->lanes > kMaxLanes || o->lane_size < 64 ||
		       o->lane_size > (16ull << 20) || o->lane_size % 16 || o->guard % 16 ||
		       o->guard > (1ull << 20))) {
		std::fprintf(stderr, "%s recv: error: need --lanes 1..4, --lane-size 64..16M and --guard "
			     "<= 1M, both multiples of 16\n", kProg);
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
	Finalizer fin;
	int self = -1;
	if (!open_and_check_peer(o, &self))
		return 1;
	tcatools::TcaBuffer data, ctrl;
	const std::uint64_t region = o.lane_size + 2 * o.guard;
	if (!tcatools::ok_or_report(kProg, data.allocate(o.lanes * region), "tcaMalloc(lanes)") ||
	    !tcatools::ok_or_report(kProg, ctrl.allocate(o.lanes * kCtrlSlot), "tcaMalloc(ctrl)"))
		return 1;
	Receiver rx(o, data.get(), ctrl.get());
	tcaHandle ctrl_h, ack_h, lane_h, ignored;
	if (!tcatools::ok_or_report(kProg, tcaGetHandle(ctrl.get(), 0, &ctrl_h), "handle(ctrl)"))
		return 1;
	std::printf("%s recv: node %d: %" PRIu64 " lanes of %" PRIu64 " bytes between %" PRIu64
		    "-byte guards; waiting for node %d\n", kProg, self, o.lanes, o.lane_size, o.guard, o.peer);
	std::fflush(stdout);
	if (!exchange(o, ctrl_h, &ack_h, kTagCtrl, o.exchange_timeout_ms, "exchange(ctrl)"))
		return 1;
	if (ack_h.size < o.lanes * kAckSlot) {
		std::fprintf(stderr, "%s recv: error: the sender's ack buffer is too small\n", kProg);
		return 1;
	}
	rx.set_ack_handle(ack_h);
	for (unsigned l = 0; l < o.lanes; ++l) {
		unsigned char *lane = data.get() + l * region + o.guard;
		if (!tcatools::ok_or_report(kProg, tcaGetHandle(lane, o.lane_size, &lane_h), "handle(lane)") ||
		    !exchange(o, lane_h, &ignored, kTagLane + l, o.timeout_ms, "exchange(lane)"))
			return 1;
	}
	std::uint64_t idle_since = tcatools::now_ns();
	for (;;) {
		bool progress = false, done = false;
		if (!rx.poll(&progress, &done))
			return 1;
		if (done)
			break;
		if (progress) {
			idle_since = tcatools::now_ns();
		} else if (tcatools::now_ns() - idle_since >
			   static_cast<std::uint64_t>(o.timeout_ms) * 1000000ull) {
			std::fprintf(stderr, "%s recv: error: nothing from node %d for %d ms\n", kProg, o.peer,
				     o.timeout_ms);
			return 1;
		} else {
			tcatools::cpu_relax();
		}
	}
	if (!exchange(o, ctrl_h, &ignored, kTagDone, o.timeout_ms, "final barrier"))
		return 1;
	std::printf("%s recv: PASS: %" PRIu64 " transfers from node %d in %" PRIu64 " lanes verified; "
		    "each changed exactly the addressed bytes; guards intact\n",
		    kProg, rx.total_checked(), o.peer, o.lanes);
	return 0;
}

} // namespace dmacheck
