// SPDX-License-Identifier: MIT
// Verbs devices: one per PEACH2 card (/dev/peach2-<n>, or $TCA_DEVICE), and
// the attributes every program asks about (device, port, GID, P_Key).
#pragma once

#include <tca/tca.h>

#include <cstdint>
#include <string>

#include "abi.hpp"
#include "wire.hpp"

namespace pv {

struct Device {
    ibv_device abi;
    // rdma-core's struct verbs_device continues after ibv_device with its
    // `ops` pointer; libmlx5 and libefa compare that pointer with their own
    // to tell their devices apart, so it must read as NULL here.
    void* rdma_core_ops = nullptr;
    unsigned char rdma_core_tail[256] = {};

    std::string path;     // the character device libtca opens
    std::uint32_t index;  // n of /dev/peach2-<n>
};

// What INFO said about the card, in the form the query verbs need.
struct CardInfo {
    std::uint32_t node_id = 0;
    std::uint32_t node_count = 1;
    std::uint32_t hw_version = 0;
    bool port_active = false;
    std::uint64_t max_alloc = 0;
};

// Fills the three query answers from `card` (pure: unit-tested).
void device_attr(const Device& dev, const CardInfo& card, ibv_device_attr* out);
void port_attr(const CardInfo& card, ibv_port_attr* out);

// Is a port with these raw link registers (E, W, S) usable? A single node is
// always; otherwise at least one link must be UP.
bool port_up(const std::uint32_t link[3], std::uint32_t node_count) noexcept;

// Limits we advertise (and enforce).
constexpr int kMaxQpWr = 16384;
constexpr int kMaxSge = 16;
constexpr int kMaxCqe = 1 << 20;
constexpr int kMaxRdAtom = 16;
constexpr int kMaxInline = wire::kLlPayload;     // one low-latency packet
constexpr std::uint32_t kVendorId = 0x1234;      // PCI vendor of the emulated card
constexpr std::uint32_t kVendorPartId = 0x7ca2;  // its device id: unknown to perftest

}  // namespace pv
