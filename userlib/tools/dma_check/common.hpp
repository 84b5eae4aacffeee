// SPDX-License-Identifier: MIT
// Pieces shared by tca_dma_check's subcommands.
#pragma once

#include "../common/cli.hpp"
#include "../common/peer.hpp"

#include <tca/tca.h>

#include <cstdint>
#include <string_view>

namespace dmacheck {

inline constexpr const char *kProg = "dma_check";

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

// "reg", "card", "host" as tcaDmaOpts.flags; false for anything else.
bool mode_flags(std::string_view name, std::uint32_t *flags);
const char *mode_name(std::uint32_t flags);

// Prints what a DMA call or wait returned (with the card's code for
// TCA_EDMA); false unless rc == 0.
bool dma_ok(int rc, const tcaDmaTicket *t, const char *what);

// Closes the device on scope exit (declare before the buffers).
struct Finalizer {
	~Finalizer() { tcaFinalize(); }
};

int cmd_recv(int argc, char **argv);
int cmd_send(int argc, char **argv);
int cmd_hold(int argc, char **argv);
int cmd_sink(int argc, char **argv);
int cmd_chain(int argc, char **argv);
int cmd_restrict(int argc, char **argv);
int cmd_local_bw(int argc, char **argv);
int cmd_crossover(int argc, char **argv);

} // namespace dmacheck
