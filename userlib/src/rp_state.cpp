// SPDX-License-Identifier: MIT
#include "rp_state.hpp"

#include <atomic>

namespace tca {
namespace {

std::atomic<std::uint64_t> last_id{0}; // process-wide, never reset

} // namespace

std::uint64_t RpState::add(std::shared_ptr<RpOp> op)
{
	std::lock_guard<std::mutex> lock(mutex_);
	const std::uint64_t id = last_id.fetch_add(1, std::memory_order_relaxed) + 1;
	ops_.emplace(id, std::move(op));
	return id;
}

std::shared_ptr<RpOp> RpState::find(std::uint64_t id)
{
	std::lock_guard<std::mutex> lock(mutex_);
	const auto it = ops_.find(id);
	return it == ops_.end() ? nullptr : it->second;
}

std::shared_ptr<RpOp> RpState::take(std::uint64_t id)
{
	std::lock_guard<std::mutex> lock(mutex_);
	const auto it = ops_.find(id);
	if (it == ops_.end())
		return nullptr;
	std::shared_ptr<RpOp> op = std::move(it->second);
	ops_.erase(it);
	return op;
}

bool RpState::known(std::uint64_t id)
{
	std::lock_guard<std::mutex> lock(mutex_);
	return ops_.count(id) != 0;
}

} // namespace tca
