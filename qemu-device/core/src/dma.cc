// The DMA controller: channel registers, starting, bounded slices of work,
// descriptor fetching (with loop detection), the end of a run.
#include "dma.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "card.h"
#include "peach2/peach2_dma_rules.h"
#include "util.h"

namespace peach2 {
namespace {

// Work per service() for each channel, so a long transfer never stalls the
// vCPUs of this node for long; the rest follows in the next slice.
constexpr uint64_t kBytesPerRun = 512 * 1024;
constexpr uint32_t kDescsPerRun = 256;
static_assert(PEACH2_PKT_MAX_PAYLOAD == kPage);

// The WRITE packets `len` bytes to `dst` take: one per page they touch.
uint64_t packets_in(uint64_t dst, uint64_t len) { return (dst % kPage + len - 1) / kPage + 1; }

peach2_desc decode_desc(const uint8_t* b) {
    peach2_desc d{};
    d.src = load_le(b + 0, 8);
    d.dst = load_le(b + 8, 8);
    d.len = static_cast<uint32_t>(load_le(b + 16, 4));
    d.burst = static_cast<uint16_t>(load_le(b + 20, 2));
    d.gap = static_cast<uint16_t>(load_le(b + 22, 2));
    d.next = static_cast<uint32_t>(load_le(b + 24, 4));
    d.flags = static_cast<uint32_t>(load_le(b + 28, 4));
    return d;
}

// The PEACH2 restrictions (peach2_dma_rules.h, shared with the driver and
// libtca), checked before a single byte moves, so a bad request writes
// nothing.
peach2_err validate(const peach2_desc& d) { return peach2_dma_rule_err(peach2_desc_rule(&d)); }

constexpr uint64_t kRegsEnd = PEACH2_REG_DMA_BASE + PEACH2_REG_DMA_STRIDE * PEACH2_DMA_ENGINES;

}  // namespace

void DmaEngine::reset() {
    for (auto& c : chans_)
        c = DmaChannel{};
    fault_proxy_stall_ = 0;
}

bool DmaEngine::busy() const {
    return std::any_of(chans_.begin(), chans_.end(), [](const DmaChannel& c) { return c.busy(); });
}

// ---- registers -------------------------------------------------------------------

// A channel register: which channel, which register.
bool DmaEngine::chan_reg(uint64_t off, unsigned& ch, uint32_t& r) {
    if (off < PEACH2_REG_DMA_BASE || off >= kRegsEnd)
        return false;
    ch = static_cast<unsigned>((off - PEACH2_REG_DMA_BASE) / PEACH2_REG_DMA_STRIDE);
    r = static_cast<uint32_t>((off - PEACH2_REG_DMA_BASE) % PEACH2_REG_DMA_STRIDE);
    return true;
}

bool DmaEngine::reg_read(uint64_t off, uint32_t& v) const {
    unsigned ch = 0;
    uint32_t r = 0;
    if (off == PEACH2_REG_FAULT_PROXY_STALL)
        v = fault_proxy_stall_;
    else if (chan_reg(off, ch, r))
        v = chan_reg_read(ch, r);
    else
        return false;
    return true;
}

bool DmaEngine::reg_write(uint64_t off, uint32_t v) {
    unsigned ch = 0;
    uint32_t r = 0;
    if (off == PEACH2_REG_FAULT_PROXY_STALL)
        fault_proxy_stall_ = v;
    else if (chan_reg(off, ch, r))
        chan_reg_write(ch, r, v);
    else
        return false;
    return true;
}

uint32_t DmaEngine::chan_reg_read(unsigned ch, uint32_t r) const {
    const DmaChannel& c = chans_[ch];
    switch (r) {
    case PEACH2_DMA_STATUS: return c.status;
    case PEACH2_DMA_HEAD_LO: return lo32(c.head);
    case PEACH2_DMA_HEAD_HI: return hi32(c.head);
    case PEACH2_DMA_SRC_LO: return lo32(c.src);
    case PEACH2_DMA_SRC_HI: return hi32(c.src);
    case PEACH2_DMA_DST_LO: return lo32(c.dst);
    case PEACH2_DMA_DST_HI: return hi32(c.dst);
    case PEACH2_DMA_LEN: return c.len;
    case PEACH2_DMA_BLOCK: return c.block;
    case PEACH2_DMA_FLAGS: return c.flags;
    case PEACH2_DMA_DONE_DESCS: return c.done_descs;
    case PEACH2_DMA_ERR_DESC_LO: return lo32(c.err_desc);
    case PEACH2_DMA_ERR_DESC_HI: return hi32(c.err_desc);
    case PEACH2_DMA_BYTES_LO: return lo32(c.bytes);
    case PEACH2_DMA_BYTES_HI: return hi32(c.bytes);
    default: return 0;  // CTRL is write-only
    }
}

void DmaEngine::chan_reg_write(unsigned ch, uint32_t r, uint32_t val) {
    DmaChannel& c = chans_[ch];
    // Parameters of a running transfer cannot change under it.
    if (r != PEACH2_DMA_CTRL && r != PEACH2_DMA_STATUS && c.busy()) {
        card_.raise_error(PEACH2_ERR_DMA_BUSY, PEACH2_REG_DMA(ch, r),
                          "DMA channel " + std::to_string(ch) + " register written while busy",
                          {.channel = ch, .value = val});
        return;
    }
    switch (r) {
    case PEACH2_DMA_CTRL: {
        const uint32_t starts = PEACH2_DMA_CTRL_START_CHAIN | PEACH2_DMA_CTRL_START_REG;
        const uint32_t start = val & starts;
        if (val & PEACH2_DMA_CTRL_ABORT) {
            if (c.busy())
                finish(ch, PEACH2_ERR_DMA_ABORTED);
            return;
        }
        if (val & ~starts || start == starts) {
            card_.raise_error(PEACH2_ERR_BAD_COMMAND, PEACH2_REG_DMA(ch, r),
                              "DMA control value " + hex(val), {.channel = ch, .value = val});
            return;
        }
        if (start)
            this->start(ch, start == PEACH2_DMA_CTRL_START_REG);
        return;
    }
    case PEACH2_DMA_STATUS:
        c.status &= ~(val & PEACH2_DMA_ST_ENDED);
        if (!(c.status & PEACH2_DMA_ST_ENDED))
            c.status &= PEACH2_DMA_ST_BUSY;  // the code goes with the bit
        return;
    case PEACH2_DMA_HEAD_LO: set_lo32(c.head, val); return;
    case PEACH2_DMA_HEAD_HI: set_hi32(c.head, val); return;
    case PEACH2_DMA_SRC_LO: set_lo32(c.src, val); return;
    case PEACH2_DMA_SRC_HI: set_hi32(c.src, val); return;
    case PEACH2_DMA_DST_LO: set_lo32(c.dst, val); return;
    case PEACH2_DMA_DST_HI: set_hi32(c.dst, val); return;
    case PEACH2_DMA_LEN: c.len = val; return;
    case PEACH2_DMA_BLOCK: c.block = val; return;
    case PEACH2_DMA_FLAGS: c.flags = val; return;
    default:
        card_.raise_error(PEACH2_ERR_BAD_REG, PEACH2_REG_DMA(ch, r),
                          "write to read-only DMA register " + hex(r), {.channel = ch, .value = 4});
    }
}

// ---- a run -----------------------------------------------------------------------

void DmaEngine::start(unsigned ch, bool reg_mode) {
    DmaChannel& c = chans_[ch];
    if (c.busy()) {
        card_.raise_error(PEACH2_ERR_DMA_BUSY, PEACH2_REG_DMA(ch, PEACH2_DMA_CTRL),
                          "DMA channel " + std::to_string(ch) + " started while busy",
                          {.channel = ch});
        return;
    }
    c.status = PEACH2_DMA_ST_BUSY;
    c.reg_mode = reg_mode;
    c.stalled = ch == PEACH2_DMA_PROXY_CHANNEL && fault_proxy_stall_ > 0;
    if (c.stalled)
        --fault_proxy_stall_;
    c.have_desc = false;
    c.progress = 0;
    c.fetched = 0;
    c.done_descs = 0;
    c.bytes = 0;
    c.err_desc = 0;
    c.cur_loc = c.head;
    c.visited_card.assign(PEACH2_DESC_MAX, false);
    c.visited_host.clear();
    c.run = runs_++;
    card_.trace().record([&] {
        const auto mode = reg_mode                          ? trace::DmaMode::Register
                          : (c.head & PEACH2_DMA_HEAD_HOST) ? trace::DmaMode::ChainHost
                                                            : trace::DmaMode::ChainCard;
        return trace::dma_start(static_cast<uint8_t>(ch), mode, reg_mode ? 0 : c.head, c.run);
    });
    if (reg_mode) {
        // Register mode is one descriptor that lives in the registers.
        c.cur = peach2_desc{c.src,
                            c.dst,
                            c.len,
                            static_cast<uint16_t>(c.block),
                            static_cast<uint16_t>(c.block >> 16),
                            0,
                            c.flags | PEACH2_DESC_LAST};
        if ((c.flags & (PEACH2_DESC_LAST | PEACH2_DESC_NEXT_HOST)) != 0) {
            finish(ch, PEACH2_ERR_DMA_BAD_DESC);
            return;
        }
        if (const peach2_err e = validate(c.cur); e != PEACH2_ERR_NONE) {
            finish(ch, e);
            return;
        }
        c.have_desc = true;
        trace_desc(ch);
    }
    card_.schedule_service();
}

void HostDescsRead::clear() {
    read_.clear();
}

bool HostDescsRead::read(uint64_t addr) {
    const uint64_t end = addr + PEACH2_DESC_SIZE;
    if (const auto last = read_.find(last_); last != read_.end() && last->second == addr) {
        // The next descriptor of an array: grows the last interval unless
        // the following one starts inside it.
        const auto next = std::next(last);
        if (next != read_.end() && next->first < end)
            return false;
        last->second = end;
        return true;
    }
    // Only the last interval starting before `end` can overlap: they are disjoint.
    const auto after = read_.lower_bound(end);
    if (after != read_.begin() && std::prev(after)->second > addr)
        return false;
    read_.emplace_hint(after, addr, end);
    last_ = addr;
    return true;
}

peach2_err DmaEngine::fetch(DmaChannel& c) {
    if (++c.fetched > PEACH2_DMA_MAX_CHAIN)
        return PEACH2_ERR_DMA_CHAIN_LONG;
    uint8_t raw[PEACH2_DESC_SIZE];
    if (c.cur_loc & PEACH2_DMA_HEAD_HOST) {
        const uint64_t addr = c.cur_loc & ~PEACH2_DMA_HEAD_HOST;
        if (addr % 16)
            return PEACH2_ERR_DMA_ALIGN;
        if (!c.visited_host.read(addr))
            return PEACH2_ERR_DMA_LOOP;
        if (!card_.host_read(addr, raw, sizeof(raw)))
            return PEACH2_ERR_DMA_READ;
    } else {
        if (c.cur_loc >= PEACH2_DESC_MAX)
            return PEACH2_ERR_DMA_BAD_INDEX;
        if (c.visited_card[c.cur_loc])
            return PEACH2_ERR_DMA_LOOP;
        c.visited_card[c.cur_loc] = true;
        std::memcpy(raw, card_.desc_ram().data() + c.cur_loc * PEACH2_DESC_SIZE, sizeof(raw));
    }
    c.cur = decode_desc(raw);
    c.progress = 0;
    return validate(c.cur);
}

// The descriptor the channel is about to run (fetched or from the registers).
void DmaEngine::trace_desc(unsigned ch) {
    const DmaChannel& c = chans_[ch];
    card_.trace().record([&] {
        const auto where = c.reg_mode                           ? trace::DmaMode::Register
                           : (c.cur_loc & PEACH2_DMA_HEAD_HOST) ? trace::DmaMode::ChainHost
                                                                : trace::DmaMode::ChainCard;
        return trace::dma_desc(static_cast<uint8_t>(ch), where, c.run, c.cur.src, c.cur.dst,
                               c.cur.len, c.cur.burst, c.cur.gap, c.cur.flags);
    });
}

// What the trace says a packet of channel ch's current descriptor is for.
static Made made_by(unsigned ch, const DmaChannel& c) {
    return {(c.cur.flags & PEACH2_DESC_IMM) ? trace::Origin::DmaImm : trace::Origin::Dma,
            static_cast<uint8_t>(ch), c.run, c.done_descs};
}

// An IMM descriptor: its value, written at once. True when done.
bool DmaEngine::step_imm(unsigned ch) {
    DmaChannel& c = chans_[ch];
    uint8_t value[8];
    store_le(value, c.cur.src, 8);
    if (const peach2_err e = card_.route_write(c.cur.dst, {value, c.cur.len}, made_by(ch, c));
        e != PEACH2_ERR_NONE) {
        finish(ch, e);
        return false;
    }
    c.bytes += c.cur.len;
    c.progress = c.cur.len;
    return true;
}

// A data descriptor, piece by piece while the budget lasts and the link the
// next piece leaves by (if any) is not backlogged. True when done; false
// when paused, waiting or failed.
bool DmaEngine::step_data(unsigned ch, uint64_t& budget) {
    DmaChannel& c = chans_[ch];
    const peach2_desc& d = c.cur;
    bool runs = true;
    while (c.progress < d.len) {
        if (budget == 0)
            return false;
        // Where the next byte comes from and goes to (block-stride aware).
        uint64_t src = d.src + c.progress, dst = d.dst + c.progress;
        uint64_t piece = d.len - c.progress;
        if (d.burst) {
            const uint64_t block = c.progress / d.burst, within = c.progress % d.burst;
            const uint64_t step = static_cast<uint64_t>(d.burst) + d.gap;
            src = d.src + block * ((d.flags & PEACH2_DESC_STRIDE_SRC) ? step : d.burst) + within;
            dst = d.dst + block * ((d.flags & PEACH2_DESC_STRIDE_DST) ? step : d.burst) + within;
            piece = std::min<uint64_t>(piece, d.burst - within);
        }
        // What is contiguous at both ends (`span`) travels as packets of
        // at most a page that do not cross one.
        const uint64_t span = piece;
        piece = std::min<uint64_t>(piece, kPage - dst % kPage);
        if (card_.link_backlogged_for(dst)) {
            c.waiting = true;
            return false;
        }
        // Straight to the neighbour's memory if the transport can (one
        // copy): the whole span the budget allows at once, counted as the
        // packets it stands for (after a refusal, page by page for the rest
        // of this descriptor in this slice), else this packet's piece; else
        // read into a packet and route it. A run the budget cuts short ends
        // on a page, where a packet would (dst + piece is on one whenever
        // piece < span): a page split between two slices would count as two
        // packets.
        uint64_t run = std::min(span, std::max(budget, piece));
        if (run < span)
            run -= (dst + run) % kPage;
        bool direct = false;
        if (runs && run > piece) {
            direct = card_.copy_direct(dst, src, run, packets_in(dst, run));
            runs = direct;
            piece = direct ? run : piece;
        }
        if (!direct && !card_.copy_direct(dst, src, piece, 1)) {
            // A packet's bytes: at most a page (kept, not allocated per packet).
            if (packet_.size() < piece)
                packet_.resize(kPage);
            if (!card_.host_read(src, packet_.data(), piece)) {
                finish(ch, PEACH2_ERR_DMA_READ);
                return false;
            }
            if (const peach2_err e =
                    card_.route_write(dst, {packet_.data(), piece}, made_by(ch, c));
                e != PEACH2_ERR_NONE) {
                finish(ch, e);
                return false;
            }
        }
        c.progress += piece;
        c.bytes += piece;
        budget -= std::min(budget, piece);
    }
    return true;
}

// Move part of channel ch's work. Returns false when the channel must stop
// for this slice (finished, failed, out of budget or waiting for a link).
bool DmaEngine::step(unsigned ch, uint64_t& budget) {
    DmaChannel& c = chans_[ch];
    if (!c.have_desc) {
        if (const peach2_err e = fetch(c); e != PEACH2_ERR_NONE) {
            finish(ch, e);
            return false;
        }
        c.have_desc = true;
        trace_desc(ch);
    }
    const bool done = (c.cur.flags & PEACH2_DESC_IMM) ? step_imm(ch) : step_data(ch, budget);
    if (!done)
        return false;
    c.have_desc = false;
    ++c.done_descs;
    if (c.cur.flags & PEACH2_DESC_LAST) {
        finish(ch, PEACH2_ERR_NONE);
        return false;
    }
    c.cur_loc =
        (c.cur.flags & PEACH2_DESC_NEXT_HOST) ? (PEACH2_DMA_HEAD_HOST | c.cur.next) : c.cur.next;
    return true;
}

void DmaEngine::service(uint64_t max_bytes) {
    bool more = false;
    const uint64_t slice = max_bytes ? max_bytes : kBytesPerRun;
    for (unsigned ch = 0; ch < PEACH2_DMA_ENGINES; ++ch) {
        DmaChannel& c = chans_[ch];
        if (!c.busy() || c.stalled)
            continue;
        uint64_t budget = slice;
        const uint32_t descs_at_start = c.done_descs;
        c.waiting = false;
        while (c.busy() && c.done_descs - descs_at_start < kDescsPerRun && step(ch, budget)) {
        }
        more |= c.busy() && !c.waiting;
    }
    // Continue after a pause; a channel waiting on a full link is resumed
    // when that link drains or goes down (Card::links_drained) instead.
    if (more)
        card_.defer_service();
}

void DmaEngine::finish(unsigned ch, peach2_err code) {
    DmaChannel& c = chans_[ch];
    if (code == PEACH2_ERR_NONE) {
        c.status = PEACH2_DMA_ST_DONE;
    } else {
        c.status = PEACH2_DMA_ST_ERROR | (static_cast<uint32_t>(code) << PEACH2_DMA_ST_CODE_SHIFT);
        c.err_desc = c.reg_mode ? 0 : c.cur_loc;
        // Routing and delivery errors were raised where they happened; the
        // DMA's own errors are raised here.
        if (code >= PEACH2_ERR_DMA_ALIGN)
            card_.raise_error(code, c.err_desc,
                              "DMA channel " + std::to_string(ch) + " stopped after " +
                                  std::to_string(c.done_descs) + " descriptors",
                              {.channel = ch, .value = c.done_descs});
    }
    c.have_desc = false;
    c.stalled = false;
    c.waiting = false;
    c.visited_host.clear();
    card_.trace().record([&] {
        return trace::dma_done(static_cast<uint8_t>(ch), c.run, static_cast<uint8_t>(code), c.bytes,
                               c.done_descs);
    });
    card_.raise_interrupt(PEACH2_INT_DMA(ch));
}

}  // namespace peach2
