// SPDX-License-Identifier: MIT
// The read proxy's per-context state: the completion records (one driver
// buffer of kSlots 32-byte slots, allocated on first use) and the table of
// pending non-blocking requests, which tcaRequest.id names.
#pragma once

#include "driver_buffer.hpp"
#include "dma_port.hpp"
#include "rp_op.hpp"
#include "rp_slots.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace tca {

class RpState {
public:
	static constexpr std::uint32_t kSlots = 4096;

	// Takes the buffer (at least kSlots * 32 bytes, mapped).
	RpState(DriverPort &port, std::unique_ptr<DriverBuffer> buffer);
	RpState(const RpState &) = delete;
	RpState &operator=(const RpState &) = delete;

	DriverPort &port() noexcept { return port_; }
	CplArea &area() noexcept { return area_; }

	// Pending requests (thread-safe). add: the id (never 0).
	std::uint64_t add(std::unique_ptr<RpOp> op);
	RpOp *find(std::uint64_t id);
	std::unique_ptr<RpOp> take(std::uint64_t id);

private:
	DriverPort &port_;
	std::unique_ptr<DriverBuffer> buffer_;
	CplArea area_;
	std::mutex mutex_;
	std::unordered_map<std::uint64_t, std::unique_ptr<RpOp>> ops_;
	std::uint64_t last_id_ = 0;
};

} // namespace tca
