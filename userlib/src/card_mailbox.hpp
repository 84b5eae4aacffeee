// SPDX-License-Identifier: MIT
// MailboxIo on the real card: our record goes by PIO into slot `self` of
// the peer's mailbox (a card region of the peer's slice); the peer's record
// is read from slot `peer` of our own mailbox mapping (uncached MMIO).
#pragma once

#include "exchange.hpp"

#include <cstdint>

namespace tca {

class CardMailbox final : public MailboxIo {
public:
	CardMailbox(volatile unsigned char *window, const volatile unsigned char *mailbox,
		    std::uint32_t self, std::uint32_t peer) noexcept
		: window_(window), mailbox_(mailbox), self_(self), peer_(peer) {}

	void write(const MailboxRecord &rec) noexcept override;
	bool read(MailboxRecord *rec) noexcept override;

	// Global address of slot `slot` in node `node`'s mailbox.
	static std::uint64_t slot_address(std::uint32_t node, std::uint32_t slot) noexcept;

private:
	volatile unsigned char *window_;
	const volatile unsigned char *mailbox_;
	std::uint32_t self_, peer_;
};

} // namespace tca
