// SPDX-License-Identifier: MIT
// The DMA code talks to the driver through this one call, so the run and
// ticket logic can be unit-tested against a scripted stand-in.
#pragma once

namespace tca {

class DriverPort {
public:
	virtual ~DriverPort() = default;
	// ioctl(fd, req, arg): 0 or -errno.
	virtual int call(unsigned long req, void *arg) noexcept = 0;
};

// The real device.
class FdPort final : public DriverPort {
public:
	explicit FdPort(int fd) noexcept : fd_(fd) {}
	int call(unsigned long req, void *arg) noexcept override;

private:
	int fd_; // borrowed from the Context
};

// A driver errno (negative) in library terms. Only codes with a meaning the
// caller can act on are renamed: -ENOSPC (descriptor RAM or budget) becomes
// TCA_ENODESC. Everything else stays -errno (table in userlib/README.md).
int driver_error(int rc) noexcept;

} // namespace tca
