// SPDX-License-Identifier: MIT
// tca_pingpong's results: the terminal table and the optional CSV file.
#pragma once

#include "session.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace pingpong {

struct Row {
	std::uint64_t size, iterations, verified;
	double min_us, median_us, p99_us;
	double mb_per_s; // size / median one-way latency (bytes/µs = MB/s, 10^6)
	bool timed;      // false on the pong side (it does not measure)
};

std::vector<Row> make_rows(const std::vector<SizeResult> &results, std::uint64_t iterations);

void print_table(std::FILE *out, const std::vector<Row> &rows);

// false if the file cannot be written (reported).
bool write_csv(const std::string &path, const std::vector<Row> &rows);

} // namespace pingpong
