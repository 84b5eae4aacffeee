// SPDX-License-Identifier: MIT
#include "cli.hpp"

#include "size_text.hpp"

#include <climits>
#include <cstdio>

namespace tcatools {

bool parse_u64(std::string_view s, std::uint64_t *out)
{
	return tca::parse_size(s, out);
}

bool parse_i64(std::string_view s, std::int64_t *out)
{
	const bool neg = !s.empty() && s[0] == '-';
	if (neg)
		s.remove_prefix(1);
	std::uint64_t v = 0;
	if (!parse_u64(s, &v) || v > static_cast<std::uint64_t>(INT64_MAX))
		return false;
	*out = neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
	return true;
}

namespace {

template <class T, class Parse>
bool parse_list(std::string_view s, std::vector<T> *out, Parse parse)
{
	std::vector<T> v;
	for (;;) {
		const std::size_t comma = s.find(',');
		T x;
		if (!parse(s.substr(0, comma), &x))
			return false;
		v.push_back(x);
		if (comma == std::string_view::npos)
			break;
		s.remove_prefix(comma + 1);
	}
	*out = std::move(v);
	return true;
}

} // namespace

bool parse_u64_list(std::string_view s, std::vector<std::uint64_t> *out)
{
	return parse_list(s, out, parse_u64);
}

bool parse_i64_list(std::string_view s, std::vector<std::int64_t> *out)
{
	return parse_list(s, out, parse_i64);
}

std::vector<std::uint64_t> doubling_sizes(std::uint64_t min, std::uint64_t max)
{
	std::vector<std::uint64_t> v;
	if (min == 0 || min > max)
		return v;
	std::uint64_t s = min;
	for (;;) {
		v.push_back(s);
		if (s > max / 2)
			break;
		s *= 2;
	}
	if (v.back() != max)
		v.push_back(max);
	return v;
}

bool ArgReader::value(std::string_view *out)
{
	if (i_ + 1 >= argc_) {
		std::fprintf(stderr, "error: %s needs a value\n", argv_[i_]);
		ok_ = false;
		return false;
	}
	*out = argv_[++i_];
	return true;
}

void ArgReader::fail(const char *why)
{
	std::fprintf(stderr, "error: %s: %s\n", argv_[i_], why);
	ok_ = false;
}

bool ArgReader::value_u64(std::uint64_t *out)
{
	std::string_view s;
	if (!value(&s))
		return false;
	if (!parse_u64(s, out)) {
		fail("not a non-negative number");
		return false;
	}
	return true;
}

bool ArgReader::value_int(int *out)
{
	std::string_view s;
	std::int64_t v = 0;
	if (!value(&s))
		return false;
	if (!parse_i64(s, &v) || v < INT_MIN || v > INT_MAX) {
		fail("not an integer in range");
		return false;
	}
	*out = static_cast<int>(v);
	return true;
}

bool ArgReader::value_u64_list(std::vector<std::uint64_t> *out)
{
	std::string_view s;
	if (!value(&s))
		return false;
	if (!parse_u64_list(s, out)) {
		fail("not a comma-separated list of non-negative numbers");
		return false;
	}
	return true;
}

bool ArgReader::value_i64_list(std::vector<std::int64_t> *out)
{
	std::string_view s;
	if (!value(&s))
		return false;
	if (!parse_i64_list(s, out)) {
		fail("not a comma-separated list of integers");
		return false;
	}
	return true;
}

void ArgReader::unknown()
{
	std::fprintf(stderr, "error: unknown argument '%s' (try --help)\n", argv_[i_]);
	ok_ = false;
}

} // namespace tcatools
