// SPDX-License-Identifier: MIT
// A fixture for tests of the library in one process over the fake driver
// (LD_PRELOAD=libfake_peach2.so, as ctest runs them): node 0 of a fake
// two-node cluster, its device opened, a PD and a CQ.
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "../../tests/test_util.hpp"

class FakeDevice : public ::testing::Test {
protected:
    static void SetUpTestSuite() { dir_ = tcatest::use_fake_device("verbs"); }
    static void TearDownTestSuite() { tcatest::remove_fake_device(dir_); }
    void SetUp() override {
        if (!getenv("LD_PRELOAD") || !strstr(getenv("LD_PRELOAD"), "fake_peach2"))
            FAIL() << "run under LD_PRELOAD=libfake_peach2.so (ctest does)";
        int n = 0;
        list_ = ibv_get_device_list(&n);
        ASSERT_NE(nullptr, list_);
        ASSERT_GE(n, 1);
        ctx_ = ibv_open_device(list_[0]);
        ASSERT_NE(nullptr, ctx_);
        pd_ = ibv_alloc_pd(ctx_);
        cq_ = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
        ASSERT_NE(nullptr, pd_);
        ASSERT_NE(nullptr, cq_);
    }
    void TearDown() override {
        if (cq_)
            ibv_destroy_cq(cq_);
        if (pd_)
            ibv_dealloc_pd(pd_);
        if (ctx_)
            ibv_close_device(ctx_);
        if (list_)
            ibv_free_device_list(list_);
    }

    static inline std::string dir_;
    ibv_device** list_ = nullptr;
    ibv_context* ctx_ = nullptr;
    ibv_pd* pd_ = nullptr;
    ibv_cq* cq_ = nullptr;
};
