// SPDX-License-Identifier: MIT
#include "stats.hpp"

#include <algorithm>
#include <cmath>

namespace tcatools {

double percentile_sorted(const std::vector<double> &sorted, double p)
{
	if (sorted.empty())
		return 0;
	const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
	std::size_t i = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
	if (i >= sorted.size())
		i = sorted.size() - 1;
	return sorted[i];
}

Summary summarize(std::vector<double> samples)
{
	Summary s;
	if (samples.empty())
		return s;
	std::sort(samples.begin(), samples.end());
	s.min = samples.front();
	s.median = percentile_sorted(samples, 50);
	s.p99 = percentile_sorted(samples, 99);
	return s;
}

} // namespace tcatools
