// SPDX-License-Identifier: MIT
// DMA in libtca: what dma.cpp (the C API, runs, tickets, chains) and
// dma_plan.cpp (checking and cutting a request into card descriptors, pure)
// share, and what the unit tests reach. A tcaDmaPut, in order: dma.cpp
// start() -> plan_xfers() resolves each side through the Context
// (context.cpp: this process's buffers, or another node's memory) ->
// plan_request() (dma_plan.cpp: the rules of peach2_dma_rules.h, one entry
// per descriptor) -> start_runs() (DMA_START, one run or several on one
// channel; start_cached() with dma_cache.cpp for a list that came before)
// -> collect_ticket() (DMA_WAIT). userlib/README.md ("DMA") says
// why each step is as it is.
#pragma once

#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>
#include <tca/tca.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <vector>

namespace tca {

// ---- options -------------------------------------------------------------------

inline constexpr std::uint32_t kDmaOptFlags = TCA_DMA_REG_MODE | TCA_DMA_HOST_DESC | TCA_DMA_WAIT;

// Options after checking: how the driver should run the runs.
struct DmaMode {
    std::uint32_t desc = 0;  // 0, PEACH2_DMA_REG_MODE or PEACH2_DMA_HOST_DESC
    std::uint32_t channel = PEACH2_DMA_ANY_CHANNEL;
    bool wait = false;
    int timeout_ms = 0;  // <= 0: no limit
};

// NULL means defaults. -EINVAL for undefined flags, REG_MODE with
// HOST_DESC, a channel beyond TCA_DMA_CHANNEL(3), nonzero reserved.
constexpr int dma_mode(const tcaDmaOpts* o, DmaMode* out) noexcept {
    DmaMode m;
    if (o) {
        if (o->flags & ~kDmaOptFlags || o->reserved)
            return -EINVAL;
        if ((o->flags & TCA_DMA_REG_MODE) && (o->flags & TCA_DMA_HOST_DESC))
            return -EINVAL;
        if (o->flags & TCA_DMA_REG_MODE)
            m.desc = PEACH2_DMA_REG_MODE;
        else if (o->flags & TCA_DMA_HOST_DESC)
            m.desc = PEACH2_DMA_HOST_DESC;
        if (o->channel > TCA_DMA_CHANNELS)
            return -EINVAL;
        if (o->channel != TCA_DMA_ANY_CHANNEL)
            m.channel = o->channel - 1;
        m.wait = o->flags & TCA_DMA_WAIT;
        m.timeout_ms = o->timeout_ms;
    }
    *out = m;
    return 0;
}

// tcaDmaXfer.stride bits as peach2_xfer.flags bits.
constexpr std::uint32_t xfer_stride_flags(std::uint32_t stride) noexcept {
    std::uint32_t f = 0;
    if (stride & TCA_DMA_STRIDE_SRC)
        f |= PEACH2_XFER_STRIDE_SRC;
    if (stride & TCA_DMA_STRIDE_DST)
        f |= PEACH2_XFER_STRIDE_DST;
    return f;
}

// ---- the rules (dma_plan.cpp) ----------------------------------------------------

// The PEACH2 DMA restrictions (docs/hardware.md §6; one definition in
// include/peach2/peach2_dma_rules.h), checked in the library before a
// request reaches the driver, so that a request of several runs fails before
// any of them has started. A violation has its own error code (TCA_EALIGN,
// TCA_ESTRIDE); so has a transfer the driver refuses (refusal_error).

// Contiguous piece: source and destination 4-byte aligned, equal low 4
// address bits, length a multiple of 4. 0 or TCA_EALIGN.
int check_alignment(std::uint64_t src_addr, std::uint64_t dst_addr, std::uint64_t len) noexcept;

// Bytes one side of a block-stride transfer spans from its first to its
// last byte: (ceil(len / burst) - 1) * (burst + gap) + the last block.
// False on overflow. Requires burst > 0 and len > 0.
bool stride_span(std::uint64_t len, std::uint32_t burst, std::uint32_t gap,
                 std::uint64_t* span) noexcept;

// Block-stride parameters (stride = TCA_DMA_STRIDE_* bits): burst > 0 with
// at least one side, burst and gap multiples of 4, a one-sided gap a
// multiple of 16 (every block must keep equal low 4 bits), burst == 0 only
// with no gap and no side; length within one descriptor. Fills the spans of
// both sides. 0, TCA_ESTRIDE, or -EINVAL for undefined stride bits.
int check_stride(std::uint64_t len, std::uint32_t stride, std::uint32_t burst, std::uint32_t gap,
                 std::uint64_t* src_span, std::uint64_t* dst_span) noexcept;

// A completion word: 4 or 8 bytes at an address that is a multiple of its
// size (so it never crosses a page, hence never a chunk). 0 or TCA_EALIGN.
int check_notify(std::uint64_t addr, std::uint32_t len) noexcept;

// A driver refusal (rc, -errno) in library terms, from the rule the driver
// named for the refused transfer (struct peach2_xfer_refusal): TCA_EALIGN,
// TCA_ESTRIDE, TCA_ERANGE; rc itself when it named none, or a rule with no
// library code of its own.
int refusal_error(int rc, const peach2_xfer_refusal& why) noexcept;

// ---- planning (dma_plan.cpp) ---------------------------------------------------

// Turns one tcaDmaXfer, with its memory already resolved, into the driver's
// peach2_xfer entries: one per card descriptor. The driver can split only
// at chunk boundaries of this process's buffers; a remote destination is
// just a global address to it, so the library must cut where the remote
// handle's physically contiguous pieces end. It also cuts at local chunk
// boundaries and at PEACH2_DMA_MAX_LEN, exactly as the driver would, so the
// count of entries is the count of descriptors (register mode needs that).
// Pure: unit-tested without a device.

// One side of a transfer: this process's buffer (driver handle, its chunks
// in buffer order) or another node's memory (a remote handle), and the byte
// offset within it.
struct DmaSide {
    std::uint32_t buffer = 0;          // driver handle; 0: remote
    std::span<const tcaChunk> pieces;  // local: driver chunks; remote: handle chunks
    std::uint64_t offset = 0;
};

// A resolved tcaDmaXfer.
struct DmaRequest {
    DmaSide src, dst;
    std::uint64_t len = 0;
    std::uint32_t stride = 0;
    std::uint32_t burst = 0, gap = 0;
    bool notify = false;
    DmaSide notify_at;
    std::uint64_t notify_value = 0;
    std::uint32_t notify_len = 8;
};

// Where byte `offset` of a run of pieces is, and how many bytes follow it in
// the same piece. False if offset is past the end.
bool piece_at(std::span<const tcaChunk> pieces, std::uint64_t offset, std::uint64_t* addr,
              std::uint64_t* room) noexcept;

// piece_at for a range walked forwards: found once, then moved along, so a
// range cut at each of its pieces costs one pass over them. (Malloc'ed
// memory a guest has used for a while is ~50 pieces per MiB; looking every
// cut up from the first piece made planning a MiB quadratic in them.)
class PieceWalk {
public:
    PieceWalk(std::span<const tcaChunk> pieces, std::uint64_t offset) noexcept
        : pieces_(pieces) {
        skip(offset);
    }
    // The address of the current byte and the bytes after it in its piece;
    // false (0, 0) past the end.
    bool at(std::uint64_t* addr, std::uint64_t* room) const noexcept {
        if (i_ == pieces_.size()) {
            *addr = *room = 0;
            return false;
        }
        *addr = pieces_[i_].global_addr + in_;
        *room = pieces_[i_].len - in_;
        return true;
    }
    void skip(std::uint64_t n) noexcept {
        in_ += n;
        while (i_ < pieces_.size() && in_ >= pieces_[i_].len)
            in_ -= pieces_[i_++].len;
    }

private:
    std::span<const tcaChunk> pieces_;
    std::size_t i_ = 0;
    std::uint64_t in_ = 0;  // bytes into pieces_[i_]
};

// What planning a list of requests learns about one side's pieces, kept
// from one request to the next: their total and where the last request on
// them ended. A list often goes along one buffer (an RDMA Write is a
// request per piece of its destination, all from one source): each request
// found from the first piece again made such a list quadratic in the pieces.
class SideMemo {
public:
    // The bytes of `pieces` in all.
    std::uint64_t total(std::span<const tcaChunk> pieces) noexcept;
    // A walk at `offset` of `pieces`: from the last request's end when it
    // goes on from there or later, else from the first piece.
    PieceWalk walk(std::span<const tcaChunk> pieces, std::uint64_t offset) const noexcept;
    // A request on `pieces` ended at `offset`, where `at` stands.
    void ended(std::span<const tcaChunk> pieces, std::uint64_t offset, const PieceWalk& at) noexcept;

private:
    bool same(std::span<const tcaChunk> pieces) const noexcept {
        return pieces.data() == pieces_.data() && pieces.size() == pieces_.size();
    }
    // Starts over (total known, no walk) when `pieces` are not the last ones.
    void remember(std::span<const tcaChunk> pieces) noexcept;
    std::span<const tcaChunk> pieces_;
    std::uint64_t total_ = 0;
    bool walked_ = false;  // end_ and at_ are known
    std::uint64_t end_ = 0;
    PieceWalk at_{{}, 0};
};

struct PlanMemo {
    SideMemo src, dst;
};

// Appends the entries of `r` to *out (nothing on error). Errors: TCA_ERANGE
// (a side leaves its memory), TCA_EALIGN, TCA_ESTRIDE, -EINVAL. `memo`
// (the same for every request of a list, or null) only saves work.
int plan_request(const DmaRequest& r, std::vector<peach2_xfer>* out, PlanMemo* memo = nullptr);

// ---- tcaPutAuto's choice (dma_plan.cpp) ----------------------------------------

// PIO or DMA. PIO costs CPU time per byte (every store is a device write)
// but starts at once; DMA costs a system call and the card's start-up, then
// moves data without the CPU. Below a threshold PIO wins; above it DMA does,
// where the hardware restrictions allow. Pure, unit-tested.

// How to cut a put: `head` and `tail` bytes by PIO around a `body` by DMA.
// body == 0 means all by PIO (head == len).
struct PutSplit {
    std::uint64_t head = 0, body = 0, tail = 0;
};

// src_dma: the source lies in a tcaMalloc buffer; src_addr, dst_addr: any
// addresses with the real low 4 bits of source and destination.
PutSplit choose_put(std::uint64_t len, bool src_dma, std::uint64_t src_addr, std::uint64_t dst_addr,
                    std::uint64_t pio_max) noexcept;

// TCA_PIO_MAX's value: bytes, decimal or 0x-hex, optional K or M suffix.
// Null, empty or malformed gives the default (TCA_PIO_MAX_DEFAULT).
std::uint64_t pio_max_from(const char* text) noexcept;

// ---- the driver ----------------------------------------------------------------

// The DMA code talks to the driver through this one call, so the run and
// ticket logic can be unit-tested against a scripted stand-in.

class DriverPort {
public:
    virtual ~DriverPort() = default;
    // ioctl(fd, req, arg): 0 or -errno.
    virtual int call(unsigned long req, void* arg) noexcept = 0;
};

// The real device.
class FdPort final : public DriverPort {
public:
    explicit FdPort(int fd) noexcept : fd_(fd) {}
    int call(unsigned long req, void* arg) noexcept override;

private:
    int fd_;  // borrowed from the Context
};

// A driver errno (negative) in library terms. Only codes with a meaning the
// caller can act on are renamed: -ENOSPC (descriptor RAM or budget) becomes
// TCA_ENODESC. Everything else stays -errno (table in userlib/README.md).
int driver_error(int rc) noexcept;

// ---- runs and tickets (dma.cpp) ------------------------------------------------

// A run is what the driver starts with one DMA_START: a one-shot list of
// transfer entries or a chain. Most requests are one run. Register mode
// takes one descriptor per run and the driver takes at most
// PEACH2_DMA_MAX_XFERS entries per run, so a larger request becomes several
// runs, all on one channel (which runs them in order). Their driver tickets
// must be consecutive for a tcaDmaTicket to name them all, so several-run
// starts exclude every other start for their duration (a shared lock).

struct DmaRun {
    std::span<const peach2_xfer> xfers;  // one-shot entries, or
    std::uint32_t chain = 0;             // a chain id (then xfers is empty)
};

// *runs: the runs for `xfers` (one entry per run in register mode, else
// slices of at most PEACH2_DMA_MAX_XFERS). Empty input: no runs.
void split_runs(std::span<const peach2_xfer> xfers, bool reg_mode, std::vector<DmaRun>* runs);

// What starting needs besides the runs: the device, the lock that keeps
// several-run starts' tickets consecutive, and the round-robin counter that
// picks their channel when the caller lets the driver choose.
struct DmaStarter {
    DriverPort& port;
    std::shared_mutex& order;
    std::atomic<unsigned>& next_channel;
};

// Starts `runs` with mode `m` (m.desc is ignored for chain runs) and, if
// m.wait, waits up to m.timeout_ms (never holding `order` while waiting).
// *t receives what is left to collect.
// If a later run of several fails to start, the earlier ones are waited for
// (they read the caller's memory) and the start error is returned.
// 0, TCA_EDMA, -ETIMEDOUT (with m.wait: *t still valid), or start errors.
int start_runs(DmaStarter& s, std::span<const DmaRun> runs, const DmaMode& m, tcaDmaTicket* t);

// Collecting a tcaDmaTicket: its runs have consecutive driver tickets and
// are waited for in order (they end in order: one channel, FIFO).
// Waits for the runs of *t one by one, recording progress in *t, until all
// have ended or timeout_ms (<= 0: no limit) passed; `poll` does not wait at
// all. 0, TCA_EDMA (a run ended with a card error: t->status), -ETIMEDOUT
// (some still running), or a driver error (-ENOENT: unknown ticket).
// Signals do not end the wait early.
int collect_ticket(DriverPort& port, tcaDmaTicket* t, int timeout_ms, bool poll);

// ---- chains and per-context state (dma.cpp) ------------------------------------

// The library's chains: a tcaChain id names one or more driver chains (more
// than one in register mode, where each holds one descriptor, or beyond
// PEACH2_DMA_MAX_XFERS entries). Caller holds the library mutex.
struct LibChain {
    std::vector<std::uint32_t> driver_ids;  // started in this order, on one channel
    std::uint32_t descriptors = 0;
};

class ChainTable {
public:
    // A new id (never 0, not in use) for `c`; 0 if the table is full.
    std::uint32_t add(LibChain c);
    // Copy of chain `id`; false if unknown.
    bool get(std::uint32_t id, LibChain* out) const;
    // Removes `id`; false if unknown.
    bool take(std::uint32_t id, LibChain* out);
    // Puts a taken chain back under its id.
    void put_back(std::uint32_t id, LibChain c) { chains_[id] = std::move(c); }

private:
    std::map<std::uint32_t, LibChain> chains_;
    std::uint32_t last_ = 0;
};

// ---- the start cache (dma_cache.cpp) -------------------------------------------

// A one-shot start makes the driver check every entry and write every
// descriptor again (for a MiB of scattered pages, ~0.6 us of guest time per
// page, twice the copy itself). Programs start the same list over and over:
// a benchmark's buffer, a stream of RDMA Writes from one MR, an MPI
// rendezvous of one array. The cache builds a list it sees a second time
// into a driver chain and starts that chain from then on: the driver only
// queues what it built before. Only lists of one run with host descriptors
// (on-card descriptor RAM is small and shared by every process).
//
// A chain holds references on the buffers it names, and buffer handles are
// reused (cyclically): forget() drops the chains of a buffer before the
// library frees it, so a start can never reach another buffer's pages.
// A chain runs once at a time; a start that finds it busy (driver: -EBUSY)
// goes one-shot. Thread-safe (its own mutex, taken after the library's).
class StartCache {
public:
    static constexpr std::size_t kChains = 16;  // chains kept
    static constexpr std::size_t kSeen = 32;    // lists seen once, remembered by hash
    // Longer lists go one-shot: a chain's descriptors count against the
    // file's budget in the driver (4 x 65 536), which the program's own
    // chains and runs share; kept chains take at most 16 x 1 024 of it
    // (a MiB of scattered pages is 256 entries).
    static constexpr std::size_t kMaxEntries = 1024;

    struct Stats {
        std::uint64_t hits = 0;     // starts of a cached chain
        std::uint64_t built = 0;    // chains created
        std::uint64_t busy = 0;     // acquired but busy: started one-shot
        std::uint64_t dropped = 0;  // chains destroyed (evicted or forgotten)
    };

    explicit StartCache(DriverPort& port) noexcept : port_(port) {}
    StartCache(const StartCache&) = delete;
    StartCache& operator=(const StartCache&) = delete;
    // No destructor work: the chains end with the file descriptor (an ioctl
    // after the Context closed it could reach a file opened since).

    // The chain to start for `entries` (held for this start: release() it
    // after), or 0: start them one-shot.
    std::uint32_t acquire(std::span<const peach2_xfer> entries);
    // The start of an acquired chain is over; `busy`: the driver refused it
    // because its last run has not ended.
    void release(std::uint32_t chain, bool busy);
    // Before driver buffer `handle` is freed: its chains go (at once, or
    // when their runs end).
    void forget(std::uint32_t handle);
    Stats stats() const;
    std::size_t size() const;  // chains kept, not counting dying ones

private:
    struct Entry {
        std::vector<peach2_xfer> key;
        std::uint64_t hash = 0;
        std::uint32_t chain = 0;
        unsigned users = 0;      // acquired, not yet released
        std::uint64_t used = 0;  // last acquired (for eviction)
    };
    bool names(const Entry& e, std::uint32_t handle) const noexcept;
    std::uint32_t build(std::span<const peach2_xfer> entries, std::uint64_t hash);
    std::vector<Entry>::iterator retire(std::vector<Entry>::iterator it);
    void destroy_idle();

    DriverPort& port_;
    mutable std::mutex mu_;
    std::vector<Entry> kept_;
    std::vector<Entry> dying_;  // to destroy once unused and idle
    std::array<std::uint64_t, kSeen> seen_{};
    std::size_t seen_next_ = 0;
    std::uint64_t clock_ = 0;
    Stats stats_;
};

// Starts one run of host-descriptor entries through `cache` (see above):
// as start_runs otherwise.
int start_cached(StartCache& cache, DmaStarter& s, const DmaRun& run, const DmaMode& m,
                 tcaDmaTicket* t);

// Per-context DMA state: the device port, the start-order lock, the channel
// counter for several-run starts, the chain table (library mutex) and the
// start cache.
class DmaState {
public:
    explicit DmaState(int fd) noexcept : port_(fd), cache_(port_) {}
    DmaState(const DmaState&) = delete;
    DmaState& operator=(const DmaState&) = delete;

    DriverPort& port() noexcept { return port_; }
    DmaStarter starter() noexcept { return DmaStarter{port_, order_, next_channel_}; }
    ChainTable& chains() noexcept { return chains_; }
    StartCache& cache() noexcept { return cache_; }

private:
    FdPort port_;
    std::shared_mutex order_;
    std::atomic<unsigned> next_channel_{0};
    ChainTable chains_;
    StartCache cache_;
};

// ---- resolving (dma.cpp) -------------------------------------------------------

// From the public tcaDmaXfer to the driver's entries: check the arguments,
// find the memory each side names (Context::local_side/handle_side), and
// plan the descriptors. Caller holds the library mutex (buffers must not
// change).
class Context;

// Appends the entries of every transfer, in order; on error *out is
// unchanged. Errors as tcaDmaStart (before anything starts).
int plan_xfers(const Context& c, std::span<const tcaDmaXfer> xfers, std::vector<peach2_xfer>* out);

// The last list a thread planned, kept to be started again without planning:
// a program repeats its transfers (a stream of RDMA Writes of one buffer is
// the same list every time), and planning costs per piece (~0.2 us of guest
// time under TCG: a Write from malloc'ed memory is 15-20 pieces). The same
// input plans to the same entries while the context is the same, no buffer
// or registration came or went (Context::generation()), and the handles the
// list names hold the same bytes (a handle is a value: the caller may
// rewrite it in place; equal bytes are valid again, as handle.cpp's cache
// says). Lists of more than kMaxXfers transfers are not kept. Pure.
class RepeatPlan {
public:
    static constexpr std::size_t kMaxXfers = 16;

    // Would planning `xfers` now, in `ctx` at `generation`, give entries()?
    bool holds(const Context* ctx, std::uint64_t generation,
               std::span<const tcaDmaXfer> xfers) const noexcept;
    // *entries is what planning `xfers` in `ctx` at `generation` gave: taken
    // over (swapped: *entries gets the storage of the plan kept before, to be
    // reused) and true, or, for a list too long to keep, left alone and false.
    bool keep(const Context* ctx, std::uint64_t generation, std::span<const tcaDmaXfer> xfers,
              std::vector<peach2_xfer>* entries);
    std::span<const peach2_xfer> entries() const noexcept { return entries_; }

private:
    const Context* ctx_ = nullptr;  // null: nothing kept
    std::uint64_t generation_ = 0;
    std::vector<tcaDmaXfer> xfers_;
    std::vector<tcaHandle> handles_;  // each non-null handle of xfers_, in order
    std::vector<peach2_xfer> entries_;
};

}  // namespace tca
