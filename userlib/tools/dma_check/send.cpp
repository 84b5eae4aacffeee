// SPDX-License-Identifier: MIT
// `tca_dma_check send`: random transfers (sizes, offsets, block-stride,
// descriptor modes) into the receiver's lanes, one lane per DMA channel, all
// lanes at once; the receiver judges every one (wire.hpp).
#include "../common/pattern.hpp"
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "../common/sysfs.hpp"
#include "../common/tca_buffer.hpp"
#include "common.hpp"
#include "shape.hpp"
#include "wire.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace dmacheck {
namespace {

struct SendOptions : PeerOptions {
	std::uint64_t count = 100;     // transfers per lane
	std::uint64_t lanes = kMaxLanes;
	std::uint64_t min_len = 4;
	std::uint64_t max_len = 16384;
	std::uint64_t seed = 0;        // 0: from the clock (printed)
	std::vector<std::uint32_t> modes{0, TCA_DMA_HOST_DESC, TCA_DMA_REG_MODE};
	bool any_channel = false;      // else lane l on channel l
	bool no_stride = false;        // contiguous transfers only
};

struct LaneState {
	std::uint64_t next = 0;  // transfers started
	bool busy = false;       // a transfer (or the end) awaits its ack
	bool ended = false;
	tcaDmaTicket ticket{};
};

// The driver's sysfs `dma` file: completed runs per channel, and how many
// channels are busy right now.
std::vector<std::uint64_t> channel_runs(unsigned *busy = nullptr)
{
	std::vector<std::uint64_t> v;
	std::FILE *f = std::fopen((tcatools::default_sysfs_dir() + "/dma").c_str(), "r");
	if (!f)
		return v;
	char line[256];
	unsigned n = 0;
	while (std::fgets(line, sizeof line, f)) {
		const char *p = std::strstr(line, "completed=");
		v.push_back(p ? std::strtoull(p + 10, nullptr, 10) : 0);
		n += std::strstr(line, " busy ") ? 1 : 0;
	}
	std::fclose(f);
	if (busy)
		*busy = n;
	return v;
}

// One lane's next transfer, drawn and with its source filled, not started.
struct Prepared {
	Shape shape;
	tcaDmaOpts opts{};
	std::uint64_t k = 0;
	bool end = false; // the end marker instead of a transfer
};

class Sender {
public:
	Sender(const SendOptions &o, unsigned char *src, unsigned char *ctrl_src,
	       const volatile unsigned char *ack, std::uint64_t src_room)
		: o_(o), src_(src), ctrl_src_(ctrl_src), ack_(ack), src_room_(src_room),
		  rng_(o.seed), lanes_(o.lanes) {}

	void set_targets(const tcaHandle &ctrl, std::vector<tcaHandle> lanes)
	{
		ctrl_h_ = ctrl;
		lane_h_ = std::move(lanes);
	}

	// Runs every lane to its end. False after printing the first failure.
	bool run()
	{
		std::uint64_t idle_since = tcatools::now_ns();
		for (;;) {
			bool all_ended = true, progress = false;
			std::vector<unsigned> ready;
			for (unsigned l = 0; l < lanes_.size(); ++l) {
				LaneState &ln = lanes_[l];
				if (ln.ended)
					continue;
				all_ended = false;
				if (ln.busy && !answered(l, &progress))
					return false;
				if (!ln.busy && !ln.ended) {
					prepare(l);
					ready.push_back(l);
				}
			}
			// Prepared first, started together: filling a big source
			// takes longer than the card needs to move it, so starting
			// each lane right after its preparation would never let two
			// channels run at once.
			for (unsigned l : ready)
				if (!launch(l))
					return false;
			if (!ready.empty()) {
				unsigned busy = 0;
				channel_runs(&busy);
				max_busy_ = busy > max_busy_ ? busy : max_busy_;
			}
			if (all_ended)
				return true;
			if (progress || !ready.empty()) {
				idle_since = tcatools::now_ns();
			} else if (tcatools::now_ns() - idle_since >
				   static_cast<std::uint64_t>(o_.timeout_ms) * 1000000ull) {
				std::fprintf(stderr, "%s send: error: no answer from node %d for %d ms\n", kProg,
					     o_.peer, o_.timeout_ms);
				return false;
			} else {
				tcatools::cpu_relax();
			}
		}
	}

	std::uint64_t strided() const { return strided_; }
	std::uint64_t redrawn() const { return redrawn_; }
	std::uint64_t verified() const { return verified_; }
	unsigned max_busy() const { return max_busy_; }

private:
	// The receiver's answer to the lane's outstanding word, if it is there.
	bool answered(unsigned l, bool *progress)
	{
		LaneState &ln = lanes_[l];
		const volatile unsigned char *a = ack_ + l * kAckSlot;
		const std::uint64_t want = end_pending_[l] ? (kEndBit | o_.count) : ln.next;
		const std::uint64_t seq = tcatools::load_acquire(a + offsetof(Ack, seq));
		if (seq != want)
			return true; // not yet
		*progress = true;
		const std::uint64_t st = tcatools::load_acquire(a + offsetof(Ack, status));
		const auto where = static_cast<std::int64_t>(tcatools::load_acquire(a + offsetof(Ack, detail)));
		if (st != kOk) {
			std::fprintf(stderr, "%s send: FAIL lane %u: receiver reports status %" PRIu64
				     " (1 = wrong byte, 2 = byte outside the transfer changed, 3 = bad request)"
				     " at lane region offset %" PRId64 " for %s\n",
				     kProg, l, st, where, end_pending_[l] ? "the end" : last_[l].c_str());
			return false;
		}
		if (!dma_ok(tcaDmaWait(&ln.ticket, o_.timeout_ms), &ln.ticket, "DMA completion"))
			return false;
		ln.busy = false;
		if (end_pending_[l])
			ln.ended = true;
		else
			++verified_;
		return true;
	}

	// Draws lane l's next transfer and writes its source and Ctrl record.
	void prepare(unsigned l)
	{
		LaneState &ln = lanes_[l];
		Prepared &p = prepared_[l];
		p = Prepared{};
		p.opts.channel = o_.any_channel ? TCA_DMA_ANY_CHANNEL : TCA_DMA_CHANNEL(l);
		p.k = ln.next;
		if (ln.next == o_.count) {
			p.end = true;
			return;
		}
		p.opts.flags = o_.modes[(p.k + l) % o_.modes.size()];
		do
			p.shape = random_shape(rng_, src_room_, lane_h_[l].size, o_.min_len, o_.max_len);
		while (o_.no_stride && p.shape.burst);
		const Shape &s = p.shape;
		const std::uint64_t seed = tcatools::seed_of(o_.seed, l, p.k);
		tcatools::fill_pattern(std::span(src_ + l * src_room_ + s.src_off, src_span(s)), seed, s.src_off);
		const Ctrl c{p.k, seed, s.src_off, s.dst_off, s.len, s.burst, s.gap, s.stride, p.opts.flags};
		std::memcpy(ctrl_src_ + l * kCtrlSlot, &c, sizeof c);
	}

	// Starts lane l's prepared transfer (data, Ctrl record, completion
	// word); draws again while a strided side crosses a chunk boundary.
	bool launch(unsigned l)
	{
		LaneState &ln = lanes_[l];
		ln.busy = true;
		for (unsigned tries = 0;; ++tries) {
			const Prepared &p = prepared_[l];
			if (p.end) {
				// The end marker: a completion word alone.
				tcaDmaXfer x{};
				x.notify = &ctrl_h_;
				x.notify_offset = l * kCtrlSlot + kWordOff;
				x.notify_value = kEndBit | o_.count;
				end_pending_[l] = true;
				return dma_ok(tcaDmaStart(&x, 1, &p.opts, &ln.ticket), nullptr,
					      "start (end marker)");
			}
			const Shape &s = p.shape;
			tcaDmaXfer x[2] = {};
			x[0].dst = &lane_h_[l];
			x[0].dst_offset = s.dst_off;
			x[0].src = src_ + l * src_room_ + s.src_off;
			x[0].len = s.len;
			x[0].stride = s.stride;
			x[0].burst = static_cast<std::uint16_t>(s.burst);
			x[0].gap = static_cast<std::uint16_t>(s.gap);
			x[1].dst = &ctrl_h_;
			x[1].dst_offset = l * kCtrlSlot;
			x[1].src = ctrl_src_ + l * kCtrlSlot;
			x[1].len = (sizeof(Ctrl) + 3) / 4 * 4; // DMA lengths are multiples of 4
			x[1].notify = &ctrl_h_;
			x[1].notify_offset = l * kCtrlSlot + kWordOff;
			x[1].notify_value = p.k + 1;
			const int rc = tcaDmaStart(x, 2, &p.opts, &ln.ticket);
			if (rc == TCA_ESTRIDE && tries < 1000) {
				++redrawn_; // a strided side crossed a chunk boundary
				prepare(l);
				continue;
			}
			char what[160];
			std::snprintf(what, sizeof what, "transfer %" PRIu64 " (%s, src %" PRIu64 ", dst %" PRIu64
				      ", len %" PRIu64 ", burst %u, gap %u, stride %u)", p.k,
				      mode_name(p.opts.flags), s.src_off, s.dst_off, s.len, s.burst, s.gap,
				      s.stride);
			last_[l] = what;
			if (!dma_ok(rc, nullptr, what))
				return false;
			strided_ += s.burst ? 1 : 0;
			ln.next = p.k + 1;
			return true;
		}
	}

	const SendOptions &o_;
	unsigned char *src_, *ctrl_src_;
	const volatile unsigned char *ack_;
	std::uint64_t src_room_;
	Rng rng_;
	std::vector<LaneState> lanes_;
	Prepared prepared_[kMaxLanes];
	bool end_pending_[kMaxLanes] = {};
	std::string last_[kMaxLanes];
	tcaHandle ctrl_h_{};
	std::vector<tcaHandle> lane_h_;
	std::uint64_t strided_ = 0, redrawn_ = 0, verified_ = 0;
	unsigned max_busy_ = 0;
};

int parse(int argc, char **argv, SendOptions *o)
{
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (take_peer_option(a, o))
			continue;
		if (a.is("--count")) {
			a.value_u64(&o->count);
		} else if (a.is("--lanes")) {
			a.value_u64(&o->lanes);
		} else if (a.is("--min-len")) {
			a.value_u64(&o->min_len);
		} else if (a.is("--max-len")) {
			a.value_u64(&o->max_len);
		} else if (a.is("--seed")) {
			a.value_u64(&o->seed);
		} else if (a.is("--any-channel")) {
			o->any_channel = true;
		} else if (a.is("--no-stride")) {
			o->no_stride = true;
		} else if (a.is("--modes")) {
			std::string_view s;
			if (!a.value(&s))
				break;
			o->modes.clear();
			while (!s.empty()) {
				const std::size_t comma = s.find(',');
				std::uint32_t f = 0;
				if (!mode_flags(s.substr(0, comma), &f)) {
					a.fail("modes are reg, card, host");
					break;
				}
				o->modes.push_back(f);
				s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
			}
		} else {
			a.unknown();
		}
	}
	if (a.ok() && (o->lanes < 1 || o->lanes > kMaxLanes || o->count == 0 || o->count > 1000000 ||
		       o->max_len < 4 || o->max_len % 4 || o->max_len > (16ull << 20) || o->min_len < 4 ||
		       o->min_len % 4 || o->min_len > o->max_len || o->modes.empty())) {
		std::fprintf(stderr, "%s send: error: need --lanes 1..4, --count 1..1000000, --min-len <= "
			     "--max-len, multiples of 4 up to 16M, and at least one mode\n", kProg);
		return 1;
	}
	if (o->seed == 0)
		o->seed = static_cast<std::uint64_t>(std::time(nullptr)) * 2654435761u + 1;
	return a.ok() ? 0 : 1;
}

} // namespace

int cmd_send(int argc, char **argv)
{
	SendOptions o;
	if (parse(argc, argv, &o))
		return 1;
	Finalizer fin;
	int self = -1;
	if (!open_and_check_peer(o, &self))
		return 1;
	tcatools::TcaBuffer ack, ctrl_src, src;
	tcaHandle ack_h, ctrl_h;
	if (!tcatools::ok_or_report(kProg, ack.allocate(o.lanes * kAckSlot), "tcaMalloc(ack)") ||
	    !tcatools::ok_or_report(kProg, ctrl_src.allocate(o.lanes * kCtrlSlot), "tcaMalloc(ctrl)") ||
	    !tcatools::ok_or_report(kProg, tcaGetHandle(ack.get(), 0, &ack_h), "handle(ack)"))
		return 1;
	std::printf("%s send: node %d: seed %" PRIu64 "; waiting for node %d\n", kProg, self, o.seed, o.peer);
	std::fflush(stdout);
	if (!exchange(o, ack_h, &ctrl_h, kTagCtrl, o.exchange_timeout_ms, "exchange(ctrl)"))
		return 1;
	std::vector<tcaHandle> lanes(o.lanes);
	tcaHandle ignored;
	for (unsigned l = 0; l < o.lanes; ++l)
		if (!exchange(o, ack_h, &lanes[l], kTagLane + l, o.timeout_ms, "exchange(lane)"))
			return 1;
	if (ctrl_h.size < o.lanes * kCtrlSlot) {
		std::fprintf(stderr, "%s send: error: the receiver has fewer lanes than --lanes\n", kProg);
		return 1;
	}
	// Source room: the lane size rounded up, so any drawn shape fits.
	const std::uint64_t src_room = (lanes[0].size + 4095) / 4096 * 4096;
	if (!tcatools::ok_or_report(kProg, src.allocate(o.lanes * src_room), "tcaMalloc(source)"))
		return 1;
	const std::vector<std::uint64_t> runs_before = channel_runs();
	Sender tx(o, src.get(), ctrl_src.get(), ack.get(), src_room);
	tx.set_targets(ctrl_h, lanes);
	if (!tx.run())
		return 1;
	if (!exchange(o, ack_h, &ignored, kTagDone, o.timeout_ms, "final barrier"))
		return 1;
	const std::vector<std::uint64_t> runs_after = channel_runs();
	std::string per_channel;
	for (std::size_t c = 0; c < runs_after.size() && c < runs_before.size(); ++c)
		per_channel += " ch" + std::to_string(c) + "=" + std::to_string(runs_after[c] - runs_before[c]);
	std::printf("%s send: runs per channel:%s; channels busy at once (sampled after each start): up "
		    "to %u\n", kProg, per_channel.empty() ? " (no sysfs)" : per_channel.c_str(), tx.max_busy());
	std::printf("%s send: PASS: %" PRIu64 " transfers in %" PRIu64 " lanes verified by node %d "
		    "(%" PRIu64 " block-stride, %" PRIu64 " redrawn at chunk boundaries; seed %" PRIu64 ")\n",
		    kProg, tx.verified(), o.lanes, o.peer, tx.strided(), tx.redrawn(), o.seed);
	return 0;
}

} // namespace dmacheck
