// SPDX-License-Identifier: MIT
// The record tcaExchange() writes into a peer's mailbox slot, and its
// integrity check. A reader sees the slot through uncached MMIO while the
// peer may be rewriting it, so it can observe a mix of two records ("torn");
// the checksum over every other word makes such a mix fail validation, and
// the reader simply tries again later.
#pragma once

#include <tca/tca.h>

#include <peach2/peach2_hw.h>

#include <cstdint>

namespace tca {

inline constexpr std::uint32_t kRecordMagic = 0x58414354u; // "TCAX"
inline constexpr std::uint16_t kRecordVersion = 1;

struct MailboxRecord {
	std::uint32_t magic;      // kRecordMagic
	std::uint16_t version;    // kRecordVersion
	std::uint16_t length;     // sizeof(MailboxRecord)
	std::uint32_t tag;        // caller's tag: only equal tags pair up
	std::uint32_t sender;     // writer's node id (= the slot index)
	std::uint64_t nonce;      // writer's fresh random nonce for this call, != 0
	std::uint64_t ack;        // the peer nonce the writer has seen, 0 = none yet
	std::uint32_t prev_tag;   // the writer's last completed exchange with
	std::uint32_t reserved;   //   this peer: its tag, the writer's nonce and
	std::uint64_t prev_nonce; //   the peer's nonce in it (0/0 if none); lets a
	std::uint64_t prev_ack;   //   slower peer finish (see handshake.hpp)
	tcaHandle handle;         // the writer's handle
	std::uint64_t checksum;   // record_checksum() of everything above
};

static_assert(sizeof(MailboxRecord) % 8 == 0, "read and written as 8-byte words");
static_assert(sizeof(MailboxRecord) <= PEACH2_MAILBOX_SLOT_SIZE, "fits one mailbox slot");

std::uint64_t record_checksum(const MailboxRecord &r) noexcept;

// Fills magic, version, length and checksum.
void seal_record(MailboxRecord &r) noexcept;

// True for a complete, untorn record of this format.
bool record_valid(const MailboxRecord &r) noexcept;

} // namespace tca
