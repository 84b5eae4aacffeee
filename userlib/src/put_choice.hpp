// SPDX-License-Identifier: MIT
// tcaPutAuto's decision: PIO or DMA. PIO costs CPU time per byte (every
// store is a device write) but starts at once; DMA costs a system call and
// the card's start-up, then moves data without the CPU. Below a threshold
// PIO wins; above it DMA does, where the hardware restrictions allow. Pure,
// unit-tested.
#pragma once

#include <cstdint>

namespace tca {

// How to cut a put: `head` and `tail` bytes by PIO around a `body` by DMA.
// body == 0 means all by PIO (head == len).
struct PutSplit {
	std::uint64_t head = 0, body = 0, tail = 0;
};

// src_dma: the source lies in a tcaMalloc buffer; src_addr, dst_addr: any
// addresses with the real low 4 bits of source and destination.
PutSplit choose_put(std::uint64_t len, bool src_dma, std::uint64_t src_addr,
		    std::uint64_t dst_addr, std::uint64_t pio_max) noexcept;

// TCA_PIO_MAX's value: bytes, decimal or 0x-hex, optional K or M suffix.
// Null, empty or malformed gives the default (TCA_PIO_MAX_DEFAULT).
std::uint64_t pio_max_from(const char *text) noexcept;

} // namespace tca
