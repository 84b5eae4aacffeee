// SPDX-License-Identifier: MIT
// A driver buffer (PEACH2_IOC_ALLOC) and our mapping of it: a tcaMalloc
// buffer, or one the library uses itself (the completion records of the
// read proxy).
#pragma once

#include "mapping.hpp"

#include <tca/tca.h>

#include <peach2/peach2_uapi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tca {

// release() (or the destructor) unmaps it, then frees it in the driver.
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

// The driver's chunk list of a buffer as handle pieces covering exactly its
// first `size` bytes (TCA_EDEVICE if they are not contiguous in order).
int pieces_from(const std::vector<struct ::peach2_chunk> &raw, std::size_t size,
		std::vector<tcaChunk> *out);

} // namespace tca
