// SPDX-License-Identifier: MIT
// `tca_dma_check chain`: the stencil pattern on one node. A chain of
// --descs descriptors (default 1024: all of on-card descriptor RAM), one
// --piece-byte transfer each from a source buffer into every other piece of
// a destination buffer, built once and started --starts times with new
// source data each time; every start is verified byte for byte, gaps
// included.
#include "../common/pattern.hpp"
#include "../common/report.hpp"
#include "../common/sysfs.hpp"
#include "../common/tca_buffer.hpp"
#include "common.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace dmacheck {
namespace {

struct ChainOptions {
	std::uint64_t descs = 1024;
	std::uint64_t starts = 5;
	std::uint64_t piece = 64;
	std::uint32_t flags = 0;
	int timeout_ms = 30000;
};

int parse(int argc, char **argv, ChainOptions *o)
{
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		std::string_view s;
		if (a.is("--descs"))
			a.value_u64(&o->descs);
		else if (a.is("--starts"))
			a.value_u64(&o->starts);
		else if (a.is("--piece"))
			a.value_u64(&o->piece);
		else if (a.is("--timeout-ms"))
			a.value_int(&o->timeout_ms);
		else if (a.is("--mode")) {
			if (a.value(&s) && !mode_flags(s, &o->flags))
				a.fail("modes are reg, card, host");
		} else
			a.unknown();
	}
	// A piece that divides the page never crosses a chunk: one descriptor each.
	if (a.ok() && (o->descs < 1 || o->descs > 4096 || o->starts < 1 || o->piece < 4 ||
		       4096 % o->piece || o->timeout_ms <= 0)) {
		std::fprintf(stderr, "%s chain: error: need --descs 1..4096, --starts >= 1, --piece a "
			     "divisor of 4096 (>= 4)\n", kProg);
		return 1;
	}
	return a.ok() ? 0 : 1;
}

std::string desc_ram()
{
	std::string s;
	return tcatools::read_attr(tcatools::default_sysfs_dir(), "dma_desc_ram", &s) ? s : "?";
}

} // namespace

int cmd_chain(int argc, char **argv)
{
	ChainOptions o;
	if (parse(argc, argv, &o))
		return 1;
	Finalizer fin;
	if (!tcatools::ok_or_report(kProg, tcaInit(), "opening the PEACH2 device"))
		return 1;
	const std::uint64_t bytes = 2 * o.descs * o.piece;
	tcatools::TcaBuffer src, dst;
	tcaHandle dst_h;
	if (!tcatools::ok_or_report(kProg, src.allocate(o.descs * o.piece), "tcaMalloc(source)") ||
	    !tcatools::ok_or_report(kProg, dst.allocate(bytes), "tcaMalloc(destination)") ||
	    !tcatools::ok_or_report(kProg, tcaGetHandle(dst.get(), 0, &dst_h), "tcaGetHandle"))
		return 1;
	// Piece i goes to the odd piece 2i + 1; the even ones must stay as they are.
	std::vector<tcaDmaXfer> x(o.descs);
	for (std::uint64_t i = 0; i < o.descs; ++i) {
		x[i].dst = &dst_h;
		x[i].dst_offset = (2 * i + 1) * o.piece;
		x[i].src = src.get() + i * o.piece;
		x[i].len = o.piece;
	}
	const std::string ram_before = desc_ram();
	tcaDmaOpts opts{};
	opts.flags = o.flags;
	tcaChain chain{};
	if (!dma_ok(tcaChainCreate(x.data(), x.size(), &opts, &chain), nullptr, "tcaChainCreate"))
		return 1;
	const std::string ram_held = desc_ram();
	std::printf("%s chain: %s chain of %u descriptors (descriptor RAM before: %s, with the chain: %s)\n",
		    kProg, mode_name(o.flags), chain.descriptors, ram_before.c_str(), ram_held.c_str());
	bool ok = chain.descriptors == o.descs;
	if (!ok)
		std::fprintf(stderr, "%s chain: FAIL: %u descriptors, expected %" PRIu64 "\n", kProg,
			     chain.descriptors, o.descs);
	std::vector<std::uint8_t> canary(bytes);
	for (std::uint64_t s = 0; ok && s < o.starts; ++s) {
		const std::uint64_t seed = tcatools::seed_of(0x636861696eull /* "chain" */, s);
		tcatools::fill_pattern(std::span(src.get(), o.descs * o.piece), seed);
		tcatools::fill_pattern(canary, seed ^ 1);
		std::memcpy(dst.get(), canary.data(), bytes);
		tcaDmaOpts start{};
		start.timeout_ms = o.timeout_ms;
		tcaDmaTicket t{};
		start.flags = TCA_DMA_WAIT;
		if (!dma_ok(tcaChainStart(chain, &start, &t), &t, "tcaChainStart")) {
			ok = false;
			break;
		}
		for (std::uint64_t p = 0; ok && p < 2 * o.descs; ++p) {
			const unsigned char *got = dst.get() + p * o.piece;
			const unsigned char *want =
				p % 2 ? src.get() + (p / 2) * o.piece : canary.data() + p * o.piece;
			if (std::memcmp(got, want, o.piece) != 0) {
				std::fprintf(stderr, "%s chain: FAIL start %" PRIu64 ": destination piece %" PRIu64
					     " (%s) differs\n", kProg, s, p, p % 2 ? "written" : "gap");
				ok = false;
			}
		}
	}
	const int rc = tcaChainDestroy(chain);
	ok = tcatools::ok_or_report(kProg, rc, "tcaChainDestroy") && ok;
	std::printf("%s chain: descriptor RAM after destroy: %s\n", kProg, desc_ram().c_str());
	if (!ok) {
		std::printf("%s chain: FAIL\n", kProg);
		return 1;
	}
	std::printf("%s chain: PASS: %" PRIu64 " starts of a %u-descriptor chain verified byte for byte\n",
		    kProg, o.starts, chain.descriptors);
	return 0;
}

} // namespace dmacheck
