// SPDX-License-Identifier: MIT
// Turns one tcaDmaXfer, with its memory already resolved, into the driver's
// peach2_xfer entries: one per card descriptor. The driver can split only
// at chunk boundaries of this process's buffers; a remote destination is
// just a global address to it, so the library must cut where the remote
// handle's physically contiguous pieces end. It also cuts at local chunk
// boundaries and at PEACH2_DMA_MAX_LEN, exactly as the driver would, so the
// count of entries is the count of descriptors (register mode needs that).
// Pure: unit-tested without a device.
#pragma once

#include <tca/tca.h>

#include <peach2/peach2_uapi.h>

#include <cstdint>
#include <span>
#include <vector>

namespace tca {

// One side of a transfer: this process's buffer (driver handle, its chunks
// in buffer order) or another node's memory (a remote handle), and the byte
// offset within it.
struct DmaSide {
	std::uint32_t buffer = 0;          // driver handle; 0: remote
	std::span<const tcaChunk> pieces;  // local: driver chunks; remote: handle chunks
	std::uint64_t offset = 0;
};

// A resolved tcaDmaXfer.
struct DmaRequest {
	DmaSide src, dst;
	std::uint64_t len = 0;
	std::uint32_t stride = 0;
	std::uint32_t burst = 0, gap = 0;
	bool notify = false;
	DmaSide notify_at;
	std::uint64_t notify_value = 0;
	std::uint32_t notify_len = 8;
};

// Where byte `offset` of a run of pieces is, and how many bytes follow it in
// the same piece. False if offset is past the end.
bool piece_at(std::span<const tcaChunk> pieces, std::uint64_t offset, std::uint64_t *addr,
	      std::uint64_t *room) noexcept;

// Appends the entries of `r` to *out (nothing on error). Errors: TCA_ERANGE
// (a side leaves its memory), TCA_EALIGN, TCA_ESTRIDE, -EINVAL.
int plan_request(const DmaRequest &r, std::vector<peach2_xfer> *out);

} // namespace tca
