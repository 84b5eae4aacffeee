// SPDX-License-Identifier: MIT
// The open device: file descriptor, INFO answer, window and mailbox
// mappings, and the tcaMalloc buffers. One instance lives in library.cpp;
// its methods assume the caller holds the library mutex, except the
// read-only accessors used by the lock-free PIO path.
#pragma once

#include "dma_plan.hpp"
#include "dma_state.hpp"
#include "handshake.hpp"
#include "mapping.hpp"
#include "unique_fd.hpp"

#include <tca/tca.h>

#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace tca {

// A driver buffer and our mapping of it. release() (or the destructor)
// unmaps it, then frees it in the driver.
class DriverBuffer {
public:
	DriverBuffer(int fd, std::uint32_t handle) noexcept : fd_(fd), handle_(handle) {}
	DriverBuffer(const DriverBuffer &) = delete;
	DriverBuffer &operator=(const DriverBuffer &) = delete;
	~DriverBuffer() { release(); }

	// 0 or -errno from the driver's FREE; idempotent.
	int release() noexcept;
	// The driver's name for the buffer (DMA requests use it); 0 once freed.
	std::uint32_t id() const noexcept { return handle_; }

	std::size_t size = 0;             // bytes the caller asked for
	Mapping map;                      // our read/write view
	std::vector<tcaChunk> pieces;     // physically contiguous pieces, in order

private:
	int fd_;                          // borrowed from the Context
	std::uint32_t handle_;            // driver's name for the buffer; 0 = freed
};

class Context {
public:
	// Opens and maps the device at `path`; 0 or a negative code.
	static int open(const char *path, std::unique_ptr<Context> *out);

	const peach2_info &info() const noexcept { return info_; }
	std::uint32_t node_id() const noexcept { return info_.node_id; }
	std::uint32_t node_count() const noexcept { return info_.node_count; }
	volatile unsigned char *window() const noexcept
	{
		return static_cast<volatile unsigned char *>(window_.get());
	}
	std::uint64_t window_size() const noexcept { return window_.size(); }
	const volatile unsigned char *mailbox() const noexcept
	{
		return static_cast<const volatile unsigned char *>(mailbox_.get());
	}

	int alloc(std::size_t size, void **ptr);
	int free(void *ptr);
	int handle_for(const void *ptr, std::size_t size, tcaHandle *out) const noexcept;

	// DMA: where memory is, in the planner's terms (context_dma.cpp).
	// [ptr, ptr + len) inside one buffer: TCA_ENOTBUF, TCA_ERANGE.
	int local_side(const void *ptr, std::uint64_t len, DmaSide *out) const noexcept;
	// Bytes [offset, offset + len) of a validated handle: this process's
	// buffer when h.node is this node (TCA_ENOTBUF if the handle does not
	// match one of them), else the remote memory itself (TCA_ENODE,
	// TCA_ERANGE).
	int handle_side(const tcaHandle &h, std::uint64_t offset, std::uint64_t len,
			DmaSide *out) const noexcept;
	DmaState &dma() noexcept { return *dma_; }

	// Per-peer exchange bookkeeping (see handshake.hpp).
	PeerHistory &history(std::uint32_t peer) { return history_.at(peer); }
	bool &exchange_busy(std::uint32_t peer) { return busy_.at(peer); }

private:
	Context() = default;

	UniqueFd fd_;                     // declared first: closed last
	peach2_info info_{};
	Mapping window_;
	Mapping mailbox_;
	std::map<std::uintptr_t, std::unique_ptr<DriverBuffer>> buffers_; // by address
	// Every chunk of every buffer by global address, to find the buffer a
	// local handle describes.
	struct ChunkRef {
		const DriverBuffer *buf;
		std::uint64_t offset; // in the buffer
		std::uint64_t len;
	};
	std::map<std::uint64_t, ChunkRef> by_global_;
	std::unique_ptr<DmaState> dma_;
	std::array<PeerHistory, PEACH2_MAX_NODES> history_{};
	std::array<bool, PEACH2_MAX_NODES> busy_{};
};

} // namespace tca
