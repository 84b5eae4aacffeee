// SPDX-License-Identifier: MIT
#include "remote.hpp"

#include <algorithm>
#include <ctime>

// libtca's pure handle helpers (its objects are linked into this library).
#include "../../src/context.hpp"
#include "../../src/handle.hpp"
#include "../../src/library.hpp"
#include "../../src/pio.hpp"
#include "../../src/range.hpp"
#include "log.hpp"

namespace pv {

std::uint64_t now_ns() noexcept {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

int put_at(const tcaHandle& h, std::uint64_t hoff, const void* src, std::uint64_t len) noexcept {
    if (!tca::range_fits(hoff, len, h.size))
        return TCA_ERANGE;
    const auto* s = static_cast<const unsigned char*>(src);
    int rc = 0;
    tca::for_each_piece(h, hoff, len, [&](std::uint64_t ga, std::uint64_t pos, std::uint64_t n) {
        if (!rc)
            rc = tcaPutRaw(ga, s + pos, n);
    });
    return rc;
}

std::uint64_t global_at(const tcaHandle& h, std::uint64_t hoff) noexcept {
    std::uint64_t ga = 0;
    tca::handle_address(h, hoff, &ga);
    return ga;
}

void pio_store(volatile unsigned char* at, const void* src, std::uint64_t len) noexcept {
    tca::pio_copy(at, src, len);
    tca::store_fence();
}

int lookup_name(std::uint32_t node, std::uint32_t kind, std::uint32_t name, std::uint64_t offset,
                tcaNameInfo* out) {
    const std::uint64_t start = now_ns();
    const int rc = tcaLookupName(static_cast<int>(node), kind, name, offset, out);
    if (rc == 0 && out->tries > 1) {
        const double ms = static_cast<double>(now_ns() - start) / 1e6;
        if (out->answered_by > 1)
            log_error(
                "lookup of %s %#x on node %u: request %u of %u answered after %.1f ms, "
                "the first went unanswered",
                kind_text(kind), name, node, out->answered_by, out->tries, ms);
        else
            log_error(
                "lookup of %s %#x on node %u: the first request answered after %.1f ms "
                "(%u sent)",
                kind_text(kind), name, node, ms, out->tries);
    }
    return rc;
}

void RemoteRange::set_lease(std::uint64_t start_ns, std::uint32_t lease_ms) noexcept {
    // Measured from before the lookup was sent: the target granted it later.
    const std::uint64_t lease = static_cast<std::uint64_t>(lease_ms ? lease_ms : 1000) * 1000000ull;
    expire_ns_ = start_ns + lease;
    renew_ns_ = start_ns + lease / 2;
}

int RemoteRange::open(std::uint32_t node, std::uint32_t kind, std::uint32_t name) {
    segs_.clear();
    node_ = node;
    const std::uint64_t start = now_ns();
    tcaNameInfo n;
    const int found = lookup_name(node, kind, name, 0, &n);
    log_slow(now_ns() - start, "lookup of %s %#x on node %u (%s)", kind_text(kind), name, node,
             found ? tcaErrorString(found) : "found");
    if (int rc = found) {
        log_debug("lookup of %s %#x on node %u: %s", kind_text(kind), name, node,
                  tcaErrorString(rc));
        return rc;
    }
    first_ = n;
    segs_.push_back(n);
    set_lease(start, n.lease_ms);
    return 0;
}

int RemoteRange::renew(std::uint64_t now) {
    tcaNameInfo n;
    const int rc = lookup_name(node_, first_.kind, first_.name, 0, &n);
    log_slow(now_ns() - now, "renewing %s %#x on node %u (%s)", kind_text(first_.kind), first_.name,
             node_, rc ? tcaErrorString(rc) : "renewed");
    return renewed(rc, n, now);
}

int RemoteRange::renewed(int rc, const tcaNameInfo& n, std::uint64_t now) {
    if (rc) {
        log_debug("renewing %s %#x on node %u: %s", kind_text(first_.kind), first_.name, node_,
                  tcaErrorString(rc));
        return rc;
    }
    // A name never changes its memory: the same name answering is the
    // same registration.
    if (n.owner != first_.owner || n.size != first_.size) {
        log_debug("renewing %#x on node %u: owner %llu/%llu size %llu/%llu", first_.name, node_,
                  (unsigned long long)n.owner, (unsigned long long)first_.owner,
                  (unsigned long long)n.size, (unsigned long long)first_.size);
        return TCA_ENOTEXPORTED;
    }
    set_lease(now, n.lease_ms);
    return 0;
}

bool RemoteRange::retry_renewal(int rc, std::uint64_t now_ns) noexcept {
    if (rc == 0 || rc == TCA_ENOTEXPORTED || segs_.empty() || now_ns >= expire_ns_)
        return false;
    renew_ns_ =
        now_ns + std::max(kRenewRetryMinNs, std::min(kRenewRetryNs, (expire_ns_ - now_ns) / 2));
    return true;
}

int RemoteRange::put(std::uint64_t off, const void* src, std::uint64_t len) {
    if (segs_.empty() || off > size() || len > size() - off)
        return TCA_ERANGE;
    // The common case (a QP's slot, a pair, a word): inside the first
    // segment, no list to build.
    const tcaNameInfo& s0 = segs_.front();
    if (off + len <= s0.handle.size)
        return put_at(s0.handle, off, src, len);
    std::vector<Piece> p;
    if (int rc = pieces(off, len, &p))
        return rc;
    for (const Piece& x : p)
        if (int rc = put_at(*x.h, x.hoff, static_cast<const unsigned char*>(src) + x.pos, x.len))
            return rc;
    return 0;
}

int RemoteRange::direct(std::uint64_t off, std::uint64_t len, volatile unsigned char** at) {
    *at = nullptr;
    std::vector<Piece> p;
    if (int rc = pieces(off, len, &p))
        return rc;
    if (len == 0 || p.size() != 1)
        return 0;
    std::uint64_t ga = 0;
    unsigned n = 0;
    tca::for_each_piece(*p[0].h, p[0].hoff, len,
                        [&](std::uint64_t a, std::uint64_t, std::uint64_t) {
                            ga = a;
                            ++n;
                        });
    tca::Context* c = nullptr;
    if (int rc = tca::context_fast(&c))
        return rc;
    if (n == 1 && tca::range_fits(ga, len, c->window_size()))
        *at = c->window() + ga;
    return 0;
}

int RemoteRange::pieces(std::uint64_t off, std::uint64_t len, std::vector<Piece>* out) {
    out->clear();
    if (segs_.empty() || off > size() || len > size() - off)
        return TCA_ERANGE;
    std::uint64_t pos = 0;
    std::size_t i = 0;
    while (pos < len) {
        const std::uint64_t at = off + pos;
        // Find (or fetch) the segment holding byte `at`.
        while (i < segs_.size() && segs_[i].offset + segs_[i].handle.size <= at)
            ++i;
        if (i == segs_.size()) {
            const tcaNameInfo& last = segs_.back();
            tcaNameInfo n;
            const std::uint64_t next = last.offset + last.handle.size;
            if (int rc = lookup_name(node_, first_.kind, first_.name, next, &n))
                return rc;
            if (n.offset != next || n.owner != first_.owner)
                return TCA_EDEVICE;
            segs_.push_back(n);
            continue;
        }
        const tcaNameInfo& s = segs_[i];
        const std::uint64_t hoff = at - s.offset;
        std::uint64_t n = s.handle.size - hoff;
        if (n > len - pos)
            n = len - pos;
        out->push_back(Piece{&s.handle, hoff, pos, n});
        pos += n;
    }
    return 0;
}

}  // namespace pv
