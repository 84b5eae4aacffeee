// The card's chaining DMA controller (docs/hardware.md, "DMA controller").
//
// Work runs only from flush() (QEMU: a bottom half), never inside a register
// write, and each run is bounded: a chain of any length, or a descriptor
// loop, cannot hold the emulator for long, and loops end with an error.
#include <algorithm>
#include <cstring>

#include "card.h"
#include "peach2/peach2_dma_rules.h"
#include "util.h"

namespace peach2 {
namespace {

// Work per flush() for each channel, so a long transfer never stalls the vCPU
// of this node for long; the rest follows in the next run.
constexpr uint64_t kBytesPerRun = 512 * 1024;
constexpr uint32_t kDescsPerRun = 256;
// Remote transfers pause while a link has this much queued (flow control
// instead of dropping packets).
constexpr size_t kTxBacklog = 4u << 20;
constexpr uint64_t kPage = 4096;

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

}  // namespace

uint32_t Card::dma_reg_read(unsigned ch, uint32_t r) const {
    const DmaChannel& c = dma_[ch];
    switch (r) {
    case PEACH2_DMA_STATUS: return c.status;
    case PEACH2_DMA_HEAD_LO: return static_cast<uint32_t>(c.head);
    case PEACH2_DMA_HEAD_HI: return static_cast<uint32_t>(c.head >> 32);
    case PEACH2_DMA_SRC_LO: return static_cast<uint32_t>(c.src);
    case PEACH2_DMA_SRC_HI: return static_cast<uint32_t>(c.src >> 32);
    case PEACH2_DMA_DST_LO: return static_cast<uint32_t>(c.dst);
    case PEACH2_DMA_DST_HI: return static_cast<uint32_t>(c.dst >> 32);
    case PEACH2_DMA_LEN: return c.len;
    case PEACH2_DMA_BLOCK: return c.block;
    case PEACH2_DMA_FLAGS: return c.flags;
    case PEACH2_DMA_DONE_DESCS: return c.done_descs;
    case PEACH2_DMA_ERR_DESC_LO: return static_cast<uint32_t>(c.err_desc);
    case PEACH2_DMA_ERR_DESC_HI: return static_cast<uint32_t>(c.err_desc >> 32);
    case PEACH2_DMA_BYTES_LO: return static_cast<uint32_t>(c.bytes);
    case PEACH2_DMA_BYTES_HI: return static_cast<uint32_t>(c.bytes >> 32);
    default: return 0;  // CTRL is write-only
    }
}

void Card::dma_reg_write(unsigned ch, uint32_t r, uint32_t val) {
    DmaChannel& c = dma_[ch];
    const auto set_lo = [](uint64_t& v, uint32_t x) { v = (v & ~0xffffffffull) | x; };
    const auto set_hi = [](uint64_t& v, uint32_t x) {
        v = (v & 0xffffffffull) | static_cast<uint64_t>(x) << 32;
    };
    // Parameters of a running transfer cannot change under it.
    if (r != PEACH2_DMA_CTRL && r != PEACH2_DMA_STATUS && c.busy()) {
        raise_error(PEACH2_ERR_DMA_BUSY, PEACH2_REG_DMA(ch, r),
                    "DMA channel " + std::to_string(ch) + " register written while busy");
        return;
    }
    switch (r) {
    case PEACH2_DMA_CTRL: {
        const uint32_t start = val & (PEACH2_DMA_CTRL_START_CHAIN | PEACH2_DMA_CTRL_START_REG);
        if (val & PEACH2_DMA_CTRL_ABORT) {
            if (c.busy())
                dma_finish(ch, PEACH2_ERR_DMA_ABORTED);
            return;
        }
        if (val & ~(PEACH2_DMA_CTRL_START_CHAIN | PEACH2_DMA_CTRL_START_REG) ||
            start == (PEACH2_DMA_CTRL_START_CHAIN | PEACH2_DMA_CTRL_START_REG)) {
            raise_error(PEACH2_ERR_BAD_COMMAND, PEACH2_REG_DMA(ch, r),
                        "DMA control value " + hex(val));
            return;
        }
        if (start)
            dma_start(ch, start == PEACH2_DMA_CTRL_START_REG);
        return;
    }
    case PEACH2_DMA_STATUS:
        c.status &= ~(val & (PEACH2_DMA_ST_DONE | PEACH2_DMA_ST_ERROR));
        if (!(c.status & (PEACH2_DMA_ST_DONE | PEACH2_DMA_ST_ERROR)))
            c.status &= PEACH2_DMA_ST_BUSY;  // the code goes with the bit
        return;
    case PEACH2_DMA_HEAD_LO: set_lo(c.head, val); return;
    case PEACH2_DMA_HEAD_HI: set_hi(c.head, val); return;
    case PEACH2_DMA_SRC_LO: set_lo(c.src, val); return;
    case PEACH2_DMA_SRC_HI: set_hi(c.src, val); return;
    case PEACH2_DMA_DST_LO: set_lo(c.dst, val); return;
    case PEACH2_DMA_DST_HI: set_hi(c.dst, val); return;
    case PEACH2_DMA_LEN: c.len = val; return;
    case PEACH2_DMA_BLOCK: c.block = val; return;
    case PEACH2_DMA_FLAGS: c.flags = val; return;
    default:
        raise_error(PEACH2_ERR_BAD_REG, PEACH2_REG_DMA(ch, r),
                    "write to read-only DMA register " + hex(r));
    }
}

void Card::dma_start(unsigned ch, bool reg_mode) {
    DmaChannel& c = dma_[ch];
    if (c.busy()) {
        raise_error(PEACH2_ERR_DMA_BUSY, PEACH2_REG_DMA(ch, PEACH2_DMA_CTRL),
                    "DMA channel " + std::to_string(ch) + " started while busy");
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
            dma_finish(ch, PEACH2_ERR_DMA_BAD_DESC);
            return;
        }
        if (const peach2_err e = dma_validate(c.cur); e != PEACH2_ERR_NONE) {
            dma_finish(ch, e);
            return;
        }
        c.have_desc = true;
    }
    kick();
}

// The PEACH2 restrictions (peach2_dma_rules.h, shared with the driver and
// libtca), checked before a single byte moves, so a bad request writes
// nothing.
peach2_err Card::dma_validate(const peach2_desc& d) const {
    return peach2_dma_rule_err(peach2_desc_rule(&d));
}

peach2_err Card::dma_fetch(DmaChannel& c) {
    if (++c.fetched > PEACH2_DMA_MAX_CHAIN)
        return PEACH2_ERR_DMA_CHAIN_LONG;
    uint8_t raw[PEACH2_DESC_SIZE];
    if (c.cur_loc & PEACH2_DMA_HEAD_HOST) {
        const uint64_t addr = c.cur_loc & ~PEACH2_DMA_HEAD_HOST;
        if (addr % 16)
            return PEACH2_ERR_DMA_ALIGN;
        if (!c.visited_host.insert(addr).second)
            return PEACH2_ERR_DMA_LOOP;
        if (!host_.dma_read || host_.dma_read(host_.opaque, addr, raw, sizeof(raw)) != 0)
            return PEACH2_ERR_DMA_READ;
    } else {
        if (c.cur_loc >= PEACH2_DESC_MAX)
            return PEACH2_ERR_DMA_BAD_INDEX;
        if (c.visited_card[c.cur_loc])
            return PEACH2_ERR_DMA_LOOP;
        c.visited_card[c.cur_loc] = true;
        std::memcpy(raw, cardmem_.data() + PEACH2_DESC_RAM_OFF + c.cur_loc * PEACH2_DESC_SIZE,
                    sizeof(raw));
    }
    c.cur = decode_desc(raw);
    c.progress = 0;
    return dma_validate(c.cur);
}

bool Card::tx_backlogged() const {
    return std::any_of(links_.begin(), links_.end(),
                       [](const Link& l) { return l.tx.size() > kTxBacklog; });
}

// Move part of channel ch's work. Returns false when the channel must stop
// for this run (finished, failed, out of budget or waiting for a link).
bool Card::dma_step(unsigned ch, uint64_t& budget) {
    DmaChannel& c = dma_[ch];
    if (!c.have_desc) {
        if (const peach2_err e = dma_fetch(c); e != PEACH2_ERR_NONE) {
            dma_finish(ch, e);
            return false;
        }
        c.have_desc = true;
    }
    const peach2_desc& d = c.cur;
    if (d.flags & PEACH2_DESC_IMM) {
        uint8_t value[8];
        store_le(value, d.src, 8);
        if (const peach2_err e = route_write(d.dst, {value, d.len}, 0, cfg_.node_id);
            e != PEACH2_ERR_NONE) {
            dma_finish(ch, e);
            return false;
        }
        c.bytes += d.len;
        c.progress = d.len;
    }
    std::vector<uint8_t> buf;
    while (c.progress < d.len) {
        if (budget == 0 || tx_backlogged())
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
        piece = std::min<uint64_t>({piece, PEACH2_PKT_MAX_PAYLOAD, kPage - dst % kPage});
        buf.resize(piece);
        if (!host_.dma_read || host_.dma_read(host_.opaque, src, buf.data(), piece) != 0) {
            dma_finish(ch, PEACH2_ERR_DMA_READ);
            return false;
        }
        if (const peach2_err e = route_write(dst, buf, 0, cfg_.node_id); e != PEACH2_ERR_NONE) {
            dma_finish(ch, e);
            return false;
        }
        c.progress += piece;
        c.bytes += piece;
        budget -= std::min(budget, piece);
    }
    // Descriptor complete.
    c.have_desc = false;
    ++c.done_descs;
    if (d.flags & PEACH2_DESC_LAST) {
        dma_finish(ch, PEACH2_ERR_NONE);
        return false;
    }
    c.cur_loc = (d.flags & PEACH2_DESC_NEXT_HOST) ? (PEACH2_DMA_HEAD_HOST | d.next) : d.next;
    return true;
}

void Card::dma_run() {
    bool more = false;
    for (unsigned ch = 0; ch < PEACH2_DMA_ENGINES; ++ch) {
        DmaChannel& c = dma_[ch];
        if (!c.busy() || c.stalled)
            continue;
        uint64_t budget = kBytesPerRun;
        const uint32_t descs_at_start = c.done_descs;
        while (c.busy() && c.done_descs - descs_at_start < kDescsPerRun && dma_step(ch, budget)) {
        }
        more |= c.busy() && !tx_backlogged();
    }
    // Continue in a later run; a channel waiting on a full link is kicked by
    // link_tx_consume() instead.
    if (more) {
        if (host_.defer && !quiet_)
            host_.defer(host_.opaque);
        else
            kick();
    }
}

void Card::dma_finish(unsigned ch, peach2_err code) {
    DmaChannel& c = dma_[ch];
    if (code == PEACH2_ERR_NONE) {
        c.status = PEACH2_DMA_ST_DONE;
    } else {
        c.status = PEACH2_DMA_ST_ERROR | (static_cast<uint32_t>(code) << PEACH2_DMA_ST_CODE_SHIFT);
        c.err_desc = c.reg_mode ? 0 : c.cur_loc;
        // Routing and delivery errors were raised where they happened; the
        // DMA's own errors are raised here.
        if (code >= PEACH2_ERR_DMA_ALIGN)
            raise_error(code, c.err_desc,
                        "DMA channel " + std::to_string(ch) + " stopped after " +
                            std::to_string(c.done_descs) + " descriptors");
    }
    c.have_desc = false;
    c.stalled = false;
    c.visited_host.clear();
    raise_interrupt(PEACH2_INT_DMA(ch));
}

void Card::dma_reset() {
    for (auto& c : dma_)
        c = DmaChannel{};
}

}  // namespace peach2
