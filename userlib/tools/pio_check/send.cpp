// SPDX-License-Identifier: MIT
// `tca_pio_check send`: writes every (offset, size) combination into the
// receiver's data buffer, one at a time, and collects the receiver's verdict
// on each. Also checks locally that out-of-range puts are refused.
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "canary.hpp"
#include "common.hpp"
#include "wire.hpp"

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

namespace piocheck {
namespace {

struct SendOptions : PeerOptions {
	// Negative offsets count from the end of the receiver's data.
	std::vector<std::int64_t> offsets{0,  1,  2,  3,  4,    5,    6,    7,  8,  9,  10, 11,
					  12, 13, 14, 15, 16,   31,   63,   64, 65, 4095, 4096, 4097,
					  -1, -2, -3, -5, -8,   -13,  -64};
	std::vector<std::uint64_t> sizes{1,  2,  3,  4,  5,  6,  7,   8,   9,   10,   11,   12,
					 13, 14, 15, 16, 17, 23, 24,  31,  32,  33,   63,   64,
					 65, 100, 255, 256, 257, 1000, 4095, 4096, 4097};
	// --auto: tcaPutAuto from tcaMalloc memory placed with the
	// destination's low 4 address bits, so large writes go by DMA (with
	// PIO for an unaligned head and tail); set TCA_PIO_MAX to move the line.
	bool put_auto = false;
};

using Case = std::pair<std::uint64_t, std::uint64_t>; // offset, len

// All (offset, size) pairs that fit, offsets first resolved against the end
// and extended by the positions around every chunk boundary of the target
// (a write that crosses one is split by tcaPut). Duplicates dropped.
std::vector<Case> plan(const SendOptions &o, const tcaHandle &data, std::uint64_t *skipped)
{
	const std::uint64_t size = data.size;
	std::vector<std::uint64_t> offs;
	for (std::int64_t v : o.offsets) {
		const std::int64_t r = v < 0 ? static_cast<std::int64_t>(size) + v : v;
		if (r >= 0 && static_cast<std::uint64_t>(r) < size)
			offs.push_back(static_cast<std::uint64_t>(r));
		else
			++*skipped;
	}
	std::uint64_t boundary = 0;
	for (unsigned i = 0; i + 1 < data.nr_chunks; ++i) {
		boundary += data.chunks[i].len;
		for (std::uint64_t back : {5u, 1u, 0u})
			if (boundary >= back)
				offs.push_back(boundary - back);
	}
	std::vector<Case> cases;
	std::set<Case> seen;
	for (std::uint64_t off : offs)
		for (std::uint64_t len : o.sizes) {
			if (len == 0 || len > size - off) {
				++*skipped;
				continue;
			}
			if (seen.insert({off, len}).second)
				cases.emplace_back(off, len);
		}
	return cases;
}

// Puts that leave the target must be refused before any store happens.
bool local_range_checks(const tcaHandle &data, unsigned *checked)
{
	const unsigned char byte[2] = {0xa5, 0x5a};
	const std::uint64_t s = data.size;
	const struct {
		std::uint64_t off, len;
	} bad[] = {{s, 1}, {s - 1, 2}, {0, s + 1}, {SIZE_MAX, 2}, {1, SIZE_MAX}, {SIZE_MAX, SIZE_MAX}};
	for (const auto &b : bad) {
		const int rc = tcaPut(&data, b.off, byte, b.len);
		++*checked;
		if (rc != TCA_ERANGE) {
			std::fprintf(stderr, "%s send: FAIL: tcaPut(offset %" PRIu64 ", len %" PRIu64
				     ") beyond %" PRIu64 " bytes returned %d (%s), expected TCA_ERANGE\n",
				     kProg, b.off, b.len, s, rc, tcaErrorString(rc));
			return false;
		}
	}
	return true;
}

class Sender {
public:
	Sender(const SendOptions &o, const volatile Ack *ack, const tcaHandle &data, const tcaHandle &ctrl)
		: o_(o), ack_(ack), data_(data), ctrl_(ctrl) {}

	// --auto: a staging buffer big enough for any write (+16 for placement).
	bool stage(std::uint64_t bytes)
	{
		return !o_.put_auto || stage_.allocate(bytes + 16, "tcaMalloc(staging)");
	}

	// Write k: data, then Ctrl{offset, len}, then Ctrl.seq (each put fenced).
	bool write(std::uint64_t k, std::uint64_t off, std::uint64_t len)
	{
		src_.resize(len);
		fill_written(src_, k, off);
		const std::uint64_t head[2] = {off, len};
		if (o_.put_auto) {
			// Same low 4 bits as the destination: DMA is possible.
			std::uint64_t ga = 0;
			if (!tcatools::ok_or_report(kProg, tcaRemoteAddress(&data_, off, &ga), "address"))
				return false;
			unsigned char *p = stage_.get() + ga % 16;
			std::memcpy(p, src_.data(), len);
			if (!tcatools::ok_or_report(kProg, tcaPutAuto(&data_, off, p, len), "tcaPutAuto"))
				return false;
		} else if (!tcatools::ok_or_report(kProg, tcaPut(&data_, off, src_.data(), len), "put data")) {
			return false;
		}
		return
		       tcatools::ok_or_report(kProg, tcaPut(&ctrl_, 0, head, sizeof head), "put ctrl") &&
		       put_u64(ctrl_, offsetof(Ctrl, seq), k + 1, "put ctrl seq");
	}

	bool end(std::uint64_t count)
	{
		const std::uint64_t head[2] = {0, 0};
		return tcatools::ok_or_report(kProg, tcaPut(&ctrl_, 0, head, sizeof head), "put ctrl") &&
		       put_u64(ctrl_, offsetof(Ctrl, seq), kEndBit | count, "put ctrl seq");
	}

	// Waits for the receiver's answer to `seq`; prints and returns false
	// unless it is kOk.
	bool verdict(std::uint64_t seq, std::uint64_t prev, const char *what)
	{
		std::uint64_t seen = 0;
		const auto v = tcatools::spin_until(
			&ack_->seq, static_cast<std::uint64_t>(o_.timeout_ms) * 1000000ull,
			[&](std::uint64_t x) {
				if (x == seq)
					return tcatools::Spin::Done;
				return x == prev ? tcatools::Spin::Timeout : tcatools::Spin::Rejected;
			},
			&seen);
		if (v != tcatools::Spin::Done) {
			std::fprintf(stderr, "%s send: error: %s: %s from node %d\n", kProg, what,
				     v == tcatools::Spin::Timeout ? "no acknowledgement" : "out-of-sequence ack",
				     o_.peer);
			return false;
		}
		const std::uint64_t st = tcatools::load_acquire(&ack_->status);
		const auto where = static_cast<std::int64_t>(tcatools::load_acquire(&ack_->detail));
		if (st == kOk)
			return true;
		std::fprintf(stderr, "%s send: FAIL: %s: receiver reports status %" PRIu64
			     " (1 = wrong data in range, 2 = byte outside the range changed, 3 = bad request)"
			     " at data offset %" PRId64 "\n", kProg, what, st, where);
		return false;
	}

private:
	const SendOptions &o_;
	const volatile Ack *ack_;
	tcaHandle data_, ctrl_;
	std::vector<std::uint8_t> src_;
	TcaBuffer stage_;
};

int parse(int argc, char **argv, SendOptions *o)
{
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (take_peer_option(a, o))
			continue;
		if (a.is("--offsets"))
			a.value_i64_list(&o->offsets);
		else if (a.is("--sizes"))
			a.value_u64_list(&o->sizes);
		else if (a.is("--auto"))
			o->put_auto = true;
		else
			a.unknown();
	}
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
	TcaBuffer ack;
	tcaHandle ack_h, data_h, ctrl_h, ignored;
	if (!ack.allocate(sizeof(Ack), "tcaMalloc(ack)") ||
	    !tcatools::ok_or_report(kProg, tcaGetHandle(ack.get(), sizeof(Ack), &ack_h), "handle(ack)"))
		return 1;
	std::printf("%s send: node %d: waiting for node %d\n", kProg, self, o.peer);
	std::fflush(stdout);
	if (!exchange(o, ack_h, &data_h, kTagData, o.exchange_timeout_ms, "exchange(data)") ||
	    !exchange(o, ack_h, &ctrl_h, kTagCtrl, o.timeout_ms, "exchange(ctrl)"))
		return 1;
	if (ctrl_h.size < sizeof(Ctrl)) {
		std::fprintf(stderr, "%s send: error: receiver's control buffer is too small\n", kProg);
		return 1;
	}

	unsigned range_checks = 0;
	if (!local_range_checks(data_h, &range_checks))
		return 1;
	std::uint64_t skipped = 0;
	const std::vector<Case> cases = plan(o, data_h, &skipped);
	std::printf("%s send: %zu writes into %" PRIu64 " bytes on node %d (%u chunk(s)); %" PRIu64
		    " offset/size combinations do not fit and are skipped\n",
		    kProg, cases.size(), data_h.size, o.peer, static_cast<unsigned>(data_h.nr_chunks), skipped);
	std::fflush(stdout);

	Sender tx(o, reinterpret_cast<const volatile Ack *>(ack.get()), data_h, ctrl_h);
	std::uint64_t biggest = 0;
	for (const Case &c : cases)
		biggest = c.second > biggest ? c.second : biggest;
	if (!tx.stage(biggest))
		return 1;
	if (o.put_auto)
		std::printf("%s send: writing with tcaPutAuto (PIO up to %zu bytes, DMA above)\n", kProg,
			    tcaPioMax());
	char what[96];
	for (std::uint64_t k = 0; k < cases.size(); ++k) {
		const auto [off, len] = cases[k];
		std::snprintf(what, sizeof what, "write #%" PRIu64 " (offset %" PRIu64 ", len %" PRIu64 ")",
			      k, off, len);
		if (!tx.write(k, off, len) || !tx.verdict(k + 1, k, what))
			return 1;
	}
	if (!tx.end(cases.size()) || !tx.verdict(kEndBit | cases.size(), cases.size(), "final check"))
		return 1;
	if (!exchange(o, ack_h, &ignored, kTagDone, o.timeout_ms, "final barrier"))
		return 1;
	std::printf("%s send: PASS: %zu writes%s verified by node %d (only the addressed bytes changed); "
		    "%u out-of-range puts refused locally\n",
		    kProg, cases.size(), o.put_auto ? " (tcaPutAuto)" : "", o.peer, range_checks);
	return 0;
}

} // namespace piocheck
