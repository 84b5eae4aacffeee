// SPDX-License-Identifier: MIT
#include "pio.hpp"

#include <tca/tca.h>

#include <cerrno>
#include <cstring>

#include "handle.hpp"
#include "library.hpp"
#include "range.hpp"

namespace tca {

void mmio_read64(void* dst, const volatile void* src, std::size_t len) noexcept {
    const auto* s = static_cast<const volatile std::uint64_t*>(src);
    auto* d = static_cast<unsigned char*>(dst);
    for (std::size_t i = 0; i < len / 8; ++i) {
        const std::uint64_t v = s[i];
        std::memcpy(d + 8 * i, &v, 8);
    }
}

}  // namespace tca

using namespace tca;

extern "C" {

int tcaPut(const tcaHandle* dst, size_t dst_offset, const void* src, size_t len) {
    if (!dst || (!src && len != 0))
        return -EINVAL;
    if (int rc = validate_handle(*dst))
        return rc;
    if (!range_fits(dst_offset, len, dst->size))
        return TCA_ERANGE;
    Context* c = nullptr;
    if (int rc = context_fast(&c))
        return rc;
    // A valid handle's pieces lie in its node's host region, and the window
    // covers every node below node_count: the stores stay inside it.
    if (dst->node >= c->node_count())
        return TCA_ENODE;
    if (len == 0)
        return 0;
    volatile unsigned char* const window = c->window();
    const auto* s = static_cast<const unsigned char*>(src);
    for_each_piece(*dst, dst_offset, len,
                   [&](std::uint64_t ga, std::uint64_t pos, std::uint64_t n) {
                       pio_copy(window + ga, s + pos, n);
                   });
    store_fence();
    return 0;
}

int tcaPutRaw(uint64_t global_addr, const void* src, size_t len) {
    if (!src && len != 0)
        return -EINVAL;
    Context* c = nullptr;
    if (int rc = context_fast(&c))
        return rc;
    if (!range_fits(global_addr, len, c->window_size()))
        return TCA_ERANGE;
    if (len == 0)
        return 0;
    pio_copy(c->window() + global_addr, src, len);
    store_fence();
    return 0;
}

int tcaFence(void) {
    store_fence();
    return 0;
}

}  // extern "C"
