// SPDX-License-Identifier: MIT
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
#pragma once

#include "dma_port.hpp"
#include "driver_buffer.hpp"
#include "rp_areas.hpp"
#include "rp_op.hpp"
#include "rp_pins.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace tca {

class RpState {
public:
	// Takes the first area's buffer (at least CplAreas::kBytes, mapped).
	RpState(DriverPort &port, std::unique_ptr<DriverBuffer> buffer)
		: port_(port), areas_(std::move(buffer))
	{
	}
	RpState(const RpState &) = delete;
	RpState &operator=(const RpState &) = delete;

	DriverPort &port() noexcept { return port_; }
	CplAreas &areas() noexcept { return areas_; }
	RpPins &pins() noexcept { return pins_; }

	// Pending requests (thread-safe). add: a new id (never 0, never
	// handed out before in this process).
	std::uint64_t add(std::shared_ptr<RpOp> op);
	std::shared_ptr<RpOp> find(std::uint64_t id);
	// Removes it from the table (nullptr if unknown).
	std::shared_ptr<RpOp> take(std::uint64_t id);
	bool known(std::uint64_t id);

private:
	DriverPort &port_;
	CplAreas areas_;
	RpPins pins_;
	std::mutex mutex_;
	std::unordered_map<std::uint64_t, std::shared_ptr<RpOp>> ops_;
};

} // namespace tca
