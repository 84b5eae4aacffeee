// SPDX-License-Identifier: MIT
// The C API without a device: clean error codes, no crash, no leaks of
// state between attempts; tcaErrorString for every code.
#include <tca/tca.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "test_util.hpp"

namespace {

class NoDevice : public ::testing::Test {
protected:
    void SetUp() override { setenv("TCA_DEVICE", "/nonexistent/peach2-test", 1); }
    void TearDown() override {
        tcaFinalize();
        unsetenv("TCA_DEVICE");
    }
};

}  // namespace

TEST(Errors, EveryCodeHasText) {
    std::set<std::string> seen;
    for (int code : {TCA_EBADHANDLE, TCA_ERANGE, TCA_ENOTBUF, TCA_ETOOMANYCHUNKS, TCA_ENODE,
                     TCA_EABI, TCA_EDEVICE, TCA_EALIGN, TCA_ESTRIDE, TCA_EDMA, TCA_ENODESC,
                     TCA_ENOTEXPORTED, TCA_EREMOTE}) {
        const char* s = tcaErrorString(code);
        ASSERT_NE(nullptr, s);
        EXPECT_TRUE(seen.insert(s).second) << "duplicate text for " << code;
    }
    EXPECT_STREQ("success", tcaErrorString(0));
    EXPECT_STREQ("No such file or directory", tcaErrorString(-ENOENT));
    EXPECT_STREQ("Connection timed out", tcaErrorString(-ETIMEDOUT));
    EXPECT_STREQ("unknown error", tcaErrorString(12345));
    EXPECT_STREQ("unknown error", tcaErrorString(-99999));
}

TEST_F(NoDevice, EverythingReportsMissingDevice) {
    EXPECT_EQ(-ENOENT, tcaInit());
    EXPECT_EQ(-ENOENT, tcaInit());  // retried, same answer
    EXPECT_EQ(-ENOENT, tcaNodeId());
    EXPECT_EQ(-ENOENT, tcaNodeCount());
    tcaDeviceInfo info;
    EXPECT_EQ(-ENOENT, tcaGetDeviceInfo(&info));
    void* p = reinterpret_cast<void*>(0x1234);
    EXPECT_EQ(-ENOENT, tcaMalloc(&p, 4096));
    EXPECT_EQ(nullptr, p);
    int local = 0;
    tcaHandle h;
    EXPECT_EQ(-ENOENT, tcaGetHandle(&local, 4, &h));
    EXPECT_EQ(-ENOENT, tcaPutRaw(0, &local, sizeof local));
    const tcaHandle mine = tcatest::one_piece(0, 0x1000, 64);
    tcaHandle theirs;
    EXPECT_EQ(-ENOENT, tcaExchange(1, &mine, &theirs, 10, 1));
    EXPECT_EQ(0, tcaFence());
    tcaFinalize();
    tcaFinalize();  // idempotent
}

TEST_F(NoDevice, ArgumentErrorsComeFirst) {
    EXPECT_EQ(-EINVAL, tcaMalloc(nullptr, 16));
    EXPECT_EQ(0, tcaFree(nullptr));
    int local = 0;
    EXPECT_EQ(TCA_ENOTBUF, tcaFree(&local));  // and does not open the device
    EXPECT_EQ(-EINVAL, tcaGetHandle(nullptr, 1, nullptr));
    EXPECT_EQ(-EINVAL, tcaGetDeviceInfo(nullptr));
    EXPECT_EQ(-EINVAL, tcaPutRaw(0, nullptr, 1));
    const tcaHandle mine = tcatest::one_piece(0, 0x1000, 64);
    tcaHandle theirs, bad{};
    EXPECT_EQ(-EINVAL, tcaExchange(1, nullptr, &theirs, 10, 1));
    EXPECT_EQ(-EINVAL, tcaExchange(1, &mine, nullptr, 10, 1));
    EXPECT_EQ(TCA_EBADHANDLE, tcaExchange(1, &bad, &theirs, 10, 1));
}

// A file that is not the device: INFO fails with ENOTTY, nothing stays open.
TEST_F(NoDevice, NotADevice) {
    char path[] = "/tmp/tca-not-a-device-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    setenv("TCA_DEVICE", path, 1);
    EXPECT_EQ(-ENOTTY, tcaInit());
    setenv("TCA_DEVICE", "/dev/null", 1);
    EXPECT_EQ(-ENOTTY, tcaInit());
    unlink(path);
}

TEST(Errors, CardCodesHaveNames) {
    EXPECT_STREQ("NONE", tcaCardErrorName(0));
    EXPECT_STREQ("NOT_REGISTERED", tcaCardErrorName(12));
    EXPECT_STREQ("DMA_ALIGN", tcaCardErrorName(14));
    EXPECT_STREQ("DMA_ABORTED", tcaCardErrorName(22));
    EXPECT_STREQ("RP_FULL", tcaCardErrorName(23));
    EXPECT_STREQ("RP_OFF", tcaCardErrorName(24));
    EXPECT_STREQ("RP_BAD_REQUEST", tcaCardErrorName(25));
    EXPECT_STREQ("RP_NOT_EXPORTED", tcaCardErrorName(26));
    EXPECT_STREQ("RP_RANGE", tcaCardErrorName(27));
    EXPECT_STREQ("RP_REPLAY", tcaCardErrorName(28));
    EXPECT_STREQ("RP_BAD_PACKET", tcaCardErrorName(29));
    EXPECT_STREQ("?", tcaCardErrorName(30));
    EXPECT_STREQ("?", tcaCardErrorName(0xffffffffu));
}

TEST_F(NoDevice, DmaCallsReportTheMissingDevice) {
    const tcaHandle dst = tcatest::one_piece(1, 0x1000, 4096);
    int local = 0;
    tcaDmaTicket t{};
    EXPECT_EQ(-ENOENT, tcaDmaPut(&dst, 0, &local, 4, nullptr, &t));
    EXPECT_EQ(-ENOENT, tcaDmaPutNotify(&dst, 0, &local, 4, 8, 1, nullptr, nullptr));
    EXPECT_EQ(0, tcaDmaWait(&t, 0)) << "an empty ticket needs no device";
    EXPECT_EQ(0, tcaDmaTest(&t));
    t.left = 1;
    EXPECT_EQ(-ENOENT, tcaDmaWait(&t, 0));
    tcaChain c{};
    tcaDmaXfer x{};
    x.dst = &dst;
    x.src = &local;
    x.len = 4;
    EXPECT_EQ(-ENOENT, tcaChainCreate(&x, 1, nullptr, &c));
    EXPECT_EQ(-ENOENT, tcaChainStart(c, nullptr, nullptr));
    EXPECT_EQ(-ENOENT, tcaPutAuto(&dst, 0, &local, 4));
}

TEST_F(NoDevice, DmaArgumentErrorsComeFirst) {
    const tcaHandle dst = tcatest::one_piece(1, 0x1000, 4096);
    int local = 0;
    EXPECT_EQ(-EINVAL, tcaDmaPut(nullptr, 0, &local, 4, nullptr, nullptr));
    EXPECT_EQ(-EINVAL, tcaDmaPut(&dst, 0, nullptr, 4, nullptr, nullptr));
    EXPECT_EQ(-EINVAL, tcaDmaStart(nullptr, 2, nullptr, nullptr));
    EXPECT_EQ(-EINVAL, tcaDmaWait(nullptr, 0));
    EXPECT_EQ(-EINVAL, tcaDmaTest(nullptr));
    tcaDmaOpts o{};
    o.flags = TCA_DMA_REG_MODE | TCA_DMA_HOST_DESC;
    EXPECT_EQ(-EINVAL, tcaDmaPut(&dst, 0, &local, 4, &o, nullptr));
    tcaChain c{};
    tcaDmaXfer x{};
    EXPECT_EQ(-EINVAL, tcaChainCreate(&x, 0, nullptr, &c));
    EXPECT_EQ(-EINVAL, tcaChainCreate(nullptr, 1, nullptr, &c));
    o.flags = TCA_DMA_WAIT;
    EXPECT_EQ(-EINVAL, tcaChainCreate(&x, 1, &o, &c));
    o.flags = TCA_DMA_HOST_DESC;
    EXPECT_EQ(-EINVAL, tcaChainStart(c, &o, nullptr));
    EXPECT_EQ(-EINVAL, tcaPutAuto(nullptr, 0, &local, 4));
    EXPECT_GT(tcaPioMax(), 0u);
}
