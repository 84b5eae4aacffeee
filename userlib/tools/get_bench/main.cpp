// SPDX-License-Identifier: MIT
// tca_get_bench: one-sided get (read proxy) latency and bandwidth against
// PIO put latency and DMA put bandwidth from the same run, and CAS/FAA
// latency. See print_usage() and layout.hpp.
#include "../common/pattern.hpp"
#include "../common/report.hpp"
#include "../common/tca_buffer.hpp"
#include "layout.hpp"
#include "options.hpp"
#include "session.hpp"

#include <tca/tca.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <span>

using namespace getbench;
using tcatools::ok_or_report;

namespace {

constexpr const char *kProg = "get_bench";

struct Finalizer {
	~Finalizer() { tcaFinalize(); }
};

int run(const Options &o)
{
	Finalizer fin;
	int self = -1;
	if (!tcatools::open_and_check_peer(kProg, o, &self))
		return 1;
	const bool client = self < o.peer;
	const std::uint64_t max_get = *std::max_element(o.sizes.begin(), o.sizes.end());
	tcatools::TcaBuffer ctrl, data, sink;
	Session s{&o, self, nullptr, nullptr, nullptr, {}, {}, {}};
	tcaHandle mine_ctrl, mine_data, mine_sink;
	if (client) {
		const std::uint64_t dsize = std::max(max_get, o.inflight * o.put_size) + 16;
		if (!ok_or_report(kProg, ctrl.allocate(kCtrlSize), "tcaMalloc(ctrl)") ||
		    !ok_or_report(kProg, data.allocate(dsize), "tcaMalloc(get destination)") ||
		    !ok_or_report(kProg, sink.allocate(o.put_size), "tcaMalloc(put source)") ||
		    !ok_or_report(kProg, tcaGetHandle(ctrl.get(), 0, &mine_ctrl), "tcaGetHandle"))
			return 1;
		tcatools::fill_pattern(std::span(sink.get(), o.put_size), o.seed + 1);
		mine_data = mine_sink = mine_ctrl;
	} else {
		const std::uint64_t dsize = std::max(max_get, o.put_size) + 16;
		if (!ok_or_report(kProg, ctrl.allocate(kCtrlSize), "tcaMalloc(ctrl)") ||
		    !ok_or_report(kProg, data.allocate(dsize), "tcaMalloc(data)") ||
		    !ok_or_report(kProg, sink.allocate(o.put_size + 64), "tcaMalloc(sink)"))
			return 1;
		tcatools::fill_pattern(std::span(data.get(), dsize), o.seed);
		if (!ok_or_report(kProg, tcaExport(data.get(), 0, TCA_EXPORT_READ, &mine_data), "tcaExport(data)") ||
		    !ok_or_report(kProg, tcaExport(ctrl.get(), 0, TCA_EXPORT_ATOMIC, &mine_ctrl),
				  "tcaExport(ctrl)") ||
		    !ok_or_report(kProg, tcaGetHandle(sink.get(), 0, &mine_sink), "tcaGetHandle(sink)"))
			return 1;
	}
	s.ctrl = ctrl.get();
	s.data = data.get();
	s.sink = sink.get();
	std::printf("%s: node %d (%s) <-> node %d; waiting for the peer\n", kProg, self,
		    client ? "client: measures" : "server: exports, then sleeps", o.peer);
	std::fflush(stdout);
	const std::uint32_t tag = session_tag(o);
	tcaHandle theirs;
	if (!tcatools::exchange(kProg, o, mine_data, &theirs, kTagData ^ tag, o.exchange_timeout_ms,
				"exchange(data; is the peer running with the same options?)"))
		return 1;
	if (client)
		s.peer_data = theirs;
	if (!tcatools::exchange(kProg, o, mine_ctrl, &s.peer_ctrl, kTagCtrl ^ tag, o.timeout_ms, "exchange(ctrl)") ||
	    !tcatools::exchange(kProg, o, mine_sink, &theirs, kTagSink ^ tag, o.timeout_ms, "exchange(sink)"))
		return 1;
	if (client)
		s.peer_sink = theirs;
	if (!client)
		return run_server(s) ? 0 : 1;

	if (s.peer_data.size < max_get || s.peer_sink.size < o.put_size + 8 || s.peer_ctrl.size < kCtrlSize) {
		std::fprintf(stderr, "%s: error: the server's buffers are too small\n", kProg);
		return 1;
	}
	std::vector<Row> rows;
	if (!run_client(s, &rows))
		return 1;
	print_rows(rows);
	if (!o.csv.empty() && !write_csv(o.csv, rows))
		return 1;
	print_ratios(rows);
	std::printf("%s: PASS: every get verified against the server's pattern\n", kProg);
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
