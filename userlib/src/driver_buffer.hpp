// SPDX-License-Identifier: MIT
// What the library owns of the driver and the kernel, each released once:
// a file descriptor, an mmap()ed range, and a driver buffer
// (PEACH2_IOC_ALLOC) with our mapping of it: a tcaMalloc buffer, or one the
// library uses itself (the completion records of the read proxy).
#pragma once

#include <peach2/peach2_uapi.h>
#include <sys/mman.h>
#include <tca/tca.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tca {

class UniqueFd {
public:
    UniqueFd() noexcept = default;
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }

    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    void reset() noexcept {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_ = -1;
};

class Mapping {
public:
    Mapping() noexcept = default;
    Mapping(void* addr, std::size_t len) noexcept : addr_(addr), len_(len) {}
    Mapping(Mapping&& o) noexcept
        : addr_(std::exchange(o.addr_, nullptr)), len_(std::exchange(o.len_, 0)) {}
    Mapping& operator=(Mapping&& o) noexcept {
        if (this != &o) {
            reset();
            addr_ = std::exchange(o.addr_, nullptr);
            len_ = std::exchange(o.len_, 0);
        }
        return *this;
    }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() { reset(); }

    // mmap() wrapper: 0 and *out set, or -errno.
    static int map(std::size_t len, int prot, int fd, off_t offset, Mapping* out) noexcept {
        void* p = ::mmap(nullptr, len, prot, MAP_SHARED, fd, offset);
        if (p == MAP_FAILED)
            return -errno;
        *out = Mapping(p, len);
        return 0;
    }

    void* get() const noexcept { return addr_; }
    std::size_t size() const noexcept { return len_; }
    void reset() noexcept {
        if (addr_)
            ::munmap(addr_, len_);
        addr_ = nullptr;
        len_ = 0;
    }

private:
    void* addr_ = nullptr;
    std::size_t len_ = 0;
};

// release() (or the destructor) unmaps it, then frees it in the driver.
class DriverBuffer {
public:
    DriverBuffer(int fd, std::uint32_t handle) noexcept : fd_(fd), handle_(handle) {}
    DriverBuffer(const DriverBuffer&) = delete;
    DriverBuffer& operator=(const DriverBuffer&) = delete;
    ~DriverBuffer() { release(); }

    // 0 or -errno from the driver's FREE; idempotent.
    int release() noexcept;
    // The driver's name for the buffer (DMA requests use it); 0 once freed.
    std::uint32_t id() const noexcept { return handle_; }

    std::size_t size = 0;          // bytes the caller asked for
    Mapping map;                   // our read/write view
    std::vector<tcaChunk> pieces;  // physically contiguous pieces, in order

private:
    int fd_;                // borrowed from the Context
    std::uint32_t handle_;  // driver's name for the buffer; 0 = freed
};

// The driver's chunk list of a buffer as handle pieces covering exactly its
// first `size` bytes (TCA_EDEVICE if they are not contiguous in order).
int pieces_from(const std::vector<peach2_chunk>& raw, std::size_t size, std::vector<tcaChunk>* out);

}  // namespace tca
