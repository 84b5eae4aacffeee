// SPDX-License-Identifier: MIT
// Checking big messages cheaply but completely. A message is cut into 4 KiB
// blocks, the largest unit the card writes at once (a DMA packet never
// crosses a 4 KiB destination boundary). The sender reuses a few source
// buffers filled once with a pattern, and before each send stamps the first
// 8 bytes of every block with a value unique to the message. The receiver
// checks every stamp (so no block may be stale: left over from an earlier
// message) and a position-dependent checksum of all other words against
// the pattern's (so every byte is covered), in one pass over the memory.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tcatools {

inline constexpr std::size_t kStampBlock = 4096;

struct BlockSum {
    std::uint64_t a = 0, b = 0;  // Fletcher-style: sum, and sum of sums
    bool operator==(const BlockSum&) const = default;
};

// The stamp of block `block` of the message with seed `message_seed`.
std::uint64_t block_stamp(std::uint64_t message_seed, std::uint64_t block) noexcept;

// Writes the stamps of a message into `buf` (len bytes, len % 8 == 0).
void stamp_blocks(unsigned char* buf, std::size_t len, std::uint64_t message_seed) noexcept;

// Checksum of everything but the stamp words of fill_pattern(seed) over len
// bytes (len % 8 == 0), computed without materialising the pattern.
BlockSum pattern_sum(std::uint64_t pattern_seed, std::size_t len) noexcept;

// Checks `buf` holds the pattern with the message's stamps: true if so;
// otherwise *bad_block is the first block whose stamp is wrong, or
// (std::size_t)-1 when every stamp is right and only the sum differs.
bool check_blocks(const volatile unsigned char* buf, std::size_t len, std::uint64_t message_seed,
                  const BlockSum& expected, std::size_t* bad_block) noexcept;

}  // namespace tcatools
