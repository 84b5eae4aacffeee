// Two cards cabled E(0) <-> W(1), both with all their fake memory registered;
// the test moves the bytes across the cable like a socket would.
#pragma once

#include <gtest/gtest.h>

#include "fake_host.h"

namespace peach2::test {

class CabledPair : public ::testing::Test {
protected:
    FakeHost ha, hb;
    CorePtr a = make_core(ha, 0, 2);
    CorePtr b = make_core(hb, 1, 2);

    void SetUp() override {
        peach2_core_link_attach(a.get(), PEACH2_PORT_E);
        peach2_core_link_attach(b.get(), PEACH2_PORT_W);
        ASSERT_EQ(allow(a.get(), 0, 1 << 20), 0u);
        ASSERT_EQ(allow(b.get(), 0, 1 << 20), 0u);
        connect();
    }
    void connect() {
        peach2_core_link_connected(a.get(), PEACH2_PORT_E, true);
        peach2_core_link_connected(b.get(), PEACH2_PORT_W, true);
        pump();
    }
    // Move every queued byte across the cable, both ways, until quiet.
    // Returns false if a receiver declared its stream corrupt.
    bool pump() {
        bool ok = true, moved = true;
        while (moved) {
            peach2_core_service(a.get());
            peach2_core_service(b.get());
            moved = carry(a.get(), PEACH2_PORT_E, b.get(), PEACH2_PORT_W, ok) > 0;
            moved |= carry(b.get(), PEACH2_PORT_W, a.get(), PEACH2_PORT_E, ok) > 0;
        }
        return ok;
    }
    static uint32_t errors(peach2_core* c, peach2_err code) {
        return reg(c, PEACH2_REG_ERR_BY_CODE(code));
    }
};

}  // namespace peach2::test
