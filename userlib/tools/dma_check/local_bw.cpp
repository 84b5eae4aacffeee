// SPDX-License-Identifier: MIT
// `tca_dma_check local-bw`: DMA throughput from one buffer to another of
// the same node (the card loops the packets back, no link): compared with
// tca_dma_bench's stream between nodes, it tells the DMA engine's share of
// the cost from the link's. The copy is verified once at the end.
#include "../common/pattern.hpp"
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "../common/tca_buffer.hpp"
#include "common.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

namespace dmacheck {

int cmd_local_bw(int argc, char **argv)
{
	std::uint64_t size = 8ull << 20, count = 32;
	std::uint32_t flags = 0;
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		std::string_view s;
		if (a.is("--size"))
			a.value_u64(&size);
		else if (a.is("--count"))
			a.value_u64(&count);
		else if (a.is("--mode")) {
			if (a.value(&s) && !mode_flags(s, &flags))
				a.fail("modes are reg, card, host");
		} else
			a.unknown();
	}
	if (!a.ok() || size < 4 || size % 4 || size > (64ull << 20) || count < 1 || count > 1000) {
		std::fprintf(stderr, "%s local-bw: error: need --size 4..64M (multiple of 4), --count "
			     "1..1000\n", kProg);
		return 1;
	}
	Finalizer fin;
	tcatools::TcaBuffer src, dst;
	tcaHandle dst_h;
	if (!tcatools::ok_or_report(kProg, tcaInit(), "opening the PEACH2 device") ||
	    !tcatools::ok_or_report(kProg, src.allocate(size), "tcaMalloc") ||
	    !tcatools::ok_or_report(kProg, dst.allocate(size), "tcaMalloc") ||
	    !tcatools::ok_or_report(kProg, tcaGetHandle(dst.get(), 0, &dst_h), "tcaGetHandle"))
		return 1;
	tcatools::fill_pattern(std::span(src.get(), size), 7);
	tcaDmaOpts opts{};
	opts.flags = flags;
	std::vector<tcaDmaTicket> t(count);
	const std::uint64_t t0 = tcatools::now_ns();
	for (std::uint64_t i = 0; i < count; ++i)
		if (!dma_ok(tcaDmaPut(&dst_h, 0, src.get(), size, &opts, &t[i]), nullptr, "start"))
			return 1;
	for (std::uint64_t i = 0; i < count; ++i)
		if (!dma_ok(tcaDmaWait(&t[i], 60000), &t[i], "wait"))
			return 1;
	const double s = static_cast<double>(tcatools::now_ns() - t0) / 1e9;
	const bool same = std::memcmp(src.get(), dst.get(), size) == 0;
	std::printf("%s local-bw: %s, %" PRIu64 " x %" PRIu64 " bytes in %.3f s: %.1f MB/s; copy %s\n", kProg,
		    mode_name(flags), count, size, s, static_cast<double>(size * count) / s / 1e6,
		    same ? "verified" : "WRONG");
	std::printf("%s local-bw: %s\n", kProg, same ? "PASS" : "FAIL");
	return same ? 0 : 1;
}

} // namespace dmacheck
