// SPDX-License-Identifier: MIT
// Reading the driver's sysfs attributes (/sys/class/peach2/peach2-<n>/...).
#pragma once

#include <cstdint>
#include <string>

namespace tcatools {

// The sysfs directory of the device the library opens: the basename of
// $TCA_DEVICE (default peach2-0) under /sys/class/peach2.
std::string default_sysfs_dir();

// The first line of `dir/name` without the newline; false if unreadable.
bool read_attr(const std::string& dir, const char* name, std::string* out);

// The whole text of `dir/name` (multi-line attributes); false if unreadable.
bool read_attr_text(const std::string& dir, const char* name, std::string* out);

// An attribute holding one number (decimal or 0x-hex).
bool read_attr_u64(const std::string& dir, const char* name, std::uint64_t* out);

}  // namespace tcatools
