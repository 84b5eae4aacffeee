// SPDX-License-Identifier: MIT
// `tca_rp_check faa`, `cas-check` and `read-counter`: atomics on the
// server's counter (serve --counter). faa checks that the old values it sees
// only grow (other nodes may add in between, never subtract); cas-check
// checks that a CAS returns the old value and swaps only on a match;
// read-counter reads the counter with an add of 0.
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "common.hpp"
#include "wire.hpp"

#include <cinttypes>
#include <cstdio>

namespace rpcheck {
namespace {

struct FaaOptions : ClientOptions {
	std::uint64_t count = 1000;
	std::uint64_t add = 1;
};

int parse(int argc, char **argv, FaaOptions *o, bool faa)
{
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (take_client_option(a, o))
			continue;
		if (faa && a.is("--count"))
			a.value_u64(&o->count);
		else if (faa && a.is("--add"))
			a.value_u64(&o->add);
		else
			a.unknown();
	}
	if (a.ok() && faa && (o->count == 0 || o->add == 0)) {
		std::fprintf(stderr, "%s faa: error: need --count >= 1, --add >= 1\n", kProg);
		return 1;
	}
	return a.ok() ? 0 : 1;
}

} // namespace

int cmd_faa(int argc, char **argv)
{
	FaaOptions o;
	if (parse(argc, argv, &o, true))
		return 1;
	Finalizer fin;
	Served s;
	if (!connect(o, &s))
		return 1;
	std::uint64_t first = 0, prev = 0, old = 0;
	bool monotonic = true;
	const std::uint64_t t0 = tcatools::now_ns();
	for (std::uint64_t i = 0; i < o.count; ++i) {
		const int rc = tcaFaa(&s.ctrl, kCounterOff, o.add, &old);
		if (rc) {
			std::fprintf(stderr, "%s faa: error: add #%" PRIu64 ": %s (%s)\n", kProg, i + 1,
				     code_name(rc).c_str(), tcaErrorString(rc));
			return 1;
		}
		if (i == 0)
			first = old;
		else if (old < prev + o.add)
			monotonic = false;
		prev = old;
	}
	const double us = static_cast<double>(tcatools::now_ns() - t0) / 1e3 / static_cast<double>(o.count);
	std::uint64_t now = 0;
	if (!tcatools::ok_or_report(kProg, tcaFaa(&s.ctrl, kCounterOff, 0, &now), "reading the counter"))
		return 1;
	std::printf("faa: %" PRIu64 " adds of %" PRIu64 ", first old=%" PRIu64 ", last old=%" PRIu64
		    ", counter now=%" PRIu64 ", monotonic=%s, %.1f us/add\n",
		    o.count, o.add, first, prev, now, monotonic ? "yes" : "no", us);
	say_done(o, s);
	return monotonic ? 0 : 1;
}

int cmd_cas_check(int argc, char **argv)
{
	FaaOptions o;
	if (parse(argc, argv, &o, false))
		return 1;
	Finalizer fin;
	Served s;
	if (!connect(o, &s))
		return 1;
	std::uint64_t v = 0, old = 0, now = 0;
	bool pass = true;
	const auto step = [&](const char *what, int rc, std::uint64_t got, std::uint64_t want) {
		const bool ok = rc == 0 && got == want;
		std::printf("cas-check: %s: rc=%d value=%" PRIu64 " expected %" PRIu64 ": %s\n", what, rc, got,
			    want, ok ? "ok" : "WRONG");
		pass &= ok;
	};
	// One call per statement: the value is read only after the call returned.
	int rc = tcaFaa(&s.ctrl, kCounterOff, 0, &v);
	step("read", rc, v, v); // checks rc only: v is whatever the counter holds
	// A compare that does not match: old value back, memory unchanged.
	rc = tcaCas(&s.ctrl, kCounterOff, v + 1, 0xdead, &old);
	step("cas mismatch", rc, old, v);
	rc = tcaFaa(&s.ctrl, kCounterOff, 0, &now);
	step("unchanged", rc, now, v);
	// A compare that matches: old value back, memory swapped.
	const std::uint64_t swap = v ^ 0x5a5a5a5a00000000ull;
	rc = tcaCas(&s.ctrl, kCounterOff, v, swap, &old);
	step("cas match", rc, old, v);
	rc = tcaFaa(&s.ctrl, kCounterOff, 0, &now);
	step("swapped", rc, now, swap);
	rc = tcaCas(&s.ctrl, kCounterOff, swap, v, &old);
	step("cas back", rc, old, swap);
	rc = tcaFaa(&s.ctrl, kCounterOff, 0, &now);
	step("restored", rc, now, v);
	std::printf("cas-check: %s\n", pass ? "PASS" : "FAIL");
	say_done(o, s);
	return pass ? 0 : 1;
}

int cmd_read_counter(int argc, char **argv)
{
	FaaOptions o;
	if (parse(argc, argv, &o, false))
		return 1;
	Finalizer fin;
	Served s;
	if (!connect(o, &s))
		return 1;
	std::uint64_t v = 0;
	const int rc = tcaFaa(&s.ctrl, kCounterOff, 0, &v);
	if (rc) {
		std::fprintf(stderr, "%s read-counter: error: %s (%s)\n", kProg, code_name(rc).c_str(),
			     tcaErrorString(rc));
		return 1;
	}
	std::printf("read-counter: %" PRIu64 "\n", v);
	say_done(o, s);
	return 0;
}

} // namespace rpcheck
