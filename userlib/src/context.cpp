// SPDX-License-Identifier: MIT
#include "context.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "handle.hpp"
#include "range.hpp"
#include "rp.hpp"

namespace tca {
namespace {

// The library relies on the driver's geometry matching the hardware
// contract (addresses it builds from peach2_hw.h must be inside the mapped
// window), so it refuses to run on anything else.
int check_info(const peach2_info& i) noexcept {
    if (i.abi_version != PEACH2_ABI_VERSION)
        return TCA_EABI;
    if (i.node_count == 0 || i.node_count > PEACH2_MAX_NODES || i.node_id >= i.node_count)
        return TCA_EDEVICE;
    if (i.slice_size != PEACH2_SLICE_SIZE || i.window_size > PEACH2_WINDOW_SIZE ||
        i.window_size < static_cast<std::uint64_t>(i.node_count) * i.slice_size)
        return TCA_EDEVICE;
    return 0;
}

}  // namespace

// Converts the driver's chunk list into handle pieces covering exactly the
// first `size` bytes, checking that the pieces are contiguous in the buffer.
int pieces_from(const std::vector<peach2_chunk>& raw, std::size_t size,
                std::vector<tcaChunk>* out) {
    std::uint64_t pos = 0;
    for (const peach2_chunk& c : raw) {
        if (pos == size)
            break;
        if (c.offset != pos || c.len == 0)
            return TCA_EDEVICE;
        const std::uint64_t len = c.len < size - pos ? c.len : size - pos;
        out->push_back(tcaChunk{c.global_addr, len});
        pos += len;
    }
    return pos == size ? 0 : TCA_EDEVICE;
}

int DriverBuffer::release() noexcept {
    map.reset();  // unmap first: the driver may refuse to free a mapped buffer
    if (handle_ == 0)
        return 0;
    peach2_free f{};
    f.handle = handle_;
    handle_ = 0;
    return ::ioctl(fd_, PEACH2_IOC_FREE, &f) < 0 ? -errno : 0;
}

Context::~Context() = default;  // rp_ (an RpState) is complete here

int Context::open(const char* path, std::unique_ptr<Context>* out) {
    std::unique_ptr<Context> c(new Context());
    changed();  // a new context may have a gone one's address
    const int fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    c->fd_ = UniqueFd(fd);
    c->dma_ = std::make_unique<DmaState>(fd);
    if (::ioctl(fd, PEACH2_IOC_INFO, &c->info_) < 0)
        return -errno;
    if (int rc = check_info(c->info_))
        return rc;
    // The window is write-only (the driver refuses PROT_READ: a load would
    // be an error on the card), the mailbox read-only (peers own its slots).
    if (int rc = Mapping::map(c->info_.window_size, PROT_WRITE, fd, 0, &c->window_))
        return rc;
    if (int rc = Mapping::map(PEACH2_MAILBOX_SIZE, PROT_READ, fd,
                              static_cast<off_t>(PEACH2_MMAP_CARDMEM), &c->mailbox_))
        return rc;
    *out = std::move(c);
    return 0;
}

int Context::new_buffer(std::size_t size, std::unique_ptr<DriverBuffer>* out,
                        std::uint32_t alloc_flags) const {
    if (size == 0 || size > info_.max_alloc)
        return -EINVAL;
    peach2_alloc a{};
    a.size = size;
    a.flags = alloc_flags;
    if (::ioctl(fd_.get(), PEACH2_IOC_ALLOC, &a) < 0)
        return -errno;
    auto buf = std::make_unique<DriverBuffer>(fd_.get(), a.handle);  // frees on error
    buf->size = size;
    // The driver answers with the page-rounded size: that is what we map.
    const std::uint64_t mapped = a.size;
    if (a.nr_chunks == 0 || mapped < size)
        return TCA_EDEVICE;

    std::vector<peach2_chunk> raw(a.nr_chunks);
    peach2_chunks q{};
    q.handle = a.handle;
    q.count = a.nr_chunks;
    q.chunks = reinterpret_cast<std::uintptr_t>(raw.data());
    if (::ioctl(fd_.get(), PEACH2_IOC_CHUNKS, &q) < 0)
        return -errno;
    if (q.nr_chunks != a.nr_chunks || raw[0].global_addr != a.global_addr)
        return TCA_EDEVICE;
    if (int rc = pieces_from(raw, size, &buf->pieces))
        return rc;
    // Refuse pieces a handle could not describe (wrong node, outside host
    // memory) now rather than at the first tcaGetHandle.
    tcaHandle probe;
    if (make_handle(info_.node_id, buf->pieces, 0, 0, &probe) == TCA_EBADHANDLE)
        return TCA_EDEVICE;

    if (int rc = Mapping::map(mapped, PROT_READ | PROT_WRITE, fd_.get(),
                              static_cast<off_t>(a.mmap_offset), &buf->map))
        return rc;
    std::memset(buf->map.get(), 0, mapped);
    *out = std::move(buf);
    return 0;
}

int Context::adopt(std::unique_ptr<DriverBuffer> buf, void** ptr) {
    void* p = buf->map.get();
    std::uint64_t off = 0;
    for (const tcaChunk& piece : buf->pieces) {
        by_global_[piece.global_addr] = ChunkRef{buf.get(), off, piece.len};
        off += piece.len;
    }
    buffers_.emplace(reinterpret_cast<std::uintptr_t>(p), std::move(buf));
    changed();
    *ptr = p;
    return 0;
}

int Context::free(void* ptr) {
    const auto it = buffers_.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == buffers_.end())
        return TCA_ENOTBUF;
    // A pending get of this process still replies into it.
    if (rp_ && rp_->pins().busy(it->second->id(), monotonic_ns()))
        return -EBUSY;
    for (const tcaChunk& piece : it->second->pieces)
        by_global_.erase(piece.global_addr);
    // The driver ends the buffer's exports and names when it frees it.
    const int rc = release_buffer(*it->second);
    buffers_.erase(it);
    changed();
    return rc;
}

int Context::release_buffer(DriverBuffer& b) {
    forget_names(&b);
    dma_->cache().forget(b.id());
    return b.release();
}

int Context::locate(const void* ptr, std::uint64_t len, Located* out) const noexcept {
    const auto addr = reinterpret_cast<std::uintptr_t>(ptr);
    if (auto it = buffers_.upper_bound(addr); it != buffers_.begin()) {
        --it;
        const std::uint64_t offset = addr - it->first;
        if (offset < it->second->size) {
            *out = Located{it->first, it->second.get(), offset};
            return 0;
        }
    }
    // Registrations may overlap: the first (from the highest start below
    // addr) that holds the whole range.
    if (len == 0)
        len = 1;
    for (auto it = registered_.upper_bound(addr); it != registered_.begin();) {
        --it;
        const std::uint64_t offset = addr - it->first;
        if (offset < it->second->size && len <= it->second->size - offset) {
            *out = Located{it->first, it->second.get(), offset};
            return 0;
        }
    }
    return TCA_ENOTBUF;
}

int Context::handle_for(const void* ptr, std::size_t size, tcaHandle* out) const noexcept {
    Located at{};
    if (int rc = locate(ptr, size, &at))
        return rc;
    return make_handle(info_.node_id, at.buf->pieces, at.offset, size, out);
}

// Finding the memory a DMA request or a get names. Local memory must be
// named by the driver (buffer handle + offset), so pointers and local
// handles are traced back to a tcaMalloc buffer of this process.
int Context::local_side(const void* ptr, std::uint64_t len, DmaSide* out) const noexcept {
    Located at{};
    if (int rc = locate(ptr, len, &at))
        return rc;
    const DriverBuffer& b = *at.buf;
    if (!range_fits(at.offset, len, b.size))
        return TCA_ERANGE;
    *out = DmaSide{b.id(), b.pieces, at.offset};
    return 0;
}

int Context::handle_side(const tcaHandle& h, std::uint64_t offset, std::uint64_t len,
                         DmaSide* out) const noexcept {
    if (!range_fits(offset, len, h.size))
        return TCA_ERANGE;
    if (h.node != node_id()) {
        if (h.node >= node_count())
            return TCA_ENODE;
        *out = DmaSide{0, {h.chunks, h.nr_chunks}, offset};
        return 0;
    }
    // Our own memory: the buffer holding the first byte, and every piece of
    // the range must be that buffer's memory at the matching offset (a
    // handle is plain data; it may describe memory we do not own).
    std::uint64_t first = 0;
    if (handle_address(h, offset, &first))
        return TCA_ERANGE;
    auto it = by_global_.upper_bound(first);
    if (it == by_global_.begin())
        return TCA_ENOTBUF;
    --it;
    const ChunkRef& ref = it->second;
    if (first - it->first >= ref.len)
        return TCA_ENOTBUF;
    const DriverBuffer& b = *ref.buf;
    const std::uint64_t base = ref.offset + (first - it->first);
    if (!range_fits(base, len, b.size))
        return TCA_ENOTBUF;
    bool same = true;
    PieceWalk walk(b.pieces, base);  // in step with the handle's pieces
    for_each_piece(h, offset, len, [&](std::uint64_t ga, std::uint64_t, std::uint64_t n) {
        for (std::uint64_t done = 0; same && done < n;) {
            std::uint64_t addr = 0, room = 0;
            walk.at(&addr, &room);
            same = addr == ga + done;
            const std::uint64_t step = room < n - done ? room : n - done;
            done += step;
            walk.skip(step);
        }
    });
    if (!same)
        return TCA_ENOTBUF;
    *out = DmaSide{b.id(), b.pieces, base};
    return 0;
}

// Exports of this process's buffers (PEACH2_IOC_EXPORT/UNEXPORT). The
// driver owns the exports; the context remembers which buffer each belongs
// to, so tcaUnexport can tell this process's exports from others, and
// forgets them when the buffer is freed (the driver ends them then).
int Context::export_range(const void* ptr, std::size_t size, std::uint32_t peach2_flags,
                          tcaHandle* out) {
    Located at{};
    if (int rc = locate(ptr, size, &at))
        return rc;
    const DriverBuffer& b = *at.buf;
    const std::uint64_t offset = at.offset;
    if (size == 0)
        size = b.size - offset;
    if (!range_fits(offset, size, b.size))
        return TCA_ERANGE;
    // The handle first: a range it cannot describe is refused before the
    // driver creates an export nobody could name.
    tcaHandle h;
    if (int rc = make_handle(info_.node_id, b.pieces, offset, size, &h))
        return rc;
    peach2_export e{};
    e.handle = b.id();
    e.flags = peach2_flags;
    e.offset = offset;
    e.len = size;
    if (::ioctl(fd_.get(), PEACH2_IOC_EXPORT, &e) < 0)
        return -errno;
    if (e.export_id == 0)
        return TCA_EDEVICE;
    exports_[e.export_id] = ExportRef{at.buf, e.key};
    named_.insert(at.buf);
    attach_export(&h, e.export_id, e.key);
    *out = h;
    return 0;
}

int Context::unexport(std::uint32_t export_id, std::uint32_t key) {
    const auto it = exports_.find(export_id);
    if (it == exports_.end() || it->second.key != key)
        return TCA_ENOTEXPORTED;
    exports_.erase(it);
    peach2_unexport u{};
    u.export_id = export_id;
    if (::ioctl(fd_.get(), PEACH2_IOC_UNEXPORT, &u) < 0)
        return errno == ENOENT ? TCA_ENOTEXPORTED : -errno;
    return 0;
}

int Context::rp(RpState** out) {
    if (!rp_) {
        std::unique_ptr<DriverBuffer> buf;
        if (int rc = new_buffer(CplAreas::kBytes, &buf))
            return rc;
        rp_ = std::make_unique<RpState>(dma_->port(), std::move(buf));
        rp_fast_.store(rp_.get(), std::memory_order_release);
    } else if (rp_->areas().wants_fresh()) {
        // Too many retired slots: new requests take theirs from a fresh
        // area. If it cannot be had, carry on with the current one.
        std::unique_ptr<DriverBuffer> buf;
        if (new_buffer(CplAreas::kBytes, &buf) == 0)
            rp_->areas().add(std::move(buf));
    }
    *out = rp_.get();
    return 0;
}

}  // namespace tca
