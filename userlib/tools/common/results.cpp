// SPDX-License-Identifier: MIT
#include "results.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstring>

namespace tcatools {

double percentile_sorted(const std::vector<double>& sorted, double p) {
    if (sorted.empty())
        return 0;
    const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
    std::size_t i = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
    if (i >= sorted.size())
        i = sorted.size() - 1;
    return sorted[i];
}

Summary summarize(std::vector<double> samples) {
    Summary s;
    if (samples.empty())
        return s;
    std::sort(samples.begin(), samples.end());
    s.min = samples.front();
    s.median = percentile_sorted(samples, 50);
    s.p99 = percentile_sorted(samples, 99);
    return s;
}

Row latency_row(std::string test, std::string mode, std::uint64_t size,
                const std::vector<double>& us, std::uint64_t verified) {
    Row r;
    r.test = std::move(test);
    r.mode = std::move(mode);
    r.size = size;
    r.count = us.size();
    r.verified = verified;
    if (us.empty())
        return r;
    const Summary s = summarize(us);
    r.min_us = s.min;
    r.median_us = s.median;
    r.p99_us = s.p99;
    r.latency = true;
    if (s.median > 0) {
        r.mb_per_s = static_cast<double>(size) / s.median;  // bytes/µs = MB/s (10^6)
        r.bandwidth = true;
    }
    return r;
}

Row bandwidth_row(std::string test, std::string mode, std::uint64_t size, std::uint64_t count,
                  double seconds, std::uint64_t verified) {
    Row r;
    r.test = std::move(test);
    r.mode = std::move(mode);
    r.size = size;
    r.count = count;
    r.verified = verified;
    if (seconds > 0) {
        r.mb_per_s = static_cast<double>(size) * static_cast<double>(count) / seconds / 1e6;
        r.bandwidth = true;
    }
    return r;
}

void print_table(std::FILE* out, const std::vector<Row>& rows) {
    std::fprintf(out, "%-15s %-5s %9s %7s %10s %10s %10s %10s %9s\n", "test", "mode", "size",
                 "count", "min_us", "median_us", "p99_us", "MB/s", "verified");
    for (const Row& r : rows) {
        std::fprintf(out, "%-15s %-5s %9" PRIu64 " %7" PRIu64, r.test.c_str(),
                     r.mode.empty() ? "-" : r.mode.c_str(), r.size, r.count);
        if (r.latency)
            std::fprintf(out, " %10.2f %10.2f %10.2f", r.min_us, r.median_us, r.p99_us);
        else
            std::fprintf(out, " %10s %10s %10s", "-", "-", "-");
        if (r.bandwidth)
            std::fprintf(out, " %10.2f", r.mb_per_s);
        else
            std::fprintf(out, " %10s", "-");
        std::fprintf(out, " %9" PRIu64 "\n", r.verified);
    }
    std::fflush(out);
}

bool write_csv(const std::string& path, const std::vector<Row>& rows, const char* who) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) {
        std::fprintf(stderr, "%s: error: cannot write %s: %s\n", who, path.c_str(),
                     std::strerror(errno));
        return false;
    }
    std::fprintf(f, "test,mode,size,count,min_us,median_us,p99_us,mb_per_s,verified\n");
    for (const Row& r : rows) {
        std::fprintf(f, "%s,%s,%" PRIu64 ",%" PRIu64 ",", r.test.c_str(), r.mode.c_str(), r.size,
                     r.count);
        if (r.latency)
            std::fprintf(f, "%.3f,%.3f,%.3f,", r.min_us, r.median_us, r.p99_us);
        else
            std::fprintf(f, ",,,");
        if (r.bandwidth)
            std::fprintf(f, "%.2f", r.mb_per_s);
        std::fprintf(f, ",%" PRIu64 "\n", r.verified);
    }
    if (std::fclose(f) != 0) {
        std::fprintf(stderr, "%s: error: writing %s failed\n", who, path.c_str());
        return false;
    }
    return true;
}

}  // namespace tcatools
