// SPDX-License-Identifier: MIT
#include "pio_canary.hpp"

#include <cstring>
#include <vector>

namespace tcacheck {

void fill_written(std::span<std::uint8_t> out, std::uint64_t k, std::uint64_t first) {
    for (std::size_t j = 0; j < out.size(); ++j)
        out[j] = written_byte(k, first + j);
}

void fill_pristine(std::span<std::uint8_t> buffer, std::uint64_t guard) {
    const std::uint64_t data = buffer.size() - 2 * guard;
    for (std::uint64_t b = 0; b < buffer.size(); ++b)
        buffer[b] = (b < guard || b >= guard + data) ? guard_canary(b) : data_canary(b - guard);
}

namespace {

// First index where a and b differ, or n.
std::size_t first_difference(const std::uint8_t* a, const std::uint8_t* b, std::size_t n) {
    if (std::memcmp(a, b, n) == 0)
        return n;
    std::size_t i = 0;
    while (a[i] == b[i])
        ++i;
    return i;
}

}  // namespace

std::uint64_t check_after_write(std::span<const std::uint8_t> buffer,
                                std::span<const std::uint8_t> pristine, std::uint64_t guard,
                                std::uint64_t k, std::uint64_t offset, std::uint64_t len,
                                std::int64_t* where) {
    const std::uint64_t start = guard + offset, end = start + len;
    auto at = [&](std::uint64_t b) {
        return static_cast<std::int64_t>(b) - static_cast<std::int64_t>(guard);
    };

    // Before the target, then after it: must be untouched.
    std::size_t d = first_difference(buffer.data(), pristine.data(), start);
    if (d != start) {
        *where = at(d);
        return kStrayWrite;
    }
    d = first_difference(buffer.data() + end, pristine.data() + end, buffer.size() - end);
    if (d != buffer.size() - end) {
        *where = at(end + d);
        return kStrayWrite;
    }
    std::vector<std::uint8_t> expect(len);
    fill_written(expect, k, offset);
    d = first_difference(buffer.data() + start, expect.data(), len);
    if (d != len) {
        *where = at(start + d);
        return kTargetMismatch;
    }
    return kOk;
}

}  // namespace tcacheck
