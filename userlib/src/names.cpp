// SPDX-License-Identifier: MIT
// Registered memory and names: tcaRegister/tcaDeregister (the driver's
// PEACH2_IOC_PIN: any memory of the process becomes a driver buffer, kept
// beside the tcaMalloc buffers without a mapping of our own), and
// tcaPublish/tcaUnpublish/tcaLookupName (PEACH2_IOC_PUBLISH, and a lookup as
// a read-proxy request, PEACH2_RP_OP_LOOKUP, that the target's driver
// answers from its table of names; sent again while its answer is late). A
// lookup is planned under the library mutex and waited for without it, one
// at a time (they share the current answer buffer). TCA Verbs finds peers'
// rings and memory keys this way (docs/verbs.md).
#include <peach2/peach2_uapi.h>
#include <sys/ioctl.h>
#include <tca/tca.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "context.hpp"
#include "handle.hpp"
#include "library.hpp"
#include "range.hpp"
#include "rp.hpp"

namespace tca {
namespace {

std::uintptr_t page_size() noexcept {
    static const auto ps = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    return ps;
}

}  // namespace

int Context::pin_memory(void* ptr, std::size_t size, peach2_pin* out) const {
    peach2_pin p{};
    p.addr = reinterpret_cast<std::uintptr_t>(ptr);
    p.len = size;
    if (::ioctl(fd_.get(), PEACH2_IOC_PIN, &p) < 0)
        return errno == ENOTTY ? -EOPNOTSUPP : -errno;
    *out = p;
    return 0;
}

int Context::register_pinned(const peach2_pin& p, std::size_t size) {
    auto buf = std::make_unique<DriverBuffer>(fd_.get(), p.handle);  // frees on error
    const std::uintptr_t first = p.addr & ~(page_size() - 1);
    if (p.nr_chunks == 0 || p.offset != p.addr - first || p.size < p.offset + size)
        return TCA_EDEVICE;
    buf->size = p.size;

    std::vector<peach2_chunk> raw(p.nr_chunks);
    peach2_chunks q{};
    q.handle = p.handle;
    q.count = p.nr_chunks;
    q.chunks = reinterpret_cast<std::uintptr_t>(raw.data());
    if (::ioctl(fd_.get(), PEACH2_IOC_CHUNKS, &q) < 0)
        return -errno;
    if (q.nr_chunks != p.nr_chunks)
        return TCA_EDEVICE;
    if (int rc = pieces_from(raw, p.size, &buf->pieces))
        return rc;
    tcaHandle probe;
    if (make_handle(info_.node_id, buf->pieces, 0, 0, &probe) == TCA_EBADHANDLE)
        return TCA_EDEVICE;
    registered_.emplace(first, std::move(buf));
    changed();
    return 0;
}

// Several registrations may hold the same pages: a program registers a
// range twice (other access rights, another library), or UCX registers it
// again after the memory behind it was unmapped and mapped anew, while the
// old registration (the old pages) is still to be ended. Which one a call
// ends matters: names and exports live on a registration, and ending it
// ends them. So it ends, the newest first, one whose names are all gone
// (ibv_dereg_mr unpublishes its key first: that is the caller's own); else
// one that never had any (a plain tcaRegister, or one whose owner, in
// another thread, has yet to publish: its turn comes); else the newest.
int Context::deregister_memory(void* ptr, std::size_t size) {
    const auto addr = reinterpret_cast<std::uintptr_t>(ptr);
    const std::uintptr_t first = addr & ~(page_size() - 1);
    const std::uint64_t pages = (addr + size - first + page_size() - 1) & ~(page_size() - 1);
    auto [lo, hi] = registered_.equal_range(first);
    auto gone = registered_.end();
    int best = 3;  // 0: names all gone, 1: never had any, 2: carries some
    for (auto it = hi; it != lo && best > 0;) {
        --it;  // the newest of equal ones first
        if (it->second->size != pages)
            continue;
        const DriverBuffer* b = it->second.get();
        const int rank = carries_names(b) ? 2 : named_.count(b) ? 0 : 1;
        if (rank < best) {
            best = rank;
            gone = it;
        }
    }
    if (gone == registered_.end())
        return TCA_ENOTBUF;
    if (rp_ && rp_->pins().busy(gone->second->id(), monotonic_ns()))
        return -EBUSY;
    const int rc = release_buffer(*gone->second);  // the driver ends its exports and names
    registered_.erase(gone);
    changed();
    return rc;
}

bool Context::carries_names(const DriverBuffer* b) const noexcept {
    return std::any_of(names_.begin(), names_.end(),
                       [&](const auto& n) { return n.second == b; }) ||
           std::any_of(exports_.begin(), exports_.end(),
                       [&](const auto& e) { return e.second.buf == b; });
}

void Context::forget_names(const DriverBuffer* b) noexcept {
    std::erase_if(names_, [&](const auto& n) { return n.second == b; });
    std::erase_if(exports_, [&](const auto& e) { return e.second.buf == b; });
    named_.erase(b);
}

}  // namespace tca

namespace tca {

int Context::publish(const void* ptr, std::size_t size, peach2_publish* req) {
    Located at{};
    if (int rc = locate(ptr, size, &at))
        return rc;
    if (!range_fits(at.offset, size, at.buf->size))
        return TCA_ERANGE;
    req->handle = at.buf->id();
    req->offset = at.offset;
    req->len = size;
    if (::ioctl(fd_.get(), PEACH2_IOC_PUBLISH, req) < 0)
        return errno == ENOTTY ? -EOPNOTSUPP : -errno;
    if (!req->name)
        return TCA_EDEVICE;
    names_[{req->kind, req->name}] = at.buf;
    named_.insert(at.buf);
    return 0;
}

int Context::unpublish(std::uint32_t kind, std::uint32_t name) {
    peach2_unpublish u{};
    u.kind = kind;
    u.name = name;
    names_.erase({kind, name});  // gone in the driver too, whatever it answers
    if (::ioctl(fd_.get(), PEACH2_IOC_UNPUBLISH, &u) < 0)
        return errno == ENOTTY ? -EOPNOTSUPP : -errno;
    return 0;
}

int Context::lookup_buffer(DriverBuffer** out) {
    if (!lookup_buf_) {
        std::unique_ptr<DriverBuffer> buf;
        if (int rc = new_buffer(PEACH2_LOOKUP_MAX, &buf))
            return rc;
        lookup_buf_ = std::move(buf);
    }
    *out = lookup_buf_.get();
    return 0;
}

void Context::retire_lookup_buffer() {
    if (!lookup_buf_)
        return;
    retired_lookup_bufs_.push_back(std::move(lookup_buf_));
}

}  // namespace tca

using namespace tca;

namespace {

static_assert(sizeof(peach2_lookup) == 96, "lookup header: ABI 4");
static_assert(TCA_NAME_QP == PEACH2_NAME_QP && TCA_NAME_KEY == PEACH2_NAME_KEY);
static_assert(TCA_NAME_WRITE == PEACH2_NAME_WRITE && TCA_NAME_READ == PEACH2_NAME_READ &&
              TCA_NAME_ATOMIC == PEACH2_NAME_ATOMIC);
static_assert(TCA_NAME_INFO == PEACH2_NAME_INFO);

// How long a lookup's first request waits for its answer before it is sent
// again (a round trip is ~10 us; a busy target's, milliseconds).
constexpr std::uint64_t kLookupFirstTryNs = 100'000'000;

std::mutex& lookup_mutex() {
    static std::mutex m;
    return m;
}

// Checks an answer and turns it into *out. The answer is plain data from
// another node's driver: nothing in it is trusted.
int parse_lookup(std::uint32_t node, std::uint32_t kind, std::uint32_t name, std::uint64_t offset,
                 const unsigned char* raw, tcaNameInfo* out) {
    peach2_lookup l;
    std::memcpy(&l, raw, sizeof l);
    constexpr std::uint32_t kMaxPieces =
        (PEACH2_LOOKUP_MAX - sizeof l) / sizeof(peach2_lookup_piece);
    if (l.kind != kind || l.name != name || l.offset != offset || l.nr_pieces == 0 ||
        l.nr_pieces > kMaxPieces || offset >= l.len || (l.export_id == 0) != (l.key == 0))
        return TCA_EDEVICE;
    std::vector<tcaChunk> pieces;
    std::uint64_t total = 0;
    for (std::uint32_t i = 0; i < l.nr_pieces && pieces.size() < TCA_HANDLE_MAX_CHUNKS; ++i) {
        peach2_lookup_piece p;
        std::memcpy(&p, raw + sizeof l + i * sizeof p, sizeof p);
        if (p.len == 0 || p.len > l.len - offset - total)
            return TCA_EDEVICE;
        pieces.push_back(tcaChunk{p.global_addr, p.len});
        total += p.len;
    }
    tcaNameInfo info{};
    if (int rc = make_handle(node, pieces, 0, total, &info.handle))
        return rc == TCA_EBADHANDLE ? TCA_EDEVICE : rc;  // pieces off the node's memory
    if (l.export_id)
        attach_export(&info.handle, l.export_id, l.key);
    info.kind = l.kind;
    info.name = l.name;
    info.flags = l.flags;
    info.group = l.group;
    info.owner = l.owner;
    info.size = l.len;
    info.offset = offset;
    info.lease_ms = l.lease_ms;
    std::memcpy(info.info, l.info, sizeof info.info);
    *out = info;
    return 0;
}

}  // namespace

extern "C" {

int tcaRegister(void* ptr, size_t size) {
    if (!ptr || size == 0)
        return -EINVAL;
    peach2_pin p{};
    return guarded([&] {
        return with_context_after([&](Context& c) { return c.pin_memory(ptr, size, &p); },
                                  [&](Context& c) { return c.register_pinned(p, size); });
    });
}

int tcaDeregister(void* ptr, size_t size) {
    if (!ptr || size == 0)
        return -EINVAL;
    return guarded(
        [&] { return with_context([&](Context& c) { return c.deregister_memory(ptr, size); }); });
}

int tcaPublish(const void* ptr, size_t size, uint32_t kind, uint32_t flags, uint32_t group,
               const void* info, size_t info_len, uint32_t* name) {
    if (!ptr || !name || size == 0 || (kind != TCA_NAME_QP && kind != TCA_NAME_KEY) ||
        flags & ~(TCA_NAME_WRITE | TCA_NAME_READ | TCA_NAME_ATOMIC) || info_len > TCA_NAME_INFO ||
        (info_len && !info))
        return -EINVAL;
    peach2_publish req{};
    req.kind = kind;
    req.flags = flags;
    req.group = group;
    if (info_len)
        std::memcpy(req.info, info, info_len);
    return guarded([&] {
        return with_context([&](Context& c) {
            const int rc = c.publish(ptr, size, &req);
            if (rc == 0)
                *name = req.name;
            return rc;
        });
    });
}

int tcaUnpublish(uint32_t kind, uint32_t name) {
    return guarded(
        [&] { return with_context([&](Context& c) { return c.unpublish(kind, name); }); });
}

int tcaLookupName(int node, uint32_t kind, uint32_t name, size_t offset, tcaNameInfo* out) {
    if (!out || node < 0 || (kind != TCA_NAME_QP && kind != TCA_NAME_KEY))
        return -EINVAL;
    return guarded([&] {
        std::lock_guard<std::mutex> one(lookup_mutex());
        RpState* rp = nullptr;
        if (int rc = with_context([&](Context& c) {
                if (static_cast<std::uint32_t>(node) >= c.node_count())
                    return TCA_ENODE;
                return c.rp(&rp);
            }))
            return rc;
        RpTarget target;
        target.node = static_cast<std::uint32_t>(node);
        target.op = PEACH2_RP_OP_LOOKUP;
        target.export_id = kind;
        target.key = name;
        RpPiece piece;
        piece.addr = offset;
        piece.reply_offset = 0;
        piece.len = PEACH2_LOOKUP_MAX;
        const std::uint64_t deadline = monotonic_ns() + rp_timeout_ms() * 1000000ull;
        // A LOOKUP changes nothing at the target, so one whose answer is
        // late is sent again, the earlier tries still awaited: a request
        // lost on the way, or one the target left unserved until the next
        // arrived, then costs a resend, not the request timeout, and a
        // target that is slow still has its first answer taken. Each try
        // has an answer buffer of its own (Context::retire_lookup_buffer).
        struct Try {
            std::unique_ptr<RpOp> op;
            const DriverBuffer* answer;
        };
        std::vector<Try> tries;
        const auto send = [&](std::uint64_t now) {
            DriverBuffer* answer = nullptr;
            if (int rc = with_context([&](Context& c) {
                    if (!tries.empty())
                        c.retire_lookup_buffer();  // the try before is still out
                    return c.lookup_buffer(&answer);
                }))
                return rc;
            tries.push_back(
                Try{std::make_unique<RpOp>(rp->port(), rp->areas(), target, answer->id(),
                                           std::span<const RpPiece>(&piece, 1), deadline, RpPin{}),
                    answer});
            return tries.back().op->start(now);
        };
        // The lookup ends with `rc`, from tries[won] (an answer, or an error
        // that ends it; SIZE_MAX: none). The other tries are given up; the
        // current buffer is retired unless the newest try was answered.
        const auto end = [&](std::size_t won, int rc) {
            for (std::size_t i = 0; i < tries.size(); ++i)
                if (i != won)
                    tries[i].op->cancel();
            const bool answered = rc == 0 || rc == TCA_ENOTEXPORTED || rc == TCA_EREMOTE;
            if (tries.empty() || won + 1 != tries.size() || !answered)
                with_context([](Context& c) {
                    c.retire_lookup_buffer();
                    return 0;
                });
            if (rc != 0)
                return rc;
            rc = parse_lookup(target.node, kind, name, offset,
                              static_cast<const unsigned char*>(tries[won].answer->map.get()), out);
            out->tries = static_cast<std::uint16_t>(tries.size());
            out->answered_by = static_cast<std::uint16_t>(won + 1);
            return rc;
        };
        std::uint64_t now = monotonic_ns();
        std::uint64_t try_ns = kLookupFirstTryNs;
        std::uint64_t next_try = now + try_ns;
        if (int rc = send(now); rc != 1)
            return end(tries.empty() ? SIZE_MAX : tries.size() - 1, rc);
        for (;;) {
            // The newest try for a while (the first: until the second is due).
            const std::uint64_t limit =
                tries.size() == 1 ? next_try : std::min(next_try, monotonic_ns() + 1'000'000);
            if (int rc = wait_op(*tries.back().op, std::min(limit, deadline)); rc != 1)
                return end(tries.size() - 1, rc);
            now = monotonic_ns();
            for (std::size_t i = 0; i + 1 < tries.size(); ++i)
                if (int rc = tries[i].op->poll(now); rc != 1 && rc != -ETIMEDOUT)
                    return end(i, rc);
            if (now >= deadline)
                return end(tries.size() - 1, -ETIMEDOUT);
            if (now >= next_try) {
                try_ns *= 2;
                next_try = now + try_ns;
                const std::size_t sent = tries.size();
                if (int rc = send(now); rc != 1)
                    return end(tries.size() > sent ? sent : SIZE_MAX, rc);
            }
        }
    });
}

}  // extern "C"
