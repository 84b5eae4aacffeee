// SPDX-License-Identifier: MIT
#include "table.hpp"

#include "../common/stats.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstring>

namespace pingpong {

std::vector<Row> make_rows(const std::vector<SizeResult> &results, std::uint64_t iterations)
{
	std::vector<Row> rows;
	for (const SizeResult &r : results) {
		const tcatools::Summary s = tcatools::summarize(r.oneway_us);
		const bool timed = !r.oneway_us.empty();
		rows.push_back(Row{r.size, iterations, r.verified, s.min, s.median, s.p99,
				   timed && s.median > 0 ? static_cast<double>(r.size) / s.median : 0,
				   timed});
	}
	return rows;
}

void print_table(std::FILE *out, const std::vector<Row> &rows)
{
	std::fprintf(out, "%10s %8s %10s %10s %10s %10s %9s\n", "size", "iters", "min_us",
		     "median_us", "p99_us", "MB/s", "verified");
	for (const Row &r : rows) {
		if (r.timed)
			std::fprintf(out, "%10" PRIu64 " %8" PRIu64 " %10.3f %10.3f %10.3f %10.2f %9" PRIu64 "\n",
				     r.size, r.iterations, r.min_us, r.median_us, r.p99_us, r.mb_per_s,
				     r.verified);
		else
			std::fprintf(out, "%10" PRIu64 " %8" PRIu64 " %10s %10s %10s %10s %9" PRIu64 "\n",
				     r.size, r.iterations, "-", "-", "-", "-", r.verified);
	}
}

bool write_csv(const std::string &path, const std::vector<Row> &rows)
{
	std::FILE *f = std::fopen(path.c_str(), "w");
	if (!f) {
		std::fprintf(stderr, "pingpong: error: cannot write %s: %s\n", path.c_str(),
			     std::strerror(errno));
		return false;
	}
	std::fprintf(f, "size,iters,min_us,median_us,p99_us,mb_per_s,verified\n");
	for (const Row &r : rows) {
		if (r.timed)
			std::fprintf(f, "%" PRIu64 ",%" PRIu64 ",%.3f,%.3f,%.3f,%.2f,%" PRIu64 "\n", r.size,
				     r.iterations, r.min_us, r.median_us, r.p99_us, r.mb_per_s, r.verified);
		else
			std::fprintf(f, "%" PRIu64 ",%" PRIu64 ",,,,,%" PRIu64 "\n", r.size, r.iterations,
				     r.verified);
	}
	const bool ok = std::fclose(f) == 0;
	if (!ok)
		std::fprintf(stderr, "pingpong: error: writing %s failed\n", path.c_str());
	return ok;
}

} // namespace pingpong
