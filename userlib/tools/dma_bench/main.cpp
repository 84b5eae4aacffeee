// SPDX-License-Identifier: MIT
// tca_dma_bench: DMA (and PIO) latency and bandwidth between two nodes,
// every message checked. See print_usage() and protocol.hpp.
#include "../common/report.hpp"
#include "../common/tca_buffer.hpp"
#include "options.hpp"
#include "protocol.hpp"
#include "session.hpp"
#include "table.hpp"

#include <tca/tca.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>

using namespace dmabench;
using tcatools::ok_or_report;

namespace {

constexpr const char *kProg = "dma_bench";

// Closes the device last, after the buffers (declared after it) are freed.
struct Finalizer {
	~Finalizer() { tcaFinalize(); }
};

bool exchange(const Options &o, const tcaHandle &mine, tcaHandle *theirs, std::uint32_t tag,
	      int timeout_ms, const char *step)
{
	const int rc = tcaExchange(o.peer, &mine, theirs, timeout_ms, tag);
	if (rc == -ETIMEDOUT)
		std::fprintf(stderr, "%s: error: %s: node %d did not answer within %d ms (not running, "
			     "or running with other parameters)\n", kProg, step, o.peer, timeout_ms);
	return ok_or_report(kProg, rc, step);
}

int run(const Options &o)
{
	Finalizer fin;
	if (!ok_or_report(kProg, tcaInit(), "opening the PEACH2 device"))
		return 1;
	const int self = tcaNodeId(), count = tcaNodeCount();
	if (self < 0 || count < 0)
		return ok_or_report(kProg, self < 0 ? self : count, "device info") ? 0 : 1;
	if (o.peer == self || o.peer >= count) {
		std::fprintf(stderr, "%s: error: --peer %d: must be another node below %d (this is node %d)\n",
			     kProg, o.peer, count, self);
		return 1;
	}
	Session s{&o, self < o.peer, Layout::make(o.max_size(), o.slots), nullptr, nullptr, {}, {}};
	tcatools::TcaBuffer rx, tx;
	if (!ok_or_report(kProg, rx.allocate(s.layout.rx_bytes()), "tcaMalloc(receive buffer)") ||
	    !ok_or_report(kProg, tx.allocate(s.layout.tx_bytes()), "tcaMalloc(send buffer)"))
		return 1;
	s.rx = rx.get();
	s.tx = tx.get();
	// A handle per slot and one for the words (protocol.hpp).
	std::vector<tcaHandle> mine(o.slots + 1);
	for (unsigned i = 0; i <= o.slots; ++i) {
		const bool words = i == o.slots;
		const std::uint64_t off = words ? s.layout.words_offset() : s.layout.slot_offset(i);
		const std::uint64_t len = words ? s.layout.words_bytes() : s.layout.slot_bytes;
		if (!ok_or_report(kProg, tcaGetHandle(s.rx + off, len, &mine[i]), "tcaGetHandle"))
			return 1;
	}
	std::printf("%s: node %d (%s) <-> node %d; %zu modes, %zu sizes up to %" PRIu64
		    " bytes; waiting for the peer\n",
		    kProg, self, s.ping ? "ping" : "pong", o.peer, o.modes.size(), o.sizes.size(),
		    o.max_size());
	std::fflush(stdout);
	const std::uint32_t tag = session_tag(o.modes, o.sizes, o.params());
	s.remote_slots.resize(o.slots);
	for (unsigned i = 0; i <= o.slots; ++i) {
		tcaHandle *theirs = i < o.slots ? &s.remote_slots[i] : &s.remote_words;
		if (!exchange(o, mine[i], theirs, tag + i, i ? o.timeout_ms : o.exchange_timeout_ms,
			      "address exchange"))
			return 1;
		if (theirs->size < (i < o.slots ? s.layout.slot_bytes : s.layout.words_bytes())) {
			std::fprintf(stderr, "%s: error: the peer's buffer is too small\n", kProg);
			return 1;
		}
	}

	std::vector<Result> results;
	const bool ok = run_session(s, &results);
	std::uint64_t verified = 0, confirmed = 0;
	for (const Result &r : results) {
		verified += r.verified;
		confirmed += r.confirmed;
	}
	if (!ok) {
		std::printf("%s: FAIL (after %" PRIu64 " verified messages; see the error above)\n", kProg,
			    verified);
		return 1;
	}
	// Barrier: neither side frees its buffers while the other may still
	// write into them.
	tcaHandle ignored;
	if (!exchange(o, mine[0], &ignored, tag ^ 0x444f4e45u /* "DONE" */, o.timeout_ms,
		      "final barrier")) {
		std::printf("%s: FAIL (final barrier)\n", kProg);
		return 1;
	}
	const std::vector<Row> rows = make_rows(results);
	print_tables(stdout, o.modes, rows);
	if (!o.csv.empty() && !write_csv(o.csv, rows)) {
		std::printf("%s: FAIL (CSV)\n", kProg);
		return 1;
	}
	std::printf("\n%s: PASS: %" PRIu64 " messages verified here, %" PRIu64 " confirmed by the "
		    "peer (latency: byte for byte; stream: a stamp per 4 KiB and a checksum)\n",
		    kProg, verified, confirmed);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	switch (parse_options(argc, argv, &o)) {
	case 0: break;
	case 2: return 0;
	default: return 1;
	}
	return run(o);
}
