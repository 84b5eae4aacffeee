// SPDX-License-Identifier: MIT
// The programs' command lines. Each command declares its options as a table
// bound to the fields of its options struct (whose initial values are the
// defaults, printed by --help); getopt_long does the walking (--name value,
// --name=value, unique prefixes, error messages), the table the rest.
// Values are strict: the whole string must be a number, no silent
// truncation or wrap-around.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

struct option;

namespace tcatools {

// Decimal or 0x-hex, optional k/K (1024), m/M (1024²) suffix.
bool parse_u64(std::string_view s, std::uint64_t* out);
// Like parse_u64 with an optional leading '-'.
bool parse_i64(std::string_view s, std::int64_t* out);
// Comma-separated lists; empty items are errors.
bool parse_u64_list(std::string_view s, std::vector<std::uint64_t>* out);
bool parse_i64_list(std::string_view s, std::vector<std::int64_t>* out);

// min, 2·min, 4·min, ... up to max, plus max itself if not reached exactly.
std::vector<std::uint64_t> doubling_sizes(std::uint64_t min, std::uint64_t max);
// min, min·step, min·step², ... below max, then max itself (step >= 2).
std::vector<std::uint64_t> stepped_sizes(std::uint64_t min, std::uint64_t max, std::uint64_t step);

class Options {
public:
    // command: e.g. "tca_check pio recv" (names it in messages); args: the
    // usage line after it; about: what the command does (for --help).
    Options(std::string command, std::string args, std::string about);

    void u64(const char* name, std::uint64_t* out, const char* help);
    void integer(const char* name, int* out, const char* help);
    void u64_list(const char* name, std::vector<std::uint64_t>* out, const char* help);
    void i64_list(const char* name, std::vector<std::int64_t>* out, const char* help);
    void text(const char* name, std::string* out, const char* help);
    // Takes no value: sets *out to `value`.
    void flag(const char* name, bool* out, const char* help, bool value = true);
    // Any other value: `set` returns false for a bad one, `why` says what is
    // expected. `shown` is the default as --help prints it.
    void custom(const char* name, const char* arg, const char* help, std::string shown,
                std::function<bool(std::string_view)> set, const char* why);

    // 0: run; 1: bad arguments (printed to stderr); 2: --help printed.
    int parse(int argc, char** argv);
    void usage(std::FILE* out) const;

private:
    struct Opt {
        std::string name, arg, help, shown;  // arg empty: a flag (no value)
        std::function<bool(std::string_view)> set;
        std::string why;
    };
    void add(Opt o);
    int walk(int argc, char** argv, const struct option* table);

    std::string command_, args_, about_;
    std::vector<Opt> opts_;
};

}  // namespace tcatools
