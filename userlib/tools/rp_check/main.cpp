// SPDX-License-Identifier: MIT
// tca_rp_check: read-proxy (remote get, CAS, FAA) checks for the VM tests.
// `serve` runs on the target node; the other subcommands are its clients
// on other nodes. Exit status 0 only if the check passed.
#include "common.hpp"

#include <cstdio>
#include <cstring>

namespace {

void usage(const char *prog)
{
	std::printf(
		"usage: %s serve --peer NODE|--peers A,B [--size 2M] [--seed S] [--flags read|atomic|read,atomic]\n"
		"                [--export-len BYTES] [--whole-handle] [--counter] [--rounds N] [--seconds 600]\n"
		"                [--unexport-after-ms MS] [--free-after-ms MS] [--exit-after-ms MS]\n"
		"                [--abort-after-ms MS] [--self-faa N]\n"
		"       %s get-verify --peer NODE [--iters 1000] [--seed S] [--min-len 4] [--max-len 1M]\n"
		"                [--inflight 1]\n"
		"       %s faa --peer NODE [--count 1000] [--add 1]\n"
		"       %s read-counter --peer NODE\n"
		"       %s cas-check --peer NODE   (CAS mismatch/match on the counter, old values)\n"
		"       %s expect-refused --peer NODE [--op get|cas|faa] [--expect notexported|remote:NAME|timeout]\n"
		"                [--forge key|none] [--on data|counter] [--offset 0] [--len 64]\n"
		"       %s flood --peer NODE [--seconds 10] [--inflight 64] [--len 64] [--allow-refused]\n"
		"Clients also take --seed S (must match serve's), --no-done (do not tell the server\n"
		"we finished), --timeout-ms (10000) and --exchange-timeout-ms (60000).\n"
		"serve fills --size bytes with a pattern of --seed, exports them (or the first\n"
		"--export-len; --whole-handle then sends a handle claiming the whole buffer), and a\n"
		"control page whose first 8 bytes are a counter (exported for atomics with --counter).\n"
		"It then sleeps until every peer said done (--rounds times, one client each), or\n"
		"--seconds; the --*-after-ms events happen that long after the start.\n"
		"Summary lines: `get-verify: N gets, B bytes, M mismatches, E errors`, `faa: ...`,\n"
		"`read-counter: V`, `expect-refused: ... PASS|FAIL`, `flood: N completed ...`,\n"
		"`rp_check serve: counter=V` and `rp_check serve: done (...)`.\n",
		prog, prog, prog, prog, prog, prog, prog);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
		usage(argv[0]);
		return argc < 2 ? 1 : 0;
	}
	struct {
		const char *name;
		int (*fn)(int, char **);
	} const cmds[] = {{"serve", rpcheck::cmd_serve},
			  {"get-verify", rpcheck::cmd_get_verify},
			  {"faa", rpcheck::cmd_faa},
			  {"cas-check", rpcheck::cmd_cas_check},
			  {"read-counter", rpcheck::cmd_read_counter},
			  {"expect-refused", rpcheck::cmd_expect_refused},
			  {"flood", rpcheck::cmd_flood}};
	for (const auto &c : cmds)
		if (!std::strcmp(argv[1], c.name))
			return c.fn(argc - 1, argv + 1);
	std::fprintf(stderr, "%s: unknown subcommand '%s' (try --help)\n", argv[0], argv[1]);
	return 1;
}
