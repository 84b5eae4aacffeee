// SPDX-License-Identifier: GPL-2.0
/*
 * peach2_limits_test: one user or process cannot take a node's buffer memory
 * or the card's inbound filter from everybody else (issue 14, holes 4, 5).
 *
 * Buffers are charged from creation to release, not to their file: a hog
 * that allocates, mmaps, closes and reopens in a loop (its mappings keep
 * the buffers) is stopped by its user's user_max_bytes (EDQUOT) or its
 * RLIMIT_MEMLOCK (ENOMEM), and gets everything back when it unmaps. One
 * user's one-page buffers end at user_max_ranges (EDQUOT) while another
 * user can still allocate.
 *
 * The hogs run as an unprivileged uid in a child. The fixture sets small
 * limits and puts the node's back afterwards. Needs root (it changes module
 * parameters and uids), a PEACH2 card and peach2.ko.
 */
#include <sys/resource.h>

#include "peach2_selftest.h"

#define HOG_UID 65534		/* nobody */
#define MIB (1024 * 1024)
#define TEST_MAX_BYTES (16 * MIB)
#define TEST_MAX_RANGES 64

FIXTURE(limits) {
	char max_bytes[64], max_ranges[64];	/* the node's, restored */
	mode_t dev_mode;			/* the device node's, restored */
};

FIXTURE_VARIANT(limits) {
	int memlock_mib;	/* the hog's RLIMIT_MEMLOCK; 0: unlimited */
	uint64_t piece;		/* bytes per hog allocation */
	int expect_pieces;	/* allocations that succeed */
	int expect_err;		/* and the errno of the next one */
};

/* The user's byte limit stops the hog; RLIMIT_MEMLOCK does not (unlimited). */
FIXTURE_VARIANT_ADD(limits, user_bytes) {
	.memlock_mib = 0, .piece = MIB,
	.expect_pieces = TEST_MAX_BYTES / MIB, .expect_err = EDQUOT,
};

/* The process's RLIMIT_MEMLOCK stops it first. */
FIXTURE_VARIANT_ADD(limits, memlock) {
	.memlock_mib = 4, .piece = MIB, .expect_pieces = 4, .expect_err = ENOMEM,
};

/* One-page buffers: the user's filter ranges run out first. */
FIXTURE_VARIANT_ADD(limits, user_ranges) {
	.memlock_mib = 0, .piece = 4096,
	.expect_pieces = TEST_MAX_RANGES, .expect_err = EDQUOT,
};

static int param(const char *name, char *save, size_t size, const char *val)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", SYSFS_PARAMS, name);
	if (save && read_sysfs(path, save, size) < 0)
		return -1;
	return write_sysfs(path, val);
}

FIXTURE_SETUP(limits)
{
	struct stat st;
	char v[32];

	ASSERT_EQ(0U, getuid()) TH_LOG("needs root");
	snprintf(v, sizeof(v), "%d", TEST_MAX_BYTES);
	ASSERT_EQ(0, param("user_max_bytes", self->max_bytes, sizeof(self->max_bytes), v))
		TH_LOG("no user_max_bytes parameter: peach2.ko without per-user limits?");
	snprintf(v, sizeof(v), "%d", TEST_MAX_RANGES);
	ASSERT_EQ(0, param("user_max_ranges", self->max_ranges, sizeof(self->max_ranges), v));
	/* The hog is an ordinary user who may open the card. */
	ASSERT_EQ(0, stat(dev_path(), &st));
	self->dev_mode = st.st_mode & 07777;
	ASSERT_EQ(0, chmod(dev_path(), 0666));
}

FIXTURE_TEARDOWN(limits)
{
	param("user_max_bytes", NULL, 0, self->max_bytes);
	param("user_max_ranges", NULL, 0, self->max_ranges);
	if (self->dev_mode)
		chmod(dev_path(), self->dev_mode);
}

/* The hog's uid line of sysfs `users` ("" if it holds nothing). */
static void hog_line(char *out, size_t size)
{
	char path[PATH_MAX], text[4096], key[32], *l;

	out[0] = '\0';
	class_attr(path, sizeof(path), "users");
	if (read_sysfs(path, text, sizeof(text)) < 0)
		return;
	snprintf(key, sizeof(key), "uid %d ", HOG_UID);
	l = strstr(text, key);
	if (l)
		snprintf(out, size, "%.*s", (int)strcspn(l, "\n"), l);
}

/*
 * The hog, in a child as HOG_UID: open, allocate @piece, mmap, close, again,
 * until refused. Reports (pieces, errno) on @rep, then waits for a byte on
 * @go and exits (unmapping everything).
 */
static void hog(const FIXTURE_VARIANT(limits) *v, int rep, int go)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	int result[2] = { 0, 0 };
	char c;

	if (v->memlock_mib)
		rl.rlim_cur = rl.rlim_max = (rlim_t)v->memlock_mib * MIB;
	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(HOG_UID) || setuid(HOG_UID))
		_exit(2);
	while (result[0] < 10 * v->expect_pieces + 64) {
		int fd = open(dev_path(), O_RDWR | O_CLOEXEC);
		struct mbuf b;

		if (fd < 0) {
			result[1] = -errno;
			break;
		}
		result[1] = mbuf_alloc(fd, v->piece, &b);
		close(fd);	/* the mapping keeps the buffer */
		if (result[1])
			break;
		result[0]++;
	}
	if (write(rep, result, sizeof(result)) != sizeof(result))
		_exit(3);
	if (read(go, &c, 1) < 0)
		_exit(4);
	_exit(0);
}

TEST_F(limits, hog_is_stopped_and_others_still_allocate)
{
	int rep[2], go[2], result[2] = { -1, -1 }, status, fd;
	char line[128];
	struct peach2_info info;
	struct mbuf b;
	pid_t pid;

	ASSERT_EQ(0, pipe(rep));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(rep[0]);
		close(go[1]);
		hog(variant, rep[1], go[0]);
	}
	close(rep[1]);
	close(go[0]);
	ASSERT_EQ((ssize_t)sizeof(result), read(rep[0], result, sizeof(result)));
	TH_LOG("hog: %d allocations of %llu bytes, then %s", result[0],
	       (unsigned long long)variant->piece, strerror(result[1]));
	EXPECT_EQ(variant->expect_pieces, result[0]);
	EXPECT_EQ(variant->expect_err, result[1]);
	hog_line(line, sizeof(line));
	TH_LOG("while it holds them: %s", line);
	EXPECT_NE(0, line[0]);

	/* Another user (root) can still allocate, and use the filter. */
	fd = open_card(_metadata, &info, 1);
	EXPECT_EQ(0, mbuf_alloc(fd, 4096, &b));
	mbuf_free(fd, &b);
	close(fd);

	/* The hog exits: everything it held comes back. */
	ASSERT_EQ(1, write(go[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	hog_line(line, sizeof(line));
	EXPECT_EQ(0, line[0]) TH_LOG("after exit: %s", line);
	close(rep[0]);
	close(go[1]);
}

/*
 * A user's own freed buffers that peers were told to write stay allocated,
 * and charged, for name_quarantine_ms. A new buffer that only they keep
 * over user_max_bytes waits for them instead of failing: an MPI job
 * started right after the last one ended failed with EDQUOT on its
 * predecessor's memory (make check, UCX's pools).
 */
FIXTURE(quarantine) {
	char max_bytes[64];	/* the node's, restored */
	int fd;
};

FIXTURE_SETUP(quarantine)
{
	struct peach2_info info;
	char v[32];

	ASSERT_EQ(0U, getuid()) TH_LOG("needs root");
	snprintf(v, sizeof(v), "%d", 8 * MIB);
	ASSERT_EQ(0, param("user_max_bytes", self->max_bytes, sizeof(self->max_bytes), v));
	self->fd = open_card(_metadata, &info, 1);
}

FIXTURE_TEARDOWN(quarantine)
{
	close(self->fd);
	param("user_max_bytes", NULL, 0, self->max_bytes);
}

/* A 6 MiB buffer named for remote writers, then freed: quarantined, still charged. */
static int quarantine_6mib(int fd)
{
	struct peach2_publish pub;
	struct mbuf b;
	int ret;

	ret = mbuf_alloc(fd, 6 * MIB, &b);
	if (ret)
		return ret;
	memset(&pub, 0, sizeof(pub));
	pub.handle = b.a.handle;
	pub.kind = PEACH2_NAME_KEY;
	pub.len = 6 * MIB;
	pub.flags = PEACH2_NAME_WRITE;
	ret = xioctl(fd, PEACH2_IOC_PUBLISH, &pub);
	mbuf_free(fd, &b);
	return ret;
}

TEST_F(quarantine, own_quarantine_is_waited_for)
{
	double t0, waited;
	struct mbuf b;
	char ms[32];

	ASSERT_LT(0, read_sysfs(SYSFS_PARAMS "/name_quarantine_ms", ms, sizeof(ms)));
	ASSERT_EQ(0, quarantine_6mib(self->fd));

	t0 = now_s();
	EXPECT_EQ(0, mbuf_alloc(self->fd, 6 * MIB, &b));
	waited = now_s() - t0;
	TH_LOG("the second 6 MiB buffer came after %.2f s (quarantine %d ms)", waited, atoi(ms));
	EXPECT_LT(0.5, waited);	/* it did wait for the first one */
	EXPECT_GT(atoi(ms) / 1000.0 + 1.5, waited);
	mbuf_free(self->fd, &b);
	/* Over the limit with nothing of ours in quarantine: refused at once. */
	t0 = now_s();
	EXPECT_EQ(EDQUOT, mbuf_alloc(self->fd, 9 * MIB, &b));
	EXPECT_GT(0.5, now_s() - t0);
}

/*
 * With PEACH2_ALLOC_NOWAIT the same ALLOC is refused at once: the Verbs
 * library allocates bounce buffers under its engine lock and tries again
 * later rather than hold every QP of the process for seconds.
 */
TEST_F(quarantine, nowait_is_refused_at_once)
{
	struct mbuf b;
	double t0;

	ASSERT_EQ(0, quarantine_6mib(self->fd));

	memset(&b, 0, sizeof(b));
	b.a.size = 6 * MIB;
	b.a.flags = PEACH2_ALLOC_NOWAIT;
	t0 = now_s();
	EXPECT_EQ(EDQUOT, xioctl(self->fd, PEACH2_IOC_ALLOC, &b.a));
	EXPECT_GT(0.5, now_s() - t0);
	/* Under the limit it is an ALLOC like any other. */
	memset(&b, 0, sizeof(b));
	b.a.size = MIB;
	b.a.flags = PEACH2_ALLOC_NOWAIT;
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_ALLOC, &b.a));
	mbuf_free(self->fd, &b);
}

TEST_HARNESS_MAIN
