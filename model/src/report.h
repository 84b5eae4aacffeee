// What peach2-model prints: the predicted time of the run and of each kind of
// operation beside the emulated one, and how busy each link and port was.
#pragma once

#include <iosfwd>
#include <string>

#include "calibration.h"
#include "params.h"
#include "simulator.h"
#include "workload.h"

namespace peach2::model {

void print_report(std::ostream& out, const Workload& w, const Prediction& p, const Params& params,
                  const SimOptions& opt);
// One row per operation: kind, nodes, bytes, predicted begin/end/time, emulated time.
bool write_ops_csv(const std::string& path, const Workload& w, const Prediction& p,
                   std::string* err);
// One row per kind of operation, DMA mode / atomic op and size: count,
// predicted min/median/max and emulated median (for joining with benchmark rows).
bool write_summary_csv(const std::string& path, const Workload& w, const Prediction& p,
                       std::string* err);
void print_calibration(std::ostream& out, const std::vector<Figure>& figures);
void write_calibration_csv(std::ostream& out, const std::vector<Figure>& figures);
void write_curves_csv(std::ostream& out, const std::vector<CurvePoint>& points);

const char* op_name(OpKind k);
// "on-card", "host", "register" for DMA runs, "cas"/"faa" for atomics, else "-".
const char* op_mode(const Workload& w, const Op& op);

}  // namespace peach2::model
