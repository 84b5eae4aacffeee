// SPDX-License-Identifier: MIT
#include "common.hpp"

#include "../common/report.hpp"
#include "wire.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace rpcheck {

bool take_client_option(tcatools::ArgReader &a, ClientOptions *o)
{
	if (tcatools::take_peer_option(a, o))
		return true;
	if (a.is("--seed"))
		a.value_u64(&o->seed);
	else if (a.is("--no-done"))
		o->send_done = false;
	else
		return false;
	return true;
}

bool connect(const ClientOptions &o, Served *s)
{
	if (!tcatools::open_and_check_peer(kProg, o, &s->self))
		return false;
	tcaHandle mine;
	if (!tcatools::ok_or_report(kProg, s->mine.allocate(4096), "tcaMalloc") ||
	    !tcatools::ok_or_report(kProg, tcaGetHandle(s->mine.get(), 0, &mine), "tcaGetHandle"))
		return false;
	if (!tcatools::exchange(kProg, o, mine, &s->data, data_tag(o.seed), o.exchange_timeout_ms,
				"exchange(data handle; is `serve` running with the same --seed?)") ||
	    !tcatools::exchange(kProg, o, mine, &s->ctrl, kTagCtrl, o.timeout_ms, "exchange(control handle)"))
		return false;
	if (s->ctrl.size < kCtrlSize) {
		std::fprintf(stderr, "%s: error: the server's control buffer is too small\n", kProg);
		return false;
	}
	return true;
}

void say_done(const ClientOptions &o, const Served &s)
{
	if (!o.send_done)
		return;
	const std::uint64_t v = kDoneValue;
	tcatools::ok_or_report(kProg, tcaPut(&s.ctrl, done_offset(static_cast<std::uint32_t>(s.self)), &v,
					     sizeof v),
			       "telling the server we are done");
}

std::string code_name(int rc)
{
	switch (rc) {
	case 0: return "ok";
	case TCA_ENOTEXPORTED: return "TCA_ENOTEXPORTED";
	case TCA_EREMOTE: return "TCA_EREMOTE";
	case TCA_EDEVICE: return "TCA_EDEVICE";
	case TCA_EALIGN: return "TCA_EALIGN";
	case TCA_ERANGE: return "TCA_ERANGE";
	case TCA_ENODE: return "TCA_ENODE";
	case TCA_EBADHANDLE: return "TCA_EBADHANDLE";
	case TCA_ENOTBUF: return "TCA_ENOTBUF";
	case -ETIMEDOUT: return "ETIMEDOUT";
	case -ECANCELED: return "ECANCELED";
	case -EHOSTUNREACH: return "EHOSTUNREACH";
	case -EAGAIN: return "EAGAIN";
	case -ENXIO: return "ENXIO";
	case -ENODEV: return "ENODEV";
	case -EINVAL: return "EINVAL";
	default: break;
	}
	return "error " + std::to_string(rc);
}

std::string outcome_text(int rc, std::uint32_t status)
{
	std::string s = code_name(rc);
	if (status)
		s += " status=" + std::to_string(status) + " (" + tcaCardErrorName(status) + ")";
	return s;
}

} // namespace rpcheck
