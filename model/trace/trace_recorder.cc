// Bounded trace ring and its writer thread (see trace_recorder.h).
#include "trace_recorder.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace peach2::trace {
namespace {

// How often the writer drains a ring that is filling slowly; a ring half full
// wakes it at once.
constexpr auto kDrainPeriod = std::chrono::milliseconds(20);
constexpr size_t kBatch = 1024;  // records per fwrite

uint64_t host_now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

std::unique_ptr<Recorder> Recorder::open(const Options& opt, std::string* err) {
    const auto fail = [&](const std::string& msg) {
        if (err)
            *err = msg;
        return nullptr;
    };
    if (opt.nodes == 0 || opt.nodes > kMaxNodes || opt.node >= opt.nodes)
        return fail("trace: node " + std::to_string(opt.node) + " of " + std::to_string(opt.nodes) +
                    " nodes is not a valid cluster");
    if (opt.ring_records < kRingMin || opt.ring_records > kRingMax)
        return fail("trace: ring of " + std::to_string(opt.ring_records) +
                    " records; it must hold " + std::to_string(kRingMin) + " to " +
                    std::to_string(kRingMax));
    FILE* f = std::fopen(opt.path.c_str(), "wbe");
    if (!f)
        return fail("trace: cannot create " + opt.path + " (" + std::strerror(errno) + ")");
    Header h = make_header(opt.node, opt.nodes, opt.producer);
    h.t_emu_ns = opt.t_emu_ns;
    h.t_host_ns = host_now_ns();
    h.ring_records = std::bit_ceil(opt.ring_records);
    std::array<uint8_t, kHeaderSize> raw{};
    encode(h, raw);
    if (std::fwrite(raw.data(), raw.size(), 1, f) != 1) {
        std::fclose(f);
        return fail("trace: cannot write " + opt.path + " (" + std::strerror(errno) + ")");
    }
    std::unique_ptr<Recorder> r(new Recorder(f, h.ring_records, opt.writer_thread));
    r->last_t_emu_ = opt.t_emu_ns;
    return r;
}

Recorder::Recorder(FILE* f, uint32_t ring_records, bool writer_thread)
    : file_(f), ring_(ring_records), mask_(ring_records - 1) {
    if (writer_thread)
        writer_ = std::thread([this] { writer_loop(); });
}

Recorder::~Recorder() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    wake_.notify_one();
    if (writer_.joinable())
        writer_.join();
    drain();
    Record e = end(events(), dropped());
    e.seq = events();
    e.t_emu_ns = last_t_emu_;
    e.t_host_ns = host_now_ns();
    std::array<uint8_t, kRecordSize> raw{};
    encode(e, raw);
    write_bytes(raw.data(), raw.size());
    std::fclose(file_);
}

void Recorder::record(Record r, uint64_t t_emu_ns) {
    const uint64_t seq = events_.load(std::memory_order_relaxed);
    events_.store(seq + 1, std::memory_order_relaxed);
    last_t_emu_ = t_emu_ns;
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const uint64_t used = head - tail_.load(std::memory_order_acquire);
    if (used >= ring_.size()) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    r.seq = seq;
    r.t_emu_ns = t_emu_ns;
    r.t_host_ns = host_now_ns();
    ring_[head & mask_] = r;
    head_.store(head + 1, std::memory_order_release);
    if (used + 1 == ring_.size() / 2)
        wake_.notify_one();  // no lock needed; a missed wake-up costs one period
}

std::string Recorder::error() const {
    std::lock_guard lock(mu_);
    return error_;
}

void Recorder::writer_loop() {
    // The emulator's signals are for its own threads.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    std::unique_lock lock(mu_);
    while (!stop_) {
        wake_.wait_for(lock, kDrainPeriod);
        lock.unlock();
        drain();
        lock.lock();
    }
}

// Consumer side: the writer thread, or the owner when there is none.
void Recorder::drain() {
    std::array<uint8_t, kBatch * kRecordSize> buf;
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    while (tail != head) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(head - tail, kBatch));
        for (size_t i = 0; i < n; ++i)
            encode(ring_[(tail + i) & mask_],
                   std::span<uint8_t, kRecordSize>(buf.data() + i * kRecordSize, kRecordSize));
        tail += n;
        tail_.store(tail, std::memory_order_release);  // the slots are free again
        write_bytes(buf.data(), n * kRecordSize);
    }
    if (!failed_ && std::fflush(file_) != 0)
        io_failed();
}

void Recorder::write_bytes(const uint8_t* p, size_t n) {
    if (!failed_ && std::fwrite(p, 1, n, file_) != n)
        io_failed();
}

void Recorder::io_failed() {
    failed_ = true;
    std::lock_guard lock(mu_);
    error_ = std::string("trace: write failed (") + std::strerror(errno) +
             "); the rest of this node's trace is lost";
}

}  // namespace peach2::trace
