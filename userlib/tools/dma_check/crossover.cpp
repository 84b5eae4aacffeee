// SPDX-License-Identifier: MIT
// `tca_dma_check crossover`: where tcaPutAuto should switch from PIO to DMA.
// For each size, the sender-side cost of a put that returns with the
// source reusable: PIO (stores and a fence) against a blocking DMA (start,
// completion interrupt, wait). Into the memory a `sink` on --peer offers;
// prints both medians and the largest size at which PIO still wins.
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "../common/stats.hpp"
#include "../common/tca_buffer.hpp"
#include "common.hpp"
#include "wire.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

namespace dmacheck {

int cmd_crossover(int argc, char **argv)
{
	PeerOptions o;
	std::vector<std::uint64_t> sizes{64, 256, 512, 1024, 2048, 4096, 8192, 16384, 65536};
	std::uint64_t iters = 50;
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (take_peer_option(a, &o))
			continue;
		if (a.is("--sizes"))
			a.value_u64_list(&sizes);
		else if (a.is("--iters"))
			a.value_u64(&iters);
		else
			a.unknown();
	}
	std::uint64_t max = 0;
	for (std::uint64_t s : sizes)
		max = s > max ? s : max;
	if (!a.ok() || iters < 1 || max > (16ull << 20)) {
		std::fprintf(stderr, "%s crossover: error: need --iters >= 1 and sizes up to 16M\n", kProg);
		return 1;
	}
	for (std::uint64_t s : sizes)
		if (s == 0 || s % 4) {
			std::fprintf(stderr, "%s crossover: error: sizes must be multiples of 4\n", kProg);
			return 1;
		}
	Finalizer fin;
	int self = -1;
	if (!open_and_check_peer(o, &self))
		return 1;
	tcatools::TcaBuffer src;
	tcaHandle mine, dst;
	if (!tcatools::ok_or_report(kProg, src.allocate(max), "tcaMalloc") ||
	    !tcatools::ok_or_report(kProg, tcaGetHandle(src.get(), 4096 < max ? 4096 : max, &mine),
				    "tcaGetHandle") ||
	    !exchange(o, mine, &dst, kTagSink, o.exchange_timeout_ms, "exchange(sink)"))
		return 1;
	if (dst.size < max) {
		std::fprintf(stderr, "%s crossover: error: the sink offers fewer than %" PRIu64 " bytes\n",
			     kProg, max);
		return 1;
	}
	std::memset(src.get(), 0x3c, max);
	std::printf("%10s %12s %12s  (median µs until the source may be reused)\n", "size", "pio", "dma");
	std::uint64_t pio_wins_up_to = 0;
	for (std::uint64_t size : sizes) {
		std::vector<double> pio, dma;
		for (std::uint64_t i = 0; i < iters; ++i) {
			std::uint64_t t0 = tcatools::now_ns();
			if (!tcatools::ok_or_report(kProg, tcaPut(&dst, 0, src.get(), size), "tcaPut"))
				return 1;
			pio.push_back(static_cast<double>(tcatools::now_ns() - t0) / 1000.0);
			t0 = tcatools::now_ns();
			if (!dma_ok(tcaDmaPut(&dst, 0, src.get(), size, nullptr, nullptr), nullptr, "tcaDmaPut"))
				return 1;
			dma.push_back(static_cast<double>(tcatools::now_ns() - t0) / 1000.0);
		}
		const double p = tcatools::summarize(pio).median, d = tcatools::summarize(dma).median;
		std::printf("%10" PRIu64 " %12.1f %12.1f%s\n", size, p, d, p <= d ? "  pio" : "  dma");
		if (p <= d)
			pio_wins_up_to = size;
	}
	std::printf("%s crossover: PIO is cheaper up to %" PRIu64 " bytes (tcaPutAuto uses %zu)\n", kProg,
		    pio_wins_up_to, tcaPioMax());
	return 0;
}

} // namespace dmacheck
