// The writing side of a trace: the device records events into a bounded ring
// and a writer thread drains the ring into the node's trace file.
//
// record() never blocks and never allocates: when the ring is full the event
// is dropped and counted (its event number is skipped, so the reader knows
// where), which keeps a guest that floods the card from ever waiting on the
// disk. Memory is bounded by the ring (64 bytes per record).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trace_format.h"

namespace peach2::trace {

inline constexpr uint32_t kRingDefault = 1u << 16;  // 4 MiB
inline constexpr uint32_t kRingMin = 64;
inline constexpr uint32_t kRingMax = 1u << 22;  // 256 MiB

class Recorder {
public:
    struct Options {
        std::string path;
        uint32_t node = 0;
        uint32_t nodes = 1;
        uint32_t ring_records = kRingDefault;  // rounded up to a power of two
        std::string producer = "qemu-peach2";
        uint64_t t_emu_ns = 0;  // the emulated clock now (the header's start time)
        // false: no writer thread; the owner calls drain() (tests, and hosts
        // that prefer to write from their own event loop).
        bool writer_thread = true;
    };

    // Creates the file and writes its header; nullptr and *err on failure
    // (a bad option or an unwritable path).
    static std::unique_ptr<Recorder> open(const Options& opt, std::string* err);
    // Drains the ring, writes the END record and closes the file.
    ~Recorder();
    Recorder(const Recorder&) = delete;
    Recorder& operator=(const Recorder&) = delete;

    // Producer side: one thread (the device's). Fills in seq and the host
    // clock; t_emu_ns is the emulated clock of the event.
    void record(Record r, uint64_t t_emu_ns);

    // Writes what the ring holds to the file (without a writer thread).
    void drain();

    uint64_t events() const { return events_.load(std::memory_order_relaxed); }
    uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
    // The writer's first I/O error ("" if none). Records after it are lost.
    std::string error() const;

private:
    Recorder(FILE* f, uint32_t ring_records, bool writer_thread);
    void writer_loop();
    void write_bytes(const uint8_t* p, size_t n);  // consumer side only
    void io_failed();

    FILE* file_;
    std::vector<Record> ring_;
    uint64_t mask_;
    alignas(64) std::atomic<uint64_t> head_{0};  // next slot the producer fills
    alignas(64) std::atomic<uint64_t> tail_{0};  // next slot the writer drains
    std::atomic<uint64_t> events_{0};
    std::atomic<uint64_t> dropped_{0};
    uint64_t last_t_emu_ = 0;
    mutable std::mutex mu_;
    std::condition_variable wake_;
    bool stop_ = false;    // under mu_
    std::string error_;    // under mu_
    bool failed_ = false;  // writer thread only
    std::thread writer_;
};

}  // namespace peach2::trace
