/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the PEACH2 kselftests share: headers, the harness (with the pragmas
 * its 6.1 version needs under -Wextra), the device path and small ioctl and
 * sysfs helpers. Each test program includes this once.
 */
#ifndef PEACH2_SELFTEST_H
#define PEACH2_SELFTEST_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>

/* The 6.1 harness has an unused parameter; keep -Wextra for our code. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop

/* ASSERTs longjmp() out of the body: "might be clobbered" is a false alarm. */
#pragma GCC diagnostic ignored "-Wclobbered"

#define SYSFS_CLASS "/sys/class/peach2"
#define SYSFS_DRIVER "/sys/bus/pci/drivers/peach2"
#define SYSFS_PARAMS "/sys/module/peach2/parameters"

static inline const char *dev_path(void)
{
	const char *p = getenv("PEACH2_DEV");

	return p && *p ? p : "/dev/" PEACH2_DEV_PREFIX "0";
}

/*
 * The skip policy of every PEACH2 kselftest: a missing card, driver or
 * driver feature FAILS, it never skips, so that a machine without the
 * device cannot pass. Fixtures open the card with open_card(), whose
 * ASSERTs end a test in its set-up (the harness then runs neither body nor
 * teardown). A test SKIPs only when the person running the suite opted out
 * of it (the unbind tests: unbind_opted_in()) or when no card can offer
 * what it needs in this cluster (said where it happens).
 */

/* The card, opened read/write, and its INFO; ABI at least @min_abi. */
static inline int open_card(struct __test_metadata *_metadata,
			    struct peach2_info *info, unsigned int min_abi)
{
	int fd = open(dev_path(), O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd) {
		TH_LOG("%s: %s (no card, or peach2.ko not loaded)",
		       dev_path(), strerror(errno));
	}
	ASSERT_EQ(0, ioctl(fd, PEACH2_IOC_INFO, info) ? errno : 0);
	ASSERT_LE(min_abi, info->abi_version) {
		TH_LOG("the driver speaks ABI %u, this test needs %u",
		       info->abi_version, min_abi);
	}
	return fd;
}

/* Unbinding the driver under a live test is opt-in: PEACH2_TEST_UNBIND=1
 * (the VM tests always set it). */
static inline int unbind_opted_in(void)
{
	const char *v = getenv("PEACH2_TEST_UNBIND");

	return v && !strcmp(v, "1");
}

#define SKIP_UNLESS_UNBIND_OPTED_IN() do { \
	if (!unbind_opted_in()) \
		SKIP(return, "set PEACH2_TEST_UNBIND=1 to unbind/rebind the driver"); \
} while (0)

/* 0 on success, else errno: ASSERT_EQ(EINVAL, xioctl(...)) reads well. */
static inline int xioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? errno : 0;
}

static inline int read_sysfs(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

static inline int write_sysfs(const char *path, const char *val)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

/* /sys/class/peach2/<name of the device node>/<attr> */
static inline void class_attr(char *out, size_t size, const char *attr)
{
	char dev[PATH_MAX];

	snprintf(dev, sizeof(dev), "%s", dev_path());
	snprintf(out, size, "%s/%s/%s", SYSFS_CLASS, basename(dev), attr);
}

/* The value of line "@name N" of the card's sysfs @attr (rproxy, verbs, ...), or -1. */
static inline long long class_counter(const char *attr, const char *name)
{
	char path[PATH_MAX], buf[4096], *line, *save = NULL;
	size_t n = strlen(name);

	class_attr(path, sizeof(path), attr);
	if (read_sysfs(path, buf, sizeof(buf)) <= 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!strncmp(line, name, n) && line[n] == ' ')
			return strtoll(line + n + 1, NULL, 10);
	return -1;
}

static inline int do_free(int fd, uint32_t handle)
{
	struct peach2_free f = { .handle = handle };

	return xioctl(fd, PEACH2_IOC_FREE, &f);
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Wait up to @seconds for a read-proxy completion record at @rec to carry
 * @tag (acquire), then copy it out. 0 or ETIMEDOUT.
 */
static inline int wait_cpl(const uint8_t *rec, uint64_t tag, struct peach2_rp_cpl *out,
			   double seconds)
{
	const struct peach2_rp_cpl *c = (const void *)rec;
	double end = now_s() + seconds;
	long spins = 0;

	for (;;) {
		if (__atomic_load_n(&c->tag, __ATOMIC_ACQUIRE) == tag) {
			memcpy(out, (const void *)c, sizeof(*out));
			return 0;
		}
		if (++spins % 1024 == 0) {
			if (now_s() > end)
				return ETIMEDOUT;
			usleep(100);
		}
	}
}

/* A buffer of the card (PEACH2_IOC_ALLOC), mapped read/write. */
struct mbuf {
	struct peach2_alloc a;
	uint8_t *p;
};

/* 0 or errno. */
static inline int mbuf_alloc(int fd, uint64_t size, struct mbuf *b)
{
	int ret;

	memset(b, 0, sizeof(*b));
	b->a.size = size;
	ret = xioctl(fd, PEACH2_IOC_ALLOC, &b->a);
	if (ret)
		return ret;
	b->p = mmap(NULL, b->a.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    (off_t)b->a.mmap_offset);
	if (b->p == MAP_FAILED) {
		b->p = NULL;
		return errno;
	}
	return 0;
}

static inline void mbuf_free(int fd, struct mbuf *b)
{
	if (b->p)
		munmap(b->p, b->a.size);
	if (b->a.handle)
		do_free(fd, b->a.handle);
	memset(b, 0, sizeof(*b));
}

/* The card's PCI address (e.g. 0000:00:01.0), for unbind/bind: 0 or -errno. */
static inline int card_pci_addr(char *out, size_t size)
{
	char path[PATH_MAX], link[PATH_MAX];
	ssize_t n;

	class_attr(path, sizeof(path), "device");
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	link[n] = '\0';
	snprintf(out, size, "%s", basename(link));
	return 0;
}

/*
 * Bind the driver to the card again and wait for its device node as the
 * guest's device manager leaves it. The kernel (devtmpfs) creates the node
 * at once, root's, mode 0600; mdev -d (Debian guests, /etc/mdev.conf) then
 * handles the unbind's remove event, which deletes the node, and the bind's
 * add event, which makes it again root:tca 0660. Both come after the bind
 * returns, one at a time, so only a node that is no longer 0600 is the final
 * one: an open before that may find no node at all, and a chmod may be
 * undone. Without mdev.conf the kernel's node is final. Waits up to 5 s.
 * 0 or -errno.
 */
static inline int rebind_card(const char *pci_addr)
{
	int mdev = access("/etc/mdev.conf", F_OK) == 0;
	struct stat st;
	int k, ret = write_sysfs(SYSFS_DRIVER "/bind", pci_addr);

	for (k = 0; !ret && k < 500; k++) {
		if (!stat(dev_path(), &st) && (!mdev || (st.st_mode & 07777) != 0600))
			break;
		usleep(10000);
	}
	return ret;
}

#endif /* PEACH2_SELFTEST_H */
