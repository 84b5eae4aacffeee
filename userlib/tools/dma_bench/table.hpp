// SPDX-License-Identifier: MIT
// tca_dma_bench's output: a table per mode on the terminal, and the CSV.
#pragma once

#include "session.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace dmabench {

struct Row {
	Mode mode;
	Test test;
	std::uint64_t size, count, verified; // verified: here, or (stream ping) by the peer
	double min_us, median_us, p99_us; // latency (one way)
	double mb_per_s;                  // latency: size / median; stream: bytes / wall clock
	bool timed;                       // false on the pong side
};

std::vector<Row> make_rows(const std::vector<Result> &results);

void print_tables(std::FILE *out, const std::vector<Mode> &modes, const std::vector<Row> &rows);

// false if the file cannot be written (reported).
bool write_csv(const std::string &path, const std::vector<Row> &rows);

} // namespace dmabench
