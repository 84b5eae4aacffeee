// SPDX-License-Identifier: MIT
#include "exchange.hpp"

#include <algorithm>
#include <cerrno>
#include <thread>

namespace tca {

int run_exchange(MailboxIo &io, Handshake &hs, const ExchangeTiming &timing)
{
	using clock = std::chrono::steady_clock;
	const auto start = clock::now();
	const auto deadline = start + std::chrono::milliseconds(timing.timeout_ms);
	auto last_write = start;
	auto interval = timing.rewrite;
	std::uint64_t last_ack = ~0ull; // forces the first write

	for (;;) {
		const auto now = clock::now();
		const MailboxRecord out = hs.outgoing();
		// A changed ack goes out at once: it is what the peer waits for.
		if (out.ack != last_ack) {
			io.write(out);
			last_write = now;
			last_ack = out.ack;
			interval = timing.rewrite;
		} else if (now - last_write >= interval) {
			io.write(out);
			last_write = now;
			interval = std::min<std::chrono::microseconds>(2 * interval, timing.rewrite_max);
		}
		MailboxRecord in;
		if (io.read(&in) && hs.observe(in)) {
			if (hs.needs_final_write())
				io.write(hs.outgoing());
			return 0;
		}
		if (timing.timeout_ms > 0 && now >= deadline)
			return -ETIMEDOUT;
		std::this_thread::sleep_for(timing.poll);
	}
}

} // namespace tca
