// SPDX-License-Identifier: MIT
// What a benchmark reports: one row per (test, mode, size), printed as a
// table and written as CSV in one format for every benchmark, which
// scripts/plot-bench.py draws:
//   test,mode,size,count,min_us,median_us,p99_us,mb_per_s,verified
// Latency rows have min/median/p99 (µs, nearest rank) and MB/s = size /
// median; bandwidth rows only MB/s (bytes / wall clock). Empty fields were
// not measured on this side (the peer measured).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tcatools {

struct Summary {
    double min = 0;
    double median = 0;
    double p99 = 0;
};

// Nearest-rank percentiles (value at rank ceil(p·n)): always an observed
// sample, no interpolation. Empty input gives zeros.
Summary summarize(std::vector<double> samples);

// Nearest-rank percentile of sorted samples, p in (0, 100].
double percentile_sorted(const std::vector<double>& sorted, double p);

struct Row {
    std::string test;  // latency, stream, get, cas, ...
    std::string mode;  // pio, card, host, reg; empty where it has none
    std::uint64_t size = 0;
    std::uint64_t count = 0;  // timed iterations, or messages
    double min_us = 0, median_us = 0, p99_us = 0;
    double mb_per_s = 0;
    std::uint64_t verified = 0;  // messages checked (here, or confirmed by the peer)
    bool latency = false;        // min/median/p99 measured
    bool bandwidth = false;      // mb_per_s measured
};

// A latency row from one-way (or per-call) samples in µs.
Row latency_row(std::string test, std::string mode, std::uint64_t size,
                const std::vector<double>& us, std::uint64_t verified);
// A bandwidth row: count messages of size bytes in `seconds`.
Row bandwidth_row(std::string test, std::string mode, std::uint64_t size, std::uint64_t count,
                  double seconds, std::uint64_t verified);

void print_table(std::FILE* out, const std::vector<Row>& rows);
// False (with the reason on stderr, prefixed by `who`) if it cannot be written.
bool write_csv(const std::string& path, const std::vector<Row>& rows, const char* who);

}  // namespace tcatools
