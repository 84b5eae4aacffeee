// Reading trace files back: every way a file can be wrong is an error message
// that names the file and the fix, never a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trace_format.h"

namespace peach2::trace {

inline constexpr const char* kFileSuffix = ".p2trace";
// "node3.p2trace": the name the recorder gives node 3's trace in a directory.
std::string file_name(uint32_t node);

struct TraceFile {
    std::string path;
    Header header;
    std::vector<Record> records;   // in recorded order, without the END record
    uint64_t dropped = 0;          // events lost while the ring was full (seq gaps)
    bool closed = false;           // the END record was there
    uint64_t unknown_skipped = 0;  // records of types newer than this reader
    std::vector<std::string> warnings;
};

struct ReadOptions {
    // Accept a file without its END record, or with a partial last record
    // (an emulator that was killed): model what is there, with a warning.
    bool partial = false;
};

std::optional<TraceFile> read_bytes(std::span<const uint8_t> bytes, const std::string& name,
                                    const ReadOptions& opt, std::string* err);
std::optional<TraceFile> read_file(const std::string& path, const ReadOptions& opt,
                                   std::string* err);

// The traces of one run: files and directories (every *.p2trace in them),
// sorted by node. They must agree on the node count and name each node once.
std::optional<std::vector<TraceFile>> read_run(const std::vector<std::string>& paths,
                                               const ReadOptions& opt, std::string* err);

}  // namespace peach2::trace
