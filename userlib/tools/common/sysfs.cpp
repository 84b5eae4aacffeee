// SPDX-License-Identifier: MIT
#include "sysfs.hpp"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "cli.hpp"

namespace tcatools {

std::string default_sysfs_dir() {
    std::string dev = "peach2-0";
    if (const char* env = std::getenv("TCA_DEVICE"); env && *env) {
        dev = env;
        if (const auto slash = dev.rfind('/'); slash != std::string::npos)
            dev.erase(0, slash + 1);
    }
    return "/sys/class/peach2/" + dev;
}

bool read_attr(const std::string& dir, const char* name, std::string* out) {
    // stdio, not iostreams: keeps locale machinery out of the static binary.
    std::FILE* f = std::fopen((dir + "/" + name).c_str(), "r");
    if (!f)
        return false;
    char line[256];
    const bool ok = std::fgets(line, sizeof line, f) != nullptr;
    std::fclose(f);
    if (!ok)
        return false;
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r'))
        s.pop_back();
    *out = s;
    return true;
}

bool read_attr_text(const std::string& dir, const char* name, std::string* out) {
    std::FILE* f = std::fopen((dir + "/" + name).c_str(), "r");
    if (!f)
        return false;
    std::string s;
    char chunk[1024];
    std::size_t n;
    while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0)
        s.append(chunk, n);
    const bool ok = !std::ferror(f);
    std::fclose(f);
    if (ok)
        *out = std::move(s);
    return ok;
}

bool read_attr_u64(const std::string& dir, const char* name, std::uint64_t* out) {
    std::string s;
    return read_attr(dir, name, &s) && parse_u64(s, out);
}

}  // namespace tcatools
