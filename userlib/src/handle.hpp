// SPDX-License-Identifier: MIT
// tcaHandle construction, validation and address translation, and the hash
// behind its check value (also the mailbox record's checksum). Pure
// functions of their arguments (no device), so they are unit-tested
// directly and also work on handles received from other nodes; handle.cpp
// also holds the C API on handles alone (tcaHandleValidate, tcaSubHandle,
// tcaRemoteAddress).
#pragma once

#include <tca/tca.h>

#include <cstdint>
#include <span>

namespace tca {

// splitmix64's finaliser: a bijection on 64-bit values with full avalanche,
// so two inputs differing in any bit give unrelated outputs.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

// Position-dependent: word i contributes mix64(seed ^ w ^ i·k), so swapped
// or shifted words change the result as well as changed ones.
constexpr std::uint64_t hash_words(std::span<const std::uint64_t> words,
                                   std::uint64_t seed) noexcept {
    std::uint64_t h = mix64(seed ^ words.size());
    for (std::size_t i = 0; i < words.size(); ++i)
        h = mix64(h ^ words[i] ^ (0x9e3779b97f4a7c15ull * (i + 1)));
    return h;
}

static_assert(sizeof(tcaChunk) == 16);
static_assert(sizeof(tcaHandle) == 256, "tcaHandle is part of the wire format");

// The check value a well-formed handle carries (hash of every other byte).
std::uint32_t handle_check(const tcaHandle& h) noexcept;

// 0 or TCA_EBADHANDLE: magic, version, check, node, chunk geometry (each
// piece non-empty, on `node`, inside its host-memory region; lengths add up
// to size; unused entries zero; export_key 0 when export_id is 0).
int validate_handle(const tcaHandle& h) noexcept;

// Describes [offset, offset + size) of a buffer of node `node` whose pieces,
// in buffer order, are `pieces`. size == 0 means "to the end". TCA_ERANGE,
// TCA_ETOOMANYCHUNKS, or TCA_EBADHANDLE when the pieces themselves are bad.
int make_handle(std::uint32_t node, std::span<const tcaChunk> pieces, std::uint64_t offset,
                std::uint64_t size, tcaHandle* out) noexcept;

// Sets the export a handle names (0/0: none) and recomputes its check.
void attach_export(tcaHandle* h, std::uint32_t export_id, std::uint32_t key) noexcept;

// Global address of byte `offset` (requires a valid handle, offset < size).
int handle_address(const tcaHandle& h, std::uint64_t offset, std::uint64_t* global_addr) noexcept;

// Splits [offset, offset + len) of a valid handle into its physically
// contiguous pieces and calls fn(global_addr, position_in_range, piece_len)
// for each, in order. The caller has checked the range.
template <class Fn>
void for_each_piece(const tcaHandle& h, std::uint64_t offset, std::uint64_t len, Fn&& fn) {
    std::uint64_t done = 0;
    for (unsigned i = 0; i < h.nr_chunks && done < len; ++i) {
        const tcaChunk& c = h.chunks[i];
        if (offset >= c.len) {
            offset -= c.len;
            continue;
        }
        std::uint64_t n = c.len - offset;
        if (n > len - done)
            n = len - done;
        fn(c.global_addr + offset, done, n);
        done += n;
        offset = 0;
    }
}
}  // namespace tca
