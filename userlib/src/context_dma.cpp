// SPDX-License-Identifier: MIT
// Context: finding the memory a DMA request names. Local memory must be
// named by the driver (buffer handle + offset), so pointers and local
// handles are traced back to a tcaMalloc buffer of this process.
#include "context.hpp"

#include "handle.hpp"
#include "range.hpp"

namespace tca {

int Context::local_side(const void *ptr, std::uint64_t len, DmaSide *out) const noexcept
{
	Located at{};
	if (int rc = locate(ptr, len, &at))
		return rc;
	const DriverBuffer &b = *at.buf;
	if (!range_fits(at.offset, len, b.size))
		return TCA_ERANGE;
	*out = DmaSide{b.id(), b.pieces, at.offset};
	return 0;
}

int Context::handle_side(const tcaHandle &h, std::uint64_t offset, std::uint64_t len,
			 DmaSide *out) const noexcept
{
	if (!range_fits(offset, len, h.size))
		return TCA_ERANGE;
	if (h.node != node_id()) {
		if (h.node >= node_count())
			return TCA_ENODE;
		*out = DmaSide{0, {h.chunks, h.nr_chunks}, offset};
		return 0;
	}
	// Our own memory: the buffer holding the first byte, and every piece of
	// the range must be that buffer's memory at the matching offset (a
	// handle is plain data; it may describe memory we do not own).
	std::uint64_t first = 0;
	if (handle_address(h, offset, &first))
		return TCA_ERANGE;
	auto it = by_global_.upper_bound(first);
	if (it == by_global_.begin())
		return TCA_ENOTBUF;
	--it;
	const ChunkRef &ref = it->second;
	if (first - it->first >= ref.len)
		return TCA_ENOTBUF;
	const DriverBuffer &b = *ref.buf;
	const std::uint64_t base = ref.offset + (first - it->first);
	if (!range_fits(base, len, b.size))
		return TCA_ENOTBUF;
	bool same = true;
	for_each_piece(h, offset, len, [&](std::uint64_t ga, std::uint64_t pos, std::uint64_t n) {
		for (std::uint64_t done = 0; same && done < n;) {
			std::uint64_t addr = 0, room = 0;
			piece_at(b.pieces, base + pos + done, &addr, &room);
			same = addr == ga + done;
			done += room < n - done ? room : n - done;
		}
	});
	if (!same)
		return TCA_ENOTBUF;
	*out = DmaSide{b.id(), b.pieces, base};
	return 0;
}

} // namespace tca
