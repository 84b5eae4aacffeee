// SPDX-License-Identifier: MIT
// The read proxy in libtca (one-sided get, CAS, FAA on memory another
// process exported): what rp.cpp (the C API, requests in flight, waiting),
// rp_plan.cpp (cutting a get into requests, pure) and rp_memory.cpp (the
// completion records the answers land in, and the pins that keep a get's
// destination from being freed) share, and what the unit tests reach. A
// tcaGet, in order: rp.cpp prepare_get() -> rp_target(), plan_get()
// (rp_plan.cpp) with this process's destination from the Context
// (context.cpp) and a pin -> RpOp::start() (a PEACH2_IOC_RP_SUBMIT per
// piece, each with a completion slot from CplAreas) -> wait_op() polling the
// slots' tags. Exports (tcaExport) are the Context's (context.cpp).
// userlib/README.md ("Read proxy") says why each step is as it is.
#pragma once

#include <peach2/peach2_hw.h>
#include <tca/tca.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "dma.hpp"
#include "driver_buffer.hpp"

namespace tca {

// ---- planning (rp_plan.cpp) ----------------------------------------------------

// Read proxy requests from the public arguments: which node and export a
// handle names, and how a get is cut into requests. Pure functions of
// their arguments (no device), unit-tested.
//
// A get lands in this process's memory, which the driver names by buffer
// and offset; each request's reply may span up to PEACH2_RP_MAX_PIECES
// chunks of it (the driver lists their physically contiguous runs for the
// target) and be at most PEACH2_RP_MAX_LEN bytes, so the library cuts
// there. The target's driver follows its own buffer across its chunks, so
// remote chunk boundaries need no cut; but each request's `addr` (the
// target's host bus address of its first byte) comes from the handle's
// chunk list at that request's offset.

// Where a request goes: the export the handle names on its node.
struct RpTarget {
    std::uint32_t node = 0;
    std::uint32_t export_id = 0;
    std::uint32_t key = 0;
    std::uint32_t op = 0;  // enum peach2_rp_op
    std::uint64_t operand[2] = {0, 0};
};

// One request of a get: `len` bytes at target address `addr` into byte
// `reply_offset` of the local buffer.
struct RpPiece {
    std::uint64_t addr = 0;
    std::uint64_t reply_offset = 0;
    std::uint32_t len = 0;
};

// The handle's node and export (validated handle): TCA_ENOTEXPORTED without
// an export, TCA_ENODE for a node not below node_count.
int rp_target(const tcaHandle& h, std::uint32_t node_count, std::uint32_t op,
              RpTarget* out) noexcept;

// Cuts a get of [src_offset, src_offset + len) of a validated handle into
// `dst` (this process's buffer: its pieces and the offset of the first
// byte; the caller checked that dst holds len bytes). Errors: TCA_ERANGE
// (leaves the handle), TCA_EALIGN (len % 4, or low 4 address bits of a
// request's two ends differ). len == 0: no pieces.
int plan_get(const DmaSide& dst, const tcaHandle& src, std::uint64_t src_offset, std::uint64_t len,
             std::vector<RpPiece>* out);
// The same over validated handles that describe consecutive bytes of one
// export, in order (tcaGetSpanNB): src_offset and the requests run across
// their ends.
int plan_get(const DmaSide& dst, std::span<const tcaHandle* const> srcs,
             std::uint64_t src_offset, std::uint64_t len, std::vector<RpPiece>* out);

// The target address of the 8-byte word at `offset` of a validated handle:
// TCA_ERANGE, or TCA_EALIGN unless 8-byte aligned.
int plan_atomic(const tcaHandle& h, std::uint64_t offset, std::uint64_t* addr) noexcept;

// ---- completion records (rp_memory.cpp) ----------------------------------------

// Completion records of the read proxy: an array of 32-byte slots in one
// driver buffer of this process (the target's driver DMA-writes a struct
// peach2_rp_cpl into a slot; its tag last). Each request in flight owns one
// slot. A slot whose request was given up (timeout, cancel) is retired, not
// freed: the late answer could still arrive and must not be taken for the
// answer to a later request. A pool with many retired slots is replaced by
// a fresh area (CplAreas, below); the old one stays until tcaFinalize.

// Which slots are free. Thread-safe.
class SlotPool {
public:
    explicit SlotPool(std::uint32_t count);
    SlotPool(const SlotPool&) = delete;
    SlotPool& operator=(const SlotPool&) = delete;

    // A free slot; false when none is.
    bool take(std::uint32_t* slot);
    // Back to the free list (its request has been answered, or never sent).
    void give(std::uint32_t slot);
    // Never to be used again.
    void retire(std::uint32_t slot);

    std::uint32_t count() const noexcept { return count_; }
    // Without the lock (every request asks): a moment's values.
    std::uint32_t free_count() const noexcept { return free_count_.load(std::memory_order_relaxed); }
    std::uint32_t retired_count() const noexcept {
        return retired_.load(std::memory_order_relaxed);
    }

private:
    const std::uint32_t count_;
    std::mutex mutex_;
    std::vector<std::uint32_t> free_;  // a stack: the most recently used slot first
    std::atomic<std::uint32_t> free_count_{0};  // free_.size(), changed under mutex_
    std::atomic<std::uint32_t> retired_{0};
};

// The records: memory (`base`, 32-byte aligned) and the driver's name for
// it (buffer `buffer`, slot i at byte offset `first + 32 i`).
class CplArea {
public:
    static constexpr std::uint32_t kRecord = sizeof(peach2_rp_cpl);

    CplArea(void* base, std::uint32_t buffer, std::uint64_t first, std::uint32_t count)
        : base_(static_cast<unsigned char*>(base)), buffer_(buffer), first_(first), slots_(count) {}

    SlotPool& slots() noexcept { return slots_; }
    std::uint32_t buffer() const noexcept { return buffer_; }
    std::uint64_t offset_of(std::uint32_t slot) const noexcept {
        return first_ + std::uint64_t{kRecord} * slot;
    }

    // The tag of a slot (acquire: the rest of the record is read after it).
    std::uint64_t tag(std::uint32_t slot) const noexcept {
        // The slot is 32-byte aligned in a mapping: the tag is 8-aligned.
        std::uint64_t& t = *reinterpret_cast<std::uint64_t*>(base_ + kRecord * slot + 24);
        return std::atomic_ref<std::uint64_t>(t).load(std::memory_order_acquire);
    }
    // The record, read after tag() matched.
    peach2_rp_cpl read(std::uint32_t slot) const noexcept;

private:
    const unsigned char* record(std::uint32_t slot) const noexcept {
        return base_ + kRecord * slot;
    }

    unsigned char* base_;
    std::uint32_t buffer_;
    std::uint64_t first_;
    SlotPool slots_;
};

// ---- completion areas (rp_memory.cpp) ------------------------------------------

// The completion areas of the read proxy: one CplArea per driver buffer.
// New slots come from the newest ("current") area only. Retired slots are
// never reused, so when the current area has many of them (half its
// slots), or none free but some retired, the context adds a fresh area
// (under the library mutex, on the next request). Older areas are never
// taken from again but stay mapped and allocated until the state is
// destroyed (tcaFinalize): pieces still in flight, and late answers to
// retired slots, write into them.

// A slot of one of the areas.
struct SlotRef {
    CplArea* area = nullptr;
    std::uint32_t slot = 0;
};

class CplAreas {
public:
    static constexpr std::uint32_t kSlots = 4096;  // per area
    static constexpr std::uint64_t kBytes = std::uint64_t{kSlots} * CplArea::kRecord;

    // The first area (a buffer of at least kBytes, mapped).
    explicit CplAreas(std::unique_ptr<DriverBuffer> buffer) { add(std::move(buffer)); }
    CplAreas(const CplAreas&) = delete;
    CplAreas& operator=(const CplAreas&) = delete;

    // A free slot of the current area; false when it has none.
    bool take(SlotRef* out);
    // Should a fresh area replace the current one?
    bool wants_fresh();
    // Makes `buffer` (kBytes, mapped) the current area.
    void add(std::unique_ptr<DriverBuffer> buffer);

    CplArea& current() noexcept { return *current_.load(std::memory_order_acquire); }
    std::size_t count();

private:
    struct Owned {
        std::unique_ptr<DriverBuffer> buffer;
        CplArea area;
    };
    std::mutex mutex_;
    std::vector<std::unique_ptr<Owned>> areas_;  // never shrinks
    std::atomic<CplArea*> current_{nullptr};      // areas_.back(), read without the lock
};

// ---- pinned get destinations (rp_memory.cpp) -----------------------------------

// Which tcaMalloc buffers pending gets of this process reply into, so that
// tcaFree can refuse (-EBUSY) to free one while an answer may still be on
// its way. A get pins its destination buffer from planning (under the
// library mutex) until it ends; a pin whose request's deadline has passed
// no longer counts (the request is given up, only its late answer could
// still come: tcaFree's documentation says so).

class RpPins;

// One pin; released by its destructor or release(). Movable.
class RpPin {
public:
    RpPin() = default;
    RpPin(RpPin&& o) noexcept : pins_(o.pins_), id_(o.id_) { o.pins_ = nullptr; }
    RpPin& operator=(RpPin&& o) noexcept;
    RpPin(const RpPin&) = delete;
    RpPin& operator=(const RpPin&) = delete;
    ~RpPin() { release(); }

    void release() noexcept;
    // Sets the deadline after which the pin no longer counts.
    void set_deadline(std::uint64_t deadline_ns) noexcept;

private:
    friend class RpPins;
    RpPin(RpPins* pins, std::uint64_t id) noexcept : pins_(pins), id_(id) {}

    RpPins* pins_ = nullptr;
    std::uint64_t id_ = 0;
};

// Thread-safe. A flat list: it holds one entry per pending get (one for a
// blocking get), and a pin and its release cost no allocation, which a
// tree's node did (~0.1 us of a get under TCG).
class RpPins {
public:
    // Pins driver buffer `buffer` (without a deadline until set).
    RpPin pin(std::uint32_t buffer);
    // Is `buffer` pinned by a request whose deadline is after now_ns?
    bool busy(std::uint32_t buffer, std::uint64_t now_ns);

private:
    friend class RpPin;
    struct Entry {
        std::uint64_t id;
        std::uint32_t buffer;
        std::uint64_t deadline_ns;  // CLOCK_MONOTONIC
    };
    // The entry of pin `id` (the caller holds mutex_); nullptr if none.
    Entry* find(std::uint64_t id) noexcept;

    std::mutex mutex_;
    std::vector<Entry> pins_;
    std::uint64_t next_id_ = 0;
};

// ---- one request in flight (rp.cpp) --------------------------------------------

// One library request (a get, CAS or FAA) in flight: its pieces, each one
// PEACH2_IOC_RP_SUBMIT with its own completion slot, and the progress
// function that tcaTest/tcaWait drive. No thread of its own: nothing moves
// unless the owner polls.
//
// A piece is answered when its slot's tag equals the tag the driver gave
// at submission. Status RP_FULL (the target's queue was full) resubmits the
// piece after a backoff (20 µs doubling to 2 ms) in the same slot; so does
// an RP_SUBMIT that returned -EAGAIN (the link's send queue was full:
// nothing was sent). Such a piece keeps its slot and counts as pending, and
// no new piece of the request goes out before its backoff ends.
// Any other error ends the request once the pieces already sent have
// answered (no new ones are sent); -EFAULT from RP_SUBMIT (the request may
// have gone out, only its tag was lost) retires the piece's slot. At most
// kWindow pieces are in flight per request; the rest go out as earlier ones
// complete. At the deadline every piece still in flight has its slot
// retired (one waiting to be resent gives it back) and the request ends
// with -ETIMEDOUT.
//
// One thread at a time may poll a request: claim() guards tcaTest, tcaWait
// and tcaCancel of a parked request against a concurrent second caller.

// How a request ended (tcaRequest's fields).
struct RpOutcome {
    int result = 0;
    std::uint32_t status = 0;   // first failing piece's card/driver code
    std::uint64_t value = 0;    // CAS/FAA: old value
    std::uint64_t bytes = 0;    // READ: bytes delivered
    std::uint32_t retries = 0;  // resubmissions (RP_FULL, RP_SUBMIT -EAGAIN)
    std::uint32_t pieces = 0;
};

class RpOp {
public:
    static constexpr std::uint32_t kWindow = 256;
    static constexpr std::uint64_t kFirstBackoffNs = 20000;
    static constexpr std::uint64_t kMaxBackoffNs = 2000000;

    // reply_buffer: the driver's name of the buffer the READ pieces' data
    // lands in (0 for atomics), pinned by `pin` until the request ends.
    // deadline_ns: CLOCK_MONOTONIC.
    RpOp(DriverPort& port, CplAreas& areas, const RpTarget& t, std::uint32_t reply_buffer,
         std::span<const RpPiece> pieces, std::uint64_t deadline_ns, RpPin pin);
    RpOp(const RpOp&) = delete;
    RpOp& operator=(const RpOp&) = delete;
    // A request destroyed while pending is cancelled.
    ~RpOp() { cancel(); }

    // Submits the first pieces: 1 (pending) or the final code. With no
    // slot free at all and nothing sent: -EAGAIN.
    int start(std::uint64_t now_ns);
    // Checks the completions, resubmits, sends more: 1 or the final code.
    int poll(std::uint64_t now_ns);
    // Ends a pending request with -ECANCELED; slots of pieces in flight are
    // retired.
    void cancel();

    bool pending() const noexcept { return !ended_; }
    // Did any piece reach the driver?
    bool sent_any() const noexcept { return sent_any_; }
    const RpOutcome& outcome() const noexcept { return out_; }
    std::uint64_t deadline() const noexcept { return deadline_ns_; }

    // Exclusive right to poll or cancel: false if another thread has it.
    bool claim() noexcept { return !busy_.exchange(true, std::memory_order_acquire); }
    void unclaim() noexcept { busy_.store(false, std::memory_order_release); }

private:
    enum class State : std::uint8_t { Unsent, InFlight, Backoff, Done };
    struct Piece {
        RpPiece p;
        State state = State::Unsent;
        SlotRef slot;
        std::uint64_t tag = 0;
        std::uint64_t resend_ns = 0;   // Backoff: when
        std::uint64_t backoff_ns = 0;  // the next backoff
    };

    enum class Sent : std::uint8_t { Yes, Retry, Failed };
    // One RP_SUBMIT for a piece (in its slot). Retry: -EAGAIN, the piece
    // waits in Backoff. Failed: the request fails, the piece is Done and its
    // slot given back (or retired after -EFAULT).
    Sent submit(Piece& pc, std::uint64_t now_ns);
    void back_off(Piece& pc, std::uint64_t now_ns);
    // The answer in a piece's slot.
    void answered(Piece& pc, std::uint64_t now_ns);
    void fail(int rc, std::uint32_t status);
    void send_more(std::uint64_t now_ns);
    int finish_if_done();
    // Ends the request with rc: slots in flight retired, the others freed.
    void abandon(int rc);
    void end(int rc);

    DriverPort& port_;
    CplAreas& areas_;
    RpTarget target_;
    std::uint32_t reply_buffer_;
    // Most requests are one piece: it lives in one_ (no allocation; the
    // request never moves), more in many_.
    Piece one_;
    std::vector<Piece> many_;
    std::span<Piece> pieces_;
    std::uint64_t deadline_ns_;
    std::size_t next_unsent_ = 0;
    std::uint32_t in_flight_ = 0;     // InFlight or Backoff (holding a slot)
    std::uint64_t link_free_ns_ = 0;  // after RP_SUBMIT -EAGAIN: no new piece before
    int error_ = 0;                   // first error; no new pieces after it
    bool ended_ = false;
    bool sent_any_ = false;
    RpOutcome out_;
    RpPin pin_;
    std::atomic<bool> busy_{false};
};

// ---- waiting (rp.cpp) ----------------------------------------------------------

// Waiting for a read-proxy request: poll it, spinning briefly (an answer
// from a neighbour takes microseconds on real hardware), then yielding the
// CPU (a get from this node itself needs the driver's interrupt thread to
// run here), then sleeping in short steps. And the request timeout.

std::uint64_t monotonic_ns() noexcept;

// The request timeout: $TCA_RP_TIMEOUT_MS (read once; a positive decimal
// number) or 10000.
std::uint64_t rp_timeout_ms() noexcept;

// Polls `op` until it ends or `limit_ns` (CLOCK_MONOTONIC; 0: none) passes:
// its outcome, or 1 if still pending at the limit.
int wait_op(RpOp& op, std::uint64_t limit_ns);

// ---- per-context state (rp.cpp) ------------------------------------------------

// The read proxy's per-context state: the completion areas (driver buffers
// of 32-byte slots, the first allocated on first use), the pins of get
// destinations, and the table of pending non-blocking requests, which
// tcaRequest.id names.
//
// Request ids come from one process-wide counter that never restarts (not
// after tcaFinalize/tcaInit either), so a stale tcaRequest never names
// another request. The table hands out shared ownership: a request found by
// one thread stays alive while another removes it; RpOp::claim() keeps two
// threads from polling it at once.

class RpState {
public:
    // Takes the first area's buffer (at least CplAreas::kBytes, mapped).
    RpState(DriverPort& port, std::unique_ptr<DriverBuffer> buffer)
        : port_(port), areas_(std::move(buffer)) {}
    RpState(const RpState&) = delete;
    RpState& operator=(const RpState&) = delete;

    DriverPort& port() noexcept { return port_; }
    CplAreas& areas() noexcept { return areas_; }
    RpPins& pins() noexcept { return pins_; }

    // Pending requests (thread-safe). add: a new id (never 0, never
    // handed out before in this process).
    std::uint64_t add(std::shared_ptr<RpOp> op);
    std::shared_ptr<RpOp> find(std::uint64_t id);
    // Removes it from the table (nullptr if unknown).
    std::shared_ptr<RpOp> take(std::uint64_t id);

private:
    DriverPort& port_;
    CplAreas areas_;
    RpPins pins_;
    std::mutex mutex_;
    std::unordered_map<std::uint64_t, std::shared_ptr<RpOp>> ops_;
};

}  // namespace tca
