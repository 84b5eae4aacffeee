// SPDX-License-Identifier: MIT
// The driver's refusal report (struct peach2_xfer_refusal: which transfer,
// which rule) as the fake driver gives it (raw ioctls, like the driver's
// kselftest selftests/peach2_refusal_test.c), and libtca's reading of it
// (refusal_error).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <peach2/peach2_uapi.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <tca/tca.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "dma.hpp"
#include "test_util.hpp"

namespace {

TEST(RefusalError, RulesBecomeLibraryCodes) {
    const auto err = [](std::uint32_t rule) {
        return tca::refusal_error(-EINVAL, peach2_xfer_refusal{3, rule});
    };
    EXPECT_EQ(-EINVAL, err(PEACH2_DMA_RULE_OK)) << "nothing named: the errno stays";
    EXPECT_EQ(-ENOENT, tca::refusal_error(-ENOENT, {0, PEACH2_DMA_RULE_NO_BUFFER}));
    for (std::uint32_t r : {PEACH2_DMA_RULE_SRC_ALIGN, PEACH2_DMA_RULE_DST_ALIGN,
                            PEACH2_DMA_RULE_LEN_ALIGN, PEACH2_DMA_RULE_LOW_BITS})
        EXPECT_EQ(TCA_EALIGN, err(r)) << peach2_dma_rule_name(r);
    for (std::uint32_t r : {PEACH2_DMA_RULE_BLOCK_FIELDS, PEACH2_DMA_RULE_BLOCK_ALIGN,
                            PEACH2_DMA_RULE_BLOCK_GAP16, PEACH2_DMA_RULE_CHUNK})
        EXPECT_EQ(TCA_ESTRIDE, err(r)) << peach2_dma_rule_name(r);
    for (std::uint32_t r :
         {PEACH2_DMA_RULE_SRC_RANGE, PEACH2_DMA_RULE_DST_RANGE, PEACH2_DMA_RULE_REMOTE})
        EXPECT_EQ(TCA_ERANGE, err(r)) << peach2_dma_rule_name(r);
    for (std::uint32_t r :
         {std::uint32_t{PEACH2_DMA_RULE_FLAGS}, std::uint32_t{PEACH2_DMA_RULE_IMM_LEN},
          std::uint32_t{PEACH2_DMA_RULE_TOO_MANY}, std::uint32_t{PEACH2_DMA_RULE_REG_MODE}, 999u})
        EXPECT_EQ(-EINVAL, err(r)) << r;
}

class FakeRefusal : public ::testing::Test {
protected:
    static constexpr std::uint64_t kBuf = 64 * 1024;

    void SetUp() override {
        if (!getenv("LD_PRELOAD") || !strstr(getenv("LD_PRELOAD"), "fake_peach2"))
            FAIL() << "run under LD_PRELOAD=libfake_peach2.so (ctest does)";
        dir_ = tcatest::use_fake_device("refusal");
        fd_ = open(getenv("TCA_DEVICE"), O_RDWR);
        ASSERT_GE(fd_, 0);
        peach2_info info{};
        ASSERT_EQ(0, ioctl(fd_, PEACH2_IOC_INFO, &info));
        // The fake's DMA copies through the window mapping.
        window_len_ = info.window_size;
        window_ = mmap(nullptr, window_len_, PROT_WRITE, MAP_SHARED, fd_, 0);
        ASSERT_NE(MAP_FAILED, window_);
        for (peach2_alloc* a : {&a_, &b_}) {
            a->size = kBuf;
            ASSERT_EQ(0, ioctl(fd_, PEACH2_IOC_ALLOC, a));
        }
    }
    void TearDown() override {
        if (window_ != MAP_FAILED)
            munmap(window_, window_len_);
        if (fd_ >= 0)
            close(fd_);
        tcatest::remove_fake_device(dir_);
    }
    peach2_xfer copy(std::uint64_t src, std::uint64_t dst, std::uint64_t len) const {
        peach2_xfer x{};
        x.src_handle = a_.handle;
        x.src_offset = src;
        x.dst_handle = b_.handle;
        x.dst = dst;
        x.len = len;
        return x;
    }
    // DMA_START of a one-shot list: errno (0 on success) and the report.
    int start(std::vector<peach2_xfer> xs, std::uint32_t flags, peach2_xfer_refusal* why) {
        peach2_dma_start s{};
        s.xfers = reinterpret_cast<std::uintptr_t>(xs.data());
        s.count = static_cast<__u32>(xs.size());
        s.flags = flags;
        s.channel = PEACH2_DMA_ANY_CHANNEL;
        const int rc = ioctl(fd_, PEACH2_IOC_DMA_START, &s) ? errno : 0;
        *why = s.refusal;
        return rc;
    }

    std::string dir_;
    int fd_ = -1;
    void* window_ = MAP_FAILED;
    std::size_t window_len_ = 0;
    peach2_alloc a_{}, b_{};
};

TEST_F(FakeRefusal, NamesTheTransferAndTheRule) {
    peach2_xfer_refusal why{};
    ASSERT_EQ(EINVAL, start({copy(0, 0, 64), copy(64, 64, 64), copy(0, 4, 64)}, 0, &why));
    EXPECT_EQ(2u, why.bad_xfer);
    EXPECT_EQ(static_cast<__u32>(PEACH2_DMA_RULE_LOW_BITS), why.bad_rule);

    peach2_xfer bad_handle = copy(0, 0, 64);
    bad_handle.src_handle = 77;
    ASSERT_EQ(ENOENT, start({copy(0, 0, 64), bad_handle}, 0, &why));
    EXPECT_EQ(1u, why.bad_xfer);
    EXPECT_EQ(static_cast<__u32>(PEACH2_DMA_RULE_NO_BUFFER), why.bad_rule);

    ASSERT_EQ(EINVAL, start({copy(0, kBuf - 32, 64)}, 0, &why));
    EXPECT_EQ(0u, why.bad_xfer);
    EXPECT_EQ(static_cast<__u32>(PEACH2_DMA_RULE_DST_RANGE), why.bad_rule);

    ASSERT_EQ(EINVAL, start({copy(0, 0, 64), copy(64, 64, 64)}, PEACH2_DMA_REG_MODE, &why));
    EXPECT_EQ(1u, why.bad_xfer) << "the transfer that makes it more than one descriptor";
    EXPECT_EQ(static_cast<__u32>(PEACH2_DMA_RULE_REG_MODE), why.bad_rule);
}

TEST_F(FakeRefusal, ChainCreateReportsToo) {
    std::vector<peach2_xfer> xs = {copy(0, 0, 64), copy(0, 0, 64)};
    xs[1].burst = 16;  // a burst without a stride side
    peach2_chain_create c{};
    c.xfers = reinterpret_cast<std::uintptr_t>(xs.data());
    c.count = 2;
    ASSERT_EQ(-1, ioctl(fd_, PEACH2_IOC_CHAIN_CREATE, &c));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(1u, c.refusal.bad_xfer);
    EXPECT_EQ(static_cast<__u32>(PEACH2_DMA_RULE_BLOCK_FIELDS), c.refusal.bad_rule);
}

TEST_F(FakeRefusal, OtherRefusalsNameNoTransfer) {
    peach2_xfer_refusal why{};
    ASSERT_EQ(EINVAL, start({copy(0, 0, 64)}, 1u << 7, &why)) << "undefined request flag";
    EXPECT_EQ(0u, why.bad_rule) << "no transfer refused";
    ASSERT_EQ(0, start({copy(0, 0, 64)}, 0, &why));
    EXPECT_EQ(0u, why.bad_rule) << "a started list writes no report";

    peach2_dma_start s{};
    peach2_xfer x = copy(0, 0, 64);
    s.xfers = reinterpret_cast<std::uintptr_t>(&x);
    s.count = 1;
    s.refusal.bad_rule = PEACH2_DMA_RULE_LOW_BITS;
    EXPECT_EQ(-1, ioctl(fd_, PEACH2_IOC_DMA_START, &s)) << "the report is no input: must be 0";
    EXPECT_EQ(EINVAL, errno);
}

}  // namespace
