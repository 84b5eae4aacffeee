// Random guest and wire input: the model must never crash, hang or touch
// memory it should not (the test binary runs under ASan/UBSan).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <random>

#include "fake_host.h"
#include "packet.h"
#include "util.h"

namespace peach2::test {
namespace {

struct Rng {
    std::mt19937_64 g;
    explicit Rng(uint64_t seed) : g(seed) {}
    uint64_t operator()() { return g(); }
    uint64_t below(uint64_t n) { return n ? g() % n : 0; }
    unsigned size() {
        static constexpr unsigned sizes[] = {1, 2, 4, 8};
        return sizes[below(4)];
    }
};

TEST(Fuzz, RandomRegisterCardMemoryAndWindowAccessesNeverCrash) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        Rng r(seed);
        FakeHost host;
        CorePtr c = make_core(host, static_cast<uint32_t>(r.below(2)), 2);
        peach2_core_link_attach(c.get(), PEACH2_PORT_E);
        peach2_core_link_connected(c.get(), PEACH2_PORT_E, true);
        for (int i = 0; i < 5000; ++i) {
            const uint64_t v = r();
            switch (r.below(6)) {
            case 0: peach2_core_reg_write(c.get(), r.below(0x2100), v, r.size()); break;
            case 1: peach2_core_reg_read(c.get(), r.below(0x2100), r.size()); break;
            case 2:
                peach2_core_cardmem_write(c.get(), r.below(PEACH2_CARDMEM_SIZE + 16), v, r.size());
                break;
            case 3:
                peach2_core_window_write(c.get(), r.below(PEACH2_WINDOW_SIZE + 16), v, r.size());
                break;
            case 4: peach2_core_window_read(c.get(), r.below(PEACH2_WINDOW_SIZE), r.size()); break;
            case 5: peach2_core_service(c.get()); break;
            }
            // DMA registers get extra attention: random descriptors and starts.
            if (r.below(50) == 0) {
                const unsigned ch = static_cast<unsigned>(r.below(PEACH2_DMA_CHANNELS));
                peach2_core_reg_write(
                    c.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_HEAD_LO),
                    r.below(2) ? r.below(1200) : (PEACH2_DMA_HEAD_HOST | r.below(2 << 20)), 8);
                peach2_core_reg_write(c.get(), PEACH2_REG_DMA(ch, PEACH2_DMA_CTRL),
                                      1u << r.below(3), 4);
            }
        }
        for (int i = 0; i < 2000; ++i)  // let every started DMA end
            peach2_core_service(c.get());
        const void* buf = nullptr;
        peach2_core_link_tx_peek(c.get(), PEACH2_PORT_E, &buf);  // still consistent
        EXPECT_GT(reg(c.get(), PEACH2_REG_ERR_COUNT), 0u) << "seed " << seed;
        EXPECT_EQ(reg(c.get(), PEACH2_REG_ID), PEACH2_ID_MAGIC);
    }
}

TEST(Fuzz, MalformedLinkStreamsAreRefusedNeverApplied) {
    for (uint64_t seed = 1; seed <= 200; ++seed) {
        Rng r(seed);
        FakeHost host;
        CorePtr c = make_core(host, 1, 2);
        // Only the target buffer is registered: a broken address field makes
        // a valid write elsewhere (sockets carry no CRC), and the inbound
        // filter is what keeps it out of memory that is no buffer.
        ASSERT_EQ(allow(c.get(), 0x1000, PEACH2_PKT_MAX_PAYLOAD), 0u);
        peach2_core_link_attach(c.get(), PEACH2_PORT_W);
        peach2_core_link_connected(c.get(), PEACH2_PORT_W, true);
        // A proper HELLO from node 0, then packets with one random field broken.
        std::vector<uint8_t> stream = hello_from(0);
        std::vector<uint8_t> payload(1 + r.below(PEACH2_PKT_MAX_PAYLOAD), 0xee);
        std::vector<uint8_t> bad;
        add_packet(bad,
                   pkt_hdr(PEACH2_PKT_WRITE, 0, 1, static_cast<uint32_t>(payload.size()),
                           PEACH2_NODE_BASE(1) + 0x1000, 1),
                   payload);
        const size_t at = r.below(kHeaderSize);
        bad[at] ^= static_cast<uint8_t>(1 + r.below(255));
        stream.insert(stream.end(), bad.begin(), bad.end());
        // Random garbage after it too.
        for (uint64_t k = r.below(64); k; --k)
            stream.push_back(static_cast<uint8_t>(r()));
        // Feed it in random pieces.
        for (size_t pos = 0; pos < stream.size();) {
            const size_t n = std::min<size_t>(1 + r.below(100), stream.size() - pos);
            if (!peach2_core_link_receive(c.get(), PEACH2_PORT_W, stream.data() + pos, n))
                break;
            pos += n;
        }
        // Whatever was broken, nothing may land outside the registered buffer.
        for (size_t a = 0; a < host.mem.size(); ++a) {
            if (host.mem[a] != 0) {
                ASSERT_TRUE(a >= 0x1000 && a < 0x1000 + PEACH2_PKT_MAX_PAYLOAD)
                    << "seed " << seed << " corrupted byte " << at << " wrote at " << a;
            }
        }
    }
}

TEST(Fuzz, RandomReadProxyRequestsOnlyEverTouchTheRing) {
    // A peer sends well-framed RPREQs with random contents: the target card
    // may only write its ring (each entry stamped with the real source) and
    // send answers back; nothing else of its memory changes.
    for (uint64_t seed = 1; seed <= 50; ++seed) {
        Rng r(seed);
        FakeHost host;
        CorePtr c = make_core(host, 1, 2);
        constexpr uint64_t ring = 0x80000;
        const uint32_t entries = 1u << r.below(4);
        peach2_core_reg_write(c.get(), PEACH2_REG_RP_RING_SIZE, entries, 4);
        peach2_core_reg_write(c.get(), PEACH2_REG_RP_BASE_LO, ring, 8);
        peach2_core_reg_write(c.get(), PEACH2_REG_RP_CTRL, PEACH2_RP_ENABLE, 4);
        peach2_core_link_attach(c.get(), PEACH2_PORT_W);
        peach2_core_link_connected(c.get(), PEACH2_PORT_W, true);
        std::vector<uint8_t> stream = hello_from(0);
        const unsigned n = 1 + static_cast<unsigned>(r.below(40));
        for (unsigned i = 0; i < n; ++i) {
            std::vector<uint8_t> payload(sizeof(peach2_rp_req));
            for (auto& b : payload)
                b = static_cast<uint8_t>(r());
            if (r.below(2)) {  // half of them with an answerable completion address
                const uint64_t cpl = r.below(PEACH2_HOST_SIZE / 32) * 32;
                std::memcpy(payload.data() + offsetof(peach2_rp_req, cpl), &cpl, 8);
            }
            const uint64_t addr =
                r.below(8) ? PEACH2_NODE_BASE(1) + PEACH2_CARD_OFF + PEACH2_CARD_DOORBELL_OFF
                           : PEACH2_NODE_BASE(1) + r.below(PEACH2_SLICE_SIZE);
            add_packet(
                stream,
                pkt_hdr(PEACH2_PKT_RPREQ, 0, 1, static_cast<uint32_t>(payload.size()), addr, 1 + i),
                payload);
        }
        for (size_t pos = 0; pos < stream.size();) {
            const size_t len = std::min<size_t>(1 + r.below(300), stream.size() - pos);
            ASSERT_TRUE(peach2_core_link_receive(c.get(), PEACH2_PORT_W, stream.data() + pos, len))
                << "seed " << seed;
            pos += len;
        }
        const uint32_t tail = reg(c.get(), PEACH2_REG_RP_TAIL);
        EXPECT_LE(tail, entries) << "seed " << seed;
        EXPECT_EQ(
            tail + reg(c.get(), PEACH2_REG_RP_RX_REFUSED) + reg(c.get(), PEACH2_REG_RP_RX_DROPPED),
            n)
            << "seed " << seed;
        for (size_t a = 0; a < host.mem.size(); ++a) {
            if (host.mem[a] != 0) {
                ASSERT_TRUE(a >= ring && a < ring + tail * PEACH2_RP_ENTRY_SIZE)
                    << "seed " << seed << " wrote at " << a;
            }
        }
        for (uint32_t e = 0; e < tail; ++e)
            EXPECT_EQ(load_le(host.mem.data() + ring + e * PEACH2_RP_ENTRY_SIZE + 2, 2), 0u);
    }
}

}  // namespace
}  // namespace peach2::test
