// SPDX-License-Identifier: MIT
// `tca_rp_check expect-refused`: a get (or CAS) that the target must
// refuse, with the exact error. It retries every 10 ms until the request
// is refused (the server may unexport or free a moment later) or
// --timeout-ms passes, then compares the outcome with --expect:
//   notexported            TCA_ENOTEXPORTED (locally or RP_NOT_EXPORTED)
//   remote:<NAME>          TCA_EREMOTE with card code <NAME> (e.g. RP_RANGE)
//   timeout                -ETIMEDOUT (nobody answers)
// --forge key|none changes the handle first (a wrong key; no export);
// --offset/--len choose the bytes (default: the first 64); --on data|counter
// which handle (default: data for get, the counter for atomics).
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "../common/tca_buffer.hpp"
#include "common.hpp"
#include "handle.hpp"
#include "wire.hpp"

#include <cinttypes>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace rpcheck {
namespace {

struct RefusedOptions : ClientOptions {
	std::string op = "get";
	std::string expect = "notexported";
	std::string forge;
	std::string on;                 // data | counter (default: get data, atomics counter)
	std::uint64_t offset = 0, len = 64;
};

int parse(int argc, char **argv, RefusedOptions *o)
{
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (take_client_option(a, o))
			continue;
		std::string_view s;
		if (a.is("--op")) {
			if (a.value(&s))
				o->op = std::string(s);
		} else if (a.is("--expect")) {
			if (a.value(&s))
				o->expect = std::string(s);
		} else if (a.is("--forge")) {
			if (a.value(&s))
				o->forge = std::string(s);
		} else if (a.is("--on")) {
			if (a.value(&s))
				o->on = std::string(s);
		} else if (a.is("--offset"))
			a.value_u64(&o->offset);
		else if (a.is("--len"))
			a.value_u64(&o->len);
		else
			a.unknown();
	}
	if (!a.ok())
		return 1;
	if ((o->op != "get" && o->op != "cas" && o->op != "faa") ||
	    (o->forge != "" && o->forge != "key" && o->forge != "none")) {
		std::fprintf(stderr, "%s expect-refused: error: --op get|cas|faa, --forge key|none\n", kProg);
		return 1;
	}
	return 0;
}

bool matches(const std::string &expect, int rc, std::uint32_t status)
{
	if (expect == "notexported")
		return rc == TCA_ENOTEXPORTED;
	if (expect == "timeout")
		return rc == -ETIMEDOUT;
	if (expect.rfind("remote:", 0) == 0)
		return rc == TCA_EREMOTE && expect.substr(7) == tcaCardErrorName(status);
	return false;
}

} // namespace

int cmd_expect_refused(int argc, char **argv)
{
	RefusedOptions o;
	if (parse(argc, argv, &o))
		return 1;
	Finalizer fin;
	Served s;
	if (!connect(o, &s))
		return 1;
	const bool data = o.on.empty() ? o.op == "get" : o.on == "data";
	tcaHandle h = data ? s.data : s.ctrl;
	if (o.forge == "key")
		tca::attach_export(&h, h.export_id, h.export_key ^ 0x5a5a5a5au);
	else if (o.forge == "none")
		tca::attach_export(&h, 0, 0);
	tcatools::TcaBuffer dst;
	if (!tcatools::ok_or_report(kProg, dst.allocate(o.len + 4096), "tcaMalloc"))
		return 1;
	const std::uint64_t deadline = tcatools::now_ns() + static_cast<std::uint64_t>(o.timeout_ms) * 1000000ull;
	int rc = 0;
	tcaRequest r{};
	std::uint64_t tries = 0;
	for (;;) {
		++tries;
		if (o.op == "get")
			rc = tcaGetNB(dst.get() + o.offset % 16, &h, o.offset, o.len, &r);
		else if (o.op == "cas")
			rc = tcaCasNB(&h, o.offset, 0x1234, 0x5678, &r);
		else
			rc = tcaFaaNB(&h, o.offset, 0, &r);
		if (rc == 0)
			rc = tcaWait(&r, 0);
		if (rc != 0 || tcatools::now_ns() >= deadline)
			break;
		usleep(10000);
	}
	const bool ok = matches(o.expect, rc, r.status);
	std::printf("expect-refused: %s refused: %s after %" PRIu64 " tries; expected %s: %s\n",
		    o.op.c_str(), outcome_text(rc, r.status).c_str(), tries, o.expect.c_str(),
		    ok ? "PASS" : "FAIL");
	say_done(o, s);
	return ok ? 0 : 1;
}

} // namespace rpcheck
