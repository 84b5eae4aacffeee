// SPDX-License-Identifier: MIT
// tca_get_bench's results: table, CSV, ratios.
#include "session.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace getbench {
namespace {

const Row *find(const std::vector<Row> &rows, const char *test, std::uint64_t size)
{
	for (const Row &r : rows)
		if (r.test == test && (size == 0 || r.size == size))
			return &r;
	return nullptr;
}

} // namespace

void print_rows(const std::vector<Row> &rows)
{
	std::printf("%-15s %9s %7s %10s %10s %10s %10s\n", "test", "size", "count", "min_us", "median_us",
		    "p99_us", "MB/s");
	for (const Row &r : rows) {
		if (r.latency)
			std::printf("%-15s %9" PRIu64 " %7" PRIu64 " %10.2f %10.2f %10.2f %10.2f\n", r.test.c_str(),
				    r.size, r.count, r.min_us, r.median_us, r.p99_us, r.mb_per_s);
		else
			std::printf("%-15s %9" PRIu64 " %7" PRIu64 " %10s %10s %10s %10.2f\n", r.test.c_str(), r.size,
				    r.count, "-", "-", "-", r.mb_per_s);
	}
}

bool write_csv(const std::string &path, const std::vector<Row> &rows)
{
	std::FILE *f = std::fopen(path.c_str(), "w");
	if (!f) {
		std::fprintf(stderr, "get_bench: error: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
		return false;
	}
	std::fprintf(f, "test,size,count,min_us,median_us,p99_us,mb_per_s\n");
	for (const Row &r : rows) {
		if (r.latency)
			std::fprintf(f, "%s,%" PRIu64 ",%" PRIu64 ",%.3f,%.3f,%.3f,%.2f\n", r.test.c_str(), r.size,
				     r.count, r.min_us, r.median_us, r.p99_us, r.mb_per_s);
		else
			std::fprintf(f, "%s,%" PRIu64 ",%" PRIu64 ",,,,%.2f\n", r.test.c_str(), r.size, r.count,
				     r.mb_per_s);
	}
	return std::fclose(f) == 0;
}

void print_ratios(const std::vector<Row> &rows)
{
	const Row *put = find(rows, "put_pio", 8), *get8 = find(rows, "get", 8);
	if (put && get8 && put->median_us > 0)
		std::printf("get_bench: get 8 B / put 8 B latency: %.2f / %.2f us = %.2f (target <= 3)\n",
			    get8->median_us, put->median_us, get8->median_us / put->median_us);
	else
		std::printf("get_bench: get 8 B / put 8 B latency: - (no 8-byte get measured)\n");
	const Row *dma = find(rows, "dma_put_stream", 0), *gs = find(rows, "get_stream", 0);
	if (dma && gs && dma->mb_per_s > 0)
		std::printf("get_bench: get / DMA put bandwidth (%" PRIu64 " B): %.1f / %.1f MB/s = %.2f "
			    "(target >= 0.80)\n",
			    gs->size, gs->mb_per_s, dma->mb_per_s, gs->mb_per_s / dma->mb_per_s);
}

} // namespace getbench
