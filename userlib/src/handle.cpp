// SPDX-License-Identifier: MIT
#include "handle.hpp"

#include <peach2/peach2_hw.h>

#include <array>
#include <bit>
#include <cstddef>
#include <cerrno>
#include <cstring>

#include "range.hpp"

namespace tca {
namespace {

constexpr std::uint64_t kCheckSeed = 0x7463612d68646c31ull;  // "tca-hdl1"

constexpr std::size_t kWords = sizeof(tcaHandle) / 8;

std::uint64_t word_at(const tcaHandle& h, std::size_t i) noexcept {
    std::uint64_t w;
    std::memcpy(&w, reinterpret_cast<const unsigned char*>(&h) + 8 * i, 8);
    return w;
}

// A piece must sit entirely in the host-memory region of its node's slice:
// that is the only region tcaMalloc memory can come from, and it keeps a
// bad handle from steering stores at another node or at a card region.
bool piece_ok(std::uint32_t node, const tcaChunk& c) noexcept {
    if (c.len == 0 || PEACH2_ADDR_NODE(c.global_addr) != node)
        return false;
    return range_fits(PEACH2_ADDR_OFFSET(c.global_addr), c.len, PEACH2_HOST_SIZE);
}

}  // namespace

std::uint32_t handle_check(const tcaHandle& h) noexcept {
    // The hash of the handle's words with `check` read as 0, without a copy.
    static_assert(offsetof(tcaHandle, check) == 12 && sizeof(h.check) == 4);
    constexpr std::uint64_t kCheckBits = std::endian::native == std::endian::little
                                             ? 0xffffffff00000000ull
                                             : 0x00000000ffffffffull;
    std::array<std::uint64_t, kWords> w;
    for (std::size_t i = 0; i < kWords; ++i)
        w[i] = word_at(h, i);
    w[1] &= ~kCheckBits;
    const std::uint64_t x = hash_words(w, kCheckSeed);
    return static_cast<std::uint32_t>(x ^ (x >> 32));
}

namespace {

int validate_fields(const tcaHandle& h) noexcept {
    if (h.magic != TCA_HANDLE_MAGIC || h.version != TCA_HANDLE_VERSION)
        return TCA_EBADHANDLE;
    if (h.nr_chunks == 0 || h.nr_chunks > TCA_HANDLE_MAX_CHUNKS)
        return TCA_EBADHANDLE;
    if (h.node >= PEACH2_MAX_NODES || h.size == 0 || (h.export_id == 0 && h.export_key != 0))
        return TCA_EBADHANDLE;
    if (h.check != handle_check(h))
        return TCA_EBADHANDLE;
    std::uint64_t total = 0;
    for (unsigned i = 0; i < TCA_HANDLE_MAX_CHUNKS; ++i) {
        const tcaChunk& c = h.chunks[i];
        if (i >= h.nr_chunks) {
            if (c.global_addr != 0 || c.len != 0)
                return TCA_EBADHANDLE;
            continue;
        }
        if (!piece_ok(h.node, c) || !checked_add(total, c.len, &total))
            return TCA_EBADHANDLE;
    }
    return total == h.size ? 0 : TCA_EBADHANDLE;
}

// Every put and get validates its handle, and a program names the same few
// handles over and over: the hash costs more than the rest of a small put
// under TCG (~0.3-0.7 us a handle). A thread remembers the last handles it
// found valid, byte for byte: the same bytes are valid again. Sixteen: an
// RDMA Write of 1 MiB into a fragmented remote MR names 5-9 handles (14
// chunks each), and with four slots taken in turn they evicted each other
// at every Write (callgrind, 64 chunks per MiB: ~5 800 instructions a Write).
struct ValidCache {
    static constexpr unsigned kSize = 16;
    std::array<tcaHandle, kSize> handles{};  // zero: never a valid handle
    unsigned next = 0;

    bool has(const tcaHandle& h) const noexcept {
        for (const tcaHandle& v : handles) {
            if (v.check != h.check || v.magic != TCA_HANDLE_MAGIC)
                continue;
            std::size_t i = 0;
            while (i < kWords && word_at(v, i) == word_at(h, i))
                ++i;
            if (i == kWords)
                return true;
        }
        return false;
    }
    void add(const tcaHandle& h) noexcept {
        handles[next] = h;
        next = (next + 1) % kSize;
    }
};

thread_local ValidCache valid_cache;

}  // namespace

int validate_handle(const tcaHandle& h) noexcept {
    ValidCache& cache = valid_cache;
    if (cache.has(h))
        return 0;
    const int rc = validate_fields(h);
    if (rc == 0)
        cache.add(h);
    return rc;
}

int make_handle(std::uint32_t node, std::span<const tcaChunk> pieces, std::uint64_t offset,
                std::uint64_t size, tcaHandle* out) noexcept {
    std::uint64_t total = 0;
    for (const tcaChunk& c : pieces)
        if (!piece_ok(node, c) || !checked_add(total, c.len, &total))
            return TCA_EBADHANDLE;
    if (offset >= total)
        return TCA_ERANGE;
    if (size == 0)
        size = total - offset;
    if (!range_fits(offset, size, total))
        return TCA_ERANGE;

    tcaHandle h{};
    h.magic = TCA_HANDLE_MAGIC;
    h.version = TCA_HANDLE_VERSION;
    h.node = node;
    h.size = size;
    std::uint64_t skip = offset, left = size;
    unsigned n = 0;
    for (const tcaChunk& c : pieces) {
        if (left == 0)
            break;
        if (skip >= c.len) {
            skip -= c.len;
            continue;
        }
        std::uint64_t len = c.len - skip;
        if (len > left)
            len = left;
        const std::uint64_t ga = c.global_addr + skip;
        // Pieces that happen to be adjacent in the window share an entry,
        // so the 14 entries stretch as far as the allocator allows.
        if (n > 0 && h.chunks[n - 1].global_addr + h.chunks[n - 1].len == ga) {
            h.chunks[n - 1].len += len;
        } else {
            if (n == TCA_HANDLE_MAX_CHUNKS)
                return TCA_ETOOMANYCHUNKS;
            h.chunks[n++] = tcaChunk{ga, len};
        }
        left -= len;
        skip = 0;
    }
    h.nr_chunks = static_cast<std::uint16_t>(n);
    h.check = handle_check(h);
    *out = h;
    return 0;
}

void attach_export(tcaHandle* h, std::uint32_t export_id, std::uint32_t key) noexcept {
    h->export_id = export_id;
    h->export_key = key;
    h->check = handle_check(*h);
}

int handle_address(const tcaHandle& h, std::uint64_t offset, std::uint64_t* global_addr) noexcept {
    if (offset >= h.size)
        return TCA_ERANGE;
    for (unsigned i = 0; i < h.nr_chunks; ++i) {
        if (offset < h.chunks[i].len) {
            *global_addr = h.chunks[i].global_addr + offset;
            return 0;
        }
        offset -= h.chunks[i].len;
    }
    return TCA_EBADHANDLE;  // unreachable for a validated handle
}

}  // namespace tca

using namespace tca;

extern "C" {

int tcaHandleValidate(const tcaHandle* h) {
    if (!h)
        return -EINVAL;
    return validate_handle(*h);
}

int tcaSubHandle(const tcaHandle* h, size_t offset, size_t size, tcaHandle* out) {
    if (!h || !out)
        return -EINVAL;
    if (int rc = validate_handle(*h))
        return rc;
    tcaHandle sub;
    if (int rc = make_handle(h->node, std::span<const tcaChunk>(h->chunks, h->nr_chunks), offset,
                             size, &sub))
        return rc;
    // The export covers the whole original range, so any part of it too.
    if (h->export_id)
        attach_export(&sub, h->export_id, h->export_key);
    *out = sub;
    return 0;
}

int tcaRemoteAddress(const tcaHandle* h, size_t offset, uint64_t* global_addr) {
    if (!h || !global_addr)
        return -EINVAL;
    if (int rc = validate_handle(*h))
        return rc;
    return handle_address(*h, offset, global_addr);
}

}  // extern "C"
