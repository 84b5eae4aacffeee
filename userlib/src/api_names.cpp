// SPDX-License-Identifier: MIT
// C API: registered memory (tcaRegister, tcaDeregister) and names
// (tcaPublish, tcaUnpublish, tcaLookupName). A lookup is one read-proxy
// request (PEACH2_RP_OP_LOOKUP) that the target's driver answers from its
// table of names; it is planned under the library mutex and waited for
// without it, one lookup at a time (they share one answer buffer).
#include "api_guard.hpp"
#include "handle.hpp"
#include "library.hpp"
#include "rp_wait.hpp"

#include <tca/tca.h>

#include <peach2/peach2_uapi.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

using namespace tca;

namespace {

static_assert(sizeof(peach2_lookup) == 96, "lookup header: ABI 4");
static_assert(TCA_NAME_QP == PEACH2_NAME_QP && TCA_NAME_KEY == PEACH2_NAME_KEY);
static_assert(TCA_NAME_WRITE == PEACH2_NAME_WRITE && TCA_NAME_READ == PEACH2_NAME_READ &&
	      TCA_NAME_ATOMIC == PEACH2_NAME_ATOMIC);
static_assert(TCA_NAME_INFO == PEACH2_NAME_INFO);

std::mutex &lookup_mutex()
{
	static std::mutex m;
	return m;
}

// Checks an answer and turns it into *out. The answer is plain data from
// another node's driver: nothing in it is trusted.
int parse_lookup(std::uint32_t node, std::uint32_t kind, std::uint32_t name, std::uint64_t offset,
		 const unsigned char *raw, tcaNameInfo *out)
{
	peach2_lookup l;
	std::memcpy(&l, raw, sizeof l);
	constexpr std::uint32_t kMaxPieces = (PEACH2_LOOKUP_MAX - sizeof l) / sizeof(peach2_lookup_piece);
	if (l.kind != kind || l.name != name || l.offset != offset || l.nr_pieces == 0 ||
	    l.nr_pieces > kMaxPieces || offset >= l.len || (l.export_id == 0) != (l.key == 0))
		return TCA_EDEVICE;
	std::vector<tcaChunk> pieces;
	std::uint64_t total = 0;
	for (std::uint32_t i = 0; i < l.nr_pieces && pieces.size() < TCA_HANDLE_MAX_CHUNKS; ++i) {
		peach2_lookup_piece p;
		std::memcpy(&p, raw + sizeof l + i * sizeof p, sizeof p);
		if (p.len == 0 || p.len > l.len - offset - total)
			return TCA_EDEVICE;
		pieces.push_back(tcaChunk{p.global_addr, p.len});
		total += p.len;
	}
	tcaNameInfo info{};
	if (int rc = make_handle(node, pieces, 0, total, &info.handle))
		return rc == TCA_EBADHANDLE ? TCA_EDEVICE : rc; // pieces off the node's memory
	if (l.export_id)
		attach_export(&info.handle, l.export_id, l.key);
	info.kind = l.kind;
	info.name = l.name;
	info.flags = l.flags;
	info.group = l.group;
	info.owner = l.owner;
	info.size = l.len;
	info.offset = offset;
	info.lease_ms = l.lease_ms;
	std::memcpy(info.info, l.info, sizeof info.info);
	*out = info;
	return 0;
}

} // namespace

extern "C" {

int tcaRegister(void *ptr, size_t size)
{
	if (!ptr || size == 0)
		return -EINVAL;
	return guarded([&] { return with_context([&](Context &c) { return c.register_memory(ptr, size); }); });
}

int tcaDeregister(void *ptr, size_t size)
{
	if (!ptr || size == 0)
		return -EINVAL;
	return guarded(
		[&] { return with_context([&](Context &c) { return c.deregister_memory(ptr, size); }); });
}

int tcaPublish(const void *ptr, size_t size, uint32_t kind, uint32_t flags, uint32_t group,
	       const void *info, size_t info_len, uint32_t *name)
{
	if (!ptr || !name || size == 0 || (kind != TCA_NAME_QP && kind != TCA_NAME_KEY) ||
	    flags & ~(TCA_NAME_WRITE | TCA_NAME_READ | TCA_NAME_ATOMIC) || info_len > TCA_NAME_INFO ||
	    (info_len && !info))
		return -EINVAL;
	peach2_publish req{};
	req.kind = kind;
	req.flags = flags;
	req.group = group;
	if (info_len)
		std::memcpy(req.info, info, info_len);
	return guarded([&] {
		return with_context([&](Context &c) {
			const int rc = c.publish(ptr, size, &req);
			if (rc == 0)
				*name = req.name;
			return rc;
		});
	});
}

int tcaUnpublish(uint32_t kind, uint32_t name)
{
	return guarded([&] { return with_context([&](Context &c) { return c.unpublish(kind, name); }); });
}

int tcaLookupName(int node, uint32_t kind, uint32_t name, size_t offset, tcaNameInfo *out)
{
	if (!out || node < 0 || (kind != TCA_NAME_QP && kind != TCA_NAME_KEY))
		return -EINVAL;
	return guarded([&] {
		std::lock_guard<std::mutex> one(lookup_mutex());
		RpState *rp = nullptr;
		DriverBuffer *answer = nullptr;
		RpTarget target;
		if (int rc = with_context([&](Context &c) {
			    if (static_cast<std::uint32_t>(node) >= c.node_count())
				    return TCA_ENODE;
			    if (int r = c.rp(&rp))
				    return r;
			    return c.lookup_buffer(&answer);
		    }))
			return rc;
		target.node = static_cast<std::uint32_t>(node);
		target.op = PEACH2_RP_OP_LOOKUP;
		target.export_id = kind;
		target.key = name;
		RpPiece piece;
		piece.addr = offset;
		piece.reply_offset = 0;
		piece.len = PEACH2_LOOKUP_MAX;
		const std::uint64_t deadline = monotonic_ns() + rp_timeout_ms() * 1000000ull;
		RpOp op(rp->port(), rp->areas(), target, answer->id(), {piece}, deadline, RpPin{});
		int rc = op.start(monotonic_ns());
		if (rc == 1)
			rc = wait_op(op, 0);
		if (rc != 0)
			return rc;
		return parse_lookup(target.node, kind, name, offset,
				    static_cast<const unsigned char *>(answer->map.get()), out);
	});
}

} // extern "C"
