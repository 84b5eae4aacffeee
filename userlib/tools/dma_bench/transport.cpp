// SPDX-License-Identifier: MIT
#include "transport.hpp"

namespace dmabench {

Transport::Transport(Mode m, const Session &s) : mode_(m), s_(s)
{
	if (m == Mode::Reg)
		opts_.flags = TCA_DMA_REG_MODE;
	else if (m == Mode::Host)
		opts_.flags = TCA_DMA_HOST_DESC;
}

int Transport::send(unsigned slot, std::uint64_t size, unsigned word, std::uint64_t value,
		    tcaDmaTicket *t) const
{
	const unsigned char *src = s_.tx + s_.layout.slot_offset(slot);
	const tcaHandle &dst = s_.remote_slots[slot];
	const std::uint64_t word_off = Layout::word_in_words(word);
	if (mode_ != Mode::Pio) {
		tcaDmaXfer x{};
		x.dst = &dst;
		x.src = src;
		x.len = size;
		x.notify = &s_.remote_words;
		x.notify_offset = word_off;
		x.notify_value = value;
		x.notify_len = 8;
		return tcaDmaStart(&x, 1, &opts_, t);
	}
	*t = tcaDmaTicket{};
	// tcaPut ends with a store fence: the word cannot overtake the payload.
	if (int rc = tcaPut(&dst, 0, src, size))
		return rc;
	return tcaPut(&s_.remote_words, word_off, &value, sizeof value);
}

} // namespace dmabench
