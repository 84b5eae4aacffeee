// SPDX-License-Identifier: MIT
// Pieces shared by tca_rp_check's subcommands.
#pragma once

#include "../common/cli.hpp"
#include "../common/peer.hpp"
#include "../common/tca_buffer.hpp"

#include <tca/tca.h>

#include <cstdint>
#include <string>

namespace rpcheck {

inline constexpr const char *kProg = "rp_check";

using tcatools::PeerOptions;

// Options of every client subcommand.
struct ClientOptions : PeerOptions {
	std::uint64_t seed = 1;
	bool send_done = true; // set the server's done word at the end
};

// Consumes a ClientOptions option at the reader's position.
bool take_client_option(tcatools::ArgReader &a, ClientOptions *o);

// What the server offers (wire.hpp).
struct Served {
	int self = -1;
	tcaHandle data{};
	tcaHandle ctrl{};
	tcatools::TcaBuffer mine; // the handle we send back (unused by the server)
};

// Opens the device, checks --peer, and takes the server's two handles.
bool connect(const ClientOptions &o, Served *s);

// Tells the server this client is done (unless --no-done).
void say_done(const ClientOptions &o, const Served &s);

// "TCA_EREMOTE", "TCA_ENOTEXPORTED", "ETIMEDOUT", ... for a return code.
std::string code_name(int rc);

// A request's outcome as text: "ok", or "<code_name> status=<n> (<card name>)".
std::string outcome_text(int rc, std::uint32_t status);

// Closes the device on scope exit (declare before the buffers).
struct Finalizer {
	~Finalizer() { tcaFinalize(); }
};

int cmd_serve(int argc, char **argv);
int cmd_get_verify(int argc, char **argv);
int cmd_faa(int argc, char **argv);
int cmd_cas_check(int argc, char **argv);
int cmd_read_counter(int argc, char **argv);
int cmd_expect_refused(int argc, char **argv);
int cmd_flood(int argc, char **argv);

} // namespace rpcheck
