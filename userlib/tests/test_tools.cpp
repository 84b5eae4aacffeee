// SPDX-License-Identifier: MIT
// The programs' shared layer and pure parts: pattern generator,
// statistics and the CSV, option tables and value parsing, exchange tags,
// tca_check pio's canary checks.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../tools/bench/protocol.hpp"
#include "../tools/check/pio_canary.hpp"
#include "../tools/common/cli.hpp"
#include "../tools/common/modes.hpp"
#include "../tools/common/pattern.hpp"
#include "../tools/common/results.hpp"
#include "../tools/common/session.hpp"

using namespace tcatools;

TEST(Pattern, FillMatchesByteFunctionAtEveryStart) {
    for (std::uint64_t first : {0ull, 1ull, 7ull, 8ull, 13ull, 1000003ull})
        for (std::size_t len : {0u, 1u, 7u, 8u, 9u, 63u, 300u}) {
            std::vector<std::uint8_t> v(len);
            fill_pattern(v, 42, first);
            for (std::size_t j = 0; j < len; ++j)
                ASSERT_EQ(pattern_byte(42, first + j), v[j]) << first << "+" << j;
            EXPECT_EQ(kNoMismatch, find_mismatch(v, 42, first));
        }
}

TEST(Pattern, FindsTheFirstDifference) {
    std::vector<std::uint8_t> v(5000);
    fill_pattern(v, 9);
    for (std::size_t at : {0u, 1u, 255u, 256u, 4999u}) {
        std::vector<std::uint8_t> w = v;
        w[at] ^= 0x40;
        if (at + 1 < w.size())
            w[at + 1 + (w.size() - at - 2) / 2] ^= 0x01;  // a later difference too
        EXPECT_EQ(at, find_mismatch(w, 9));
    }
    EXPECT_NE(kNoMismatch, find_mismatch(v, 10));  // other seed
}

TEST(Pattern, SeedsDifferPerMessage) {
    using namespace tcabench;
    const unsigned phase = phase_of(Mode::Pio, tcabench::Test::Latency);
    std::set<std::uint64_t> seeds;
    for (std::uint32_t si = 0; si < 4; ++si)
        for (std::uint64_t it = 0; it < 50; ++it)
            for (Dir d : {Dir::PingToPong, Dir::PongToPing})
                EXPECT_TRUE(seeds.insert(payload_seed(phase, si, 8u << si, it, d)).second);
    // Consecutive messages of one size really differ in their first bytes.
    std::vector<std::uint8_t> a(8), b(8);
    fill_pattern(a, payload_seed(phase, 0, 8, 0, Dir::PingToPong));
    fill_pattern(b, payload_seed(phase, 0, 8, 1, Dir::PingToPong));
    EXPECT_NE(a, b);
}

TEST(Stats, NearestRank) {
    std::vector<double> v;
    for (int i = 100; i >= 1; --i)
        v.push_back(i);
    const Summary s = summarize(v);
    EXPECT_EQ(1, s.min);
    EXPECT_EQ(50, s.median);
    EXPECT_EQ(99, s.p99);
    EXPECT_EQ(7, summarize({7}).p99);
    EXPECT_EQ(0, summarize({}).median);
    EXPECT_EQ(2, summarize({3, 1, 2}).median);
    EXPECT_EQ(3, summarize({3, 1, 2}).p99);
}

TEST(Cli, Numbers) {
    std::uint64_t u = 0;
    EXPECT_TRUE(parse_u64("4096", &u));
    EXPECT_EQ(4096u, u);
    EXPECT_TRUE(parse_u64("0x1F", &u));
    EXPECT_EQ(31u, u);
    EXPECT_TRUE(parse_u64("4k", &u));
    EXPECT_EQ(4096u, u);
    EXPECT_TRUE(parse_u64("2M", &u));
    EXPECT_EQ(2u << 20, u);
    EXPECT_TRUE(parse_u64("18446744073709551615", &u));
    EXPECT_FALSE(parse_u64("18446744073709551616", &u));
    EXPECT_TRUE(parse_u64("17179869184M", &u));  // 2^34 * 2^20 = 2^54
    EXPECT_EQ(1ull << 54, u);
    EXPECT_FALSE(parse_u64("17592186044416M", &u));  // 2^44 * 2^20 wraps
    for (const char* bad : {"", "k", "-1", "1.5", "12x", "0x", " 1"})
        EXPECT_FALSE(parse_u64(bad, &u)) << bad;
    std::int64_t i = 0;
    EXPECT_TRUE(parse_i64("-13", &i));
    EXPECT_EQ(-13, i);
    EXPECT_FALSE(parse_i64("--1", &i));
}

TEST(Cli, ListsAndSizes) {
    std::vector<std::uint64_t> v;
    EXPECT_TRUE(parse_u64_list("4,8,1k", &v));
    EXPECT_EQ((std::vector<std::uint64_t>{4, 8, 1024}), v);
    EXPECT_FALSE(parse_u64_list("4,,8", &v));
    EXPECT_FALSE(parse_u64_list("4,", &v));
    std::vector<std::int64_t> w;
    EXPECT_TRUE(parse_i64_list("0,-1,7", &w));
    EXPECT_EQ((std::vector<std::int64_t>{0, -1, 7}), w);
    EXPECT_EQ((std::vector<std::uint64_t>{4, 8, 16, 32}), doubling_sizes(4, 32));
    EXPECT_EQ((std::vector<std::uint64_t>{3, 6, 12, 20}), doubling_sizes(3, 20));
    EXPECT_EQ((std::vector<std::uint64_t>{5}), doubling_sizes(5, 5));
    EXPECT_TRUE(doubling_sizes(0, 5).empty());
    EXPECT_TRUE(doubling_sizes(6, 5).empty());
    EXPECT_EQ(65u, doubling_sizes(1, UINT64_MAX).size());  // 2^0..2^63, max; no wrap
}

TEST(Cli, SteppedSizes) {
    EXPECT_EQ((std::vector<std::uint64_t>{4, 16, 64, 100}), stepped_sizes(4, 100, 4));
    EXPECT_EQ((std::vector<std::uint64_t>{4, 16, 64}), stepped_sizes(4, 64, 4));
    EXPECT_EQ((std::vector<std::uint64_t>{8}), stepped_sizes(8, 8, 2));
    EXPECT_TRUE(stepped_sizes(4, 64, 1).empty());
    EXPECT_TRUE(stepped_sizes(0, 64, 2).empty());
    EXPECT_EQ(stepped_sizes(1, UINT64_MAX, 2).back(), UINT64_MAX);  // no wrap
}

// Parses a command line (words split at spaces) with `opts`.
int parse_line(Options& opts, std::string line) {
    std::vector<std::string> words;
    std::istringstream in(line);
    for (std::string w; in >> w;)
        words.push_back(w);
    std::vector<char*> argv;
    for (std::string& w : words)
        argv.push_back(w.data());
    argv.push_back(nullptr);
    return opts.parse(static_cast<int>(words.size()), argv.data());
}

TEST(Cli, OptionTables) {
    struct {
        std::uint64_t size = 16;
        int peer = -1;
        std::vector<std::int64_t> offsets{0};
        std::string csv;
        bool fast = false;
        Mode mode = Mode::Card;
    } o;
    Options opts("test cmd", "[options]", "A test.");
    opts.u64("size", &o.size, "bytes");
    opts.integer("peer", &o.peer, "node");
    opts.i64_list("offsets", &o.offsets, "where");
    opts.text("csv", &o.csv, "file");
    opts.flag("fast", &o.fast, "go");
    add_mode_option(opts, "mode", &o.mode, "descriptor mode", true);
    ASSERT_EQ(
        0,
        parse_line(opts, "cmd --size 4K --peer=3 --offsets -1,7 --csv /tmp/x --fast --mode host"));
    EXPECT_EQ(4096u, o.size);
    EXPECT_EQ(3, o.peer);
    EXPECT_EQ((std::vector<std::int64_t>{-1, 7}), o.offsets);
    EXPECT_EQ("/tmp/x", o.csv);
    EXPECT_TRUE(o.fast);
    EXPECT_EQ(Mode::Host, o.mode);
    // Bad values, unknown options, missing values and stray words fail.
    for (const char* bad :
         {"cmd --size -1", "cmd --size 4x", "cmd --peer 99999999999", "cmd --nope", "cmd --size",
          "cmd --mode pio", "cmd --mode dma", "cmd extra"})
        EXPECT_EQ(1, parse_line(opts, bad)) << bad;
    EXPECT_EQ(4096u, o.size) << "a failed parse leaves good values alone";
    // --help prints the table (defaults from the struct) and says "stop".
    std::FILE* out = std::tmpfile();
    opts.usage(out);
    std::rewind(out);
    char text[2048] = {};
    const std::size_t n = std::fread(text, 1, sizeof text - 1, out);
    std::fclose(out);
    const std::string help(text, n);
    EXPECT_NE(std::string::npos, help.find("usage: test cmd [options]")) << help;
    EXPECT_NE(std::string::npos, help.find("--size N")) << help;
    EXPECT_NE(std::string::npos, help.find("(default 16)")) << help;
    EXPECT_NE(std::string::npos, help.find("(default card)")) << help;
}

TEST(Cli, ModeNames) {
    std::vector<Mode> m;
    ASSERT_TRUE(parse_modes("host,pio", &m));
    EXPECT_EQ((std::vector<Mode>{Mode::Host, Mode::Pio}), m);
    EXPECT_FALSE(parse_modes("card,card", &m));
    EXPECT_FALSE(parse_modes("dma", &m));
    EXPECT_FALSE(parse_modes("", &m));
    for (unsigned i = 0; i < kModes; ++i) {
        Mode back;
        ASSERT_TRUE(parse_mode(mode_name(static_cast<Mode>(i)), &back));
        EXPECT_EQ(static_cast<Mode>(i), back);
    }
    EXPECT_EQ(TCA_DMA_REG_MODE, mode_flags(Mode::Reg));
    EXPECT_EQ(TCA_DMA_HOST_DESC, mode_flags(Mode::Host));
    EXPECT_EQ(0u, mode_flags(Mode::Card));
}

TEST(Session, TagsDependOnEveryParameter) {
    const std::vector<std::uint64_t> sizes{4, 8};
    EXPECT_EQ(tag_of("pingpong", {10, 1}, sizes), tag_of("pingpong", {10, 1}, sizes));
    EXPECT_NE(tag_of("pingpong", {10, 1}, sizes), tag_of("pingpong", {11, 1}, sizes));
    EXPECT_NE(tag_of("pingpong", {10, 1}, sizes), tag_of("pingpong", {10, 1}, {4, 16}));
    EXPECT_NE(tag_of("pingpong", {10, 1}, sizes), tag_of("pingpong", {10, 1}, {4, 8, 16}));
    EXPECT_NE(tag_of("pingpong", {10, 1}, sizes), tag_of("dma", {10, 1}, sizes));
    // The barrier's tag differs from the set-up's (Session::barrier).
    const std::uint32_t t = tag_of("pingpong", {10, 1}, sizes);
    EXPECT_NE(t, t ^ 0x444f4e45u);
}

TEST(Results, TableAndCsv) {
    std::vector<Row> rows;
    rows.push_back(latency_row("latency", "pio", 64, {3, 1, 2}, 5));
    rows.push_back(bandwidth_row("stream", "host", 1 << 20, 10, 0.01, 10));
    rows.push_back(latency_row("latency", "pio", 64, {}, 5));  // the pong side
    EXPECT_EQ(2, rows[0].median_us);
    EXPECT_EQ(32, rows[0].mb_per_s);  // 64 B / 2 µs
    EXPECT_NEAR(1048.576, rows[1].mb_per_s, 1e-6);
    const std::string path = testing::TempDir() + "/tca_results.csv";
    ASSERT_TRUE(write_csv(path, rows, "test"));
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(
        "test,mode,size,count,min_us,median_us,p99_us,mb_per_s,verified\n"
        "latency,pio,64,3,1.000,2.000,3.000,32.00,5\n"
        "stream,host,1048576,10,,,,1048.58,10\n"
        "latency,pio,64,0,,,,,5\n",
        text.str());
    EXPECT_FALSE(write_csv("/nonexistent/dir/x.csv", rows, "test"));
}

TEST(PioCheckCanary, WrittenAlwaysDiffersFromCanary) {
    for (std::uint64_t k = 0; k < 20; ++k)
        for (std::uint64_t i = 0; i < 2000; ++i)
            ASSERT_NE(tcacheck::data_canary(i), tcacheck::written_byte(k, i));
}

TEST(PioCheckCanary, CheckAfterWrite) {
    using namespace tcacheck;
    const std::uint64_t guard = 16, size = 100;
    std::vector<std::uint8_t> pristine(size + 2 * guard);
    fill_pristine(pristine, guard);
    std::int64_t where = 0;
    auto apply = [&](std::uint64_t k, std::uint64_t off, std::uint64_t len) {
        std::vector<std::uint8_t> b = pristine;
        fill_written(std::span(b.data() + guard + off, len), k, off);
        return b;
    };
    // The correct write passes, for edge positions too.
    for (auto [off, len] : {std::pair{0ull, 1ull}, {99ull, 1ull}, {0ull, 100ull}, {13ull, 7ull}}) {
        const auto b = apply(3, off, len);
        EXPECT_EQ(kOk, check_after_write(b, pristine, guard, 3, off, len, &where));
    }
    EXPECT_EQ(kOk, check_after_write(pristine, pristine, guard, 0, 0, 0, &where));
    // A byte short (the last one not written).
    auto b = apply(3, 13, 7);
    b[guard + 19] = pristine[guard + 19];
    EXPECT_EQ(kTargetMismatch, check_after_write(b, pristine, guard, 3, 13, 7, &where));
    EXPECT_EQ(19, where);
    // One byte too many, after and before.
    b = apply(3, 13, 7);
    b[guard + 20] ^= 1;
    EXPECT_EQ(kStrayWrite, check_after_write(b, pristine, guard, 3, 13, 7, &where));
    EXPECT_EQ(20, where);
    b = apply(3, 13, 7);
    b[guard + 12] ^= 1;
    EXPECT_EQ(kStrayWrite, check_after_write(b, pristine, guard, 3, 13, 7, &where));
    EXPECT_EQ(12, where);
    // Into the guards.
    b = apply(3, 0, 100);
    b[guard - 1] ^= 1;
    EXPECT_EQ(kStrayWrite, check_after_write(b, pristine, guard, 3, 0, 100, &where));
    EXPECT_EQ(-1, where);
    b = apply(3, 0, 100);
    b[guard + 100] ^= 1;
    EXPECT_EQ(kStrayWrite, check_after_write(b, pristine, guard, 3, 0, 100, &where));
    EXPECT_EQ(100, where);
    // Data of another write number.
    b = apply(4, 13, 7);
    EXPECT_EQ(kTargetMismatch, check_after_write(b, pristine, guard, 3, 13, 7, &where));
}
