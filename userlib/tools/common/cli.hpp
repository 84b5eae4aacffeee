// SPDX-License-Identifier: MIT
// Command-line value parsing shared by the programs. Strict: the whole
// string must be a number, no silent truncation or wrap-around.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tcatools {

// Decimal or 0x-hex, optional k/K (1024), m/M (1024²) suffix.
bool parse_u64(std::string_view s, std::uint64_t *out);
// Like parse_u64 with an optional leading '-'.
bool parse_i64(std::string_view s, std::int64_t *out);
// Comma-separated lists; empty items are errors.
bool parse_u64_list(std::string_view s, std::vector<std::uint64_t> *out);
bool parse_i64_list(std::string_view s, std::vector<std::int64_t> *out);

// min, 2·min, 4·min, ... up to max, plus max itself if not reached exactly.
std::vector<std::uint64_t> doubling_sizes(std::uint64_t min, std::uint64_t max);

// Walks argv as "--name value" pairs and flags. Usage:
//   ArgReader a(argc, argv, 1);
//   while (a.next()) { if (a.is("--peer")) a.value_u64(&peer); ... else a.unknown(); }
class ArgReader {
public:
	ArgReader(int argc, char **argv, int first) : argc_(argc), argv_(argv), i_(first - 1) {}
	bool next() { return ok_ && ++i_ < argc_; }
	bool is(std::string_view name) const { return name == argv_[i_]; }
	std::string_view current() const { return argv_[i_]; }
	// Consume the following argument as this option's value.
	bool value(std::string_view *out);
	bool value_u64(std::uint64_t *out);
	bool value_int(int *out);
	bool value_u64_list(std::vector<std::uint64_t> *out);
	bool value_i64_list(std::vector<std::int64_t> *out);
	void unknown();
	// False after any error (already printed to stderr).
	bool ok() const { return ok_; }
	void fail(const char *why);

private:
	int argc_;
	char **argv_;
	int i_;
	bool ok_ = true;
};

} // namespace tcatools
