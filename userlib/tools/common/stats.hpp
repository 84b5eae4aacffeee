// SPDX-License-Identifier: MIT
// Latency summaries for the benchmark table.
#pragma once

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
double percentile_sorted(const std::vector<double> &sorted, double p);

} // namespace tcatools
