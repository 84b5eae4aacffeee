// SPDX-License-Identifier: MIT
// DMA planning, pure: a resolved request checked against the card's rules
// (peach2_dma_rules.h, in TCA_E* terms) and cut into one driver entry per
// descriptor; a planned list kept for its next start (RepeatPlan); and
// tcaPutAuto's choice between PIO and DMA. No device, no lock: unit-tested
// directly (test_dma_plan, test_dma_rules, test_put_choice).
#include <peach2/peach2_dma_rules.h>
#include <peach2/peach2_hw.h>
#include <tca/tca.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dma.hpp"
#include "range.hpp"
#include "size_text.hpp"

namespace tca {

int check_alignment(std::uint64_t src_addr, std::uint64_t dst_addr, std::uint64_t len) noexcept {
    return peach2_dma_align_rule(src_addr, dst_addr, len) ? TCA_EALIGN : 0;
}

bool stride_span(std::uint64_t len, std::uint32_t burst, std::uint32_t gap,
                 std::uint64_t* span) noexcept {
    return peach2_stride_span(len, burst, gap, span) == 0;
}

int check_stride(std::uint64_t len, std::uint32_t stride, std::uint32_t burst, std::uint32_t gap,
                 std::uint64_t* src_span, std::uint64_t* dst_span) noexcept {
    if (stride & ~(TCA_DMA_STRIDE_SRC | TCA_DMA_STRIDE_DST))
        return -EINVAL;
    *src_span = *dst_span = len;
    const bool src = stride & TCA_DMA_STRIDE_SRC, dst = stride & TCA_DMA_STRIDE_DST;
    const std::uint32_t flags =
        (src ? PEACH2_DESC_STRIDE_SRC : 0u) | (dst ? PEACH2_DESC_STRIDE_DST : 0u);
    if (peach2_dma_block_rule(burst, gap, flags))
        return TCA_ESTRIDE;
    if (burst == 0)
        return 0;
    // Never split (a block pattern has no natural cut), so one descriptor.
    if (len == 0 || len > PEACH2_DMA_MAX_LEN)
        return TCA_ESTRIDE;
    std::uint64_t span = 0;
    if (!stride_span(len, burst, gap, &span))
        return TCA_ESTRIDE;
    if (src)
        *src_span = span;
    if (dst)
        *dst_span = span;
    return 0;
}

int check_notify(std::uint64_t addr, std::uint32_t len) noexcept {
    if (len != 4 && len != 8)
        return -EINVAL;
    return addr % len ? TCA_EALIGN : 0;
}

int refusal_error(int rc, const peach2_xfer_refusal& why) noexcept {
    switch (why.bad_rule) {
    case PEACH2_DMA_RULE_OK:
    case PEACH2_DMA_RULE_NO_BUFFER:
        return rc;  // nothing named, or -ENOENT for a handle: the driver's errno says it
    case PEACH2_DMA_RULE_SRC_RANGE:
    case PEACH2_DMA_RULE_DST_RANGE:
    case PEACH2_DMA_RULE_REMOTE: return TCA_ERANGE;
    case PEACH2_DMA_RULE_BLOCK_FIELDS:
    case PEACH2_DMA_RULE_BLOCK_ALIGN:
    case PEACH2_DMA_RULE_BLOCK_GAP16:
    case PEACH2_DMA_RULE_TOO_LONG:
    case PEACH2_DMA_RULE_CHUNK: return TCA_ESTRIDE;
    default:
        return peach2_dma_rule_err(static_cast<peach2_dma_rule>(why.bad_rule)) ==
                       PEACH2_ERR_DMA_ALIGN
                   ? TCA_EALIGN
                   : rc;
    }
}

namespace {

std::uint64_t total_of(std::span<const tcaChunk> pieces) noexcept {
    std::uint64_t t = 0;
    for (const tcaChunk& c : pieces)
        t += c.len;  // pieces of a validated handle or a driver buffer: no overflow
    return t;
}

// [offset, offset + span) inside the side's memory?
bool side_fits(const DmaSide& s, std::uint64_t span, SideMemo* memo) noexcept {
    return range_fits(s.offset, span, memo ? memo->total(s.pieces) : total_of(s.pieces));
}

// The driver's name for byte `pos` of a side: a buffer offset for local
// memory, the global address for remote memory.
std::uint64_t driver_dst(const DmaSide& s, std::uint64_t pos, std::uint64_t addr) noexcept {
    return s.buffer ? s.offset + pos : addr;
}

int plan_notify(const DmaRequest& r, std::vector<peach2_xfer>* out) {
    const DmaSide& n = r.notify_at;
    if (r.notify_len != 4 && r.notify_len != 8)
        return -EINVAL;
    if (!side_fits(n, r.notify_len, nullptr))
        return TCA_ERANGE;
    std::uint64_t addr = 0, room = 0;
    piece_at(n.pieces, n.offset, &addr, &room);
    if (int rc = check_notify(addr, r.notify_len))
        return rc;
    if (room < r.notify_len)
        return TCA_EALIGN;  // only a malformed piece list can split an aligned word
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

int plan_strided(const DmaRequest& r, std::uint64_t sspan, std::uint64_t dspan,
                 std::vector<peach2_xfer>* out) {
    std::uint64_t saddr = 0, sroom = 0, daddr = 0, droom = 0;
    piece_at(r.src.pieces, r.src.offset, &saddr, &sroom);
    piece_at(r.dst.pieces, r.dst.offset, &daddr, &droom);
    if (int rc = check_alignment(saddr, daddr, r.len))
        return rc;
    if (sspan > sroom || dspan > droom)
        return TCA_ESTRIDE;  // the card walks a strided side by address
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

int plan_contiguous(const DmaRequest& r, std::vector<peach2_xfer>* out, PlanMemo* memo) {
    PieceWalk src = memo ? memo->src.walk(r.src.pieces, r.src.offset)
                         : PieceWalk(r.src.pieces, r.src.offset);
    PieceWalk dst = memo ? memo->dst.walk(r.dst.pieces, r.dst.offset)
                         : PieceWalk(r.dst.pieces, r.dst.offset);
    for (std::uint64_t pos = 0; pos < r.len;) {
        std::uint64_t saddr = 0, sroom = 0, daddr = 0, droom = 0;
        src.at(&saddr, &sroom);
        dst.at(&daddr, &droom);
        const std::uint64_t n =
            std::min({r.len - pos, sroom, droom, static_cast<std::uint64_t>(PEACH2_DMA_MAX_LEN)});
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
        src.skip(n);
        dst.skip(n);
    }
    if (memo) {
        memo->src.ended(r.src.pieces, r.src.offset + r.len, src);
        memo->dst.ended(r.dst.pieces, r.dst.offset + r.len, dst);
    }
    return 0;
}

}  // namespace

void SideMemo::remember(std::span<const tcaChunk> pieces) noexcept {
    if (same(pieces))
        return;
    pieces_ = pieces;
    total_ = total_of(pieces);
    walked_ = false;
}

std::uint64_t SideMemo::total(std::span<const tcaChunk> pieces) noexcept {
    remember(pieces);
    return total_;
}

PieceWalk SideMemo::walk(std::span<const tcaChunk> pieces, std::uint64_t offset) const noexcept {
    if (!walked_ || !same(pieces) || offset < end_)
        return PieceWalk(pieces, offset);
    PieceWalk w = at_;
    w.skip(offset - end_);
    return w;
}

void SideMemo::ended(std::span<const tcaChunk> pieces, std::uint64_t offset,
                     const PieceWalk& at) noexcept {
    remember(pieces);
    walked_ = true;
    end_ = offset;
    at_ = at;
}

bool piece_at(std::span<const tcaChunk> pieces, std::uint64_t offset, std::uint64_t* addr,
              std::uint64_t* room) noexcept {
    return PieceWalk(pieces, offset).at(addr, room);
}

int plan_request(const DmaRequest& r, std::vector<peach2_xfer>* out, PlanMemo* memo) {
    std::uint64_t sspan = 0, dspan = 0;
    if (int rc = check_stride(r.len, r.stride, r.burst, r.gap, &sspan, &dspan))
        return rc;
    if (r.burst > 0xffff || r.gap > 0xffff)
        return TCA_ESTRIDE;
    if (r.len && (!side_fits(r.src, sspan, memo ? &memo->src : nullptr) ||
                  !side_fits(r.dst, dspan, memo ? &memo->dst : nullptr)))
        return TCA_ERANGE;
    if (r.len % 4)
        return TCA_EALIGN;
    const std::size_t before = out->size();
    int rc = 0;
    if (r.len && r.burst)
        rc = plan_strided(r, sspan, dspan, out);
    else if (r.len)
        rc = plan_contiguous(r, out, memo);
    if (rc == 0 && r.notify)
        rc = plan_notify(r, out);
    if (rc)
        out->resize(before);
    return rc;
}

// ---- a list planned again -------------------------------------------------------

namespace {

// Its fields add up to its size (no padding): its bytes are its value.
static_assert(sizeof(tcaDmaXfer) == 6 * 8 + 4 + 2 + 2 + 3 * 8 + 4 + 4);

bool same_bytes(const void* a, const void* b, std::size_t n) noexcept {
    return n == 0 || std::memcmp(a, b, n) == 0;  // an empty list may have no array
}

// The handles a transfer names, in a fixed order (null ones skipped).
template <typename F>
void for_each_handle(const tcaDmaXfer& x, F&& f) {
    for (const tcaHandle* h : {x.dst, x.src_handle, x.notify})
        if (h)
            f(*h);
}

}  // namespace

bool RepeatPlan::holds(const Context* ctx, std::uint64_t generation,
                       std::span<const tcaDmaXfer> xfers) const noexcept {
    if (!ctx_ || ctx != ctx_ || generation != generation_ || xfers.size() != xfers_.size() ||
        !same_bytes(xfers.data(), xfers_.data(), xfers.size_bytes()))
        return false;
    // The same pointers; the same bytes behind them?
    std::size_t i = 0;
    bool same = true;
    for (const tcaDmaXfer& x : xfers)
        for_each_handle(x, [&](const tcaHandle& h) {
            same = same && same_bytes(&h, &handles_[i++], sizeof h);
        });
    return same;
}

bool RepeatPlan::keep(const Context* ctx, std::uint64_t generation,
                      std::span<const tcaDmaXfer> xfers, std::vector<peach2_xfer>* entries) {
    ctx_ = nullptr;
    if (xfers.size() > kMaxXfers)
        return false;
    xfers_.assign(xfers.begin(), xfers.end());
    handles_.clear();
    for (const tcaDmaXfer& x : xfers)
        for_each_handle(x, [&](const tcaHandle& h) { handles_.push_back(h); });
    entries_.swap(*entries);  // a list of scattered pages: no copy of its entries
    generation_ = generation;
    ctx_ = ctx;
    return true;
}

PutSplit choose_put(std::uint64_t len, bool src_dma, std::uint64_t src_addr, std::uint64_t dst_addr,
                    std::uint64_t pio_max) noexcept {
    PutSplit all_pio{len, 0, 0};
    if (len <= pio_max || !src_dma || (src_addr ^ dst_addr) % 16)
        return all_pio;
    // Equal low 4 bits: once the source is 4-aligned, so is the destination.
    PutSplit s;
    s.head = (4 - src_addr % 4) % 4;
    if (s.head >= len)
        return all_pio;
    s.body = (len - s.head) / 4 * 4;
    s.tail = len - s.head - s.body;
    return s.body ? s : all_pio;
}

std::uint64_t pio_max_from(const char* text) noexcept {
    std::uint64_t v = 0;
    return text && parse_size(text, &v) ? v : TCA_PIO_MAX_DEFAULT;
}

}  // namespace tca
