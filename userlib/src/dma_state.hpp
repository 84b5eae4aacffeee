// SPDX-License-Identifier: MIT
// Per-context DMA state: the device port, the start-order lock, the channel
// counter for several-run starts, and the chain table (library mutex).
#pragma once

#include "chain_table.hpp"
#include "dma_port.hpp"
#include "dma_runs.hpp"

#include <atomic>
#include <shared_mutex>

namespace tca {

class DmaState {
public:
	explicit DmaState(int fd) noexcept : port_(fd) {}
	DmaState(const DmaState &) = delete;
	DmaState &operator=(const DmaState &) = delete;

	DriverPort &port() noexcept { return port_; }
	DmaStarter starter() noexcept { return DmaStarter{port_, order_, next_channel_}; }
	ChainTable &chains() noexcept { return chains_; }

private:
	FdPort port_;
	std::shared_mutex order_;
	std::atomic<unsigned> next_channel_{0};
	ChainTable chains_;
};

} // namespace tca
