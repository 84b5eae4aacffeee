// SPDX-License-Identifier: MIT
// The placement checks (pio recv/send, dma recv/send): a receiver owns
// memory laid out as [guard | data | guard] full of canaries; after each
// write the sender makes it checks that exactly the addressed bytes
// changed, to the right values, and answers with an Ack through PIO. The
// sender makes the next write only after that answer.
#pragma once

#include <cstdint>

namespace tcacheck {

enum Status : std::uint64_t {
    kOk = 0,
    kTargetMismatch = 1,  // a byte that should have been written is wrong
    kStrayWrite = 2,      // a byte outside the write (data or guard) changed
    kBadRequest = 3,      // the description of the write is out of range or sequence
};

constexpr const char* status_text(std::uint64_t s) {
    switch (s) {
    case kOk: return "ok";
    case kTargetMismatch: return "wrong data inside the written range";
    case kStrayWrite: return "a byte outside the written range changed";
    case kBadRequest: return "bad request";
    default: return "?";
    }
}

// The receiver's answer to write k, in the sender's memory.
struct Ack {
    std::uint64_t status;  // Status
    std::uint64_t detail;  // first bad position (two's complement)
    std::uint64_t seq;     // k + 1 (or the end marker), stored last
};

inline constexpr std::uint64_t kEndBit = 1ull << 63;  // seq of the end: kEndBit | writes

}  // namespace tcacheck
