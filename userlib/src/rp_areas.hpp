// SPDX-License-Identifier: MIT
// The completion areas of the read proxy: one CplArea per driver buffer.
// New slots come from the newest ("current") area only. Retired slots are
// never reused, so when the current area has many of them (half its
// slots), or none free but some retired, the context adds a fresh area
// (under the library mutex, on the next request). Older areas are never
// taken from again but stay mapped and allocated until the state is
// destroyed (tcaFinalize): pieces still in flight, and late answers to
// retired slots, write into them.
#pragma once

#include "driver_buffer.hpp"
#include "rp_slots.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace tca {

// A slot of one of the areas.
struct SlotRef {
	CplArea *area = nullptr;
	std::uint32_t slot = 0;
};

class CplAreas {
public:
	static constexpr std::uint32_t kSlots = 4096; // per area
	static constexpr std::uint64_t kBytes = std::uint64_t{kSlots} * CplArea::kRecord;

	// The first area (a buffer of at least kBytes, mapped).
	explicit CplAreas(std::unique_ptr<DriverBuffer> buffer) { add(std::move(buffer)); }
	CplAreas(const CplAreas &) = delete;
	CplAreas &operator=(const CplAreas &) = delete;

	// A free slot of the current area; false when it has none.
	bool take(SlotRef *out);
	// Should a fresh area replace the current one?
	bool wants_fresh();
	// Makes `buffer` (kBytes, mapped) the current area.
	void add(std::unique_ptr<DriverBuffer> buffer);

	CplArea &current();
	std::size_t count();

private:
	struct Owned {
		std::unique_ptr<DriverBuffer> buffer;
		CplArea area;
	};
	std::mutex mutex_;
	std::vector<std::unique_ptr<Owned>> areas_; // never shrinks
};

} // namespace tca
