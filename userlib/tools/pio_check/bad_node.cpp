// SPDX-License-Identifier: MIT
// `tca_pio_check bad-node`: a store to a node outside the sub-cluster must
// be refused by the local card with PEACH2_ERR_NO_SUCH_NODE, visible in the
// driver's error counter. Prints the counter before and after.
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "../common/sysfs.hpp"
#include "common.hpp"

#include <peach2/peach2_hw.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <thread>

namespace piocheck {

int cmd_bad_node(int argc, char **argv)
{
	std::uint64_t node = ~0ull; // default: the first node id that does not exist
	std::uint64_t offset = 0x1000; // host memory region of the slice
	std::string dir = tcatools::default_sysfs_dir();
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		std::string_view s;
		if (a.is("--node"))
			a.value_u64(&node);
		else if (a.is("--offset"))
			a.value_u64(&offset);
		else if (a.is("--sysfs")) {
			if (a.value(&s))
				dir = std::string(s);
		} else
			a.unknown();
	}
	if (!a.ok())
		return 1;
	Finalizer fin;
	if (!tcatools::ok_or_report(kProg, tcaInit(), "opening the PEACH2 device"))
		return 1;
	const int count = tcaNodeCount();
	if (!tcatools::ok_or_report(kProg, count < 0 ? count : 0, "tcaNodeCount"))
		return 1;
	if (node == ~0ull)
		node = static_cast<std::uint64_t>(count);
	if ( node < static_cast<std::uint64_t>(count) || node >= PEACH2_MAX_NODES ||
	    offset >= PEACH2_SLICE_SIZE - 8) {
		std::fprintf(stderr, "%s bad-node: error: --node must be in %d..%u (nodes that do not "
			     "exist but have a window slice), --offset inside the slice\n",
			     kProg, count, PEACH2_MAX_NODES - 1);
		return 1;
	}
	std::uint64_t before = 0, after = 0, last = 0;
	if (!tcatools::read_attr_u64(dir, "err_count", &before)) {
		std::fprintf(stderr, "%s bad-node: error: cannot read %s/err_count\n", kProg, dir.c_str());
		return 1;
	}
	const std::uint64_t value = 0xbadc0de0badc0deull;
	if (!tcatools::ok_or_report(kProg, tcaPutRaw(PEACH2_NODE_BASE(node) + offset, &value, sizeof value),
				    "tcaPutRaw"))
		return 1;
	// The card counts the error when it handles the store; under emulation
	// that can trail the store instruction a little: poll for up to 2 s.
	const std::uint64_t start = tcatools::now_ns();
	do {
		if (!tcatools::read_attr_u64(dir, "err_count", &after))
			after = before;
		if (after > before)
			break;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	} while (tcatools::now_ns() - start < 2000000000ull);
	const bool have_last = tcatools::read_attr_u64(dir, "err_last", &last);
	std::printf("%s bad-node: store to node %" PRIu64 " (node_count %d): err_count before=%" PRIu64
		    " after=%" PRIu64 " err_last=%s (%s)\n",
		    kProg, node, count, before, after, have_last ? std::to_string(last).c_str() : "?",
		    have_last ? tcaCardErrorName(static_cast<std::uint32_t>(last)) : "unreadable");
	const bool pass = after > before && have_last && last == PEACH2_ERR_NO_SUCH_NODE;
	std::printf("%s bad-node: %s\n", kProg,
		    pass ? "PASS: the card counted NO_SUCH_NODE"
			 : "FAIL: expected err_count to grow and err_last = 1 (NO_SUCH_NODE)");
	return pass ? 0 : 1;
}

} // namespace piocheck
