// SPDX-License-Identifier: MIT
#include "rp_areas.hpp"

namespace tca {

bool CplAreas::take(SlotRef *out)
{
	CplArea &a = current();
	if (!a.slots().take(&out->slot))
		return false;
	out->area = &a;
	return true;
}

bool CplAreas::wants_fresh()
{
	SlotPool &p = current().slots();
	const std::uint32_t retired = p.retired_count();
	return retired >= p.count() / 2 || (retired > 0 && p.free_count() == 0);
}

void CplAreas::add(std::unique_ptr<DriverBuffer> buffer)
{
	void *base = buffer->map.get();
	const std::uint32_t id = buffer->id();
	// Owned holds a mutex (in the pool): built in place, never moved.
	std::unique_ptr<Owned> owned(new Owned{std::move(buffer), CplArea(base, id, 0, kSlots)});
	std::lock_guard<std::mutex> lock(mutex_);
	areas_.push_back(std::move(owned));
}

CplArea &CplAreas::current()
{
	std::lock_guard<std::mutex> lock(mutex_);
	return areas_.back()->area;
}

std::size_t CplAreas::count()
{
	std::lock_guard<std::mutex> lock(mutex_);
	return areas_.size();
}

} // namespace tca
