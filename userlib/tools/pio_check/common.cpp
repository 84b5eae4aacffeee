// SPDX-License-Identifier: MIT
#include "common.hpp"

#include "../common/report.hpp"

#include <cerrno>
#include <cstdio>

namespace piocheck {

bool put_u64(const tcaHandle &h, std::uint64_t offset, std::uint64_t v, const char *what)
{
	return tcatools::ok_or_report(kProg, tcaPut(&h, offset, &v, sizeof v), what);
}

bool TcaBuffer::allocate(std::size_t size, const char *what)
{
	return tcatools::ok_or_report(kProg, tcaMalloc(&p_, size), what);
}

} // namespace piocheck
