// SPDX-License-Identifier: MIT
#include "dma_plan.hpp"

#include "dma_flags.hpp"
#include "dma_rules.hpp"
#include "range.hpp"

#include <peach2/peach2_hw.h>

#include <algorithm>
#include <cerrno>

namespace tca {
namespace {

std::uint64_t total_of(std::span<const tcaChunk> pieces) noexcept
{
	std::uint64_t t = 0;
	for (const tcaChunk &c : pieces)
		t += c.len; // pieces of a validated handle or a driver buffer: no overflow
	return t;
}

// [offset, offset + span) inside the side's memory?
bool side_fits(const DmaSide &s, std::uint64_t span) noexcept
{
	return range_fits(s.offset, span, total_of(s.pieces));
}

// The driver's name for byte `pos` of a side: a buffer offset for local
// memory, the global address for remote memory.
std::uint64_t driver_dst(const DmaSide &s, std::uint64_t pos, std::uint64_t addr) noexcept
{
	return s.buffer ? s.offset + pos : addr;
}

int plan_notify(const DmaRequest &r, std::vector<peach2_xfer> *out)
{
	const DmaSide &n = r.notify_at;
	if (r.notify_len != 4 && r.notify_len != 8)
		return -EINVAL;
	if (!side_fits(n, r.notify_len))
		return TCA_ERANGE;
	std::uint64_t addr = 0, room = 0;
	piece_at(n.pieces, n.offset, &addr, &room);
	if (int rc = check_notify(addr, r.notify_len))
		return rc;
	if (room < r.notify_len)
		return TCA_EALIGN; // only a malformed piece list can split an aligned word
	peach2_xfer x{};
	x.dst_handle = n.buffer;
	x.dst = driver_dst(n, 0, addr);
	x.len = r.notify_len;
	x.flags = PEACH2_XFER_IMM;
	// The card writes the low `len` bytes of the value.
	x.imm = r.notify_len == 4 ? (r.notify_value & 0xffffffffull) : r.notify_value;
	out->push_back(x);
	return 0;
}

int plan_strided(const DmaRequest &r, std::uint64_t sspan, std::uint64_t dspan,
		 std::vector<peach2_xfer> *out)
{
	std::uint64_t saddr = 0, sroom = 0, daddr = 0, droom = 0;
	piece_at(r.src.pieces, r.src.offset, &saddr, &sroom);
	piece_at(r.dst.pieces, r.dst.offset, &daddr, &droom);
	if (int rc = check_alignment(saddr, daddr, r.len))
		return rc;
	if (sspan > sroom || dspan > droom)
		return TCA_ESTRIDE; // the card walks a strided side by address
	peach2_xfer x{};
	x.src_handle = r.src.buffer;
	x.src_offset = r.src.offset;
	x.dst_handle = r.dst.buffer;
	x.dst = driver_dst(r.dst, 0, daddr);
	x.len = r.len;
	x.burst = static_cast<__u16>(r.burst);
	x.gap = static_cast<__u16>(r.gap);
	x.flags = xfer_stride_flags(r.stride);
	out->push_back(x);
	return 0;
}

int plan_contiguous(const DmaRequest &r, std::vector<peach2_xfer> *out)
{
	for (std::uint64_t pos = 0; pos < r.len;) {
		std::uint64_t saddr = 0, sroom = 0, daddr = 0, droom = 0;
		piece_at(r.src.pieces, r.src.offset + pos, &saddr, &sroom);
		piece_at(r.dst.pieces, r.dst.offset + pos, &daddr, &droom);
		const std::uint64_t n = std::min({r.len - pos, sroom, droom,
						  static_cast<std::uint64_t>(PEACH2_DMA_MAX_LEN)});
		// Every piece: after a cut the two sides restart at unrelated
		// addresses, so one check at the start would not cover them.
		if (int rc = check_alignment(saddr, daddr, n))
			return rc;
		peach2_xfer x{};
		x.src_handle = r.src.buffer;
		x.src_offset = r.src.offset + pos;
		x.dst_handle = r.dst.buffer;
		x.dst = driver_dst(r.dst, pos, daddr);
		x.len = n;
		out->push_back(x);
		pos += n;
	}
	return 0;
}

} // namespace

bool piece_at(std::span<const tcaChunk> pieces, std::uint64_t offset, std::uint64_t *addr,
	      std::uint64_t *room) noexcept
{
	for (const tcaChunk &c : pieces) {
		if (offset < c.len) {
			*addr = c.global_addr + offset;
			*room = c.len - offset;
			return true;
		}
		offset -= c.len;
	}
	*addr = *room = 0;
	return false;
}

int plan_request(const DmaRequest &r, std::vector<peach2_xfer> *out)
{
	std::uint64_t sspan = 0, dspan = 0;
	if (int rc = check_stride(r.len, r.stride, r.burst, r.gap, &sspan, &dspan))
		return rc;
	if (r.burst > 0xffff || r.gap > 0xffff)
		return TCA_ESTRIDE;
	if (r.len && (!side_fits(r.src, sspan) || !side_fits(r.dst, dspan)))
		return TCA_ERANGE;
	if (r.len % 4)
		return TCA_EALIGN;
	const std::size_t before = out->size();
	int rc = 0;
	if (r.len && r.burst)
		rc = plan_strided(r, sspan, dspan, out);
	else if (r.len)
		rc = plan_contiguous(r, out);
	if (rc == 0 && r.notify)
		rc = plan_notify(r, out);
	if (rc)
		out->resize(before);
	return rc;
}

} // namespace tca
