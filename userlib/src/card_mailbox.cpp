// SPDX-License-Identifier: MIT
#include "card_mailbox.hpp"

#include "pio.hpp"

#include <peach2/peach2_hw.h>

namespace tca {

std::uint64_t CardMailbox::slot_address(std::uint32_t node, std::uint32_t slot) noexcept
{
	return PEACH2_NODE_BASE(node) + PEACH2_CARD_OFF + PEACH2_CARD_MAILBOX_OFF +
	       static_cast<std::uint64_t>(slot) * PEACH2_MAILBOX_SLOT_SIZE;
}

void CardMailbox::write(const MailboxRecord &rec) noexcept
{
	pio_copy(window_ + slot_address(peer_, self_), &rec, sizeof rec);
	store_fence();
}

bool CardMailbox::read(MailboxRecord *rec) noexcept
{
	mmio_read64(rec, mailbox_ + static_cast<std::size_t>(peer_) * PEACH2_MAILBOX_SLOT_SIZE,
		    sizeof *rec);
	return record_valid(*rec);
}

} // namespace tca
