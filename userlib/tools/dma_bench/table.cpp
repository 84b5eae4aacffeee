// SPDX-License-Identifier: MIT
#include "table.hpp"

#include "../common/stats.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstring>

namespace dmabench {
namespace {

const char *test_name(Test t)
{
	return t == Test::Latency ? "latency" : "stream";
}

void print_latency(std::FILE *out, const Row &r)
{
	if (r.timed)
		std::fprintf(out, "%10" PRIu64 " %8" PRIu64 " %10.2f %10.2f %10.2f %10.2f %9" PRIu64 "\n",
			     r.size, r.count, r.min_us, r.median_us, r.p99_us, r.mb_per_s, r.verified);
	else
		std::fprintf(out, "%10" PRIu64 " %8" PRIu64 " %10s %10s %10s %10s %9" PRIu64 "\n", r.size,
			     r.count, "-", "-", "-", "-", r.verified);
}

void print_stream(std::FILE *out, const Row &r)
{
	if (r.timed)
		std::fprintf(out, "%10" PRIu64 " %8" PRIu64 " %10.2f %9" PRIu64 "\n", r.size, r.count,
			     r.mb_per_s, r.verified);
	else
		std::fprintf(out, "%10" PRIu64 " %8" PRIu64 " %10s %9" PRIu64 "\n", r.size, r.count, "-",
			     r.verified);
}

} // namespace

std::vector<Row> make_rows(const std::vector<Result> &results)
{
	std::vector<Row> rows;
	for (const Result &r : results) {
		Row row{r.mode, r.test, r.size, r.count, r.verified + r.confirmed, 0, 0, 0, 0, r.timed};
		if (r.test == Test::Latency) {
			const tcatools::Summary s = tcatools::summarize(r.oneway_us);
			row.min_us = s.min;
			row.median_us = s.median;
			row.p99_us = s.p99;
			row.mb_per_s = s.median > 0 ? static_cast<double>(r.size) / s.median : 0;
			row.timed = r.timed && !r.oneway_us.empty();
		} else {
			row.mb_per_s = r.seconds > 0
					       ? static_cast<double>(r.size * r.count) / r.seconds / 1e6
					       : 0;
			row.timed = r.timed && r.seconds > 0;
		}
		rows.push_back(row);
	}
	return rows;
}

void print_tables(std::FILE *out, const std::vector<Mode> &modes, const std::vector<Row> &rows)
{
	for (Mode m : modes) {
		std::fprintf(out, "\n== %s: %s ==\n", mode_name(m), mode_title(m));
		bool header = false;
		for (const Row &r : rows) {
			if (r.mode != m || r.test != Test::Latency)
				continue;
			if (!header)
				std::fprintf(out, "latency (one way = round trip / 2, µs):\n"
					     "%10s %8s %10s %10s %10s %10s %9s\n", "size", "iters", "min",
					     "median", "p99", "MB/s", "verified");
			header = true;
			print_latency(out, r);
		}
		header = false;
		for (const Row &r : rows) {
			if (r.mode != m || r.test != Test::Stream)
				continue;
			if (!header)
				std::fprintf(out, "stream (back to back, wall clock):\n%10s %8s %10s %9s\n",
					     "size", "messages", "MB/s", "verified");
			header = true;
			print_stream(out, r);
		}
	}
}

bool write_csv(const std::string &path, const std::vector<Row> &rows)
{
	std::FILE *f = std::fopen(path.c_str(), "w");
	if (!f) {
		std::fprintf(stderr, "dma_bench: error: cannot write %s: %s\n", path.c_str(),
			     std::strerror(errno));
		return false;
	}
	std::fprintf(f, "mode,test,size,count,min_us,median_us,p99_us,mb_per_s,verified\n");
	for (const Row &r : rows) {
		std::fprintf(f, "%s,%s,%" PRIu64 ",%" PRIu64 ",", mode_name(r.mode), test_name(r.test),
			     r.size, r.count);
		if (r.timed && r.test == Test::Latency)
			std::fprintf(f, "%.3f,%.3f,%.3f,%.2f,", r.min_us, r.median_us, r.p99_us, r.mb_per_s);
		else if (r.timed)
			std::fprintf(f, ",,,%.2f,", r.mb_per_s);
		else
			std::fprintf(f, ",,,,");
		std::fprintf(f, "%" PRIu64 "\n", r.verified);
	}
	const bool ok = std::fclose(f) == 0;
	if (!ok)
		std::fprintf(stderr, "dma_bench: error: writing %s failed\n", path.c_str());
	return ok;
}

} // namespace dmabench
