// Three cards in a line, node 0 in the middle: its E port cabled to node 1's
// W, its W port to node 2's E (default routing: neighbours only, or node 0
// forwarding between 1 and 2). Tests move the bytes like sockets; a test may
// instead speak for node 2 itself (Rogue) on node 0's W port.
#pragma once

#include <gtest/gtest.h>

#include "fake_host.h"

namespace peach2::test {

class ThreeInALine : public ::testing::Test {
protected:
    FakeHost h0, h1, h2;
    CorePtr n0, n1, n2;
    bool accepted = true;  // cleared if a card declares a carried stream corrupt

    void SetUp() override {
        h0.mem.assign(16 << 20, 0);
        h1.mem.assign(16 << 20, 0);
        h2.mem.assign(4 << 20, 0);
        for (size_t i = 0; i < h0.mem.size(); ++i)
            h0.mem[i] = static_cast<uint8_t>((i >> 3) ^ (i * 7));
        n0 = make_core(h0, 0, 3);
        n1 = make_core(h1, 1, 3);
        n2 = make_core(h2, 2, 3);
        ASSERT_EQ(allow(n0.get(), 0, h0.mem.size()), 0u);
        ASSERT_EQ(allow(n1.get(), 0, h1.mem.size()), 0u);
        ASSERT_EQ(allow(n2.get(), 0, h2.mem.size()), 0u);
        peach2_core_link_attach(n0.get(), PEACH2_PORT_E);
        peach2_core_link_attach(n0.get(), PEACH2_PORT_W);
        peach2_core_link_attach(n1.get(), PEACH2_PORT_W);
        peach2_core_link_attach(n2.get(), PEACH2_PORT_E);
        peach2_core_link_connected(n0.get(), PEACH2_PORT_E, true);
        peach2_core_link_connected(n0.get(), PEACH2_PORT_W, true);
        peach2_core_link_connected(n1.get(), PEACH2_PORT_W, true);
        peach2_core_link_connected(n2.get(), PEACH2_PORT_E, true);
        carry_e();
        carry(n1.get(), PEACH2_PORT_W, n0.get(), PEACH2_PORT_E, accepted);
        carry_w();
        ASSERT_TRUE(link_up(PEACH2_PORT_E));
        ASSERT_TRUE(link_up(PEACH2_PORT_W));
        peach2_core_reg_write(n0.get(), PEACH2_REG_INT_MASK, 0, 4);
    }
    // Node 0's E to node 1 (one way), and W both ways until quiet.
    size_t carry_e() { return carry(n0.get(), PEACH2_PORT_E, n1.get(), PEACH2_PORT_W, accepted); }
    void carry_w() {
        while (carry(n0.get(), PEACH2_PORT_W, n2.get(), PEACH2_PORT_E, accepted) ||
               carry(n2.get(), PEACH2_PORT_E, n0.get(), PEACH2_PORT_W, accepted)) {
        }
    }
    bool link_up(unsigned port, peach2_core* c = nullptr) {
        return reg(c ? c : n0.get(), PEACH2_REG_LINK(port - 1)) & PEACH2_LINK_UP;
    }
    size_t queued(unsigned port) {
        const void* p = nullptr;
        return peach2_core_link_tx_peek(n0.get(), port, &p);
    }
    static uint32_t errors(peach2_core* c, peach2_err code) {
        return reg(c, PEACH2_REG_ERR_BY_CODE(code));
    }
};

// Speaks the link protocol (docs/hardware.md §5) to one card's port with
// whatever headers a test crafts: the rogue peer of issue 14.
struct Rogue {
    peach2_core* card;
    unsigned port;
    uint32_t seq = 0;

    // A fresh connection, and HELLO as `node` of `nodes` from its `from` port.
    bool connect(uint32_t node, uint32_t nodes, uint32_t from = PEACH2_PORT_E) {
        peach2_core_link_connected(card, port, false);
        peach2_core_link_connected(card, port, true);
        seq = 0;
        drain();  // the card's HELLO
        return hello(node, nodes, from);
    }
    // Read (and discard) what the card has sent to the rogue.
    size_t drain() {
        const void* p = nullptr;
        const size_t n = peach2_core_link_tx_peek(card, port, &p);
        peach2_core_link_tx_consume(card, port, n);
        return n;
    }
    bool hello(uint32_t node, uint32_t nodes, uint32_t from = PEACH2_PORT_E) {
        const std::vector<uint8_t> p =
            encode_hello({node, nodes, from, PEACH2_VERSION_MAJOR << 16});
        return send(pkt_hdr(PEACH2_PKT_HELLO, static_cast<uint16_t>(node),
                            static_cast<uint16_t>(node), sizeof(peach2_hello), 0, 0),
                    p);
    }
    // Send one packet (its seq filled in); the card's verdict on the stream.
    bool send(peach2_pkt_hdr h, std::span<const uint8_t> payload) {
        h.seq = seq++;
        std::vector<uint8_t> bytes;
        add_packet(bytes, h, payload);
        return peach2_core_link_receive(card, port, bytes.data(), bytes.size());
    }
};

}  // namespace peach2::test
