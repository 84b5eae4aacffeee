// SPDX-License-Identifier: MIT
#include "block_sum.hpp"

#include <cstring>

#include "pattern.hpp"

namespace tcatools {
namespace {

constexpr std::size_t kWordsPerBlock = kStampBlock / 8;

inline void add(BlockSum& s, std::uint64_t w) noexcept {
    s.a += w;
    s.b += s.a;
}

}  // namespace

std::uint64_t block_stamp(std::uint64_t message_seed, std::uint64_t block) noexcept {
    return mix(message_seed ^ mix(block + 0x5354414d50ull /* "STAMP" */));
}

void stamp_blocks(unsigned char* buf, std::size_t len, std::uint64_t message_seed) noexcept {
    for (std::size_t b = 0; b * kStampBlock < len; ++b) {
        const std::uint64_t v = block_stamp(message_seed, b);
        std::memcpy(buf + b * kStampBlock, &v, 8);
    }
}

BlockSum pattern_sum(std::uint64_t pattern_seed, std::size_t len) noexcept {
    BlockSum s;
    for (std::size_t i = 0; i < len / 8; ++i)
        if (i % kWordsPerBlock != 0)
            add(s, pattern_word(pattern_seed, i));
    return s;
}

bool check_blocks(const volatile unsigned char* buf, std::size_t len, std::uint64_t message_seed,
                  const BlockSum& expected, std::size_t* bad_block) noexcept {
    // The buffer is written by the card; plain loads after the acquire load
    // of the completion word are enough, the volatile cast only keeps the
    // compiler from assuming it knows the contents.
    const auto* w = reinterpret_cast<const std::uint64_t*>(const_cast<const unsigned char*>(buf));
    BlockSum s;
    for (std::size_t i = 0; i < len / 8; ++i) {
        if (i % kWordsPerBlock == 0) {
            if (w[i] != block_stamp(message_seed, i / kWordsPerBlock)) {
                *bad_block = i / kWordsPerBlock;
                return false;
            }
            continue;
        }
        add(s, w[i]);
    }
    *bad_block = static_cast<std::size_t>(-1);
    return s == expected;
}

}  // namespace tcatools
