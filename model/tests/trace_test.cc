// The trace format: encoding, the recorder's bounded ring, and every way a
// file can be wrong reaching the reader as a clear error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "synthetic.h"
#include "trace_reader.h"
#include "trace_recorder.h"

namespace peach2::trace {
namespace {

namespace fs = std::filesystem;

struct TempDir {
    fs::path path;
    TempDir() {
        path = fs::temp_directory_path() /
               ("peach2-trace-test." + std::to_string(getpid()) + "." +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

std::vector<uint8_t> example_file(uint32_t node = 0) {
    auto run = model::SyntheticRun::create("2", nullptr);
    run->pio(0, 1, 0x1000, 300);
    run->dma(0, 1, DmaMode::ChainCard, {{1, 0x2000, 5000}});
    run->read_proxy(1, 0, 1, 64);
    return run->file_bytes(node);
}

std::string read_error(std::vector<uint8_t> bytes, ReadOptions opt = {}) {
    std::string err;
    auto f = read_bytes(bytes, "t.p2trace", opt, &err);
    return f ? "" : err;
}

void put16(std::vector<uint8_t>& b, size_t off, uint16_t v) {
    b[off] = static_cast<uint8_t>(v);
    b[off + 1] = static_cast<uint8_t>(v >> 8);
}

TEST(TraceFormat, RecordsAndHeadersRoundTrip) {
    const std::vector<Record> records = {
        link_state(kPortE, true, 0, 1, kPortW),
        pkt_send(Origin::Dma, kPortE, 0x80001000, 4096, 0, 1, 77, 2, 5, 3),
        pkt_fwd(kPortW, kPortS, 0x100000000ull, 256, 2, 9, 1234567),
        pkt_recv(RecvKind::RpRing, kPortW, 0x40008000, 64, 3, 0, 12, 23, 2, 99),
        dma_start(4, DmaMode::ChainHost, (1ull << 63) | 0x1000, 42),
        dma_desc(1, DmaMode::Register, 42, 0x1234, 0x80000000, 8192, 256, 512,
                 kDescLast | kDescStrideDst),
        dma_done(3, 42, 14, 65536, 17),
        irq(6, 1u << 3),
        rp_request(3, 1, 2, 0x4000, 8, 7, 5),
        end(100, 3),
    };
    uint64_t seq = 10;
    for (Record r : records) {
        r.t_emu_ns = 123456789 + seq;
        r.t_host_ns = 987654321 + seq;
        r.seq = seq++;
        std::array<uint8_t, kRecordSize> raw{};
        encode(r, raw);
        EXPECT_EQ(decode_record(raw), r) << type_name(r.type);
    }
    Header h = make_header(3, 8, "a-very-long-producer-name");
    h.t_emu_ns = 5;
    h.t_host_ns = 6;
    h.ring_records = 1024;
    std::array<uint8_t, kHeaderSize> raw{};
    encode(h, raw);
    EXPECT_TRUE(std::equal(kMagic.begin(), kMagic.end(), raw.begin()));
    const Header back = decode_header(raw);
    EXPECT_EQ(back.node, 3u);
    EXPECT_EQ(back.nodes, 8u);
    EXPECT_EQ(back.ring_records, 1024u);
    EXPECT_EQ(back.t_emu_ns, 5u);
    EXPECT_EQ(std::string(back.producer.data()), "a-very-long-pro");  // NUL kept
    // Field views name what the generic fields hold.
    EXPECT_EQ(send_origin(records[1]), Origin::Dma);
    EXPECT_EQ(send_desc_index(records[1]), 3u);
    EXPECT_EQ(recv_kind(records[3]), RecvKind::RpRing);
    EXPECT_EQ(recv_error(records[3]), 23);
    EXPECT_EQ(desc_where(records[5]), DmaMode::Register);
    EXPECT_EQ(desc_flags(records[5]), kDescLast | kDescStrideDst);
}

TEST(Recorder, WritesHeaderRecordsAndEnd) {
    TempDir dir;
    std::string err;
    Recorder::Options opt;
    opt.path = dir.file(file_name(1));
    opt.node = 1;
    opt.nodes = 4;
    opt.ring_records = 100;  // rounded up to 128
    opt.t_emu_ns = 500;
    {
        auto rec = Recorder::open(opt, &err);
        ASSERT_TRUE(rec) << err;
        for (uint32_t i = 0; i < 1000; ++i)
            rec->record(pkt_send(Origin::Pio, kPortE, i, 8, 1, 2, i), 1000 + i);
        EXPECT_EQ(rec->events(), 1000u);
        EXPECT_EQ(rec->error(), "");
    }
    auto f = read_file(opt.path, {}, &err);
    ASSERT_TRUE(f) << err;
    EXPECT_TRUE(f->closed);
    EXPECT_EQ(f->header.node, 1u);
    EXPECT_EQ(f->header.nodes, 4u);
    EXPECT_EQ(f->header.ring_records, 128u);
    EXPECT_EQ(f->header.t_emu_ns, 500u);
    EXPECT_EQ(std::string(f->header.producer.data()), "qemu-peach2");
    // The writer thread keeps up with 1000 records, or drops some and says so.
    EXPECT_EQ(f->records.size() + f->dropped, 1000u);
    uint64_t last_host = 0;
    for (const Record& r : f->records) {
        EXPECT_EQ(r.type, Type::PktSend);
        EXPECT_EQ(r.t_emu_ns, 1000 + r.seq);
        EXPECT_EQ(r.addr, r.seq);
        EXPECT_GE(r.t_host_ns, last_host);
        last_host = r.t_host_ns;
    }
}

TEST(Recorder, FullRingDropsAndCountsWithoutBlocking) {
    TempDir dir;
    std::string err;
    Recorder::Options opt;
    opt.path = dir.file("n0.p2trace");
    opt.nodes = 2;
    opt.ring_records = 64;
    opt.writer_thread = false;  // nothing drains until we say so
    {
        auto rec = Recorder::open(opt, &err);
        ASSERT_TRUE(rec) << err;
        for (uint32_t i = 0; i < 100; ++i)
            rec->record(irq(1, i), i);
        EXPECT_EQ(rec->dropped(), 36u);
        rec->drain();
        for (uint32_t i = 100; i < 110; ++i)
            rec->record(irq(1, i), i);
        EXPECT_EQ(rec->dropped(), 36u);
        EXPECT_EQ(rec->events(), 110u);
    }
    auto f = read_file(opt.path, {}, &err);
    ASSERT_TRUE(f) << err;
    ASSERT_EQ(f->records.size(), 74u);
    EXPECT_EQ(f->dropped, 36u);
    EXPECT_EQ(f->records[63].seq, 63u);
    EXPECT_EQ(f->records[64].seq, 100u);  // the gap is where the ring was full
    ASSERT_FALSE(f->warnings.empty());
    EXPECT_NE(f->warnings.back().find("36 events were dropped"), std::string::npos);
}

TEST(Recorder, RefusesBadOptionsAndUnwritablePaths) {
    std::string err;
    Recorder::Options opt;
    opt.path = "/nonexistent-dir/x.p2trace";
    opt.nodes = 2;
    EXPECT_FALSE(Recorder::open(opt, &err));
    EXPECT_NE(err.find("cannot create /nonexistent-dir/x.p2trace"), std::string::npos) << err;
    opt.path = "/tmp/unused.p2trace";
    opt.node = 2;
    EXPECT_FALSE(Recorder::open(opt, &err));
    EXPECT_NE(err.find("node 2 of 2"), std::string::npos) << err;
    opt.node = 0;
    opt.ring_records = 10;
    EXPECT_FALSE(Recorder::open(opt, &err));
    EXPECT_NE(err.find("ring of 10 records"), std::string::npos) << err;
}

TEST(Reader, ReadsWhatTheSyntheticRunWrote) {
    std::string err;
    auto f = read_bytes(example_file(0), "node0.p2trace", {}, &err);
    ASSERT_TRUE(f) << err;
    EXPECT_TRUE(f->closed);
    EXPECT_EQ(f->dropped, 0u);
    EXPECT_TRUE(f->warnings.empty());
    EXPECT_GT(f->records.size(), 10u);
}

TEST(Reader, ForeignFilesAreNamedAsSuch) {
    EXPECT_NE(read_error({}).find("empty file"), std::string::npos);
    const std::string png = "\x89PNG\r\n\x1a\n and more";
    EXPECT_NE(read_error({png.begin(), png.end()}).find("not a PEACH2 trace (it starts with 89 50"),
              std::string::npos)
        << read_error({png.begin(), png.end()});
    const std::string text = "node,time\n1,2\n";
    EXPECT_NE(read_error({text.begin(), text.end()}).find("not a PEACH2 trace"), std::string::npos);
}

TEST(Reader, TruncatedFilesAreErrorsUnlessPartialIsAsked) {
    auto bytes = example_file();
    EXPECT_NE(read_error({bytes.begin(), bytes.begin() + 5}).find("truncated"), std::string::npos);
    EXPECT_NE(read_error({bytes.begin(), bytes.begin() + 40}).find("shorter than the 64-byte"),
              std::string::npos);
    // Cut inside a record.
    std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 64 - 20);
    const std::string e = read_error(cut);
    EXPECT_NE(e.find("truncated: the last record has 44 of 64 bytes"), std::string::npos) << e;
    EXPECT_NE(e.find("--partial"), std::string::npos) << e;
    std::string err;
    auto f = read_bytes(cut, "t", {.partial = true}, &err);
    ASSERT_TRUE(f) << err;
    EXPECT_FALSE(f->closed);
    EXPECT_EQ(f->warnings.size(), 2u);  // the partial record, and no END
    // Cut at a record boundary: no END record.
    std::vector<uint8_t> unclosed(bytes.begin(), bytes.end() - 64);
    EXPECT_NE(read_error(unclosed).find("not closed: no END record"), std::string::npos);
    EXPECT_EQ(read_error(unclosed, {.partial = true}), "");
}

TEST(Reader, HeaderAndRecordCorruptionAreErrors) {
    auto bytes = example_file();
    auto with = [&](auto change) {
        auto b = bytes;
        change(b);
        return read_error(b);
    };
    EXPECT_NE(with([](auto& b) { put16(b, 8, 2); }).find("trace format 2.0"), std::string::npos);
    EXPECT_NE(with([](auto& b) { put16(b, 14, 32); }).find("record size 32"), std::string::npos);
    EXPECT_NE(with([](auto& b) { b[20] = 0; }).find("node 0 of 0 nodes"), std::string::npos);
    EXPECT_NE(with([](auto& b) { b[16] = 7; }).find("node 7 of 2 nodes"), std::string::npos);
    // Record 3's event number goes back to 0.
    EXPECT_NE(with([](auto& b) {
                  std::fill_n(b.begin() + 64 + 3 * 64 + 16, 8, 0);
              }).find("record 3 (byte 256): event number 0 after 2 goes backwards"),
              std::string::npos);
    // Unknown record type in a 1.0 file: corrupt.
    EXPECT_NE(with([](auto& b) { put16(b, 64 + 2 * 64 + 24, 77); }).find("unknown record type 77"),
              std::string::npos);
    // A record after END.
    auto extra = bytes;
    extra.insert(extra.end(), bytes.end() - 64, bytes.end());
    EXPECT_NE(read_error(extra).find("after the END record"), std::string::npos);
}

TEST(Reader, NewerMinorVersionsSkipUnknownTypes) {
    auto bytes = example_file();
    put16(bytes, 10, kMinor + 1);
    put16(bytes, 64 + 2 * 64 + 24, 77);
    std::string err;
    auto f = read_bytes(bytes, "t", {}, &err);
    ASSERT_TRUE(f) << err;
    EXPECT_EQ(f->unknown_skipped, 1u);
    // Bigger records of a newer minor version: the extra bytes are skipped.
    auto run = model::SyntheticRun::create("2", nullptr);
    run->pio(0, 1, 0, 8);
    const auto small = run->file_bytes(0);
    std::vector<uint8_t> big(small.begin(), small.begin() + 64);
    put16(big, 10, kMinor + 1);
    put16(big, 14, 80);
    for (size_t i = 64; i < small.size(); i += 64) {
        big.insert(big.end(), small.begin() + i, small.begin() + i + 64);
        big.insert(big.end(), 16, 0xee);
    }
    auto g = read_bytes(big, "t", {}, &err);
    ASSERT_TRUE(g) << err;
    auto h = read_bytes(small, "t", {}, &err);
    EXPECT_EQ(g->records, h->records);
}

TEST(Reader, RunsAreSortedByNodeAndMustAgree) {
    TempDir dir;
    auto run = model::SyntheticRun::create("ring:3", nullptr);
    run->pio(0, 2, 0, 64);
    std::string err;
    ASSERT_TRUE(run->write(dir.path.string(), &err)) << err;
    auto all = read_run({dir.path.string()}, {}, &err);
    ASSERT_TRUE(all) << err;
    ASSERT_EQ(all->size(), 3u);
    EXPECT_EQ((*all)[2].header.node, 2u);
    // Files given one by one, in any order.
    auto some = read_run({dir.file("node2.p2trace"), dir.file("node0.p2trace")}, {}, &err);
    ASSERT_TRUE(some) << err;
    EXPECT_EQ((*some)[0].header.node, 0u);
    // The same node twice.
    EXPECT_FALSE(read_run({dir.file("node1.p2trace"), dir.file("node1.p2trace")}, {}, &err));
    EXPECT_NE(err.find("are both node 1"), std::string::npos) << err;
    // A node of another run (another node count).
    auto other = model::SyntheticRun::create("2", nullptr);
    ASSERT_TRUE(other->write(dir.file("other"), &err));
    EXPECT_FALSE(read_run({dir.file("other/node0.p2trace"), dir.file("node1.p2trace")}, {}, &err));
    EXPECT_NE(err.find("different runs mixed"), std::string::npos) << err;
    // A directory without traces, and a missing file.
    fs::create_directories(dir.path / "empty");
    EXPECT_FALSE(read_run({dir.file("empty")}, {}, &err));
    EXPECT_NE(err.find("no *.p2trace files"), std::string::npos) << err;
    EXPECT_FALSE(read_run({dir.file("missing.p2trace")}, {}, &err));
    EXPECT_NE(err.find("cannot open"), std::string::npos) << err;
}

}  // namespace
}  // namespace peach2::trace
