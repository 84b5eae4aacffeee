// SPDX-License-Identifier: MIT
// The open device: file descriptor, INFO answer, window and mailbox
// mappings, the tcaMalloc buffers and where their bytes are (for DMA and
// the read proxy: local_side, handle_side), their exports, and the DMA and
// read-proxy state. One instance lives in library.cpp; its methods assume
// the caller holds the library mutex, except the read-only accessors used
// by the lock-free PIO path.
#pragma once

#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>
#include <tca/tca.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "dma.hpp"
#include "driver_buffer.hpp"
#include "exchange.hpp"

namespace tca {

class RpState;

class Context {
public:
    ~Context();

    // Opens and maps the device at `path`; 0 or a negative code.
    static int open(const char* path, std::unique_ptr<Context>* out);

    const peach2_info& info() const noexcept { return info_; }
    std::uint32_t node_id() const noexcept { return info_.node_id; }
    std::uint32_t node_count() const noexcept { return info_.node_count; }
    volatile unsigned char* window() const noexcept {
        return static_cast<volatile unsigned char*>(window_.get());
    }
    std::uint64_t window_size() const noexcept { return window_.size(); }
    const volatile unsigned char* mailbox() const noexcept {
        return static_cast<const volatile unsigned char*>(mailbox_.get());
    }

    // tcaMalloc: a new_buffer made without the library mutex (the driver
    // may make the ALLOC wait seconds for the user's quarantined memory,
    // and the other threads of a Verbs program must go on meanwhile), then
    // adopted among the tcaMalloc buffers under it.
    int adopt(std::unique_ptr<DriverBuffer> buf, void** ptr);
    // Frees a tcaMalloc buffer; the driver ends its exports with it.
    // -EBUSY while a pending get (before its deadline) replies into it.
    int free(void* ptr);
    // A driver buffer of `size` bytes (mapped, zeroed, chunk list read; not
    // yet one of the tcaMalloc buffers). Touches no shared state: callable
    // without the library mutex. alloc_flags: PEACH2_ALLOC_*.
    int new_buffer(std::size_t size, std::unique_ptr<DriverBuffer>* out,
                   std::uint32_t alloc_flags = 0) const;
    int handle_for(const void* ptr, std::size_t size, tcaHandle* out) const noexcept;

    // DMA: where memory is, in the planner's terms.
    // [ptr, ptr + len) inside one buffer: TCA_ENOTBUF, TCA_ERANGE.
    int local_side(const void* ptr, std::uint64_t len, DmaSide* out) const noexcept;
    // Bytes [offset, offset + len) of a validated handle: this process's
    // buffer when h.node is this node (TCA_ENOTBUF if the handle does not
    // match one of them), else the remote memory itself (TCA_ENODE,
    // TCA_ERANGE).
    int handle_side(const tcaHandle& h, std::uint64_t offset, std::uint64_t len,
                    DmaSide* out) const noexcept;
    DmaState& dma() noexcept { return *dma_; }
    // Changes whenever a buffer or registration comes or goes and with every
    // new context (under the library mutex): what local_side and handle_side
    // answer, and so a DMA plan (RepeatPlan), holds while it stays the same.
    static std::uint64_t generation() noexcept {
        return generation_.load(std::memory_order_acquire);
    }

    // Read proxy. Export [ptr, ptr + size) of a buffer (size 0: to its
    // end) and describe it in *out.
    int export_range(const void* ptr, std::size_t size, std::uint32_t peach2_flags, tcaHandle* out);
    // Ends one of this process's exports: TCA_ENOTEXPORTED if unknown.
    int unexport(std::uint32_t export_id, std::uint32_t key);
    // The completion areas and request registry, created on first use; a
    // fresh area is added when the current one has too many retired slots.
    int rp(RpState** out);
    // The same without the library mutex: nullptr before the first use.
    RpState* rp_if_ready() const noexcept { return rp_fast_.load(std::memory_order_acquire); }

    // Registered memory (names.cpp): pin_memory pins [ptr, ptr + size) of
    // this process's memory as a driver buffer, without the library mutex
    // (the driver may make it wait seconds for the user's quarantined
    // memory, and the other threads of a Verbs program must go on
    // acknowledging their peers meanwhile); register_pinned then takes the
    // buffer over, under the mutex. deregister_memory ends a registration.
    int pin_memory(void* ptr, std::size_t size, peach2_pin* out) const;
    int register_pinned(const peach2_pin& p, std::size_t size);
    int deregister_memory(void* ptr, std::size_t size);

    // Names (names.cpp).
    int publish(const void* ptr, std::size_t size, peach2_publish* req);
    int unpublish(std::uint32_t kind, std::uint32_t name);
    // The buffer lookup answers land in (created on first use).
    int lookup_buffer(DriverBuffer** out);
    // After a try of a lookup given up unanswered: its answer may still
    // come, into this buffer, so the next try gets a fresh one. Like a
    // retired completion slot (rp.hpp), the old buffer stays until
    // tcaFinalize: a late answer lands in memory nobody reads, never in
    // pages the kernel gave to someone else. A lookup that times out
    // retires at most 8 of them (4 KiB each: tries of 100 ms, doubling,
    // within the 10 s request timeout).
    void retire_lookup_buffer();

    // Per-peer exchange bookkeeping (see exchange.hpp, the handshake).
    PeerHistory& history(std::uint32_t peer) { return history_.at(peer); }
    bool& exchange_busy(std::uint32_t peer) { return busy_.at(peer); }

private:
    Context() = default;

    // The tcaMalloc buffer of this process that holds byte `ptr`.
    struct Located {
        std::uintptr_t base;  // its address (buffers_ key)
        const DriverBuffer* buf;
        std::uint64_t offset;  // of ptr inside it
    };
    // 0, or TCA_ENOTBUF when ptr is in none of them. A tcaMalloc buffer
    // that holds ptr wins; else a registration that holds [ptr, ptr + len).
    int locate(const void* ptr, std::uint64_t len, Located* out) const noexcept;

    static void changed() noexcept { generation_.fetch_add(1, std::memory_order_acq_rel); }
    static inline std::atomic<std::uint64_t> generation_{1};

    UniqueFd fd_;  // declared first: closed last
    peach2_info info_{};
    Mapping window_;
    Mapping mailbox_;
    std::map<std::uintptr_t, std::unique_ptr<DriverBuffer>> buffers_;  // by address
    // Every chunk of every buffer by global address, to find the buffer a
    // local handle describes.
    struct ChunkRef {
        const DriverBuffer* buf;
        std::uint64_t offset;  // in the buffer
        std::uint64_t len;
    };
    std::map<std::uint64_t, ChunkRef> by_global_;
    // Registrations (tcaRegister), by the address of their first page; they
    // may overlap. No by_global_ entries: on this node they are named by
    // pointer.
    std::multimap<std::uintptr_t, std::unique_ptr<DriverBuffer>> registered_;
    std::unique_ptr<DriverBuffer> lookup_buf_;
    std::vector<std::unique_ptr<DriverBuffer>> retired_lookup_bufs_;
    std::unique_ptr<DmaState> dma_;
    struct ExportRef {
        const DriverBuffer* buf;  // a tcaMalloc buffer or a registration
        std::uint32_t key;
    };
    std::map<std::uint32_t, ExportRef> exports_;  // by export id
    // This process's names (tcaPublish) by (kind, name), with the buffer or
    // registration each lives on: of several registrations of the same
    // pages, tcaDeregister ends one whose names are all gone (names.cpp).
    std::map<std::pair<std::uint32_t, std::uint32_t>, const DriverBuffer*> names_;
    // Buffers and registrations that have carried a name or an export.
    std::set<const DriverBuffer*> named_;
    // Does b carry a name or an export of ours? Forget those of b (its
    // release ends them in the driver).
    bool carries_names(const DriverBuffer* b) const noexcept;
    void forget_names(const DriverBuffer* b) noexcept;
    // Frees a tcaMalloc buffer or ends a registration in the driver, after
    // forgetting its names and the start cache's chains of it (a reused
    // handle must not start old chains); the caller drops it from its map.
    int release_buffer(DriverBuffer& b);
    std::unique_ptr<RpState> rp_;  // after fd_: released before the close
    std::atomic<RpState*> rp_fast_{nullptr};
    std::array<PeerHistory, PEACH2_MAX_NODES> history_{};
    std::array<bool, PEACH2_MAX_NODES> busy_{};
};

}  // namespace tca
