// SPDX-License-Identifier: MIT
// Context: registered memory (tcaRegister). The driver pins the pages and
// hands back a buffer handle; we keep its pieces like a tcaMalloc buffer's,
// without a mapping of our own (the memory is the caller's).
#include "context.hpp"

#include "handle.hpp"
#include "rp_wait.hpp"

#include <cerrno>
#include <sys/ioctl.h>
#include <unistd.h>

namespace tca {
namespace {

std::uintptr_t page_size() noexcept
{
	static const auto ps = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
	return ps;
}

} // namespace

int Context::register_memory(void *ptr, std::size_t size)
{
	peach2_pin p{};
	p.addr = reinterpret_cast<std::uintptr_t>(ptr);
	p.len = size;
	if (::ioctl(fd_.get(), PEACH2_IOC_PIN, &p) < 0)
		return errno == ENOTTY ? -EOPNOTSUPP : -errno;
	auto buf = std::make_unique<DriverBuffer>(fd_.get(), p.handle); // frees on error
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
	return 0;
}

int Context::deregister_memory(void *ptr, std::size_t size)
{
	const auto addr = reinterpret_cast<std::uintptr_t>(ptr);
	const std::uintptr_t first = addr & ~(page_size() - 1);
	const std::uint64_t pages = (addr + size - first + page_size() - 1) & ~(page_size() - 1);
	auto [lo, hi] = registered_.equal_range(first);
	for (auto it = hi; it != lo;) {
		--it; // the newest of equal ones first
		if (it->second->size != pages)
			continue;
		if (rp_ && rp_->pins().busy(it->second->id(), monotonic_ns()))
			return -EBUSY;
		const int rc = it->second->release(); // the driver ends its exports and names
		registered_.erase(it);
		return rc;
	}
	return TCA_ENOTBUF;
}

} // namespace tca
