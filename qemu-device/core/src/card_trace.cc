// Opening a card trace (see card_trace.h).
#include "card_trace.h"

namespace peach2 {

bool CardTrace::open(const std::string& path, uint32_t node, uint32_t nodes, uint32_t ring_records,
                     std::string* err) {
    recorder_.reset();  // a trace already open is closed first
    trace::Recorder::Options opt;
    opt.path = path;
    opt.node = node;
    opt.nodes = nodes;
    opt.ring_records = ring_records ? ring_records : trace::kRingDefault;
    opt.t_emu_ns = now();
    recorder_ = trace::Recorder::open(opt, err);
    return recorder_ != nullptr;
}

}  // namespace peach2
