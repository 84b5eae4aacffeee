// The card's event trace for peach2-model (docs/trace-format.md): the
// transactions this card originates, forwards and delivers, its DMA runs,
// descriptors and interrupts, with the emulated clock, into a bounded
// trace::Recorder (model/trace/). The format is defined there, once.
//
// Off unless the host opened a trace (peach2_core_trace_open): then every
// hook is one pointer test, and the record is not even built. On, a hook
// never blocks or allocates: a full ring drops the event and counts it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "peach2_core.h"
#include "trace_format.h"
#include "trace_recorder.h"

namespace peach2 {

class CardTrace {
public:
    explicit CardTrace(const peach2_core_host& host) : host_(host) {}

    bool on() const { return recorder_ != nullptr; }
    // Record what make() returns (a trace::Record), stamped with the
    // emulated clock; nothing at all while tracing is off.
    template <typename Make>
    void record(Make&& make) {
        if (recorder_) [[unlikely]]
            recorder_->record(make(), now());
    }

    // Start recording into `path` (replacing a trace already open); false and
    // *err if the file cannot be created or the ring size is out of range.
    bool open(const std::string& path, uint32_t node, uint32_t nodes, uint32_t ring_records,
              std::string* err);
    // Drain the ring, write the END record (events, dropped) and close.
    void close() { recorder_.reset(); }
    uint64_t events() const { return recorder_ ? recorder_->events() : 0; }
    uint64_t dropped() const { return recorder_ ? recorder_->dropped() : 0; }
    std::string error() const { return recorder_ ? recorder_->error() : std::string(); }

private:
    uint64_t now() const { return host_.now_ns ? host_.now_ns(host_.opaque) : 0; }

    const peach2_core_host& host_;
    std::unique_ptr<trace::Recorder> recorder_;
};

}  // namespace peach2
