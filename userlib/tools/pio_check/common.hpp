// SPDX-License-Identifier: MIT
// Pieces shared by tca_pio_check's subcommands.
#pragma once

#include "../common/cli.hpp"

#include <tca/tca.h>

#include <cstdint>

namespace piocheck {

inline constexpr const char *kProg = "pio_check";

// Options every two-node subcommand takes.
struct PeerOptions {
	int peer = -1;
	int timeout_ms = 10000;          // one step (write + ack)
	int exchange_timeout_ms = 60000; // the peer starting
};

// Consumes the option at the reader's position if it is a PeerOptions one.
bool take_peer_option(tcatools::ArgReader &a, PeerOptions *o);

// Opens the device and checks o.peer: prints and returns false on error.
bool open_and_check_peer(const PeerOptions &o, int *self);

// tcaExchange with error text naming the step.
bool exchange(const PeerOptions &o, const tcaHandle &mine, tcaHandle *theirs, std::uint32_t tag,
	      int timeout_ms, const char *step);

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
