// SPDX-License-Identifier: MIT
// C entry points must not let C++ exceptions escape into C callers. The only
// ones the library can raise are allocation failures (containers in the
// context); they become -ENOMEM.
#pragma once

#include <cerrno>
#include <new>

namespace tca {

template <class Fn>
int guarded(Fn &&fn) noexcept
{
	try {
		return fn();
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

} // namespace tca
