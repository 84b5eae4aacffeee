// SPDX-License-Identifier: MIT
// Connection set-up against the fake driver (LD_PRELOAD by ctest): what
// ibv_modify_qp(INIT -> RTR) accepts as a peer QP. The peer here is a
// buffer published under a QP name with the info a QP of this library
// publishes, so the test can vary what a real QP could not.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <tca/tca.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fake_device.hpp"
#include "identity.hpp"
#include "qp.hpp"
#include "wire.hpp"

namespace {

class FakeConnect : public FakeDevice {
protected:
    void TearDown() override {
        if (qp_)
            ibv_destroy_qp(qp_);
        if (peer_) {
            tcaUnpublish(TCA_NAME_QP, name_);
            tcaFree(peer_);
        }
        FakeDevice::TearDown();
    }

    // A published "RC QP" of this node with the given wire version.
    void publish_peer(std::uint8_t version) {
        pv::QpInfo info{};
        info.magic = pv::kQpMagic;
        info.version = version;
        info.type = IBV_QPT_RC;
        info.ll_slots = 64;
        info.hb_bytes = 256 << 10;
        const std::size_t bytes =
            pv::wire::kCtrlBytes + std::size_t{info.ll_slots} * pv::wire::kLlSlot + info.hb_bytes;
        ASSERT_EQ(0, tcaMalloc(&peer_, bytes));
        ASSERT_EQ(0, tcaPublish(peer_, bytes, TCA_NAME_QP, TCA_NAME_WRITE, 0, &info, sizeof info,
                                &name_));
    }

    // A new RC QP taken to INIT, then to RTR towards the published peer:
    // ibv_modify_qp's answer.
    int connect_to_peer() {
        ibv_qp_init_attr ia{};
        ia.send_cq = ia.recv_cq = cq_;
        ia.qp_type = IBV_QPT_RC;
        ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
        ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
        qp_ = ibv_create_qp(pd_, &ia);
        if (!qp_)
            return errno;
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        if (int rc = ibv_modify_qp(
                qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
            return rc;
        a = ibv_qp_attr{};
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = IBV_MTU_4096;
        a.dest_qp_num = name_;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 12;
        a.ah_attr.dlid = pv::node_lid(0);
        a.ah_attr.port_num = 1;
        return ibv_modify_qp(qp_, &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    }

    ibv_qp* qp_ = nullptr;
    void* peer_ = nullptr;
    std::uint32_t name_ = 0;
};

TEST_F(FakeConnect, APeerOfThisWireVersionIsTaken) {
    publish_peer(pv::wire::kVersion);
    EXPECT_EQ(0, connect_to_peer());
}

TEST_F(FakeConnect, APeerOfAnotherWireVersionIsRefused) {
    // A library of another slot layout would misread every packet: the
    // modify fails (EPROTO) instead of a connection that delivers garbage.
    publish_peer(pv::wire::kVersion - 1);
    EXPECT_EQ(EPROTO, connect_to_peer());
}

}  // namespace
