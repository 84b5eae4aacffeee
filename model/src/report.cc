// Reports (see report.h).
#include "report.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

namespace peach2::model {
namespace {

std::string fmt(const char* f, double v) {
    char b[64];
    std::snprintf(b, sizeof(b), f, v);
    return b;
}

std::string bytes_text(uint64_t b) {
    if (b >= (1ull << 30))
        return fmt("%.2f GiB", static_cast<double>(b) / (1ull << 30));
    if (b >= (1ull << 20))
        return fmt("%.2f MiB", static_cast<double>(b) / (1ull << 20));
    if (b >= (1ull << 10))
        return fmt("%.1f KiB", static_cast<double>(b) / (1ull << 10));
    return std::to_string(b) + " B";
}

// Time in the unit that reads best.
std::string time_text(double us_value) {
    if (us_value >= 1e6)
        return fmt("%.3f s", us_value / 1e6);
    if (us_value >= 1e3)
        return fmt("%.3f ms", us_value / 1e3);
    return fmt("%.3f us", us_value);
}

// Writes a file through `body`; false and *err if it cannot be created or written.
bool write_file(const std::string& path, const std::function<void(std::ostream&)>& body,
                std::string* err) {
    std::ofstream out(path);
    if (out)
        body(out);
    if (!out) {
        if (err)
            *err = path + ": cannot write (" + std::strerror(errno) + ")";
        return false;
    }
    return true;
}

double median(std::vector<double> v) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

const char* op_name(OpKind k) {
    switch (k) {
    case OpKind::Pio: return "PIO put";
    case OpKind::Dma: return "DMA run";
    case OpKind::Get: return "get";
    case OpKind::Atomic: return "atomic";
    }
    return "?";
}

const char* op_mode(const Workload& w, const Op& op) {
    switch (op.kind) {
    case OpKind::Dma:
        switch (w.runs[op.first].mode) {
        case trace::DmaMode::ChainCard: return "on-card";
        case trace::DmaMode::ChainHost: return "host";
        case trace::DmaMode::Register: return "register";
        }
        return "-";
    case OpKind::Atomic: return w.requests[op.first].op == 2 ? "cas" : "faa";
    case OpKind::Pio:
    case OpKind::Get: return "-";
    }
    return "-";
}

bool write_summary_csv(const std::string& path, const Workload& w, const Prediction& p,
                       std::string* err) {
    // (kind, mode, bytes) -> predicted and emulated times, µs.
    std::map<std::tuple<int, std::string, uint64_t>,
             std::pair<std::vector<double>, std::vector<double>>>
        groups;
    for (size_t i = 0; i < w.ops.size(); ++i) {
        const Op& op = w.ops[i];
        const OpTiming& t = p.ops[i];
        if (t.begin == kUnknown || t.end == kUnknown)
            continue;
        auto& g = groups[{static_cast<int>(op.kind), op_mode(w, op), op.bytes}];
        g.first.push_back(us(t.end - t.begin));
        if (op.t_host_end > op.t_host_begin)
            g.second.push_back(static_cast<double>(op.t_host_end - op.t_host_begin) / 1e3);
    }
    return write_file(
        path,
        [&](std::ostream& out) {
            out << "op,mode,bytes,count,predicted_min_us,predicted_median_us,predicted_max_us,"
                   "emulated_median_us\n";
            for (const auto& [key, times] : groups) {
                const auto& [kind, mode, bytes] = key;
                const auto [lo, hi] = std::minmax_element(times.first.begin(), times.first.end());
                out << op_name(static_cast<OpKind>(kind)) << "," << mode << "," << bytes << ","
                    << times.first.size() << "," << fmt("%.4f", *lo) << ","
                    << fmt("%.4f", median(times.first)) << "," << fmt("%.4f", *hi) << ",";
                if (!times.second.empty())
                    out << fmt("%.3f", median(times.second));
                out << "\n";
            }
        },
        err);
}

void print_report(std::ostream& out, const Workload& w, const Prediction& p, const Params& params,
                  const SimOptions& opt) {
    uint32_t traced = 0;
    for (bool t : w.traced)
        traced += t;
    out << "peach2-model: " << traced << " of " << w.nodes << " nodes traced, " << w.records
        << " records (" << w.dropped << " dropped), profile " << params.profile
        << ", host time scale " << opt.host_scale << "\n\n";
    const double predicted = us(p.end);
    out << "Whole run on PEACH2 (predicted): " << time_text(predicted) << "\n";
    if (w.host_span_ns) {
        const double emulated = static_cast<double>(w.host_span_ns) / 1e3;
        out << "Whole run emulated (host clock): " << time_text(emulated);
        if (predicted > 0) {
            const double ratio = emulated / predicted;
            out << "  (" << fmt(ratio >= 10 ? "%.0f" : "%.2f", ratio) << " x the prediction)";
        }
        out << "\n";
    }
    out << "\n";

    // Per kind of operation: predicted and emulated times.
    constexpr size_t kKinds = 4;
    std::array<std::vector<double>, kKinds> pred, emu;
    std::array<uint64_t, kKinds> bytes{};
    size_t unfinished = 0;
    for (size_t i = 0; i < w.ops.size(); ++i) {
        const auto k = static_cast<size_t>(w.ops[i].kind);
        const OpTiming& t = p.ops[i];
        if (t.begin == kUnknown || t.end == kUnknown) {
            ++unfinished;
            continue;
        }
        pred[k].push_back(us(t.end - t.begin));
        bytes[k] += w.ops[i].bytes;
        if (w.ops[i].t_host_end > w.ops[i].t_host_begin)
            emu[k].push_back(static_cast<double>(w.ops[i].t_host_end - w.ops[i].t_host_begin) /
                             1e3);
    }
    char line[200];
    std::snprintf(line, sizeof(line), "%-10s %8s %11s  %12s %12s %12s  %14s\n", "operation",
                  "count", "bytes", "min us", "median us", "max us", "emulated med");
    out << line;
    for (size_t k = 0; k < kKinds; ++k) {
        if (pred[k].empty())
            continue;
        const auto [lo, hi] = std::minmax_element(pred[k].begin(), pred[k].end());
        std::snprintf(line, sizeof(line), "%-10s %8zu %11s  %12.3f %12.3f %12.3f  %14s\n",
                      op_name(static_cast<OpKind>(k)), pred[k].size(), bytes_text(bytes[k]).c_str(),
                      *lo, median(pred[k]), *hi,
                      emu[k].empty() ? "-" : time_text(median(emu[k])).c_str());
        out << line;
    }
    if (unfinished)
        out << unfinished << " operations did not finish in the model (see warnings)\n";
    out << "(operation: from the CPU issuing it until a polling CPU sees its last byte; "
           "--ops-csv lists each one)\n\n";

    // Links and ports.
    if (!p.resources.empty() && p.end > 0) {
        std::snprintf(line, sizeof(line), "%-28s %7s %12s %10s\n", "resource", "busy", "bytes",
                      "packets");
        out << line;
        for (const ResourceUse& r : p.resources) {
            std::snprintf(line, sizeof(line), "%-28s %6.1f%% %12s %10llu\n", r.name.c_str(),
                          100.0 * static_cast<double>(r.busy) / static_cast<double>(p.end),
                          bytes_text(r.bytes).c_str(), static_cast<unsigned long long>(r.packets));
            out << line;
        }
        out << "\n";
    }
    for (const auto& s : w.warnings)
        out << "warning: " << s << "\n";
    for (const auto& s : p.warnings)
        out << "warning: " << s << "\n";
}

bool write_ops_csv(const std::string& path, const Workload& w, const Prediction& p,
                   std::string* err) {
    return write_file(
        path,
        [&](std::ostream& out) {
            out << "op,kind,node,peer,bytes,predicted_begin_us,predicted_end_us,predicted_us,"
                   "emulated_us,mode\n";
            for (size_t i = 0; i < w.ops.size(); ++i) {
                const Op& op = w.ops[i];
                const OpTiming& t = p.ops[i];
                out << i << "," << op_name(op.kind) << "," << op.node << "," << op.peer << ","
                    << op.bytes << ",";
                if (t.begin != kUnknown && t.end != kUnknown)
                    out << fmt("%.4f", us(t.begin)) << "," << fmt("%.4f", us(t.end)) << ","
                        << fmt("%.4f", us(t.end - t.begin));
                else
                    out << ",,";
                out << ",";
                if (op.t_host_end > op.t_host_begin)
                    out << fmt("%.3f", static_cast<double>(op.t_host_end - op.t_host_begin) / 1e3);
                out << "," << op_mode(w, op) << "\n";
            }
        },
        err);
}

void print_calibration(std::ostream& out, const std::vector<Figure>& figures) {
    char line[240];
    std::snprintf(line, sizeof(line), "%-58s %-17s %-7s %9s %9s %7s  %s\n", "figure", "source",
                  "profile", "paper", "model", "error", "");
    out << line;
    for (const Figure& f : figures) {
        const std::string err = f.paper_text.find_first_of("<-") == std::string::npos
                                    ? fmt("%+.1f%%", (f.model / f.paper - 1) * 100)
                                    : "";
        std::snprintf(line, sizeof(line), "%-58s %-17s %-7s %9s %9.3f %7s  %s\n",
                      (f.what + " [" + f.unit + "]").c_str(), f.source.c_str(), f.profile.c_str(),
                      f.paper_text.c_str(), f.model, err.c_str(), f.ok() ? "ok" : "OUT OF RANGE");
        out << line;
    }
}

void write_calibration_csv(std::ostream& out, const std::vector<Figure>& figures) {
    out << "id,what,source,profile,unit,paper,paper_value,lo,hi,model,bytes,op,mode,metric,ok\n";
    for (const Figure& f : figures)
        out << f.id << ",\"" << f.what << "\"," << f.source << "," << f.profile << "," << f.unit
            << ",\"" << f.paper_text << "\"," << f.paper << "," << f.lo << "," << f.hi << ","
            << fmt("%.4f", f.model) << "," << f.bytes << "," << f.op << "," << f.mode << ","
            << f.metric << "," << (f.ok() ? 1 : 0) << "\n";
}

void write_curves_csv(std::ostream& out, const std::vector<CurvePoint>& points) {
    out << "series,bytes,latency_us,gbps\n";
    for (const CurvePoint& c : points)
        out << c.series << "," << c.bytes << "," << fmt("%.4f", c.latency_us) << ","
            << fmt("%.4f", c.gbps) << "\n";
}

}  // namespace peach2::model
