// The card's chaining DMA controller (docs/hardware.md §6): four user
// channels and the read proxy's, each running a chain of descriptors (in
// descriptor RAM or host memory) or one register-mode transfer.
//
// Work runs only from service() (QEMU: a bottom half, or the vCPU right
// after the register write that started a run), never inside a register
// write or a window store, and each slice is bounded: a chain of
// any length, or a descriptor loop, cannot hold the emulator for long, and
// loops end with an error. Data leaves through the card's routing like PIO
// (Card::route_write); a run whose next write leaves by a backlogged link
// waits for that link alone (Card::link_backlogged_for), the others go on.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "peach2/peach2_hw.h"

namespace peach2 {

class Card;

// The host memory a run's chain has read descriptors from, to find loops:
// a chain that reads a descriptor byte it read before loops. Kept as
// intervals of bytes read, disjoint, so that a chain the driver lays out
// as one array read in order is one interval and costs no allocation per
// descriptor; each jump elsewhere starts another.
class HostDescsRead {
public:
    void clear();
    // Record [addr, addr + PEACH2_DESC_SIZE); false if any of it was read before.
    bool read(uint64_t addr);

private:
    std::map<uint64_t, uint64_t> read_;  // start -> end
    uint64_t last_ = 0;                   // start of the last descriptor's interval
};

// One DMA channel: its registers and, while busy, where it is in its work.
struct DmaChannel {
    // Registers.
    uint32_t status = 0;  // PEACH2_DMA_ST_* and the error code
    uint64_t head = 0;
    uint64_t src = 0, dst = 0;
    uint32_t len = 0, block = 0, flags = 0;
    uint32_t done_descs = 0;
    uint64_t err_desc = 0;
    uint64_t bytes = 0;
    // Run state.
    bool reg_mode = false;
    bool stalled = false;    // fault injection: no progress until aborted
    bool waiting = false;    // for a backlogged link (Card::links_drained resumes)
    bool have_desc = false;  // `cur` is fetched and validated
    peach2_desc cur{};
    uint64_t cur_loc = 0;   // index, or host address | PEACH2_DMA_HEAD_HOST
    uint64_t progress = 0;  // bytes of `cur` done
    uint32_t fetched = 0;   // descriptors fetched in this run
    uint64_t run = 0;       // the run's number on this card (trace records)
    std::vector<bool> visited_card;
    HostDescsRead visited_host;
    bool busy() const { return status & PEACH2_DMA_ST_BUSY; }
};

class DmaEngine {
public:
    explicit DmaEngine(Card& card) : card_(card) {}

    // A bounded slice of every busy channel's work: at most max_bytes each
    // (0: the usual slice).
    void service(uint64_t max_bytes = 0);
    bool busy() const;

    // Reset stops every channel without completing it. Registers: the
    // channels' (PEACH2_REG_DMA) and FAULT_PROXY_STALL.
    void reset();
    bool reg_read(uint64_t off, uint32_t& v) const;
    bool reg_write(uint64_t off, uint32_t v);

private:
    static bool chan_reg(uint64_t off, unsigned& ch, uint32_t& r);
    uint32_t chan_reg_read(unsigned ch, uint32_t r) const;
    void chan_reg_write(unsigned ch, uint32_t r, uint32_t val);
    void start(unsigned ch, bool reg_mode);
    bool step(unsigned ch, uint64_t& budget);  // false: stop this channel for now
    bool step_imm(unsigned ch);
    bool step_data(unsigned ch, uint64_t& budget);
    peach2_err fetch(DmaChannel& c);
    void trace_desc(unsigned ch);
    void finish(unsigned ch, peach2_err code);

    Card& card_;
    std::array<DmaChannel, PEACH2_DMA_ENGINES> chans_{};
    uint32_t fault_proxy_stall_ = 0;  // PEACH2_REG_FAULT_PROXY_STALL
    uint64_t runs_ = 0;  // runs started; kept over a reset, so trace run numbers never repeat
    std::vector<uint8_t> packet_;  // a routed packet's bytes, read from host memory
};

}  // namespace peach2
