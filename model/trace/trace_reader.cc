// Trace files back into records, with the checks docs/trace-format.md lists.
#include "trace_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace peach2::trace {
namespace {

bool known_type(uint16_t t) {
    switch (static_cast<Type>(t)) {
    case Type::Link:
    case Type::PktSend:
    case Type::PktFwd:
    case Type::PktRecv:
    case Type::DmaStart:
    case Type::DmaDesc:
    case Type::DmaDone:
    case Type::Irq:
    case Type::RpRequest:
    case Type::End: return true;
    }
    return false;
}

std::string hex_bytes(std::span<const uint8_t> b) {
    std::ostringstream s;
    for (size_t i = 0; i < b.size(); ++i)
        s << (i ? " " : "") << std::hex << static_cast<unsigned>(b[i] >> 4)
          << static_cast<unsigned>(b[i] & 15);
    return s.str();
}

bool fail(std::string* err, const std::string& msg) {
    if (err)
        *err = msg;
    return false;
}

}  // namespace

std::string file_name(uint32_t node) { return "node" + std::to_string(node) + kFileSuffix; }

std::optional<TraceFile> read_bytes(std::span<const uint8_t> bytes, const std::string& name,
                                    const ReadOptions& opt, std::string* err) {
    const auto error = [&](const std::string& msg) -> std::optional<TraceFile> {
        fail(err, name + ": " + msg);
        return std::nullopt;
    };
    const size_t magic_len = std::min(bytes.size(), kMagic.size());
    if (bytes.empty())
        return error("empty file, not a PEACH2 trace");
    if (!std::equal(bytes.begin(), bytes.begin() + magic_len, kMagic.begin()))
        return error("not a PEACH2 trace (it starts with " + hex_bytes(bytes.first(magic_len)) +
                     ", a trace with \"PEACH2TR\")");
    if (bytes.size() < kHeaderSize)
        return error("truncated: " + std::to_string(bytes.size()) +
                     " bytes, shorter than the 64-byte header");

    TraceFile tf;
    tf.path = name;
    tf.header = decode_header(bytes.first<kHeaderSize>());
    const Header& h = tf.header;
    if (h.major != kMajor)
        return error("trace format " + std::to_string(h.major) + "." + std::to_string(h.minor) +
                     ", but this peach2-model reads format " + std::to_string(kMajor) +
                     ".x: use the peach2-model built with the emulator that wrote it");
    if (h.header_size < kHeaderSize || h.record_size < kRecordSize || h.header_size > 4096 ||
        h.record_size > 4096)
        return error("corrupt header: header size " + std::to_string(h.header_size) +
                     ", record size " + std::to_string(h.record_size) + " (format 1.x needs " +
                     "at least 64 and 64)");
    if (h.nodes == 0 || h.nodes > kMaxNodes || h.node >= h.nodes)
        return error("corrupt header: node " + std::to_string(h.node) + " of " +
                     std::to_string(h.nodes) + " nodes (at most " + std::to_string(kMaxNodes) +
                     ")");
    if (bytes.size() < h.header_size)
        return error("truncated inside its " + std::to_string(h.header_size) + "-byte header");

    const size_t body = bytes.size() - h.header_size;
    const size_t count = body / h.record_size;
    if (const size_t rest = body % h.record_size; rest != 0) {
        const std::string what = "truncated: the last record has " + std::to_string(rest) + " of " +
                                 std::to_string(h.record_size) + " bytes";
        if (!opt.partial)
            return error(what + " (the file was cut short; was the emulator killed? " +
                         "--partial models the complete records)");
        tf.warnings.push_back(what + ": ignored");
    }

    tf.records.reserve(count);
    uint64_t next_seq = 0;
    for (size_t i = 0; i < count; ++i) {
        const auto raw = bytes.subspan(h.header_size + i * h.record_size).first<kRecordSize>();
        const Record r = decode_record(raw);
        const std::string where = "record " + std::to_string(i) + " (byte " +
                                  std::to_string(h.header_size + i * h.record_size) + ")";
        if (tf.closed)
            return error(where + ": records after the END record (corrupt file)");
        if (r.seq < next_seq)
            return error(where + ": event number " + std::to_string(r.seq) + " after " +
                         std::to_string(next_seq - 1) + " goes backwards (corrupt file)");
        tf.dropped += r.seq - next_seq;
        next_seq = r.seq + 1;
        const auto type = static_cast<uint16_t>(r.type);
        if (!known_type(type)) {
            if (h.minor > kMinor) {
                ++tf.unknown_skipped;
                continue;
            }
            return error(where + ": unknown record type " + std::to_string(type) +
                         " (corrupt file; format " + std::to_string(h.major) + "." +
                         std::to_string(h.minor) + " has no such type)");
        }
        if (r.type == Type::End) {
            tf.closed = true;
            if (r.addr != r.seq || r.arg != tf.dropped)
                tf.warnings.push_back("END record counts " + std::to_string(r.addr) +
                                      " events and " + std::to_string(r.arg) +
                                      " dropped; the records show " + std::to_string(r.seq) +
                                      " and " + std::to_string(tf.dropped));
            continue;
        }
        tf.records.push_back(r);
    }
    if (tf.unknown_skipped)
        tf.warnings.push_back(std::to_string(tf.unknown_skipped) +
                              " records of types newer than this reader were skipped");
    if (!tf.closed) {
        const std::string what =
            "not closed: no END record after " + std::to_string(tf.records.size()) + " records";
        if (!opt.partial)
            return error(what + " (the emulator did not finish the trace; was it killed? " +
                         "--partial models what is there)");
        tf.warnings.push_back(what + ": the run may be cut short");
    }
    if (tf.dropped)
        tf.warnings.push_back(std::to_string(tf.dropped) +
                              " events were dropped while the trace ring was full (a bigger " +
                              "ring, trace-ring=, or a faster disk keeps them)");
    return tf;
}

std::optional<TraceFile> read_file(const std::string& path, const ReadOptions& opt,
                                   std::string* err) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        fail(err, path + ": cannot open (" + std::string(std::strerror(errno)) + ")");
        return std::nullopt;
    }
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    in.seekg(0, std::ios::beg);
    std::vector<uint8_t> bytes(size > 0 ? static_cast<size_t>(size) : 0);
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (size < 0 || !in) {
        fail(err, path + ": read error");
        return std::nullopt;
    }
    return read_bytes(bytes, path, opt, err);
}

std::optional<std::vector<TraceFile>> read_run(const std::vector<std::string>& paths,
                                               const ReadOptions& opt, std::string* err) {
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    for (const std::string& p : paths) {
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            std::vector<std::string> found;
            for (const auto& e : fs::directory_iterator(p, ec))
                if (e.path().extension() == kFileSuffix)
                    found.push_back(e.path().string());
            if (ec) {
                fail(err, p + ": cannot list (" + ec.message() + ")");
                return std::nullopt;
            }
            if (found.empty()) {
                fail(err, p + ": no *" + std::string(kFileSuffix) +
                              " files (record them with scripts/cluster.py --trace " + p + ")");
                return std::nullopt;
            }
            std::sort(found.begin(), found.end());
            files.insert(files.end(), found.begin(), found.end());
        } else {
            files.push_back(p);
        }
    }
    if (files.empty()) {
        fail(err, "no trace files given");
        return std::nullopt;
    }
    std::vector<TraceFile> run;
    for (const std::string& f : files) {
        auto tf = read_file(f, opt, err);
        if (!tf)
            return std::nullopt;
        run.push_back(std::move(*tf));
    }
    std::sort(run.begin(), run.end(),
              [](const TraceFile& a, const TraceFile& b) { return a.header.node < b.header.node; });
    for (size_t i = 0; i < run.size(); ++i) {
        if (run[i].header.nodes != run[0].header.nodes) {
            fail(err, run[i].path + ": a trace of " + std::to_string(run[i].header.nodes) +
                          " nodes, but " + run[0].path + " is of " +
                          std::to_string(run[0].header.nodes) +
                          " (traces of different runs mixed?)");
            return std::nullopt;
        }
        if (i > 0 && run[i].header.node == run[i - 1].header.node) {
            fail(err, run[i].path + " and " + run[i - 1].path + " are both node " +
                          std::to_string(run[i].header.node) +
                          " (traces of different runs mixed?)");
            return std::nullopt;
        }
    }
    return run;
}

}  // namespace peach2::trace
