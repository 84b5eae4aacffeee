// SPDX-License-Identifier: MIT
#include "rp_pins.hpp"

#include <limits>
#include <utility>

namespace tca {

RpPin &RpPin::operator=(RpPin &&o) noexcept
{
	if (this != &o) {
		release();
		pins_ = std::exchange(o.pins_, nullptr);
		it_ = o.it_;
	}
	return *this;
}

void RpPin::release() noexcept
{
	if (!pins_)
		return;
	std::lock_guard<std::mutex> lock(pins_->mutex_);
	pins_->map_.erase(it_);
	pins_ = nullptr;
}

void RpPin::set_deadline(std::uint64_t deadline_ns) noexcept
{
	if (!pins_)
		return;
	std::lock_guard<std::mutex> lock(pins_->mutex_);
	it_->second = deadline_ns;
}

RpPin RpPins::pin(std::uint32_t buffer)
{
	std::lock_guard<std::mutex> lock(mutex_);
	return RpPin(this, map_.emplace(buffer, std::numeric_limits<std::uint64_t>::max()));
}

bool RpPins::busy(std::uint32_t buffer, std::uint64_t now_ns)
{
	std::lock_guard<std::mutex> lock(mutex_);
	const auto range = map_.equal_range(buffer);
	for (auto it = range.first; it != range.second; ++it)
		if (it->second > now_ns)
			return true;
	return false;
}

} // namespace tca
