// SPDX-License-Identifier: MIT
// `tca_dma_check restrict`: requests that break the DMA rules get the
// documented error and move nothing. First through libtca (its own codes,
// before the driver), then straight to the driver on a second open file
// (its errno), which must refuse them without touching the card: the
// card's error counter stays put. Last, a valid copy still works.
#include "../common/pattern.hpp"
#include "../common/report.hpp"
#include "../common/sysfs.hpp"
#include "../common/tca_buffer.hpp"
#include "common.hpp"

#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <vector>

namespace dmacheck {
namespace {

constexpr std::uint64_t kBuf = 65536;

class Checker {
public:
	void expect(const char *what, int got, int want)
	{
		++checked_;
		const bool ok = got == want;
		std::printf("%s restrict: %-58s %s (%d, expected %d: %s)\n", kProg, what, ok ? "ok  " : "FAIL",
			    got, want, tcaErrorString(want));
		failed_ += ok ? 0 : 1;
	}
	unsigned checked() const { return checked_; }
	unsigned failed() const { return failed_; }

private:
	unsigned checked_ = 0, failed_ = 0;
};

void library_checks(Checker &c, unsigned char *a, unsigned char *b, const tcaHandle &hb)
{
	tcaDmaTicket t{};
	c.expect("lib: source not 4-byte aligned", tcaDmaPut(&hb, 2, a + 2, 64, nullptr, &t), TCA_EALIGN);
	c.expect("lib: destination not 4-byte aligned", tcaDmaPut(&hb, 6, a + 6, 64, nullptr, &t), TCA_EALIGN);
	c.expect("lib: low 4 address bits differ", tcaDmaPut(&hb, 0, a + 4, 64, nullptr, &t), TCA_EALIGN);
	c.expect("lib: length not a multiple of 4", tcaDmaPut(&hb, 0, a, 62, nullptr, &t), TCA_EALIGN);
	c.expect("lib: destination range beyond the handle",
		 tcaDmaPut(&hb, kBuf - 32, a, 64, nullptr, &t), TCA_ERANGE);
	int stack[16] = {};
	c.expect("lib: source not in a tcaMalloc buffer", tcaDmaPut(&hb, 0, stack, 64, nullptr, &t), TCA_ENOTBUF);
	tcaHandle bad = hb;
	bad.size -= 4;
	c.expect("lib: corrupted handle", tcaDmaPut(&bad, 0, a, 64, nullptr, &t), TCA_EBADHANDLE);
	c.expect("lib: completion word not 8-byte aligned",
		 tcaDmaPutNotify(&hb, 0, a, 64, 1028, 1, nullptr, &t), TCA_EALIGN);
	tcaDmaXfer x{};
	x.dst = &hb;
	x.src = a;
	x.len = 256;
	x.burst = 6;
	x.stride = TCA_DMA_STRIDE_DST;
	c.expect("lib: block-stride burst not a multiple of 4", tcaDmaStart(&x, 1, nullptr, &t), TCA_ESTRIDE);
	x.burst = 16;
	x.gap = 8;
	c.expect("lib: one-sided gap not a multiple of 16", tcaDmaStart(&x, 1, nullptr, &t), TCA_ESTRIDE);
	x.burst = 0;
	x.gap = 0;
	c.expect("lib: stride side without a burst", tcaDmaStart(&x, 1, nullptr, &t), TCA_ESTRIDE);
	tcaDmaOpts o{};
	o.flags = TCA_DMA_REG_MODE | TCA_DMA_HOST_DESC;
	c.expect("lib: register mode with host descriptors", tcaDmaPut(&hb, 0, a, 64, &o, &t), -EINVAL);
	o = tcaDmaOpts{};
	o.channel = TCA_DMA_CHANNEL(4);
	c.expect("lib: channel 4", tcaDmaPut(&hb, 0, a, 64, &o, &t), -EINVAL);
	// One descriptor more than the card's descriptor RAM holds.
	std::vector<tcaDmaXfer> many(PEACH2_DESC_MAX + 1);
	for (std::size_t i = 0; i < many.size(); ++i) {
		many[i].dst = &hb;
		many[i].dst_offset = 16 * i;
		many[i].src = a + 16 * i;
		many[i].len = 16;
	}
	c.expect("lib: 1025 on-card descriptors", tcaDmaStart(many.data(), many.size(), nullptr, &t), TCA_ENODESC);
	(void)b;
}

// The driver on its own file: 0 or errno of one DMA_START.
int raw_start(int fd, const std::vector<peach2_xfer> &x, std::uint32_t flags)
{
	peach2_dma_start s{};
	s.xfers = reinterpret_cast<std::uintptr_t>(x.data());
	s.count = static_cast<std::uint32_t>(x.size());
	s.flags = flags | PEACH2_DMA_WAIT;
	s.channel = PEACH2_DMA_ANY_CHANNEL;
	s.timeout_ms = 5000;
	return ioctl(fd, PEACH2_IOC_DMA_START, &s) ? errno : 0;
}

bool driver_checks(Checker &c)
{
	const char *dev = std::getenv("TCA_DEVICE");
	const int fd = open(dev && *dev ? dev : "/dev/peach2-0", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		std::fprintf(stderr, "%s restrict: error: cannot open the device: %s\n", kProg,
			     std::strerror(errno));
		return false;
	}
	peach2_info info{};
	peach2_alloc a{}, b{};
	a.size = b.size = kBuf;
	if (ioctl(fd, PEACH2_IOC_INFO, &info) || ioctl(fd, PEACH2_IOC_ALLOC, &a) ||
	    ioctl(fd, PEACH2_IOC_ALLOC, &b)) {
		std::fprintf(stderr, "%s restrict: error: INFO/ALLOC: %s\n", kProg, std::strerror(errno));
		close(fd);
		return false;
	}
	auto xfer = [&](std::uint64_t src_off, std::uint64_t dst, std::uint64_t len) {
		peach2_xfer x{};
		x.src_handle = a.handle;
		x.dst_handle = b.handle;
		x.src_offset = src_off;
		x.dst = dst;
		x.len = len;
		return std::vector<peach2_xfer>{x};
	};
	c.expect("drv: source not 4-byte aligned", -raw_start(fd, xfer(2, 2, 64), 0), -EINVAL);
	c.expect("drv: low 4 address bits differ", -raw_start(fd, xfer(4, 0, 64), 0), -EINVAL);
	c.expect("drv: length not a multiple of 4", -raw_start(fd, xfer(0, 0, 62), 0), -EINVAL);
	c.expect("drv: destination beyond the buffer", -raw_start(fd, xfer(0, kBuf - 32, 64), 0), -EINVAL);
	auto v = xfer(0, 0, 64);
	v[0].dst_handle = 0;
	v[0].dst = PEACH2_NODE_BASE(info.node_id) + 0x100000; // own memory by address
	c.expect("drv: own node by global address", -raw_start(fd, v, 0), -EINVAL);
	v[0].dst = PEACH2_NODE_BASE(info.node_count) + 0x100000;
	c.expect("drv: node beyond the sub-cluster", -raw_start(fd, v, 0), -EINVAL);
	v = xfer(0, 0, 64);
	v[0].src_handle = a.handle + b.handle + 100;
	c.expect("drv: unknown source buffer", -raw_start(fd, v, 0), -ENOENT);
	v = xfer(0, 0, 64);
	v[0].burst = 16;
	v[0].gap = 8;
	v[0].flags = PEACH2_XFER_STRIDE_DST;
	c.expect("drv: one-sided gap not a multiple of 16", -raw_start(fd, v, 0), -EINVAL);
	v = xfer(0, 0, 64);
	v.push_back(v[0]);
	c.expect("drv: register mode with two descriptors", -raw_start(fd, v, PEACH2_DMA_REG_MODE), -EINVAL);
	v = xfer(0, 0, 64);
	v[0].flags = 1u << 7;
	c.expect("drv: undefined transfer flag", -raw_start(fd, v, 0), -EINVAL);
	v[0] = peach2_xfer{};
	v[0].dst_handle = b.handle;
	v[0].len = 6;
	v[0].flags = PEACH2_XFER_IMM;
	c.expect("drv: immediate of 6 bytes", -raw_start(fd, v, 0), -EINVAL);
	std::vector<peach2_xfer> many;
	for (std::uint64_t i = 0; i <= PEACH2_DESC_MAX; ++i)
		many.push_back(xfer(16 * i, 16 * i, 16)[0]);
	peach2_chain_create cc{};
	cc.xfers = reinterpret_cast<std::uintptr_t>(many.data());
	cc.count = static_cast<std::uint32_t>(many.size());
	c.expect("drv: chain of 1025 on-card descriptors",
		 ioctl(fd, PEACH2_IOC_CHAIN_CREATE, &cc) ? -errno : 0, -ENOSPC);
	// And one that is fine, on the same file: the driver still works.
	c.expect("drv: a valid copy", -raw_start(fd, xfer(16, 32, 4096), 0), 0);
	close(fd);
	return true;
}

} // namespace

int cmd_restrict(int argc, char **argv)
{
	tcatools::ArgReader a(argc, argv, 1);
	while (a.next())
		a.unknown();
	if (!a.ok())
		return 1;
	Finalizer fin;
	if (!tcatools::ok_or_report(kProg, tcaInit(), "opening the PEACH2 device"))
		return 1;
	const std::string dir = tcatools::default_sysfs_dir();
	std::uint64_t errs_before = 0, errs_after = 0;
	const bool have_errs = tcatools::read_attr_u64(dir, "err_count", &errs_before);
	tcatools::TcaBuffer ba, bb;
	tcaHandle hb;
	if (!tcatools::ok_or_report(kProg, ba.allocate(kBuf), "tcaMalloc") ||
	    !tcatools::ok_or_report(kProg, bb.allocate(kBuf), "tcaMalloc") ||
	    !tcatools::ok_or_report(kProg, tcaGetHandle(bb.get(), 0, &hb), "tcaGetHandle"))
		return 1;
	tcatools::fill_pattern(std::span(ba.get(), kBuf), 1);
	tcatools::fill_pattern(std::span(bb.get(), kBuf), 2);
	std::vector<std::uint8_t> before(bb.get(), bb.get() + kBuf);
	Checker c;
	library_checks(c, ba.get(), bb.get(), hb);
	const bool untouched = std::memcmp(before.data(), bb.get(), kBuf) == 0;
	if (!untouched)
		std::printf("%s restrict: FAIL: a refused request changed the destination\n", kProg);
	if (!driver_checks(c))
		return 1;
	// A valid transfer through the library, verified.
	const int rc = tcaDmaPut(&hb, 256, ba.get() + 256, 8192, nullptr, nullptr);
	c.expect("lib: a valid copy", rc, 0);
	const bool copied = rc == 0 && std::memcmp(ba.get() + 256, bb.get() + 256, 8192) == 0;
	if (rc == 0 && !copied)
		std::printf("%s restrict: FAIL: the valid copy is wrong\n", kProg);
	const bool counted = have_errs && tcatools::read_attr_u64(dir, "err_count", &errs_after);
	std::printf("%s restrict: card err_count before %" PRIu64 ", after %" PRIu64 "%s\n", kProg,
		    errs_before, errs_after, counted ? "" : " (sysfs unreadable)");
	const bool pass = c.failed() == 0 && untouched && copied && counted && errs_after == errs_before;
	if (pass)
		std::printf("%s restrict: PASS: %u requests answered as documented; nothing reached the card\n",
			    kProg, c.checked());
	else
		std::printf("%s restrict: FAIL: %u of %u checks failed%s\n", kProg, c.failed(), c.checked(),
			    counted && errs_after != errs_before ? "; the card counted errors" : "");
	return pass ? 0 : 1;
}

} // namespace dmacheck
