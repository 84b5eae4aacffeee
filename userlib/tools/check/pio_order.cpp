// SPDX-License-Identifier: MIT
// tca_check pio order-send / order-recv: writes from one node to another
// arrive in the order they were issued (docs/hardware.md §5: on either link
// transport). The sender streams stamped writes without waiting: for each k
// in 1..count, 64 bytes of stamp k into slot k % kSlots, then k into the
// "latest" word. The receiver watches "latest" while the stream flows: it
// never goes back, and whenever it reads k the slot of every stamp j in
// (k - kSlots, k] already holds j or newer (an older slot write arriving
// after a newer "latest" is a reordering). At the end every slot holds
// its last stamp.
#include <cinttypes>
#include <cstdint>
#include <cstring>

#include "../common/session.hpp"
#include "../common/spin.hpp"
#include "roles.hpp"

namespace tcacheck {
namespace {

using tcatools::Options;
using tcatools::Session;

inline constexpr std::uint32_t kTagOrder = 0x4f434950u;  // "PICO"
inline constexpr std::uint64_t kSlots = 64;
inline constexpr std::uint64_t kSlotWords = 8;  // 64-byte writes
inline constexpr std::uint64_t kSlotBytes = kSlotWords * 8;
inline constexpr std::uint64_t kLatest = kSlots * kSlotBytes;  // offset of "latest"
inline constexpr std::uint64_t kBufBytes = kLatest + 8;

struct OrderOptions : tcatools::PeerOptions {
    std::uint64_t count = 20000;
};

Options order_options(const char* name, const char* about, OrderOptions* o) {
    Options opts(name, "--peer NODE [options]", about);
    tcatools::add_peer_options(opts, o);
    opts.u64("count", &o->count, "stamped writes (each a 64-byte slot, then the latest stamp)");
    return opts;
}

// The first slot word whose stamp is older than `j` (the write of j, or a
// newer one, has not landed), or kSlots * kSlotWords if none.
std::uint64_t stale_word(const volatile std::uint64_t* buf, std::uint64_t j) {
    const volatile std::uint64_t* slot = buf + (j % kSlots) * kSlotWords;
    for (std::uint64_t w = 0; w < kSlotWords; ++w)
        if (slot[w] < j)
            return w;
    return kSlotWords;
}

}  // namespace

int pio_order_recv(int argc, char** argv) {
    OrderOptions o;
    Options opts = order_options(
        "tca_check pio order-recv",
        "Runs with `tca_check pio order-send` on NODE: watches a stream of stamped writes\n"
        "land and checks that they land in the order they were issued.",
        &o);
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check pio order-recv");
    if (o.count == 0)
        return s.error("need --count >= 1");
    if (!s.open(o))
        return 1;
    unsigned char* mem = s.alloc(kBufBytes, "tcaMalloc(slots)");
    tcaHandle mine, theirs;
    if (!mem || !s.handle(mem, kBufBytes, &mine, "handle(slots)"))
        return 1;
    std::memset(mem, 0, kBufBytes);
    auto* buf = reinterpret_cast<volatile std::uint64_t*>(mem);
    if (!s.exchange(mine, &theirs, kTagOrder, o.exchange_timeout_ms, "exchange(slots)"))
        return 1;
    const std::uint64_t step_ns = static_cast<std::uint64_t>(o.timeout_ms) * 1000000ull;
    std::uint64_t last = 0, looks = 0, since = tcatools::now_ns();
    while (last < o.count) {
        const std::uint64_t k = tcatools::load_acquire(buf + kLatest / 8);
        if (k == last) {
            if (tcatools::now_ns() - since > step_ns)
                return s.verdict(false, "stream stalled: latest stamp %" PRIu64 " of %" PRIu64
                                 " for %d ms", last, o.count, o.timeout_ms);
            tcatools::cpu_relax();
            continue;
        }
        if (k < last || k > o.count)
            return s.verdict(false, "latest stamp went from %" PRIu64 " to %" PRIu64, last, k);
        ++looks;
        // Every stamp in (k - kSlots, k] has landed in its slot.
        for (std::uint64_t j = k > kSlots ? k - kSlots + 1 : 1; j <= k; ++j) {
            const std::uint64_t w = stale_word(buf, j);
            if (w != kSlotWords)
                return s.verdict(false, "reordered: latest stamp is %" PRIu64 " but slot %" PRIu64
                                 " word %" PRIu64 " holds %" PRIu64 " < %" PRIu64,
                                 k, j % kSlots, w, buf[(j % kSlots) * kSlotWords + w], j);
        }
        last = k;
        since = tcatools::now_ns();
    }
    for (std::uint64_t j = o.count > kSlots ? o.count - kSlots + 1 : 1; j <= o.count; ++j)
        for (std::uint64_t w = 0; w < kSlotWords; ++w)
            if (buf[(j % kSlots) * kSlotWords + w] != j)
                return s.verdict(false, "slot %" PRIu64 " word %" PRIu64 " ends with %" PRIu64
                                 ", not its last stamp %" PRIu64,
                                 j % kSlots, w, buf[(j % kSlots) * kSlotWords + w], j);
    if (!s.barrier(mine, kTagOrder))
        return 1;
    return s.verdict(true,
                     "%" PRIu64 " stamped writes from node %d arrived in order (checked at %" PRIu64
                     " observed stamps)",
                     o.count, o.peer, looks);
}

int pio_order_send(int argc, char** argv) {
    OrderOptions o;
    Options opts = order_options(
        "tca_check pio order-send",
        "Runs with `tca_check pio order-recv` on NODE: streams --count stamped writes into its\n"
        "slots without waiting for anything.",
        &o);
    if (const int rc = opts.parse(argc, argv))
        return rc == 2 ? 0 : 1;
    Session s("tca_check pio order-send");
    if (!s.open(o))
        return 1;
    unsigned char* mem = s.alloc(kBufBytes, "tcaMalloc(unused)");
    tcaHandle mine, theirs;
    if (!mem || !s.handle(mem, kBufBytes, &mine, "handle(unused)") ||
        !s.exchange(mine, &theirs, kTagOrder, o.exchange_timeout_ms, "exchange(slots)"))
        return 1;
    if (theirs.size < kBufBytes)
        return s.error("the receiver's slots are too small");
    std::uint64_t stamp[kSlotWords];
    for (std::uint64_t k = 1; k <= o.count; ++k) {
        for (auto& w : stamp)
            w = k;
        if (!s.ok(tcaPut(&theirs, (k % kSlots) * kSlotBytes, stamp, sizeof stamp), "put slot") ||
            !s.put_u64(theirs, kLatest, k, "put latest"))
            return 1;
    }
    if (!s.barrier(mine, kTagOrder))
        return 1;
    return s.verdict(true, "%" PRIu64 " stamped writes sent to node %d", o.count, o.peer);
}

}  // namespace tcacheck
