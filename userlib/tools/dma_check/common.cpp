// SPDX-License-Identifier: MIT
#include "common.hpp"

#include "../common/report.hpp"

#include <cerrno>
#include <cstdio>

namespace dmacheck {

bool mode_flags(std::string_view name, std::uint32_t *flags)
{
	if (name == "card")
		*flags = 0;
	else if (name == "host")
		*flags = TCA_DMA_HOST_DESC;
	else if (name == "reg")
		*flags = TCA_DMA_REG_MODE;
	else
		return false;
	return true;
}

const char *mode_name(std::uint32_t flags)
{
	if (flags & TCA_DMA_REG_MODE)
		return "reg";
	return flags & TCA_DMA_HOST_DESC ? "host" : "card";
}

bool dma_ok(int rc, const tcaDmaTicket *t, const char *what)
{
	if (rc == TCA_EDMA && t) {
		std::fprintf(stderr, "%s: error: %s: the card reports %s (%u)\n", kProg, what,
			     tcaCardErrorName(t->status), t->status);
		return false;
	}
	return tcatools::ok_or_report(kProg, rc, what);
}

} // namespace dmacheck
