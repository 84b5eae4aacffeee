// SPDX-License-Identifier: MIT
// Memory another node published (a peer QP's area, a remote MR), found by
// name through tcaLookupName, kept as the libtca handles that describe it,
// and kept only for a lease: whoever writes into it must look the name up
// again before the lease the target's driver granted runs out (the driver
// keeps freed memory out of reach for longer than that; docs/verbs.md,
// "Stale translations").
#pragma once

#include <tca/tca.h>

#include <cstdint>
#include <deque>
#include <vector>

namespace pv {

class RemoteRange {
public:
    // Looks up (node, kind, name) from offset 0: 0 or a libtca code.
    int open(std::uint32_t node, std::uint32_t kind, std::uint32_t name);
    bool valid() const noexcept { return !segs_.empty(); }
    void close() noexcept { segs_.clear(); }

    const tcaNameInfo& info() const noexcept { return first_; }
    std::uint32_t node() const noexcept { return node_; }
    std::uint64_t size() const noexcept { return first_.size; }

    // One piece of [off, off + len) of the range inside one handle.
    struct Piece {
        const tcaHandle* h;
        std::uint64_t hoff;  // offset in *h
        std::uint64_t pos;   // offset of the piece in [off, off + len)
        std::uint64_t len;
    };
    // Splits [off, off + len) at handle boundaries, looking up the parts of
    // the range not seen yet. 0, TCA_ERANGE, or a lookup error.
    int pieces(std::uint64_t off, std::uint64_t len, std::vector<Piece>* out);
    // PIO of [off, off + len) from src (see put_at): 0, TCA_ERANGE, or a
    // lookup error. Nothing is stored unless the whole range is known.
    int put(std::uint64_t off, const void* src, std::uint64_t len);
    // Where [off, off + len) is in this process's window, if the range is
    // one physically contiguous piece inside it (checked here, once): 0 and
    // *at set, or nullptr when it is not one piece; a lookup error (the
    // range's later segments are looked up on first use) is returned and
    // says nothing about the range. Stores there (pio_store) need no chunk
    // walk and no check; the window stays mapped while the device is open.
    int direct(std::uint64_t off, std::uint64_t len, volatile unsigned char** at);

    // Is a renewal due (half the lease gone) / the lease over?
    bool renewal_due(std::uint64_t now_ns) const noexcept { return now_ns >= renew_ns_; }
    std::uint64_t renewal_at() const noexcept { return renew_ns_; }
    bool expired(std::uint64_t now_ns) const noexcept { return now_ns >= expire_ns_; }
    // Looks the name up again: 0 extends the lease; an error means the name
    // is gone or unreachable (the caller stops writing).
    int renew(std::uint64_t now_ns);
    // The same, with a lookup made by the caller (started at started_ns).
    int renewed(int rc, const tcaNameInfo& n, std::uint64_t started_ns);
    // After a renewal that failed with `rc` at now_ns: may the writer keep the
    // translation and ask again (true: the next renewal is due soon), or must
    // it stop writing? Only TCA_ENOTEXPORTED says the name is gone (the same
    // code as an answer from another registration); any other failure (a
    // timeout, a full read-proxy queue, a link down for a moment) says
    // nothing about the name, and the lease it holds is still good until it
    // runs out.
    bool retry_renewal(int rc, std::uint64_t now_ns) noexcept;
    // The next renewal after a failed one: this long after it, or halfway
    // to the lease's end if that is sooner (but not sooner than the minimum).
    static constexpr std::uint64_t kRenewRetryNs = 50'000'000;
    static constexpr std::uint64_t kRenewRetryMinNs = 1'000'000;

private:
    void set_lease(std::uint64_t start_ns, std::uint32_t lease_ms) noexcept;

    std::uint32_t node_ = 0;
    tcaNameInfo first_{};
    std::deque<tcaNameInfo> segs_;  // ordered by offset, contiguous from 0 (stable addresses)
    std::uint64_t renew_ns_ = 0;
    std::uint64_t expire_ns_ = 0;
};

// The handles a RemoteRange holds come from tcaLookupName, which built them
// from checked pieces of the target's memory; they live in this library's
// memory and never change. So the data path uses their chunk lists as they
// are: tcaPut and tcaRemoteAddress hash the whole 256-byte handle again on
// every call to catch forged ones, which was half the instructions of an
// 8-byte Send (docs/notes.md, eleventh session).
//
// PIO of `len` bytes from src to [hoff, hoff + len) of *h: a tcaPutRaw (the
// stores, then a store fence) per physically contiguous piece. 0 or a libtca
// code (TCA_ERANGE outside the handle or the window).
int put_at(const tcaHandle& h, std::uint64_t hoff, const void* src, std::uint64_t len) noexcept;
// The global address of byte `hoff` of *h (0 if hoff is past its end).
std::uint64_t global_at(const tcaHandle& h, std::uint64_t hoff) noexcept;
// PIO of `len` bytes from src to a place RemoteRange::direct() gave: the
// stores tcaPutRaw makes, then its store fence.
void pio_store(volatile unsigned char* at, const void* src, std::uint64_t len) noexcept;

std::uint64_t now_ns() noexcept;

// What a name's kind is called in messages: "QP" or "key".
inline const char* kind_text(std::uint32_t kind) noexcept {
    return kind == TCA_NAME_QP ? "QP" : "key";
}

// tcaLookupName, saying on stderr when an answer needed more than one
// request (libtca asks again after 100 ms): which one answered tells a
// request lost on the way (a later one) from a slow target (the first).
int lookup_name(std::uint32_t node, std::uint32_t kind, std::uint32_t name, std::uint64_t offset,
                tcaNameInfo* out);

}  // namespace pv
