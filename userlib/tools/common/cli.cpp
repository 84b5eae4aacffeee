// SPDX-License-Identifier: MIT
#include "cli.hpp"

#include <getopt.h>

#include <climits>

#include "size_text.hpp"

namespace tcatools {

bool parse_u64(std::string_view s, std::uint64_t* out) { return tca::parse_size(s, out); }

bool parse_i64(std::string_view s, std::int64_t* out) {
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
bool parse_list(std::string_view s, std::vector<T>* out, Parse parse) {
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

// A default as --help shows it: 16M rather than 16777216 (it parses back).
std::string number_text(std::uint64_t v) {
    if (v >= (1u << 20) && v % (1u << 20) == 0)
        return std::to_string(v >> 20) + "M";
    if (v >= 1024 && v % 1024 == 0)
        return std::to_string(v >> 10) + "K";
    return std::to_string(v);
}

std::string number_text(std::int64_t v) {
    return v < 0 ? "-" + number_text(static_cast<std::uint64_t>(-v))
                 : number_text(static_cast<std::uint64_t>(v));
}

template <class T>
std::string list_text(const std::vector<T>& v) {
    std::string s;
    for (const T& x : v)
        s += (s.empty() ? "" : ",") + number_text(x);
    return s;
}

}  // namespace

bool parse_u64_list(std::string_view s, std::vector<std::uint64_t>* out) {
    return parse_list(s, out, parse_u64);
}

bool parse_i64_list(std::string_view s, std::vector<std::int64_t>* out) {
    return parse_list(s, out, parse_i64);
}

std::vector<std::uint64_t> doubling_sizes(std::uint64_t min, std::uint64_t max) {
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

std::vector<std::uint64_t> stepped_sizes(std::uint64_t min, std::uint64_t max, std::uint64_t step) {
    std::vector<std::uint64_t> v;
    if (min == 0 || min > max || step < 2)
        return v;
    for (std::uint64_t s = min; s < max; s *= step) {
        v.push_back(s);
        if (s > max / step)
            break;
    }
    v.push_back(max);
    return v;
}

Options::Options(std::string command, std::string args, std::string about)
    : command_(std::move(command)), args_(std::move(args)), about_(std::move(about)) {}

void Options::add(Opt o) { opts_.push_back(std::move(o)); }

void Options::u64(const char* name, std::uint64_t* out, const char* help) {
    add({name, "N", help, number_text(*out),
         [out](std::string_view s) { return parse_u64(s, out); },
         "a non-negative number (0x-hex, K and M suffixes allowed)"});
}

void Options::integer(const char* name, int* out, const char* help) {
    add({name, "N", help, std::to_string(*out),
         [out](std::string_view s) {
             std::int64_t v = 0;
             if (!parse_i64(s, &v) || v < INT_MIN || v > INT_MAX)
                 return false;
             *out = static_cast<int>(v);
             return true;
         },
         "an integer in range"});
}

void Options::u64_list(const char* name, std::vector<std::uint64_t>* out, const char* help) {
    add({name, "LIST", help, list_text(*out),
         [out](std::string_view s) { return parse_u64_list(s, out); },
         "a comma-separated list of non-negative numbers"});
}

void Options::i64_list(const char* name, std::vector<std::int64_t>* out, const char* help) {
    add({name, "LIST", help, list_text(*out),
         [out](std::string_view s) { return parse_i64_list(s, out); },
         "a comma-separated list of integers"});
}

void Options::text(const char* name, std::string* out, const char* help) {
    add({name, "TEXT", help, *out,
         [out](std::string_view s) {
             *out = std::string(s);
             return true;
         },
         ""});
}

void Options::flag(const char* name, bool* out, const char* help, bool value) {
    add({name, "", help, "",
         [out, value](std::string_view) {
             *out = value;
             return true;
         },
         ""});
}

void Options::custom(const char* name, const char* arg, const char* help, std::string shown,
                     std::function<bool(std::string_view)> set, const char* why) {
    add({name, arg, help, std::move(shown), std::move(set), why});
}

void Options::usage(std::FILE* out) const {
    std::fprintf(out, "usage: %s %s\n%s\n", command_.c_str(), args_.c_str(), about_.c_str());
    if (opts_.empty())
        return;
    std::fprintf(out, "options:\n");
    for (const Opt& o : opts_) {
        const std::string left = "--" + o.name + (o.arg.empty() ? "" : " " + o.arg);
        std::fprintf(out, "  %-26s %s", left.c_str(), o.help.c_str());
        if (!o.arg.empty() && !o.shown.empty())
            std::fprintf(out, " (default %s)", o.shown.c_str());
        std::fprintf(out, "\n");
    }
}

int Options::parse(int argc, char** argv) {
    std::vector<option> table;
    for (std::size_t i = 0; i < opts_.size(); ++i)
        table.push_back(option{opts_[i].name.c_str(),
                               opts_[i].arg.empty() ? no_argument : required_argument, nullptr,
                               static_cast<int>(256 + i)});
    table.push_back(option{"help", no_argument, nullptr, 'h'});
    table.push_back(option{nullptr, 0, nullptr, 0});
    optind = 0;                   // glibc: start afresh (the tests parse more than once)
    opterr = 1;                   // getopt_long prints unknown options and missing values,
    char* const argv0 = argv[0];  // prefixed with argv[0]: the command's name
    argv[0] = const_cast<char*>(command_.c_str());
    const int rc = walk(argc, argv, table.data());
    argv[0] = argv0;
    return rc;
}

int Options::walk(int argc, char** argv, const option* table) {
    for (;;) {
        const int c = getopt_long(argc, argv, "h", table, nullptr);
        if (c == -1)
            break;
        if (c == 'h') {
            usage(stdout);
            return 2;
        }
        if (c < 256 || c >= 256 + static_cast<int>(opts_.size())) {
            std::fprintf(stderr, "(try %s --help)\n", command_.c_str());
            return 1;
        }
        const Opt& o = opts_[static_cast<std::size_t>(c - 256)];
        if (!o.set(optarg ? optarg : "")) {
            std::fprintf(stderr, "%s: --%s %s: expected %s\n", command_.c_str(), o.name.c_str(),
                         optarg ? optarg : "", o.why.c_str());
            return 1;
        }
    }
    if (optind < argc) {
        std::fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", command_.c_str(),
                     argv[optind]);
        return 1;
    }
    return 0;
}

}  // namespace tcatools
