// SPDX-License-Identifier: MIT
// tca_pio_check: PIO correctness checks for the VM tests. Exit status 0
// only if everything checked out; the last line says PASS or FAIL.
#include "common.hpp"

#include <cstdio>
#include <cstring>

namespace {

void usage(const char *prog)
{
	std::printf(
		"usage: %s recv --peer NODE [--size BYTES] [--guard BYTES]\n"
		"       %s send --peer NODE [--offsets LIST] [--sizes LIST] [--auto]\n"
		"       %s bad-node [--node N] [--offset OFF] [--sysfs DIR]\n"
		"       %s raw --node N --offset OFF\n"
		"       %s info\n"
		"recv/send run as a pair on two nodes. recv owns a --size byte buffer (default\n"
		"16384) between two canary-filled guards (default 4096 bytes each); send writes\n"
		"every offset x size combination that fits (negative offsets count from the end;\n"
		"positions around chunk boundaries are added), one at a time; after each write\n"
		"recv checks that exactly the addressed bytes changed and hold the right data.\n"
		"send --auto writes with tcaPutAuto (PIO or DMA by size; TCA_PIO_MAX) from\n"
		"tcaMalloc memory with the destination's low 4 address bits.\n"
		"Both also take --timeout-ms (per write, default 10000) and\n"
		"--exchange-timeout-ms (waiting for the peer to start, default 60000).\n"
		"bad-node stores to node N (default: node_count; must be < 16) and\n"
		"checks that the card counted PEACH2_ERR_NO_SUCH_NODE (sysfs err_count/err_last).\n"
		"raw does one 8-byte store to any window address and checks nothing.\n",
		prog, prog, prog, prog, prog);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
		usage(argv[0]);
		return argc < 2 ? 1 : 0;
	}
	const char *cmd = argv[1];
	if (!std::strcmp(cmd, "recv"))
		return piocheck::cmd_recv(argc - 1, argv + 1);
	if (!std::strcmp(cmd, "send"))
		return piocheck::cmd_send(argc - 1, argv + 1);
	if (!std::strcmp(cmd, "bad-node"))
		return piocheck::cmd_bad_node(argc - 1, argv + 1);
	if (!std::strcmp(cmd, "raw"))
		return piocheck::cmd_raw(argc - 1, argv + 1);
	if (!std::strcmp(cmd, "info"))
		return piocheck::cmd_info(argc - 1, argv + 1);
	std::fprintf(stderr, "%s: unknown subcommand '%s' (try --help)\n", argv[0], cmd);
	return 1;
}
