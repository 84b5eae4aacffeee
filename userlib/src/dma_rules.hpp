// SPDX-License-Identifier: MIT
// The PEACH2 DMA restrictions (docs/hardware.md §6; one definition in
// include/peach2/peach2_dma_rules.h), checked in the library before a
// request reaches the driver, so that a request of several runs fails before
// any of them has started. A violation has its own error code (TCA_EALIGN,
// TCA_ESTRIDE); so has a transfer the driver refuses (refusal_error). Pure
// functions, unit-tested.
#pragma once

#include <peach2/peach2_uapi.h>

#include <cstdint>

namespace tca {

// Contiguous piece: source and destination 4-byte aligned, equal low 4
// address bits, length a multiple of 4. 0 or TCA_EALIGN.
int check_alignment(std::uint64_t src_addr, std::uint64_t dst_addr, std::uint64_t len) noexcept;

// Bytes one side of a block-stride transfer spans from its first to its
// last byte: (ceil(len / burst) - 1) * (burst + gap) + the last block.
// False on overflow. Requires burst > 0 and len > 0.
bool stride_span(std::uint64_t len, std::uint32_t burst, std::uint32_t gap,
		 std::uint64_t *span) noexcept;

// Block-stride parameters (stride = TCA_DMA_STRIDE_* bits): burst > 0 with
// at least one side, burst and gap multiples of 4, a one-sided gap a
// multiple of 16 (every block must keep equal low 4 bits), burst == 0 only
// with no gap and no side; length within one descriptor. Fills the spans of
// both sides. 0, TCA_ESTRIDE, or -EINVAL for undefined stride bits.
int check_stride(std::uint64_t len, std::uint32_t stride, std::uint32_t burst,
		 std::uint32_t gap, std::uint64_t *src_span, std::uint64_t *dst_span) noexcept;

// A completion word: 4 or 8 bytes at an address that is a multiple of its
// size (so it never crosses a page, hence never a chunk). 0 or TCA_EALIGN.
int check_notify(std::uint64_t addr, std::uint32_t len) noexcept;

// A driver refusal (rc, -errno) in library terms, from the rule the driver
// named for the refused transfer (struct peach2_xfer_refusal): TCA_EALIGN,
// TCA_ESTRIDE, TCA_ERANGE; rc itself when it named none, or a rule with no
// library code of its own.
int refusal_error(int rc, const peach2_xfer_refusal &why) noexcept;

} // namespace tca
