// SPDX-License-Identifier: MIT
// Completion records of the read proxy: an array of 32-byte slots in one
// driver buffer of this process (the target's driver DMA-writes a struct
// peach2_rp_cpl into a slot; its tag last). Each request in flight owns one
// slot. A slot whose request was given up (timeout, cancel) is retired, not
// freed: the late answer could still arrive and must not be taken for the
// answer to a later request. A pool with many retired slots is replaced by
// a fresh area (rp_areas.hpp); the old one stays until tcaFinalize.
#pragma once

#include <peach2/peach2_hw.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace tca {

// Which slots are free. Thread-safe.
class SlotPool {
public:
	explicit SlotPool(std::uint32_t count);
	SlotPool(const SlotPool &) = delete;
	SlotPool &operator=(const SlotPool &) = delete;

	// A free slot; false when none is.
	bool take(std::uint32_t *slot);
	// Back to the free list (its request has been answered, or never sent).
	void give(std::uint32_t slot);
	// Never to be used again.
	void retire(std::uint32_t slot);

	std::uint32_t count() const noexcept { return count_; }
	std::uint32_t free_count();
	std::uint32_t retired_count();

private:
	const std::uint32_t count_;
	std::mutex mutex_;
	std::vector<std::uint32_t> free_; // a stack: the most recently used slot first
	std::uint32_t retired_ = 0;
};

// The records: memory (`base`, 32-byte aligned) and the driver's name for
// it (buffer `buffer`, slot i at byte offset `first + 32 i`).
class CplArea {
public:
	static constexpr std::uint32_t kRecord = sizeof(peach2_rp_cpl);

	CplArea(void *base, std::uint32_t buffer, std::uint64_t first, std::uint32_t count)
		: base_(static_cast<unsigned char *>(base)), buffer_(buffer), first_(first), slots_(count)
	{
	}

	SlotPool &slots() noexcept { return slots_; }
	std::uint32_t buffer() const noexcept { return buffer_; }
	std::uint64_t offset_of(std::uint32_t slot) const noexcept { return first_ + std::uint64_t{kRecord} * slot; }

	// The tag of a slot (acquire: the rest of the record is read after it).
	std::uint64_t tag(std::uint32_t slot) const noexcept
	{
		// The slot is 32-byte aligned in a mapping: the tag is 8-aligned.
		std::uint64_t &t = *reinterpret_cast<std::uint64_t *>(base_ + kRecord * slot + 24);
		return std::atomic_ref<std::uint64_t>(t).load(std::memory_order_acquire);
	}
	// The record, read after tag() matched.
	peach2_rp_cpl read(std::uint32_t slot) const noexcept;

private:
	const unsigned char *record(std::uint32_t slot) const noexcept { return base_ + kRecord * slot; }

	unsigned char *base_;
	std::uint32_t buffer_;
	std::uint64_t first_;
	SlotPool slots_;
};

} // namespace tca
