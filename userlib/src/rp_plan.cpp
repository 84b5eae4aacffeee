// SPDX-License-Identifier: MIT
// Read-proxy planning, pure: which node and export a handle names, and how
// a get is cut into requests (rp.hpp says why there). Unit-tested directly
// (test_rp_plan).
#include <peach2/peach2_hw.h>

#include <algorithm>

#include "handle.hpp"
#include "range.hpp"
#include "rp.hpp"

namespace tca {

int rp_target(const tcaHandle& h, std::uint32_t node_count, std::uint32_t op,
              RpTarget* out) noexcept {
    if (h.export_id == 0)
        return TCA_ENOTEXPORTED;
    if (h.node >= node_count)
        return TCA_ENODE;
    RpTarget t;
    t.node = h.node;
    t.export_id = h.export_id;
    t.key = h.export_key;
    t.op = op;
    *out = t;
    return 0;
}

int plan_get(const DmaSide& dst, std::span<const tcaHandle* const> srcs,
             std::uint64_t src_offset, std::uint64_t len, std::vector<RpPiece>* out) {
    std::uint64_t total = 0;
    for (const tcaHandle* h : srcs)
        if (!checked_add(total, h->size, &total))
            return TCA_ERANGE;
    if (!range_fits(src_offset, len, total))
        return TCA_ERANGE;
    if (len % 4)
        return TCA_EALIGN;
    // Appended to *out in place (a get's one piece costs no allocation of
    // its own); taken back off if the plan fails.
    std::vector<RpPiece>& pieces = *out;
    const std::size_t first = pieces.size();
    const auto fail = [&](int rc) {
        pieces.resize(first);
        return rc;
    };
    std::uint32_t runs = 0;  // of the request being planned (pieces.back())
    std::size_t h = 0;       // the handle holding byte src_offset + pos
    std::uint64_t h_start = 0;
    PieceWalk walk(dst.pieces, dst.offset);
    for (std::uint64_t pos = 0; pos < len;) {
        while (src_offset + pos - h_start >= srcs[h]->size)
            h_start += srcs[h++]->size;
        std::uint64_t local = 0, room = 0, remote = 0;
        if (!walk.at(&local, &room))
            return fail(TCA_ERANGE);
        if (handle_address(*srcs[h], src_offset + pos - h_start, &remote))
            return fail(TCA_ERANGE);
        // A request takes up to PEACH2_RP_MAX_PIECES runs of the local
        // buffer (its reply list) and PEACH2_RP_MAX_LEN bytes. It goes on
        // across the target's chunks and the handles' ends: the target
        // reads its buffer onwards from the request's first byte.
        if (pieces.size() == first || runs == PEACH2_RP_MAX_PIECES ||
            pieces.back().len == PEACH2_RP_MAX_LEN) {
            pieces.push_back(RpPiece{PEACH2_ADDR_OFFSET(remote), dst.offset + pos, 0});
            runs = 0;
        }
        RpPiece& p = pieces.back();
        const std::uint64_t n =
            std::min({len - pos, room, PEACH2_RP_MAX_LEN - std::uint64_t{p.len}});
        // Both ends of every run: the target's DMA writes each as it is.
        // (Later chunks of the target begin on pages, so its address
        // keeps the low bits of the run's first byte.)
        if (int rc = check_alignment(remote, local, n))
            return fail(rc);
        p.len += static_cast<std::uint32_t>(n);
        ++runs;
        pos += n;
        walk.skip(n);
    }
    return 0;
}

int plan_get(const DmaSide& dst, const tcaHandle& src, std::uint64_t src_offset, std::uint64_t len,
             std::vector<RpPiece>* out) {
    const tcaHandle* const one[] = {&src};
    return plan_get(dst, one, src_offset, len, out);
}

int plan_atomic(const tcaHandle& h, std::uint64_t offset, std::uint64_t* addr) noexcept {
    if (!range_fits(offset, 8, h.size))
        return TCA_ERANGE;
    std::uint64_t ga = 0;
    if (handle_address(h, offset, &ga))
        return TCA_ERANGE;
    if (ga % 8)
        return TCA_EALIGN;  // an aligned word never crosses a page, so never a chunk
    *addr = PEACH2_ADDR_OFFSET(ga);
    return 0;
}

}  // namespace tca
