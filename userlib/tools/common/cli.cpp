// SPDX-License-Identifier: MIT
#include "cli.hpp"

#include <climits>
#include <cstdio>

namespace tcatools {

bool parse_u64(std::string_view s, std::uint64_t *out)
{
	unsigned base = 10;
	if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s.remove_prefix(2);
	}
	std::uint64_t mult = 1;
	if (!s.empty() && base == 10) {
		const char c = s.back();
		if (c == 'k' || c == 'K')
			mult = 1024;
		else if (c == 'm' || c == 'M')
			mult = 1024 * 1024;
		if (mult != 1)
			s.remove_suffix(1);
	}
	if (s.empty())
		return false;
	std::uint64_t v = 0;
	for (char c : s) {
		unsigned d;
		if (c >= '0' && c <= '9')
			d = static_cast<unsigned>(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = static_cast<unsigned>(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = static_cast<unsigned>(c - 'A' + 10);
		else
			return false;
		if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v))
			return false;
	}
	if (__builtin_mul_overflow(v, mult, &v))
		return false;
	*out = v;
	return true;
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
