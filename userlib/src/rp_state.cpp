// SPDX-License-Identifier: MIT
#include "rp_state.hpp"

namespace tca {

RpState::RpState(DriverPort &port, std::unique_ptr<DriverBuffer> buffer)
	: port_(port), buffer_(std::move(buffer)), area_(buffer_->map.get(), buffer_->id(), 0, kSlots)
{
}

std::uint64_t RpState::add(std::unique_ptr<RpOp> op)
{
	std::lock_guard<std::mutex> lock(mutex_);
	const std::uint64_t id = ++last_id_;
	ops_.emplace(id, std::move(op));
	return id;
}

RpOp *RpState::find(std::uint64_t id)
{
	std::lock_guard<std::mutex> lock(mutex_);
	const auto it = ops_.find(id);
	return it == ops_.end() ? nullptr : it->second.get();
}

std::unique_ptr<RpOp> RpState::take(std::uint64_t id)
{
	std::lock_guard<std::mutex> lock(mutex_);
	const auto it = ops_.find(id);
	if (it == ops_.end())
		return nullptr;
	std::unique_ptr<RpOp> op = std::move(it->second);
	ops_.erase(it);
	return op;
}

} // namespace tca
