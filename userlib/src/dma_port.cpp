// SPDX-License-Identifier: MIT
#include "dma_port.hpp"

#include <tca/tca.h>

#include <cerrno>
#include <sys/ioctl.h>

namespace tca {

int FdPort::call(unsigned long req, void *arg) noexcept
{
	return ::ioctl(fd_, req, arg) < 0 ? -errno : 0;
}

int driver_error(int rc) noexcept
{
	return rc == -ENOSPC ? TCA_ENODESC : rc;
}

} // namespace tca
