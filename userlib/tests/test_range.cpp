// SPDX-License-Identifier: MIT
// Offset/length validation, including values that would wrap around, and
// that tcaPut refuses bad ranges before it ever touches the device.
#include <tca/tca.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "range.hpp"
#include "test_util.hpp"

using tca::range_fits;

TEST(Range, Fits) {
    EXPECT_TRUE(range_fits(0, 0, 0));
    EXPECT_TRUE(range_fits(0, 10, 10));
    EXPECT_TRUE(range_fits(10, 0, 10));
    EXPECT_TRUE(range_fits(9, 1, 10));
    EXPECT_FALSE(range_fits(10, 1, 10));
    EXPECT_FALSE(range_fits(9, 2, 10));
    EXPECT_FALSE(range_fits(11, 0, 10));
    EXPECT_FALSE(range_fits(0, 11, 10));
}

TEST(Range, Overflow) {
    EXPECT_FALSE(range_fits(UINT64_MAX, 1, UINT64_MAX));
    EXPECT_FALSE(range_fits(1, UINT64_MAX, UINT64_MAX));
    EXPECT_FALSE(range_fits(UINT64_MAX, UINT64_MAX, UINT64_MAX));
    EXPECT_FALSE(range_fits(UINT64_MAX - 5, 10, 100));
    EXPECT_TRUE(range_fits(UINT64_MAX - 1, 1, UINT64_MAX));
    std::uint64_t out = 0;
    EXPECT_FALSE(tca::checked_add(UINT64_MAX, 1, &out));
    EXPECT_TRUE(tca::checked_add(UINT64_MAX - 1, 1, &out));
    EXPECT_EQ(UINT64_MAX, out);
}

// With no device, a put that passes validation fails to open it (-ENOENT);
// one that does not pass is refused with TCA_ERANGE / TCA_EBADHANDLE first.
class PutValidation : public ::testing::Test {
protected:
    void SetUp() override { setenv("TCA_DEVICE", "/nonexistent/peach2-test", 1); }
    void TearDown() override { tcaFinalize(); }
};

TEST_F(PutValidation, RangeCheckedBeforeDevice) {
    const tcaHandle h = tcatest::one_piece(1, 0x1000, 100);
    const unsigned char buf[16] = {};
    EXPECT_EQ(TCA_ERANGE, tcaPut(&h, 100, buf, 1));
    EXPECT_EQ(TCA_ERANGE, tcaPut(&h, 99, buf, 2));
    EXPECT_EQ(TCA_ERANGE, tcaPut(&h, 0, buf, 101));
    EXPECT_EQ(TCA_ERANGE, tcaPut(&h, SIZE_MAX, buf, 2));
    EXPECT_EQ(TCA_ERANGE, tcaPut(&h, 2, buf, SIZE_MAX));
    EXPECT_EQ(TCA_ERANGE, tcaPut(&h, SIZE_MAX, buf, SIZE_MAX));
    EXPECT_EQ(-EINVAL, tcaPut(&h, 0, nullptr, 1));
    EXPECT_EQ(-EINVAL, tcaPut(nullptr, 0, buf, 1));
    tcaHandle bad = h;
    bad.chunks[0].global_addr += 8;  // check value no longer matches
    EXPECT_EQ(TCA_EBADHANDLE, tcaPut(&bad, 0, buf, 1));
    // In range: gets as far as opening the (missing) device.
    EXPECT_EQ(-ENOENT, tcaPut(&h, 99, buf, 1));
    EXPECT_EQ(-ENOENT, tcaPut(&h, 0, buf, 100));
}
