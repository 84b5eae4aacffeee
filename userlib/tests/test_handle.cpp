// SPDX-License-Identifier: MIT
// tcaHandle: construction, wire layout, validation, address translation.
#include <tca/tca.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

#include "handle.hpp"
#include "test_util.hpp"

using namespace tca;
using tcatest::one_piece;
using tcatest::scattered;

TEST(Handle, WireLayoutIsFixed) {
    EXPECT_EQ(256u, sizeof(tcaHandle));
    EXPECT_EQ(0u, offsetof(tcaHandle, magic));
    EXPECT_EQ(4u, offsetof(tcaHandle, version));
    EXPECT_EQ(6u, offsetof(tcaHandle, nr_chunks));
    EXPECT_EQ(8u, offsetof(tcaHandle, node));
    EXPECT_EQ(12u, offsetof(tcaHandle, check));
    EXPECT_EQ(16u, offsetof(tcaHandle, size));
    EXPECT_EQ(24u, offsetof(tcaHandle, export_id));
    EXPECT_EQ(28u, offsetof(tcaHandle, export_key));
    EXPECT_EQ(32u, offsetof(tcaHandle, chunks));
    EXPECT_EQ(2u, TCA_HANDLE_VERSION);
}

// Version 2: an export travels with the handle, the check covers it, and
// sub-handles keep it.
TEST(Handle, ExportRoundTripAndCheck) {
    tcaHandle h;
    ASSERT_EQ(0, make_handle(1, scattered(1, 3, 4096), 0, 0, &h));
    EXPECT_EQ(0u, h.export_id);
    EXPECT_EQ(0u, h.export_key);
    attach_export(&h, 77, 0xdeadbeefu);
    ASSERT_EQ(0, validate_handle(h));
    unsigned char wire[sizeof h];
    std::memcpy(wire, &h, sizeof h);
    tcaHandle back;
    std::memcpy(&back, wire, sizeof back);
    EXPECT_EQ(0, tcaHandleValidate(&back));
    EXPECT_EQ(77u, back.export_id);
    EXPECT_EQ(0xdeadbeefu, back.export_key);

    tcaHandle forged = h;
    forged.export_key ^= 1;
    EXPECT_EQ(TCA_EBADHANDLE, validate_handle(forged)) << "check covers the key";
    forged = h;
    forged.export_id = 78;
    EXPECT_EQ(TCA_EBADHANDLE, validate_handle(forged)) << "check covers the id";

    tcaHandle sub;
    ASSERT_EQ(0, tcaSubHandle(&h, 4000, 200, &sub));
    EXPECT_EQ(0, validate_handle(sub));
    EXPECT_EQ(77u, sub.export_id);
    EXPECT_EQ(0xdeadbeefu, sub.export_key);
    EXPECT_EQ(2u, sub.nr_chunks);

    // A key of 0 is a possible random key; an id of 0 is "no export".
    attach_export(&h, 5, 0);
    EXPECT_EQ(0, validate_handle(h));
    attach_export(&h, 0, 0);
    EXPECT_EQ(0, validate_handle(h));
    ASSERT_EQ(0, tcaSubHandle(&h, 0, 0, &sub));
    EXPECT_EQ(0u, sub.export_id);
}

TEST(Handle, OnePieceWholeBuffer) {
    const tcaHandle h = one_piece(3, 0x200000, 4096);
    EXPECT_EQ(0, validate_handle(h));
    EXPECT_EQ(TCA_HANDLE_MAGIC, h.magic);
    EXPECT_EQ(TCA_HANDLE_VERSION, h.version);
    EXPECT_EQ(3u, h.node);
    EXPECT_EQ(4096u, h.size);
    EXPECT_EQ(1u, h.nr_chunks);
    EXPECT_EQ(PEACH2_NODE_BASE(3) + 0x200000, h.chunks[0].global_addr);
}

TEST(Handle, SubRangeAndToTheEnd) {
    const tcaChunk c{PEACH2_NODE_BASE(1) + 0x10000, 1000};
    tcaHandle h;
    ASSERT_EQ(0, make_handle(1, {&c, 1}, 100, 50, &h));
    EXPECT_EQ(50u, h.size);
    EXPECT_EQ(c.global_addr + 100, h.chunks[0].global_addr);
    ASSERT_EQ(0, make_handle(1, {&c, 1}, 100, 0, &h));  // 0 = to the end
    EXPECT_EQ(900u, h.size);
    EXPECT_EQ(TCA_ERANGE, make_handle(1, {&c, 1}, 1000, 0, &h));
    EXPECT_EQ(TCA_ERANGE, make_handle(1, {&c, 1}, 999, 2, &h));
    EXPECT_EQ(TCA_ERANGE, make_handle(1, {&c, 1}, 1, UINT64_MAX, &h));  // would wrap
}

TEST(Handle, MultiChunkAndMerging) {
    auto pieces = scattered(2, 3, 4096);
    tcaHandle h;
    ASSERT_EQ(0, make_handle(2, pieces, 4000, 200, &h));  // straddles piece 0/1
    EXPECT_EQ(2u, h.nr_chunks);
    EXPECT_EQ(96u, h.chunks[0].len);
    EXPECT_EQ(pieces[0].global_addr + 4000, h.chunks[0].global_addr);
    EXPECT_EQ(104u, h.chunks[1].len);
    EXPECT_EQ(pieces[1].global_addr, h.chunks[1].global_addr);
    EXPECT_EQ(0, validate_handle(h));

    // Adjacent pieces collapse into one entry.
    const tcaChunk adj[] = {{PEACH2_NODE_BASE(2) + 0x1000, 0x1000},
                            {PEACH2_NODE_BASE(2) + 0x2000, 0x1000},
                            {PEACH2_NODE_BASE(2) + 0x9000, 0x1000}};
    ASSERT_EQ(0, make_handle(2, adj, 0, 0, &h));
    EXPECT_EQ(2u, h.nr_chunks);
    EXPECT_EQ(0x2000u, h.chunks[0].len);
    EXPECT_EQ(0x3000u, h.size);
}

TEST(Handle, TooManyChunks) {
    const auto pieces = scattered(0, TCA_HANDLE_MAX_CHUNKS + 6, 4096);
    tcaHandle h;
    EXPECT_EQ(TCA_ETOOMANYCHUNKS, make_handle(0, pieces, 0, 0, &h));
    // A range over exactly the maximum works, one more piece does not.
    EXPECT_EQ(0, make_handle(0, pieces, 4096, 4096 * TCA_HANDLE_MAX_CHUNKS, &h));
    EXPECT_EQ(TCA_HANDLE_MAX_CHUNKS, h.nr_chunks);
    EXPECT_EQ(TCA_ETOOMANYCHUNKS, make_handle(0, pieces, 4095, 4096 * TCA_HANDLE_MAX_CHUNKS, &h));
}

TEST(Handle, RejectsBadPieces) {
    tcaHandle h;
    const tcaChunk other_node{PEACH2_NODE_BASE(4) + 0x1000, 64};
    EXPECT_EQ(TCA_EBADHANDLE, make_handle(3, {&other_node, 1}, 0, 0, &h));
    const tcaChunk card{PEACH2_NODE_BASE(3) + PEACH2_CARD_OFF, 64};
    EXPECT_EQ(TCA_EBADHANDLE, make_handle(3, {&card, 1}, 0, 0, &h));
    const tcaChunk straddle{PEACH2_NODE_BASE(3) + PEACH2_HOST_SIZE - 8, 16};
    EXPECT_EQ(TCA_EBADHANDLE, make_handle(3, {&straddle, 1}, 0, 0, &h));
    const tcaChunk empty{PEACH2_NODE_BASE(3), 0};
    EXPECT_EQ(TCA_EBADHANDLE, make_handle(3, {&empty, 1}, 0, 0, &h));
}

TEST(Handle, EveryByteFlipIsDetected) {
    const auto pieces = scattered(5, 3, 512);
    tcaHandle good;
    ASSERT_EQ(0, make_handle(5, pieces, 0, 0, &good));
    // Valid first: the thread remembers it, and no near copy passes for it.
    ASSERT_EQ(0, validate_handle(good));
    for (std::size_t i = 0; i < sizeof good; ++i) {
        tcaHandle bad = good;
        reinterpret_cast<unsigned char*>(&bad)[i] ^= 0x10;
        EXPECT_EQ(TCA_EBADHANDLE, validate_handle(bad)) << "byte " << i;
        EXPECT_EQ(0, validate_handle(good));
    }
}

// The remembered handles are bytes, not addresses: a handle changed in place
// after it passed is checked again; more handles than the thread remembers
// all pass, in any order, again and again.
TEST(Handle, RememberedHandlesAreCheckedByContent) {
    tcaHandle h;
    ASSERT_EQ(0, make_handle(3, scattered(3, 2, 4096), 0, 0, &h));
    ASSERT_EQ(0, validate_handle(h));
    h.chunks[1].len += 8;  // the check no longer matches
    EXPECT_EQ(TCA_EBADHANDLE, validate_handle(h));
    h.size += 8;
    EXPECT_EQ(TCA_EBADHANDLE, validate_handle(h));
    std::vector<tcaHandle> many(9);
    for (unsigned i = 0; i < many.size(); ++i)
        ASSERT_EQ(0, make_handle(i % 4, scattered(i % 4, 1 + i % 3, 512), 0, 0, &many[i]));
    for (int round = 0; round < 3; ++round)
        for (unsigned i = 0; i < many.size(); ++i)
            EXPECT_EQ(0, validate_handle(many[(i * 5 + round) % many.size()])) << i;
}

// Structural checks, with the check value recomputed so that only the
// structure is wrong.
TEST(Handle, StructuralChecks) {
    const auto pieces = scattered(1, 2, 256);
    tcaHandle good;
    ASSERT_EQ(0, make_handle(1, pieces, 0, 0, &good));
    auto expect_bad = [&](auto edit, const char* what) {
        tcaHandle h = good;
        edit(h);
        h.check = handle_check(h);
        EXPECT_EQ(TCA_EBADHANDLE, validate_handle(h)) << what;
    };
    expect_bad([](tcaHandle& h) { h.nr_chunks = 0; }, "no chunks");
    expect_bad([](tcaHandle& h) { h.nr_chunks = TCA_HANDLE_MAX_CHUNKS + 1; }, "too many");
    expect_bad([](tcaHandle& h) { h.nr_chunks = 1; }, "unused entry not zero / size");
    expect_bad([](tcaHandle& h) { h.size += 1; }, "size mismatch");
    expect_bad([](tcaHandle& h) { h.size = 0; }, "empty");
    expect_bad([](tcaHandle& h) { h.node = PEACH2_MAX_NODES; }, "node out of range");
    expect_bad([](tcaHandle& h) { h.node = 2; }, "pieces on another node");
    expect_bad([](tcaHandle& h) { h.export_key = 1; }, "key without export");
    expect_bad([](tcaHandle& h) { h.chunks[5].len = 1; }, "unused entry");
    expect_bad([](tcaHandle& h) { h.magic ^= 1; }, "magic");
    expect_bad([](tcaHandle& h) { h.version = 1; }, "version 1 (no export fields)");
    expect_bad([](tcaHandle& h) { h.version = 3; }, "version");
    expect_bad(
        [](tcaHandle& h) {
            h.chunks[1].len = 0;
            h.size -= 256;
        },
        "empty piece");
}

TEST(Handle, Address) {
    const auto pieces = scattered(7, 3, 100);
    tcaHandle h;
    ASSERT_EQ(0, make_handle(7, pieces, 50, 0, &h));
    std::uint64_t ga = 0;
    ASSERT_EQ(0, handle_address(h, 0, &ga));
    EXPECT_EQ(pieces[0].global_addr + 50, ga);
    ASSERT_EQ(0, handle_address(h, 49, &ga));
    EXPECT_EQ(pieces[0].global_addr + 99, ga);
    ASSERT_EQ(0, handle_address(h, 50, &ga));
    EXPECT_EQ(pieces[1].global_addr, ga);
    ASSERT_EQ(0, handle_address(h, 249, &ga));
    EXPECT_EQ(pieces[2].global_addr + 99, ga);
    EXPECT_EQ(TCA_ERANGE, handle_address(h, 250, &ga));
}

TEST(Handle, ForEachPiece) {
    const auto pieces = scattered(0, 3, 100);
    tcaHandle h;
    ASSERT_EQ(0, make_handle(0, pieces, 0, 0, &h));
    struct P {
        std::uint64_t ga, pos, n;
    };
    std::vector<P> got;
    for_each_piece(h, 90, 120, [&](std::uint64_t ga, std::uint64_t pos, std::uint64_t n) {
        got.push_back({ga, pos, n});
    });
    ASSERT_EQ(3u, got.size());
    EXPECT_EQ(pieces[0].global_addr + 90, got[0].ga);
    EXPECT_EQ(0u, got[0].pos);
    EXPECT_EQ(10u, got[0].n);
    EXPECT_EQ(pieces[1].global_addr, got[1].ga);
    EXPECT_EQ(10u, got[1].pos);
    EXPECT_EQ(100u, got[1].n);
    EXPECT_EQ(pieces[2].global_addr, got[2].ga);
    EXPECT_EQ(110u, got[2].pos);
    EXPECT_EQ(10u, got[2].n);
}

TEST(HandleCApi, SubHandleRemoteAddressValidate) {
    const tcaHandle h = one_piece(2, 0x4000, 1024);
    tcaHandle sub;
    ASSERT_EQ(0, tcaSubHandle(&h, 24, 100, &sub));
    EXPECT_EQ(100u, sub.size);
    EXPECT_EQ(0, tcaHandleValidate(&sub));
    std::uint64_t ga = 0;
    ASSERT_EQ(0, tcaRemoteAddress(&sub, 99, &ga));
    EXPECT_EQ(PEACH2_NODE_BASE(2) + 0x4000 + 24 + 99, ga);
    EXPECT_EQ(TCA_ERANGE, tcaRemoteAddress(&sub, 100, &ga));
    EXPECT_EQ(TCA_ERANGE, tcaSubHandle(&h, 1000, 25, &sub));
    EXPECT_EQ(TCA_ERANGE, tcaSubHandle(&h, SIZE_MAX, 2, &sub));

    tcaHandle bad = h;
    bad.size = 7;
    EXPECT_EQ(TCA_EBADHANDLE, tcaHandleValidate(&bad));
    EXPECT_EQ(TCA_EBADHANDLE, tcaRemoteAddress(&bad, 0, &ga));
    EXPECT_EQ(TCA_EBADHANDLE, tcaSubHandle(&bad, 0, 1, &sub));
    EXPECT_EQ(-EINVAL, tcaHandleValidate(nullptr));
    EXPECT_EQ(-EINVAL, tcaRemoteAddress(&h, 0, nullptr));
    EXPECT_EQ(-EINVAL, tcaSubHandle(nullptr, 0, 0, &sub));

    tcaHandle zero{};
    EXPECT_EQ(TCA_EBADHANDLE, tcaHandleValidate(&zero));
}
