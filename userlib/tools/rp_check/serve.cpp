// SPDX-License-Identifier: MIT
// `tca_rp_check serve`: offers memory for remote gets and atomics, then
// sleeps. It serves nothing itself (the driver does); it only wakes every
// 10 ms to see whether its clients said done, or whether it is time for a
// scheduled event: unexport, free, exit or abort mid-way.
#include "../common/pattern.hpp"
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "common.hpp"
#include "handle.hpp"
#include "wire.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <unistd.h>
#include <vector>

namespace rpcheck {
namespace {

constexpr std::uint64_t kNever = ~0ull;

struct ServeOptions : PeerOptions {
	std::vector<std::uint64_t> peers;   // --peers: several clients
	std::uint64_t size = 2ull << 20;
	std::uint64_t seed = 1;
	std::uint32_t flags = TCA_EXPORT_READ;
	std::uint64_t export_len = 0;       // 0: the whole buffer
	bool whole_handle = false;          // send a handle of the whole buffer with the export
	bool counter = false;
	std::uint64_t rounds = 1;
	std::uint64_t seconds = 600;
	std::uint64_t unexport_ms = kNever, free_ms = kNever, exit_ms = kNever, abort_ms = kNever;
	std::uint64_t self_faa = 0;
};

bool parse_flags(std::string_view s, std::uint32_t *out)
{
	if (s == "read")
		*out = TCA_EXPORT_READ;
	else if (s == "atomic")
		*out = TCA_EXPORT_ATOMIC;
	else if (s == "read,atomic" || s == "atomic,read")
		*out = TCA_EXPORT_READ | TCA_EXPORT_ATOMIC;
	else
		return false;
	return true;
}

int parse(int argc, char **argv, ServeOptions *o)
{
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (tcatools::take_peer_option(a, o))
			continue;
		std::string_view s;
		if (a.is("--peers"))
			a.value_u64_list(&o->peers);
		else if (a.is("--size"))
			a.value_u64(&o->size);
		else if (a.is("--seed"))
			a.value_u64(&o->seed);
		else if (a.is("--flags")) {
			if (a.value(&s) && !parse_flags(s, &o->flags))
				a.fail("flags are read, atomic, read,atomic");
		} else if (a.is("--export-len"))
			a.value_u64(&o->export_len);
		else if (a.is("--whole-handle"))
			o->whole_handle = true;
		else if (a.is("--counter"))
			o->counter = true;
		else if (a.is("--rounds"))
			a.value_u64(&o->rounds);
		else if (a.is("--seconds"))
			a.value_u64(&o->seconds);
		else if (a.is("--unexport-after-ms"))
			a.value_u64(&o->unexport_ms);
		else if (a.is("--free-after-ms"))
			a.value_u64(&o->free_ms);
		else if (a.is("--exit-after-ms"))
			a.value_u64(&o->exit_ms);
		else if (a.is("--abort-after-ms"))
			a.value_u64(&o->abort_ms);
		else if (a.is("--self-faa"))
			a.value_u64(&o->self_faa);
		else
			a.unknown();
	}
	if (!a.ok())
		return 1;
	if (o->peers.empty() && o->peer >= 0)
		o->peers.push_back(static_cast<std::uint64_t>(o->peer));
	if (o->peers.empty() || o->size < 64 || o->size % 4 || o->rounds < 1 ||
	    o->export_len > o->size) {
		std::fprintf(stderr, "%s serve: error: need --peer N (or --peers A,B), --size >= 64 "
			     "(multiple of 4), --export-len <= --size, --rounds >= 1\n", kProg);
		return 1;
	}
	o->peer = static_cast<int>(o->peers[0]);
	return 0;
}

class Server {
public:
	explicit Server(const ServeOptions &o) : o_(o) {}
	int run();

private:
	bool offer(const tcaHandle &data, const tcaHandle &ctrl);
	bool all_done() const;
	void clear_done();
	void events(std::uint64_t elapsed_ms);

	const ServeOptions &o_;
	tcatools::TcaBuffer data_, ctrl_;
	tcaHandle exported_{};
	bool unexported_ = false, freed_ = false;
};

bool Server::offer(const tcaHandle &data, const tcaHandle &ctrl)
{
	for (std::uint64_t p : o_.peers) {
		PeerOptions po = o_;
		po.peer = static_cast<int>(p);
		tcaHandle theirs;
		if (!tcatools::exchange(kProg, po, data, &theirs, data_tag(o_.seed), o_.exchange_timeout_ms,
					"exchange(data handle)") ||
		    !tcatools::exchange(kProg, po, ctrl, &theirs, kTagCtrl, o_.timeout_ms,
					"exchange(control handle)"))
			return false;
	}
	return true;
}

bool Server::all_done() const
{
	for (std::uint64_t p : o_.peers)
		if (tcatools::load_acquire(ctrl_.get() + done_offset(static_cast<std::uint32_t>(p))) != kDoneValue)
			return false;
	return true;
}

void Server::clear_done()
{
	for (std::uint64_t p : o_.peers)
		__atomic_store_n(reinterpret_cast<std::uint64_t *>(ctrl_.get() + done_offset(static_cast<std::uint32_t>(p))),
				 0, __ATOMIC_RELEASE);
}

void Server::events(std::uint64_t ms)
{
	if (ms >= o_.abort_ms) {
		std::printf("%s serve: aborting now\n", kProg);
		std::fflush(stdout);
		std::abort();
	}
	if (ms >= o_.exit_ms) {
		std::printf("%s serve: exiting now (no cleanup)\n", kProg);
		std::fflush(stdout);
		_exit(0);
	}
	if (!unexported_ && ms >= o_.unexport_ms) {
		unexported_ = true;
		const int rc = tcaUnexport(&exported_);
		std::printf("%s serve: unexported export %u: %s\n", kProg, exported_.export_id,
			    tcaErrorString(rc));
		std::fflush(stdout);
	}
	if (!freed_ && ms >= o_.free_ms) {
		freed_ = true;
		const int rc = tcaFree(data_.get());
		(void)data_.release();
		std::printf("%s serve: freed the data buffer: %s\n", kProg, tcaErrorString(rc));
		std::fflush(stdout);
	}
}

int Server::run()
{
	int self = -1;
	if (!tcatools::open_and_check_peer(kProg, o_, &self))
		return 1;
	for (std::uint64_t p : o_.peers) {
		if (p == static_cast<std::uint64_t>(self) || p >= static_cast<std::uint64_t>(tcaNodeCount())) {
			std::fprintf(stderr, "%s serve: error: bad peer %" PRIu64 "\n", kProg, p);
			return 1;
		}
	}
	if (!tcatools::ok_or_report(kProg, data_.allocate(o_.size), "tcaMalloc(data)") ||
	    !tcatools::ok_or_report(kProg, ctrl_.allocate(kCtrlSize), "tcaMalloc(control)"))
		return 1;
	tcatools::fill_pattern(std::span(data_.get(), o_.size), o_.seed);
	if (!tcatools::ok_or_report(kProg, tcaExport(data_.get(), o_.export_len, o_.flags, &exported_),
				    "tcaExport(data)"))
		return 1;
	tcaHandle data = exported_, ctrl;
	if (o_.whole_handle) {
		// Claims more than was exported: requests beyond the export must
		// be refused by the target (RP_RANGE).
		if (!tcatools::ok_or_report(kProg, tcaGetHandle(data_.get(), 0, &data), "tcaGetHandle"))
			return 1;
		tca::attach_export(&data, exported_.export_id, exported_.export_key);
	}
	if (o_.counter) {
		if (!tcatools::ok_or_report(kProg, tcaExport(ctrl_.get(), kCtrlSize, TCA_EXPORT_ATOMIC, &ctrl),
					    "tcaExport(counter)"))
			return 1;
	} else if (!tcatools::ok_or_report(kProg, tcaGetHandle(ctrl_.get(), kCtrlSize, &ctrl), "tcaGetHandle")) {
		return 1;
	}
	const std::uint64_t start = tcatools::now_ns();
	bool finished = false;
	for (std::uint64_t round = 0; round < o_.rounds; ++round) {
		if (!offer(data, ctrl))
			return 1;
		std::printf("%s serve: READY node=%d export=%u key=0x%08x size=%" PRIu64 " seed=%" PRIu64
			    " round=%" PRIu64 "\n",
			    kProg, self, exported_.export_id, exported_.export_key, data.size, o_.seed, round + 1);
		std::fflush(stdout);
		if (round == 0 && o_.self_faa) {
			std::uint64_t old = 0;
			for (std::uint64_t i = 0; i < o_.self_faa; ++i)
				if (!tcatools::ok_or_report(kProg, tcaFaa(&ctrl, kCounterOff, 1, &old), "tcaFaa(self)"))
					return 1;
			std::printf("%s serve: self-faa: %" PRIu64 " adds done\n", kProg, o_.self_faa);
			std::fflush(stdout);
		}
		for (;;) {
			const std::uint64_t ms = (tcatools::now_ns() - start) / 1000000;
			events(ms);
			if (all_done())
				break;
			if (ms >= o_.seconds * 1000) {
				finished = true;
				break;
			}
			usleep(10000);
		}
		if (finished)
			break;
		clear_done();
	}
	if (o_.counter)
		std::printf("%s serve: counter=%" PRIu64 "\n", kProg,
			    tcatools::load_acquire(ctrl_.get() + kCounterOff));
	std::printf("%s serve: done (%s)\n", kProg, finished ? "time limit" : "clients done");
	return 0;
}

} // namespace

int cmd_serve(int argc, char **argv)
{
	ServeOptions o;
	if (parse(argc, argv, &o))
		return 1;
	Finalizer fin;
	Server s(o);
	return s.run();
}

} // namespace rpcheck
