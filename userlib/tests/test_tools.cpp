// SPDX-License-Identifier: MIT
// The programs' pure parts: pattern generator, statistics, argument
// parsing, the ping-pong protocol encoding, pio_check's canary checks.
#include "../tools/common/cli.hpp"
#include "../tools/common/pattern.hpp"
#include "../tools/common/stats.hpp"
#include "../tools/pingpong/protocol.hpp"
#include "../tools/pio_check/canary.hpp"
#include "../tools/pio_check/wire.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

using namespace tcatools;

TEST(Pattern, FillMatchesByteFunctionAtEveryStart)
{
	for (std::uint64_t first : {0ull, 1ull, 7ull, 8ull, 13ull, 1000003ull})
		for (std::size_t len : {0u, 1u, 7u, 8u, 9u, 63u, 300u}) {
			std::vector<std::uint8_t> v(len);
			fill_pattern(v, 42, first);
			for (std::size_t j = 0; j < len; ++j)
				ASSERT_EQ(pattern_byte(42, first + j), v[j]) << first << "+" << j;
			EXPECT_EQ(kNoMismatch, find_mismatch(v, 42, first));
		}
}

TEST(Pattern, FindsTheFirstDifference)
{
	std::vector<std::uint8_t> v(5000);
	fill_pattern(v, 9);
	for (std::size_t at : {0u, 1u, 255u, 256u, 4999u}) {
		std::vector<std::uint8_t> w = v;
		w[at] ^= 0x40;
		if (at + 1 < w.size())
			w[at + 1 + (w.size() - at - 2) / 2] ^= 0x01; // a later difference too
		EXPECT_EQ(at, find_mismatch(w, 9));
	}
	EXPECT_NE(kNoMismatch, find_mismatch(v, 10)); // other seed
}

TEST(Pattern, SeedsDifferPerMessage)
{
	using namespace pingpong;
	std::set<std::uint64_t> seeds;
	for (std::uint32_t si = 0; si < 4; ++si)
		for (std::uint64_t it = 0; it < 50; ++it)
			for (Direction d : {Direction::PingToPong, Direction::PongToPing})
				EXPECT_TRUE(seeds.insert(payload_seed(si, 8u << si, it, d)).second);
	// Consecutive messages of one size really differ in their first bytes.
	std::vector<std::uint8_t> a(8), b(8);
	fill_pattern(a, payload_seed(0, 8, 0, Direction::PingToPong));
	fill_pattern(b, payload_seed(0, 8, 1, Direction::PingToPong));
	EXPECT_NE(a, b);
}

TEST(Stats, NearestRank)
{
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

TEST(Cli, Numbers)
{
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
	EXPECT_TRUE(parse_u64("17179869184M", &u)); // 2^34 * 2^20 = 2^54
	EXPECT_EQ(1ull << 54, u);
	EXPECT_FALSE(parse_u64("17592186044416M", &u)); // 2^44 * 2^20 wraps
	for (const char *bad : {"", "k", "-1", "1.5", "12x", "0x", " 1"})
		EXPECT_FALSE(parse_u64(bad, &u)) << bad;
	std::int64_t i = 0;
	EXPECT_TRUE(parse_i64("-13", &i));
	EXPECT_EQ(-13, i);
	EXPECT_FALSE(parse_i64("--1", &i));
}

TEST(Cli, ListsAndSizes)
{
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
	EXPECT_EQ(65u, doubling_sizes(1, UINT64_MAX).size()); // 2^0..2^63, max; no wrap
}

TEST(PingPongProtocol, FlagsAndLayout)
{
	using namespace pingpong;
	std::set<std::uint64_t> flags;
	for (std::uint32_t si = 0; si < 3; ++si)
		for (std::uint64_t it = 0; it < 100; ++it) {
			const std::uint64_t f = flag_value(si, it);
			EXPECT_NE(0u, f);
			EXPECT_TRUE(flags.insert(f).second);
			std::uint32_t s2 = 99;
			std::uint64_t i2 = 99;
			ASSERT_TRUE(flag_decode(f, &s2, &i2));
			EXPECT_EQ(si, s2);
			EXPECT_EQ(it, i2);
		}
	std::uint32_t s;
	std::uint64_t i;
	EXPECT_FALSE(flag_decode(0, &s, &i));
	EXPECT_FALSE(flag_decode(0x1234, &s, &i));

	const Layout l = Layout::for_max_size(100);
	EXPECT_EQ(128u, l.slot_bytes);
	EXPECT_EQ(0u, l.slot_offset(0));
	EXPECT_EQ(128u, l.slot_offset(1));
	EXPECT_EQ(0u, l.slot_offset(2));
	EXPECT_EQ(256u, l.flag_offset());
	EXPECT_EQ(0u, l.flag_offset() % 64);
	EXPECT_GE(l.buffer_bytes(), l.flag_offset() + 8);

	const std::vector<std::uint64_t> sizes{4, 8};
	EXPECT_EQ(session_tag(sizes, 10, 1), session_tag(sizes, 10, 1));
	EXPECT_NE(session_tag(sizes, 10, 1), session_tag(sizes, 11, 1));
	EXPECT_NE(session_tag(sizes, 10, 1), session_tag({4, 16}, 10, 1));
	EXPECT_NE(session_tag(sizes, 10, 1), done_tag(session_tag(sizes, 10, 1)));
}

TEST(PioCheckCanary, WrittenAlwaysDiffersFromCanary)
{
	for (std::uint64_t k = 0; k < 20; ++k)
		for (std::uint64_t i = 0; i < 2000; ++i)
			ASSERT_NE(piocheck::data_canary(i), piocheck::written_byte(k, i));
}

TEST(PioCheckCanary, CheckAfterWrite)
{
	using namespace piocheck;
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
