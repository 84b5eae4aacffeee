// SPDX-License-Identifier: MIT
// `tca_dma_check hold` and `sink`: a process with a lot of DMA in flight,
// for a test to kill (the card must end up idle and usable, the kernel log
// clean). hold starts --runs transfers of --size bytes without waiting,
// prints HOLDING and sleeps until killed; with --peer they go to the memory
// a `sink` on that node offers, else to a second local buffer.
#include "../common/report.hpp"
#include "../common/tca_buffer.hpp"
#include "common.hpp"
#include "wire.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace dmacheck {
namespace {

struct HoldOptions : PeerOptions {
	std::uint64_t size = 16ull << 20;
	std::uint64_t runs = 64;
	std::uint32_t flags = 0;
	std::uint64_t linger_ms = 30000; // sink: how long to offer the memory
};

int parse(int argc, char **argv, HoldOptions *o, bool sink)
{
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (take_peer_option(a, o))
			continue;
		std::string_view s;
		if (a.is("--size"))
			a.value_u64(&o->size);
		else if (!sink && a.is("--runs"))
			a.value_u64(&o->runs);
		else if (!sink && a.is("--mode")) {
			if (a.value(&s) && !mode_flags(s, &o->flags))
				a.fail("modes are reg, card, host");
		} else if (sink && a.is("--linger-ms"))
			a.value_u64(&o->linger_ms);
		else
			a.unknown();
	}
	if (a.ok() && (o->size < 4 || o->size % 4 || o->size > (256ull << 20) || o->runs < 1 ||
		       o->runs > 1000)) {
		std::fprintf(stderr, "%s: error: need --size 4..256M (a multiple of 4), --runs 1..1000\n", kProg);
		return 1;
	}
	return a.ok() ? 0 : 1;
}

} // namespace

int cmd_hold(int argc, char **argv)
{
	HoldOptions o;
	if (parse(argc, argv, &o, false))
		return 1;
	Finalizer fin;
	const bool remote = o.peer >= 0;
	int self = -1;
	if (remote ? !open_and_check_peer(o, &self)
		   : !tcatools::ok_or_report(kProg, tcaInit(), "opening the PEACH2 device"))
		return 1;
	tcatools::TcaBuffer src, local;
	tcaHandle dst;
	if (!tcatools::ok_or_report(kProg, src.allocate(o.size), "tcaMalloc(source)"))
		return 1;
	std::memset(src.get(), 0xa5, o.size);
	if (remote) {
		tcaHandle mine;
		if (!tcatools::ok_or_report(kProg, tcaGetHandle(src.get(), 4096, &mine), "tcaGetHandle") ||
		    !exchange(o, mine, &dst, kTagSink, o.exchange_timeout_ms, "exchange(sink)"))
			return 1;
		if (dst.size < o.size) {
			std::fprintf(stderr, "%s hold: error: the sink offers %" PRIu64 " bytes, need %"
				     PRIu64 "\n", kProg, static_cast<std::uint64_t>(dst.size), o.size);
			return 1;
		}
	} else if (!tcatools::ok_or_report(kProg, local.allocate(o.size), "tcaMalloc(destination)") ||
		   !tcatools::ok_or_report(kProg, tcaGetHandle(local.get(), 0, &dst), "tcaGetHandle")) {
		return 1;
	}
	tcaDmaOpts opts{};
	opts.flags = o.flags;
	std::vector<tcaDmaTicket> tickets(o.runs);
	// Say HOLDING once a few runs are under way, then go on starting the
	// rest: starting can take as long as the runs themselves (a fast link
	// empties the queue as fast as we fill it), and the test must kill us
	// while DMA is in flight, not after it is all done.
	const std::uint64_t announce_after = std::min<std::uint64_t>(o.runs, 4);
	for (std::uint64_t r = 0; r < o.runs; ++r) {
		if (!dma_ok(tcaDmaPut(&dst, 0, src.get(), o.size, &opts, &tickets[r]), nullptr, "start"))
			return 1;
		if (r + 1 == announce_after) {
			std::printf("%s hold: HOLDING %" PRIu64 " %s runs of %" PRIu64
				    " bytes to %s (pid %d), starting more\n",
				    kProg, o.runs, mode_name(o.flags), o.size,
				    remote ? "the peer" : "a local buffer", static_cast<int>(getpid()));
			std::fflush(stdout);
		}
	}
	for (;;)
		pause(); // until killed: the point is to die with DMA in flight
}

int cmd_sink(int argc, char **argv)
{
	HoldOptions o;
	if (parse(argc, argv, &o, true))
		return 1;
	Finalizer fin;
	int self = -1;
	if (!open_and_check_peer(o, &self))
		return 1;
	tcatools::TcaBuffer buf;
	tcaHandle mine, theirs;
	if (!tcatools::ok_or_report(kProg, buf.allocate(o.size), "tcaMalloc") ||
	    !tcatools::ok_or_report(kProg, tcaGetHandle(buf.get(), 0, &mine), "tcaGetHandle"))
		return 1;
	std::printf("%s sink: offering %" PRIu64 " bytes to node %d for %" PRIu64 " ms\n", kProg, o.size,
		    o.peer, o.linger_ms);
	std::fflush(stdout);
	if (!exchange(o, mine, &theirs, kTagSink, o.exchange_timeout_ms, "exchange(hold)"))
		return 1;
	std::printf("%s sink: READY\n", kProg);
	std::fflush(stdout);
	usleep(static_cast<useconds_t>(o.linger_ms * 1000));
	std::printf("%s sink: done\n", kProg);
	return 0;
}

} // namespace dmacheck
