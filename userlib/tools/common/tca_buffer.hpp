// SPDX-License-Identifier: MIT
// A tcaMalloc buffer owned by the program: freed on scope exit.
#pragma once

#include <tca/tca.h>

#include <cstddef>

namespace tcatools {

class TcaBuffer {
public:
	TcaBuffer() = default;
	TcaBuffer(const TcaBuffer &) = delete;
	TcaBuffer &operator=(const TcaBuffer &) = delete;
	~TcaBuffer()
	{
		if (p_)
			tcaFree(p_);
	}
	// 0 or the tcaMalloc error.
	int allocate(std::size_t size)
	{
		const int rc = tcaMalloc(&p_, size);
		size_ = rc ? 0 : size;
		return rc;
	}
	unsigned char *get() const { return static_cast<unsigned char *>(p_); }
	// Forgets the buffer without freeing it (the caller freed it).
	void *release()
	{
		void *p = p_;
		p_ = nullptr;
		size_ = 0;
		return p;
	}
	std::size_t size() const { return size_; }

private:
	void *p_ = nullptr;
	std::size_t size_ = 0;
};

} // namespace tcatools
