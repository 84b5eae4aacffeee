// peach2-model: predict the time a traced run would take on real PEACH2 cards.
//
//   peach2-model TRACE_DIR                 report for the traces of a run
//   peach2-model --calibration             the papers' figures against the model
//   peach2-model --curves                  predicted latency/bandwidth by size (CSV)
#include <getopt.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "calibration.h"
#include "params.h"
#include "report.h"
#include "simulator.h"
#include "synthetic.h"
#include "trace_reader.h"
#include "workload.h"

namespace {

using namespace peach2::model;

constexpr int kExitFigures = 1;  // a calibration figure is out of range
constexpr int kExitUsage = 2;    // bad arguments or input

void usage(std::ostream& out) {
    out << "usage: peach2-model [options] TRACE_DIR|TRACE_FILE...\n"
           "       peach2-model --calibration [--csv] [--params FILE]\n"
           "       peach2-model --curves [--profile NAME] [--params FILE]\n"
           "Predicts how long a run traced on the emulated cluster (scripts/cluster.py\n"
           "--trace DIR) would take on real PEACH2 hardware. docs/timing-model.md explains\n"
           "the model; docs/trace-format.md the traces.\n"
           "\n"
           "  -p, --profile NAME   parameter profile, i.e. FPGA logic version: 2013 (paper\n"
           "                       004) or 2015 (paper 000, HA-PACS/TCA; the default)\n"
           "      --params FILE    timing parameters (default: the built-in model/peach2.params)\n"
           "  -s, --host-scale X   also count the host time recorded between a node's\n"
           "                       operations, scaled by X (e.g. 0.01 if the emulated CPU\n"
           "                       ran 100x slower); default 0: communication only\n"
           "      --partial        model traces that were cut short (emulator killed)\n"
           "      --ops-csv FILE   write every operation's predicted time to FILE\n"
           "      --summary-csv FILE  predicted and emulated times per kind of operation,\n"
           "                       DMA mode and size, to FILE\n"
           "      --calibration    replay the papers' experiments; exit 1 if a figure is off\n"
           "      --curves         predicted latency and bandwidth by message size (CSV)\n"
           "      --csv            CSV output for --calibration\n"
           "      --print-params   print the profile's parameters and exit\n"
           "      --write-example DIR  write the traces of a small synthetic 2-node run\n"
           "                       (PIO ping-pong, DMA put, get) to DIR, to try the tool\n"
           "  -h, --help           this text\n"
           "Exit status: 0 done, 1 calibration figure out of range, 2 bad arguments or input.\n";
}

int fail(const std::string& msg) {
    std::cerr << "peach2-model: " << msg << "\n";
    return kExitUsage;
}

// A small run as an emulated 2-node cluster would trace it.
int write_example(const std::string& dir) {
    std::string err;
    auto run = SyntheticRun::create("2", &err);
    if (!run)
        return fail(err);
    for (int i = 0; i < 10; ++i) {  // PIO ping-pong, 8 bytes
        run->pio(0, 1, 0x10000, 8);
        run->pio(1, 0, 0x10000, 8);
    }
    SyntheticRun::Desc data{1, 0x100000, 1 << 20};
    SyntheticRun::Desc status{1, 0x80000, 8, 1};
    status.imm = true;
    run->dma(0, 0, peach2::trace::DmaMode::ChainHost, {data, status});
    run->read_proxy(0, 1, 1, 4096);
    if (!run->write(dir, &err))
        return fail(err);
    std::cout << "wrote " << run->records() << " records of a 2-node run to " << dir << "/node{0,1}"
              << peach2::trace::kFileSuffix << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    enum {
        kParams = 256,
        kPartial,
        kOpsCsv,
        kCalibration,
        kCurves,
        kCsv,
        kPrintParams,
        kExample,
        kSummaryCsv
    };
    static const option kOptions[] = {
        {"profile", required_argument, nullptr, 'p'},
        {"params", required_argument, nullptr, kParams},
        {"host-scale", required_argument, nullptr, 's'},
        {"partial", no_argument, nullptr, kPartial},
        {"ops-csv", required_argument, nullptr, kOpsCsv},
        {"summary-csv", required_argument, nullptr, kSummaryCsv},
        {"calibration", no_argument, nullptr, kCalibration},
        {"curves", no_argument, nullptr, kCurves},
        {"csv", no_argument, nullptr, kCsv},
        {"print-params", no_argument, nullptr, kPrintParams},
        {"write-example", required_argument, nullptr, kExample},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0},
    };
    std::string profile, params_path, ops_csv, summary_csv, example_dir;
    SimOptions sim;
    peach2::trace::ReadOptions read;
    bool calibration = false, curves_mode = false, csv = false, print_params = false;
    for (int c; (c = getopt_long(argc, argv, "p:s:h", kOptions, nullptr)) != -1;) {
        switch (c) {
        case 'p': profile = optarg; break;
        case kParams: params_path = optarg; break;
        case 's': {
            char* end = nullptr;
            sim.host_scale = std::strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(sim.host_scale >= 0) || sim.host_scale > 1e6)
                return fail("--host-scale needs a number >= 0, not `" + std::string(optarg) + "`");
            break;
        }
        case kPartial: read.partial = true; break;
        case kOpsCsv: ops_csv = optarg; break;
        case kSummaryCsv: summary_csv = optarg; break;
        case kCalibration: calibration = true; break;
        case kCurves: curves_mode = true; break;
        case kCsv: csv = true; break;
        case kPrintParams: print_params = true; break;
        case kExample: example_dir = optarg; break;
        case 'h': usage(std::cout); return 0;
        default: usage(std::cerr); return kExitUsage;
        }
    }

    std::string err;
    std::string text = builtin_params();
    std::string text_name = "built-in model/peach2.params";
    if (!params_path.empty()) {
        auto t = read_params_file(params_path, &err);
        if (!t)
            return fail(err);
        text = std::move(*t);
        text_name = params_path;
    }
    auto params = parse_params(text, text_name, profile, &err);
    if (!params)
        return fail(err);

    if (!example_dir.empty())
        return write_example(example_dir);
    if (print_params) {
        std::cout << describe(*params);
        return 0;
    }
    if (calibration) {
        auto figures = calibrate(text, &err);
        if (!figures)
            return fail(err);
        if (csv)
            write_calibration_csv(std::cout, *figures);
        else
            print_calibration(std::cout, *figures);
        for (const Figure& f : *figures)
            if (!f.ok())
                return kExitFigures;
        return 0;
    }
    if (curves_mode) {
        write_curves_csv(std::cout, curves(*params));
        return 0;
    }

    std::vector<std::string> paths(argv + optind, argv + argc);
    if (paths.empty()) {
        usage(std::cerr);
        return kExitUsage;
    }
    auto traces = peach2::trace::read_run(paths, read, &err);
    if (!traces)
        return fail(err);
    auto workload = build_workload(*traces, &err);
    if (!workload)
        return fail(err);
    traces->clear();
    const Prediction prediction = simulate(*workload, *params, sim);
    print_report(std::cout, *workload, prediction, *params, sim);
    if (!ops_csv.empty() && !write_ops_csv(ops_csv, *workload, prediction, &err))
        return fail(err);
    if (!summary_csv.empty() && !write_summary_csv(summary_csv, *workload, prediction, &err))
        return fail(err);
    return 0;
}
