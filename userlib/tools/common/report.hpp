// SPDX-License-Identifier: MIT
// Uniform error lines for the programs.
#pragma once

#include <tca/tca.h>

#include <cstdio>

namespace tcatools {

// Prints "<prog>: error: <what>: <text> (<code>)" and returns false if rc != 0.
inline bool ok_or_report(const char *prog, int rc, const char *what)
{
	if (rc == 0)
		return true;
	std::fprintf(stderr, "%s: error: %s: %s (%d)\n", prog, what, tcaErrorString(rc), rc);
	return false;
}

} // namespace tcatools
