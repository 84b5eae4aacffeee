// SPDX-License-Identifier: MIT
// `tca_pio_check info`: what the library sees of the device (one line, for
// test logs).
#include "../common/report.hpp"
#include "common.hpp"

#include <cinttypes>
#include <cstdio>

namespace piocheck {

int cmd_info(int argc, char **argv)
{
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next())
		a.unknown();
	if (!a.ok())
		return 1;
	Finalizer fin;
	tcaDeviceInfo d;
	if (!tcatools::ok_or_report(kProg, tcaGetDeviceInfo(&d), "device info"))
		return 1;
	std::printf("%s info: node_id=%u node_count=%u abi=%u hw=%u.%u window=%" PRIu64
		    " max_alloc=%" PRIu64 " max_chunk=%" PRIu64 " link_e=0x%08x link_w=0x%08x link_s=0x%08x\n",
		    kProg, d.node_id, d.node_count, d.abi_version, d.hw_version >> 16, d.hw_version & 0xffff,
		    d.window_size, d.max_alloc, d.max_chunk, d.link[0], d.link[1], d.link[2]);
	return 0;
}

} // namespace piocheck
