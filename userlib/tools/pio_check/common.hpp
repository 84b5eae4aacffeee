// SPDX-License-Identifier: MIT
// Pieces shared by tca_pio_check's subcommands.
#pragma once

#include "../common/cli.hpp"
#include "../common/peer.hpp"

#include <tca/tca.h>

#include <cstdint>

namespace piocheck {

inline constexpr const char *kProg = "pio_check";

// The two-node helpers of tools/common/peer.hpp, speaking as this program.
using tcatools::PeerOptions;
using tcatools::take_peer_option;

inline bool open_and_check_peer(const PeerOptions &o, int *self)
{
	return tcatools::open_and_check_peer(kProg, o, self);
}

inline bool exchange(const PeerOptions &o, const tcaHandle &mine, tcaHandle *theirs, std::uint32_t tag,
		     int timeout_ms, const char *step)
{
	return tcatools::exchange(kProg, o, mine, theirs, tag, timeout_ms, step);
}

// Stores v at byte `offset` of `h`.
bool put_u64(const tcaHandle &h, std::uint64_t offset, std::uint64_t v, const char *what);

// A tcaMalloc buffer, freed on scope exit.
class TcaBuffer {
public:
	TcaBuffer() = default;
	TcaBuffer(const TcaBuffer &) = delete;
	TcaBuffer &operator=(const TcaBuffer &) = delete;
	~TcaBuffer()
	{
		if (p_)
			tcaFree(p_);
	}
	// false after printing the error.
	bool allocate(std::size_t size, const char *what);
	unsigned char *get() const { return static_cast<unsigned char *>(p_); }

private:
	void *p_ = nullptr;
};

// Closes the device on scope exit (after the buffers, if declared first).
struct Finalizer {
	Finalizer() = default;
	Finalizer(const Finalizer &) = delete;
	Finalizer &operator=(const Finalizer &) = delete;
	~Finalizer() { tcaFinalize(); }
};

int cmd_recv(int argc, char **argv);
int cmd_send(int argc, char **argv);
int cmd_bad_node(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_raw(int argc, char **argv);

} // namespace piocheck
