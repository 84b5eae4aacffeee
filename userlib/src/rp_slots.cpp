// SPDX-License-Identifier: MIT
#include "rp_slots.hpp"

namespace tca {

SlotPool::SlotPool(std::uint32_t count) : count_(count)
{
	free_.reserve(count);
	for (std::uint32_t i = count; i > 0; --i)
		free_.push_back(i - 1); // slot 0 on top
}

bool SlotPool::take(std::uint32_t *slot)
{
	std::lock_guard<std::mutex> lock(mutex_);
	if (free_.empty())
		return false;
	*slot = free_.back();
	free_.pop_back();
	return true;
}

void SlotPool::give(std::uint32_t slot)
{
	std::lock_guard<std::mutex> lock(mutex_);
	free_.push_back(slot);
}

void SlotPool::retire(std::uint32_t)
{
	std::lock_guard<std::mutex> lock(mutex_);
	++retired_;
}

std::uint32_t SlotPool::free_count()
{
	std::lock_guard<std::mutex> lock(mutex_);
	return static_cast<std::uint32_t>(free_.size());
}

std::uint32_t SlotPool::retired_count()
{
	std::lock_guard<std::mutex> lock(mutex_);
	return retired_;
}

peach2_rp_cpl CplArea::read(std::uint32_t slot) const noexcept
{
	// The card's DMA wrote it; volatile loads so the compiler reads it now,
	// after the acquire load of the tag.
	const volatile peach2_rp_cpl *r = reinterpret_cast<const volatile peach2_rp_cpl *>(record(slot));
	peach2_rp_cpl c{};
	c.value = r->value;
	c.status = r->status;
	c.len = r->len;
	c.reserved = r->reserved;
	c.tag = r->tag;
	return c;
}

} // namespace tca
