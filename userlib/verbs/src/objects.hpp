// SPDX-License-Identifier: MIT
// The Verbs objects other than QPs: protection domains, memory regions,
// completion queues and channels, shared receive queues, address handles.
// Each starts with the ABI struct the program holds. All their mutable
// state is guarded by their context's Engine lock.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "abi.hpp"
#include "device.hpp"
#include "fifo.hpp"
#include "small_copy.hpp"

namespace pv {

class Engine;
class Qp;

struct Pd {
    ibv_pd abi{};
    std::uint32_t group = 0;  // published with QPs and MRs: the PD check
};

struct Mr {
    ibv_mr abi{};
    std::uint32_t access = 0;
    std::uint64_t iova = 0;
    bool pinned = false;  // we hold a tcaRegister for it
    Pd* pd = nullptr;

    // [addr, addr + len) inside the region with `need` access? (local use)
    bool covers(std::uint64_t addr, std::uint64_t len, std::uint32_t need) const noexcept {
        const auto base = reinterpret_cast<std::uintptr_t>(abi.addr);
        return (access & need) == need && addr >= base && len <= abi.length &&
               addr - base <= abi.length - len;
    }
};

// What MR info blobs hold (published with the key): the exact range (the
// published range is rounded out to 4-byte boundaries for the card's rules).
struct MrInfo {
    std::uint32_t magic;  // kMrMagic
    std::uint32_t access;
    std::uint64_t iova;
    std::uint64_t length;
    std::uint32_t skew;  // addr - start of the published range (0..3)
    std::uint32_t reserved;
};
constexpr std::uint32_t kMrMagic = 0x524d5650;  // "PVMR"
static_assert(sizeof(MrInfo) <= TCA_NAME_INFO);

struct Channel {
    ibv_comp_channel abi{};
    Engine* engine = nullptr;
    std::deque<ibv_cq*> events;  // CQs with an event not yet taken
};

struct Cq {
    ibv_cq abi{};
    Fifo<ibv_wc> entries;
    std::uint32_t capacity = 0;
    bool armed = false;
    bool solicited_only = false;
    bool overflowed = false;
    std::uint32_t events_reported = 0;  // given out by ibv_get_cq_event
    Channel* channel = nullptr;
    std::vector<Qp*> qps;  // QPs that complete here (progressed by poll)
    // Polls answered from `entries` alone since the last pass over `qps`: after
    // kMaxPollsWithoutPass of them a poll runs the pass anyway, so that a
    // program slowly draining a backlog still acknowledges its peers.
    std::uint32_t polls_without_pass = 0;
    static constexpr std::uint32_t kMaxPollsWithoutPass = 64;
};

// A receive WR: only the first nsge SGEs are valid, so copying and
// recycling touch no more (the array is 256 bytes; a ping-pong's receive
// path copied it three times).
struct RecvWr {
    std::uint64_t wr_id = 0;
    std::uint32_t nsge = 0;
    std::array<ibv_sge, kMaxSge> sge{};

    // A posted WR whose num_sge was checked against the queue's max_sge.
    void assign(const ibv_recv_wr& wr) {
        wr_id = wr.wr_id;
        nsge = static_cast<std::uint32_t>(wr.num_sge);
        copy_sges(wr.sg_list, static_cast<std::size_t>(wr.num_sge), sge.data());
    }
    void assign(const RecvWr& o) {
        wr_id = o.wr_id;
        nsge = o.nsge;
        copy_sges(o.sge.data(), o.nsge, sge.data());
    }
    // Back to an empty WR when it leaves its queue (Fifo).
    void recycle() {
        wr_id = 0;
        nsge = 0;
    }
};

struct Srq {
    ibv_srq abi{};
    Pd* pd = nullptr;
    Fifo<RecvWr> wrs;
    std::uint32_t max_wr = 0;
    std::uint32_t max_sge = 0;
    std::uint32_t limit = 0;  // SRQ limit event threshold (0: off)
    bool limit_armed = false;
};

struct Ah {
    ibv_ah abi{};
    ibv_ah_attr attr{};
    std::uint32_t node = 0;
};

}  // namespace pv
