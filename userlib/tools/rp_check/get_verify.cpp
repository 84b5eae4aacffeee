// SPDX-License-Identifier: MIT
// `tca_rp_check get-verify`: random gets from the served buffer, every
// byte checked against the pattern. The destination range is poisoned
// before each get, and the bytes around it are checked to stay untouched.
#include "../common/pattern.hpp"
#include "../common/report.hpp"
#include "../common/spin.hpp"
#include "common.hpp"
#include "draw.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <span>
#include <vector>

namespace rpcheck {
namespace {

constexpr unsigned char kPoison = 0xee;
constexpr std::uint64_t kGuard = 64;

struct VerifyOptions : ClientOptions {
	std::uint64_t iters = 1000;
	std::uint64_t min_len = 4;
	std::uint64_t max_len = 1ull << 20;
	std::uint64_t inflight = 1; // > 1: non-blocking gets into separate slots
};

int parse(int argc, char **argv, VerifyOptions *o)
{
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next()) {
		if (take_client_option(a, o))
			continue;
		if (a.is("--iters"))
			a.value_u64(&o->iters);
		else if (a.is("--min-len"))
			a.value_u64(&o->min_len);
		else if (a.is("--max-len"))
			a.value_u64(&o->max_len);
		else if (a.is("--inflight"))
			a.value_u64(&o->inflight);
		else
			a.unknown();
	}
	if (a.ok() && (o->min_len < 4 || o->min_len > o->max_len || o->inflight < 1 || o->inflight > 64)) {
		std::fprintf(stderr, "%s get-verify: error: need 4 <= --min-len <= --max-len, --inflight 1..64\n",
			     kProg);
		return 1;
	}
	return a.ok() ? 0 : 1;
}

// One destination slot: [guard | max_len + 16 | guard].
struct Slot {
	unsigned char *base = nullptr;
	GetShape g;
	tcaRequest req{};
	bool busy = false;
};

class Verifier {
public:
	Verifier(const VerifyOptions &o, const Served &s, unsigned char *mem, std::uint64_t slot_bytes)
		: o_(o), s_(s), rng_(o.seed * 7919 + 17), slot_bytes_(slot_bytes), mem_(mem)
	{
	}

	int run();

private:
	std::uint64_t dst_room() const { return slot_bytes_ - 2 * kGuard; }
	void start(Slot &sl);
	// Checks a finished get; false on a mismatch or an error.
	bool check(Slot &sl, int rc);

	const VerifyOptions &o_;
	const Served &s_;
	std::mt19937_64 rng_;
	std::uint64_t slot_bytes_;
	unsigned char *mem_;
	std::uint64_t gets_ = 0, bytes_ = 0, mismatches_ = 0, errors_ = 0;
};

void Verifier::start(Slot &sl)
{
	sl.g = draw_get(rng_, s_.data.size, dst_room(), o_.min_len, o_.max_len);
	std::memset(sl.base, kPoison, slot_bytes_);
	sl.busy = true;
	const int rc = tcaGetNB(sl.base + kGuard + sl.g.dst_off, &s_.data, sl.g.src_off, sl.g.len, &sl.req);
	if (rc) {
		sl.busy = false;
		check(sl, rc);
	}
}

bool Verifier::check(Slot &sl, int rc)
{
	++gets_;
	if (rc) {
		++errors_;
		std::fprintf(stderr, "%s get-verify: error: get #%" PRIu64 " (offset %" PRIu64 ", %" PRIu64
			     " bytes): %s: %s\n",
			     kProg, gets_, sl.g.src_off, sl.g.len, outcome_text(rc, sl.req.status).c_str(),
			     tcaErrorString(rc));
		return false;
	}
	const unsigned char *d = sl.base + kGuard + sl.g.dst_off;
	const std::size_t bad = tcatools::find_mismatch(std::span(d, sl.g.len), o_.seed, sl.g.src_off);
	bool stray = false;
	for (const unsigned char *p = sl.base; p < d && !stray; ++p)
		stray = *p != kPoison;
	for (const unsigned char *p = d + sl.g.len; p < sl.base + slot_bytes_ && !stray; ++p)
		stray = *p != kPoison;
	if (bad == tcatools::kNoMismatch && !stray) {
		bytes_ += sl.g.len;
		return true;
	}
	++mismatches_;
	if (bad != tcatools::kNoMismatch)
		std::fprintf(stderr, "%s get-verify: MISMATCH get #%" PRIu64 " (src offset %" PRIu64
			     ", %" PRIu64 " bytes) at byte %zu: got 0x%02x, expected 0x%02x\n",
			     kProg, gets_, sl.g.src_off, sl.g.len, bad, d[bad],
			     tcatools::pattern_byte(o_.seed, sl.g.src_off + bad));
	else
		std::fprintf(stderr, "%s get-verify: STRAY WRITE around get #%" PRIu64 " (%" PRIu64
			     " bytes)\n", kProg, gets_, sl.g.len);
	return false;
}

int Verifier::run()
{
	std::vector<Slot> slots(o_.inflight);
	for (std::size_t i = 0; i < slots.size(); ++i)
		slots[i].base = mem_ + i * slot_bytes_;
	std::uint64_t started = 0;
	const std::uint64_t t0 = tcatools::now_ns();
	while (gets_ < o_.iters) {
		for (Slot &sl : slots) {
			if (!sl.busy && started < o_.iters) {
				++started;
				start(sl);
			}
			if (sl.busy) {
				const int rc = tcaTest(&sl.req);
				if (rc == 1)
					continue;
				sl.busy = false;
				check(sl, rc);
			}
		}
		if (errors_ + mismatches_ > 10)
			break;
	}
	const double secs = static_cast<double>(tcatools::now_ns() - t0) / 1e9;
	std::printf("get-verify: %" PRIu64 " gets, %" PRIu64 " bytes, %" PRIu64 " mismatches, %" PRIu64
		    " errors (%.1f s)\n",
		    gets_, bytes_, mismatches_, errors_, secs);
	return mismatches_ == 0 && errors_ == 0 && gets_ == o_.iters ? 0 : 1;
}

} // namespace

int cmd_get_verify(int argc, char **argv)
{
	VerifyOptions o;
	if (parse(argc, argv, &o))
		return 1;
	Finalizer fin;
	Served s;
	if (!connect(o, &s))
		return 1;
	if (o.max_len > s.data.size)
		o.max_len = s.data.size / 4 * 4;
	if (o.min_len > o.max_len)
		o.min_len = o.max_len;
	const std::uint64_t slot_bytes = (o.max_len + 16 + 2 * kGuard + 4095) / 4096 * 4096;
	tcatools::TcaBuffer mem;
	if (!tcatools::ok_or_report(kProg, mem.allocate(slot_bytes * o.inflight), "tcaMalloc"))
		return 1;
	std::printf("%s get-verify: node %d gets from node %d: %" PRIu64 " gets of %" PRIu64 "..%" PRIu64
		    " bytes, %" PRIu64 " in flight, seed %" PRIu64 "\n",
		    kProg, s.self, o.peer, o.iters, o.min_len, o.max_len, o.inflight, o.seed);
	std::fflush(stdout);
	Verifier v(o, s, mem.get(), slot_bytes);
	const int rc = v.run();
	say_done(o, s);
	return rc;
}

} // namespace rpcheck
