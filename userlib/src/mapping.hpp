// SPDX-License-Identifier: MIT
// Owns one mmap()ed range; unmaps it once.
#pragma once

#include <cerrno>
#include <cstddef>
#include <sys/mman.h>
#include <utility>

namespace tca {

class Mapping {
public:
	Mapping() noexcept = default;
	Mapping(void *addr, std::size_t len) noexcept : addr_(addr), len_(len) {}
	Mapping(Mapping &&o) noexcept
		: addr_(std::exchange(o.addr_, nullptr)), len_(std::exchange(o.len_, 0)) {}
	Mapping &operator=(Mapping &&o) noexcept
	{
		if (this != &o) {
			reset();
			addr_ = std::exchange(o.addr_, nullptr);
			len_ = std::exchange(o.len_, 0);
		}
		return *this;
	}
	Mapping(const Mapping &) = delete;
	Mapping &operator=(const Mapping &) = delete;
	~Mapping() { reset(); }

	// mmap() wrapper: 0 and *out set, or -errno.
	static int map(std::size_t len, int prot, int fd, off_t offset, Mapping *out) noexcept
	{
		void *p = ::mmap(nullptr, len, prot, MAP_SHARED, fd, offset);
		if (p == MAP_FAILED)
			return -errno;
		*out = Mapping(p, len);
		return 0;
	}

	void *get() const noexcept { return addr_; }
	std::size_t size() const noexcept { return len_; }
	void reset() noexcept
	{
		if (addr_)
			::munmap(addr_, len_);
		addr_ = nullptr;
		len_ = 0;
	}

private:
	void *addr_ = nullptr;
	std::size_t len_ = 0;
};

} // namespace tca
