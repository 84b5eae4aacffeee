// SPDX-License-Identifier: MIT
// `tca_pio_check raw --node N --offset OFF`: one 8-byte store to any window
// address, nothing checked here. Tests use it to aim at memory that is no
// buffer and then look at the target card's error counters.
#include "../common/report.hpp"
#include "common.hpp"

#include <peach2/peach2_hw.h>

#include <cinttypes>
#include <cstdio>

namespace piocheck {

int cmd_raw(int argc, char **argv)
{
	std::uint64_t node = 0, offset = 0;
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (a.is("--node"))
			a.value_u64(&node);
		else if (a.is("--offset"))
			a.value_u64(&offset);
		else
			a.unknown();
	}
	if (!a.ok())
		return 1;
	if (node >= PEACH2_MAX_NODES || offset > PEACH2_SLICE_SIZE - 8) {
		std::fprintf(stderr, "%s raw: error: --node must be < %u and --offset inside a slice\n",
			     kProg, PEACH2_MAX_NODES);
		return 1;
	}
	Finalizer fin;
	if (!tcatools::ok_or_report(kProg, tcaInit(), "opening the PEACH2 device"))
		return 1;
	const std::uint64_t value = 0x5eed5eed5eed5eedull;
	if (!tcatools::ok_or_report(kProg, tcaPutRaw(PEACH2_NODE_BASE(node) + offset, &value, sizeof value),
				    "tcaPutRaw"))
		return 1;
	std::printf("%s raw: stored 8 bytes at node %" PRIu64 " offset 0x%" PRIx64 "\n", kProg, node,
		    offset);
	return 0;
}

} // namespace piocheck
