// SPDX-License-Identifier: MIT
// Which tcaMalloc buffers pending gets of this process reply into, so that
// tcaFree can refuse (-EBUSY) to free one while an answer may still be on
// its way. A get pins its destination buffer from planning (under the
// library mutex) until it ends; a pin whose request's deadline has passed
// no longer counts (the request is given up, only its late answer could
// still come: tcaFree's documentation says so).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

namespace tca {

class RpPins;

// One pin; released by its destructor or release(). Movable.
class RpPin {
public:
	RpPin() = default;
	RpPin(RpPin &&o) noexcept : pins_(o.pins_), it_(o.it_) { o.pins_ = nullptr; }
	RpPin &operator=(RpPin &&o) noexcept;
	RpPin(const RpPin &) = delete;
	RpPin &operator=(const RpPin &) = delete;
	~RpPin() { release(); }

	void release() noexcept;
	// Sets the deadline after which the pin no longer counts.
	void set_deadline(std::uint64_t deadline_ns) noexcept;

private:
	friend class RpPins;
	using Map = std::multimap<std::uint32_t, std::uint64_t>;
	RpPin(RpPins *pins, Map::iterator it) noexcept : pins_(pins), it_(it) {}

	RpPins *pins_ = nullptr;
	Map::iterator it_{};
};

// Thread-safe.
class RpPins {
public:
	// Pins driver buffer `buffer` (without a deadline until set).
	RpPin pin(std::uint32_t buffer);
	// Is `buffer` pinned by a request whose deadline is after now_ns?
	bool busy(std::uint32_t buffer, std::uint64_t now_ns);

private:
	friend class RpPin;
	std::mutex mutex_;
	RpPin::Map map_; // buffer -> deadline (CLOCK_MONOTONIC ns)
};

} // namespace tca
