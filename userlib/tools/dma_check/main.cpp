// SPDX-License-Identifier: MIT
// tca_dma_check: DMA correctness checks for the VM tests. Exit status 0
// only if everything checked out; the last line says PASS or FAIL.
#include "common.hpp"

#include <cstdio>
#include <cstring>

namespace {

void usage(const char *prog)
{
	std::printf(
		"usage: %s recv --peer NODE [--lanes 4] [--lane-size 64K] [--guard 4096]\n"
		"       %s send --peer NODE [--lanes 4] [--count 100] [--min-len 4] [--max-len 16K]\n"
		"                [--seed S] [--no-stride]\n"
		"                [--modes card,host,reg] [--any-channel]\n"
		"       %s hold [--peer NODE] [--size 16M] [--runs 64] [--mode card|host|reg]\n"
		"       %s sink --peer NODE [--size 16M] [--linger-ms 30000]\n"
		"       %s chain [--descs 1024] [--starts 5] [--piece 64] [--mode card|host|reg]\n"
		"       %s restrict\n"
		"       %s local-bw [--size 8M] [--count 32] [--mode card|host|reg]\n"
		"       %s crossover --peer NODE [--sizes LIST] [--iters 50]\n"
		"recv/send run as a pair on two nodes: send makes --count random transfers\n"
		"(sizes --min-len .. --max-len, any offsets the DMA rules allow, block-stride on\n"
		"either side or both, the descriptor modes in turn) into each of --lanes\n"
		"regions of recv, lane l on DMA channel l, all lanes at once; recv checks\n"
		"after each that exactly the addressed bytes changed, to the source's values.\n"
		"Both take --timeout-ms (default 10000) and --exchange-timeout-ms (60000).\n"
		"hold starts --runs DMAs of --size bytes (to a `sink` on --peer, else locally),\n"
		"prints HOLDING and sleeps until killed. chain builds a --descs descriptor\n"
		"chain once and verifies --starts starts. restrict checks that rule-breaking\n"
		"requests get the documented errors from libtca and from the driver, and that\n"
		"the card never sees them. local-bw measures DMA between two local buffers.\n"
		"crossover times PIO against blocking DMA puts into a `sink` on NODE.\n",
		prog, prog, prog, prog, prog, prog, prog, prog);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
		usage(argv[0]);
		return argc < 2 ? 1 : 0;
	}
	const char *cmd = argv[1];
	struct {
		const char *name;
		int (*fn)(int, char **);
	} const cmds[] = {{"recv", dmacheck::cmd_recv},	  {"send", dmacheck::cmd_send},
			  {"hold", dmacheck::cmd_hold},	  {"sink", dmacheck::cmd_sink},
			  {"chain", dmacheck::cmd_chain}, {"restrict", dmacheck::cmd_restrict},
			  {"local-bw", dmacheck::cmd_local_bw}, {"crossover", dmacheck::cmd_crossover}};
	for (const auto &c : cmds)
		if (!std::strcmp(cmd, c.name))
			return c.fn(argc - 1, argv + 1);
	std::fprintf(stderr, "%s: unknown subcommand '%s' (try --help)\n", argv[0], cmd);
	return 1;
}
