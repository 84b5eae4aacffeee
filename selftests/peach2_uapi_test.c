// SPDX-License-Identifier: GPL-2.0
/*
 * peach2_uapi_test: the ioctl and mmap ABI of /dev/peach2-<n>
 * (include/peach2/peach2_uapi.h), above all its validation.
 *
 * Needs a PEACH2 card and peach2.ko, and root; without them every test
 * fails (peach2_selftest.h: the skip policy). PEACH2_DEV=/dev/peach2-1 picks another card. PEACH2_TEST_UNBIND=1
 * also runs the test that unbinds the driver under live mappings (it binds
 * it again afterwards).
 */
#include "peach2_selftest.h"


static int do_alloc(int fd, uint64_t size, struct peach2_alloc *a)
{
	memset(a, 0, sizeof(*a));
	a->size = size;
	return xioctl(fd, PEACH2_IOC_ALLOC, a);
}

/* mmap() that returns 0 or errno; unmaps at once when @out is NULL. */
static int try_mmap(int fd, size_t len, int prot, int flags, uint64_t off,
		    void **out)
{
	void *p = mmap(NULL, len, prot, flags, fd, (off_t)off);

	if (p == MAP_FAILED)
		return errno;
	if (out)
		*out = p;
	else
		munmap(p, len);
	return 0;
}

/*
 * A one-page buffer mapped twice: as memory (*mem) and through this node's
 * slice of the window at its global address (*win, write-only): stores to
 * *win loop back inside the card into *mem.
 */
static int map_loopback(int fd, size_t page, struct peach2_alloc *a,
			volatile uint64_t **mem, volatile uint64_t **win)
{
	int ret = do_alloc(fd, page, a);

	if (!ret)
		ret = try_mmap(fd, page, PROT_READ | PROT_WRITE, MAP_SHARED,
			       a->mmap_offset, (void **)mem);
	if (!ret)
		ret = try_mmap(fd, page, PROT_WRITE, MAP_SHARED, a->global_addr,
			       (void **)win);
	return ret;
}

static int unmap_loopback(int fd, size_t page, struct peach2_alloc *a,
			  volatile uint64_t *mem, volatile uint64_t *win)
{
	munmap((void *)win, page);
	munmap((void *)mem, page);
	return do_free(fd, a->handle);
}

static unsigned long long read_sysfs_ull(const char *path)
{
	char buf[64];

	if (read_sysfs(path, buf, sizeof(buf)) <= 0)
		return 0;
	return strtoull(buf, NULL, 0);
}

static unsigned long long mem_available(void)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f;

	f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

static sigjmp_buf fault_env;

static void on_fault(int sig)
{
	siglongjmp(fault_env, sig);
}

/* Touch one byte; returns the signal it raised (0 when none). */
static int touch(volatile uint8_t *p, int write)
{
	struct sigaction sa, old_bus, old_segv;
	int sig;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fault;
	sigaction(SIGBUS, &sa, &old_bus);
	sigaction(SIGSEGV, &sa, &old_segv);
	sig = sigsetjmp(fault_env, 1);
	if (!sig) {
		if (write)
			*p = 0xa5;
		else
			(void)*p;
	}
	sigaction(SIGBUS, &old_bus, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	return sig;
}

static int is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

FIXTURE(peach2) {
	int fd;
	size_t page;
	struct peach2_info info;
};

FIXTURE_SETUP(peach2)
{
	self->page = (size_t)sysconf(_SC_PAGESIZE);
	self->fd = open_card(_metadata, &self->info, 1);
}

FIXTURE_TEARDOWN(peach2)
{
	close(self->fd);
}

/* ---- INFO ------------------------------------------------------------ */

TEST_F(peach2, info_fields)
{
	const struct peach2_info *i = &self->info;

	ASSERT_EQ((__u32)PEACH2_ABI_VERSION, i->abi_version);
	ASSERT_EQ(PEACH2_VERSION_MAJOR, i->hw_version >> 16);
	ASSERT_LE(1U, i->node_count);
	ASSERT_GE(PEACH2_MAX_NODES, i->node_count);
	ASSERT_LT(i->node_id, i->node_count);
	ASSERT_EQ((__u64)PEACH2_WINDOW_SIZE, i->window_size);
	ASSERT_EQ((__u64)PEACH2_SLICE_SIZE, i->slice_size);
	ASSERT_EQ((__u64)PEACH2_HOST_SIZE, i->host_size);
	ASSERT_LE((__u64)self->page, i->max_alloc);
	ASSERT_EQ(0ULL, i->max_alloc % self->page);
	ASSERT_LE(i->max_alloc, i->host_size);
	ASSERT_TRUE(is_pow2(i->max_chunk));
	ASSERT_LE((__u64)self->page, i->max_chunk);
	ASSERT_EQ(0U, i->pad0);
	for (int k = 0; k < 4; k++)
		ASSERT_EQ(0ULL, i->reserved[k]);
}

TEST_F(peach2, info_bad_pointer)
{
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_INFO, NULL));
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_INFO, (void *)1));
}

/* ---- ioctl numbers --------------------------------------------------- */

TEST_F(peach2, bad_ioctl_numbers)
{
	struct peach2_alloc a;
	char big[512];

	memset(&a, 0, sizeof(a));
	memset(big, 0, sizeof(big));
	/* Unused number, right magic. */
	ASSERT_EQ(ENOTTY, xioctl(self->fd, _IO(PEACH2_IOC_MAGIC, 0x7f), NULL));
	ASSERT_EQ(ENOTTY, xioctl(self->fd, _IOWR(PEACH2_IOC_MAGIC, 0x04,
						 struct peach2_alloc), &a));
	/* Right number, wrong size or direction. */
	ASSERT_EQ(ENOTTY, xioctl(self->fd, _IOR(PEACH2_IOC_MAGIC, 0x00, __u32),
				 big));
	ASSERT_EQ(ENOTTY, xioctl(self->fd, _IOW(PEACH2_IOC_MAGIC, 0x00,
						struct peach2_info), big));
	ASSERT_EQ(ENOTTY, xioctl(self->fd, _IOW(PEACH2_IOC_MAGIC, 0x01,
						struct peach2_alloc), &a));
	ASSERT_EQ(ENOTTY, xioctl(self->fd, _IO(PEACH2_IOC_MAGIC, 0x02), NULL));
	/* Wrong magic. */
	ASSERT_EQ(ENOTTY, xioctl(self->fd, _IOWR('Q', 0x01,
						 struct peach2_alloc), &a));
	ASSERT_EQ(ENOTTY, xioctl(self->fd, 0, NULL));
	ASSERT_EQ(ENOTTY, xioctl(self->fd, 0xffffffffUL, NULL));
}

/* ---- ALLOC ----------------------------------------------------------- */

TEST_F(peach2, alloc_flags)
{
	struct peach2_alloc a;

	for (int bit = 0; bit < 32; bit++) {
		if (PEACH2_ALLOC_FLAGS_ALL & (1U << bit))
			continue;
		memset(&a, 0, sizeof(a));
		a.size = self->page;
		a.flags = 1U << bit;
		ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_ALLOC, &a));
	}
}

TEST_F(peach2, alloc_reserved)
{
	struct peach2_alloc a;

	memset(&a, 0, sizeof(a));
	a.size = self->page;
	a.pad0 = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_ALLOC, &a));

	memset(&a, 0, sizeof(a));
	a.size = self->page;
	a.reserved[0] = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_ALLOC, &a));

	memset(&a, 0, sizeof(a));
	a.size = self->page;
	a.reserved[1] = 1ULL << 63;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_ALLOC, &a));
}

TEST_F(peach2, alloc_size_zero)
{
	struct peach2_alloc a;

	ASSERT_EQ(EINVAL, do_alloc(self->fd, 0, &a));
}

TEST_F(peach2, alloc_too_big)
{
	struct peach2_alloc a;

	ASSERT_EQ(EINVAL, do_alloc(self->fd, self->info.max_alloc + 1, &a));
	ASSERT_EQ(EINVAL, do_alloc(self->fd, self->info.max_alloc + self->page,
				   &a));
	ASSERT_EQ(EINVAL, do_alloc(self->fd, self->info.host_size + 1, &a));
}

TEST_F(peach2, alloc_huge_overflow)
{
	const uint64_t sizes[] = {
		UINT64_MAX, UINT64_MAX - self->page + 2, 1ULL << 63,
		(1ULL << 63) + 1, UINT64_MAX - self->info.max_alloc,
	};
	struct peach2_alloc a;

	for (size_t k = 0; k < ARRAY_SIZE(sizes); k++) {
		ASSERT_EQ(EINVAL, do_alloc(self->fd, sizes[k], &a)) {
			TH_LOG("size 0x%llx", (unsigned long long)sizes[k]);
		}
	}
}

TEST_F(peach2, alloc_bad_pointer)
{
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_ALLOC, NULL));
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_ALLOC, (void *)1));
}

/* A request that can be read but not written back leaves no buffer. */
TEST_F(peach2, alloc_efault_leaves_nothing)
{
	struct peach2_alloc *ro;

	ro = mmap(NULL, self->page, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	memset(ro, 0, sizeof(*ro));
	ro->size = self->page;
	ASSERT_EQ(0, mprotect(ro, self->page, PROT_READ));
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_ALLOC, ro));
	/* Fresh fd: handles are small numbers; none may be live. */
	for (uint32_t h = 0; h < 64; h++)
		ASSERT_EQ(ENOENT, do_free(self->fd, h));
	munmap(ro, self->page);
}

TEST_F(peach2, alloc_result)
{
	struct peach2_alloc a;
	uint64_t node_base;

	node_base = (uint64_t)self->info.node_id * self->info.slice_size;
	ASSERT_EQ(0, do_alloc(self->fd, 1, &a));
	ASSERT_EQ((__u64)self->page, a.size);	/* rounded up to pages */
	ASSERT_NE(0U, a.handle);
	ASSERT_EQ(1U, a.nr_chunks);
	ASSERT_EQ(0ULL, a.mmap_offset % self->page);
	ASSERT_LE((__u64)PEACH2_MMAP_BUF_BASE, a.mmap_offset);
	ASSERT_EQ(0ULL, a.bus_addr % self->page);
	ASSERT_LE(a.bus_addr + a.size, self->info.host_size);
	ASSERT_EQ(node_base + a.bus_addr, a.global_addr);
	ASSERT_EQ(0U, a.pad0);
	ASSERT_EQ(0ULL, a.reserved[0]);
	ASSERT_EQ(0ULL, a.reserved[1]);
	ASSERT_EQ(0, do_free(self->fd, a.handle));
}

/* Output fields are not inputs: garbage there is ignored. */
TEST_F(peach2, alloc_ignores_output_fields)
{
	struct peach2_alloc a;

	memset(&a, 0, sizeof(a));
	a.size = 2 * self->page;
	a.handle = 0xdeadbeef;
	a.mmap_offset = 0x1234;
	a.bus_addr = ~0ULL;
	a.global_addr = ~0ULL;
	a.nr_chunks = 77;
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_ALLOC, &a));
	ASSERT_NE(0xdeadbeefU, a.handle);
	ASSERT_EQ(0, do_free(self->fd, a.handle));
}

TEST_F(peach2, alloc_handles_distinct)
{
	struct peach2_alloc a[8];

	for (int k = 0; k < 8; k++) {
		ASSERT_EQ(0, do_alloc(self->fd, self->page, &a[k]));
		for (int j = 0; j < k; j++) {
			ASSERT_NE(a[j].handle, a[k].handle);
			ASSERT_NE(a[j].mmap_offset, a[k].mmap_offset);
			ASSERT_NE(a[j].bus_addr, a[k].bus_addr);
		}
	}
	for (int k = 0; k < 8; k++)
		ASSERT_EQ(0, do_free(self->fd, a[k].handle));
}

/*
 * The per-fd limit answers -ENOMEM. The default (512 MiB) does not fit a small
 * guest, so the test lowers the limit (root may; it applies to later
 * allocations) and puts it back on every path: EXPECT, not ASSERT, below.
 */
TEST_F_TIMEOUT(peach2, alloc_fd_limit, 300)
{
	unsigned long long orig, limit, unit, total = 0;
	struct peach2_alloc a;
	uint32_t handles[64];
	int n = 0, ret, fd2;
	char val[32];

	orig = read_sysfs_ull(SYSFS_PARAMS "/max_alloc_per_fd");
	ASSERT_NE(0ULL, orig);
	limit = orig;
	if (mem_available() < limit + (64ULL << 20)) {
		limit = 32ULL << 20;
		snprintf(val, sizeof(val), "%llu", limit);
		ASSERT_EQ(0, write_sysfs(SYSFS_PARAMS "/max_alloc_per_fd", val));
	}
	/* Eight units fill the budget: a ninth cannot fit. */
	unit = limit / 8;
	unit -= unit % self->page;
	if (unit > self->info.max_alloc)
		unit = self->info.max_alloc;

	for (;;) {
		ret = do_alloc(self->fd, unit, &a);
		if (ret || n == 64)
			break;
		handles[n++] = a.handle;
		total += a.size;
	}
	EXPECT_EQ(ENOMEM, ret);
	EXPECT_LE(total, limit);
	EXPECT_GT(total + unit, limit);
	EXPECT_LT(0, n);

	/* Another fd has its own budget. */
	fd2 = open(dev_path(), O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, fd2);
	if (fd2 >= 0) {
		EXPECT_EQ(0, do_alloc(fd2, self->page, &a));
		close(fd2);
	}

	/* Freeing gives the budget back. */
	if (n > 0) {
		EXPECT_EQ(0, do_free(self->fd, handles[--n]));
		EXPECT_EQ(0, do_alloc(self->fd, unit, &a));
		if (!_metadata->passed)
			goto out;
		handles[n++] = a.handle;
	}
out:
	while (n)
		EXPECT_EQ(0, do_free(self->fd, handles[--n]));
	snprintf(val, sizeof(val), "%llu", orig);
	EXPECT_EQ(0, write_sysfs(SYSFS_PARAMS "/max_alloc_per_fd", val));
}

/* ---- FREE ------------------------------------------------------------ */

TEST_F(peach2, free_unknown_handle)
{
	ASSERT_EQ(ENOENT, do_free(self->fd, 0));
	ASSERT_EQ(ENOENT, do_free(self->fd, 1));
	ASSERT_EQ(ENOENT, do_free(self->fd, 12345));
	ASSERT_EQ(ENOENT, do_free(self->fd, UINT32_MAX));
}

TEST_F(peach2, free_flags)
{
	struct peach2_free f;
	struct peach2_alloc a;

	ASSERT_EQ(0, do_alloc(self->fd, self->page, &a));
	f.handle = a.handle;
	f.flags = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_FREE, &f));
	f.flags = 0x80000000U;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_FREE, &f));
	/* Still allocated. */
	ASSERT_EQ(0, do_free(self->fd, a.handle));
}

TEST_F(peach2, free_twice)
{
	struct peach2_alloc a;

	ASSERT_EQ(0, do_alloc(self->fd, self->page, &a));
	ASSERT_EQ(0, do_free(self->fd, a.handle));
	ASSERT_EQ(ENOENT, do_free(self->fd, a.handle));
	/* A new buffer does not get the freed handle back at once. */
	ASSERT_EQ(0, do_alloc(self->fd, self->page, &a));
	ASSERT_EQ(0, do_free(self->fd, a.handle));
	ASSERT_EQ(ENOENT, do_free(self->fd, a.handle));
}

TEST_F(peach2, free_bad_pointer)
{
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_FREE, NULL));
}

/* Handles are per fd: another fd of the same card does not see them. */
TEST_F(peach2, other_fd_handle)
{
	struct peach2_chunks c;
	struct peach2_alloc a;
	int fd2;

	fd2 = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, do_alloc(self->fd, self->page, &a));

	ASSERT_EQ(ENOENT, do_free(fd2, a.handle));
	memset(&c, 0, sizeof(c));
	c.handle = a.handle;
	ASSERT_EQ(ENOENT, xioctl(fd2, PEACH2_IOC_CHUNKS, &c));
	ASSERT_EQ(EINVAL, try_mmap(fd2, self->page, PROT_READ | PROT_WRITE,
				   MAP_SHARED, a.mmap_offset, NULL));

	/* Untouched for its owner. */
	ASSERT_EQ(0, try_mmap(self->fd, self->page, PROT_READ | PROT_WRITE,
			      MAP_SHARED, a.mmap_offset, NULL));
	ASSERT_EQ(0, do_free(self->fd, a.handle));
	close(fd2);
}

/* ---- CHUNKS ---------------------------------------------------------- */

TEST_F(peach2, chunks_layout)
{
	uint64_t size = 2 * self->info.max_chunk + 3 * self->page;
	uint64_t node_base, off = 0;
	struct peach2_chunk *ch, one;
	struct peach2_chunks c;
	struct peach2_alloc a;
	uint32_t n;

	if (size > self->info.max_alloc)
		size = self->info.max_alloc;
	node_base = (uint64_t)self->info.node_id * self->info.slice_size;
	ASSERT_EQ(0, do_alloc(self->fd, size, &a));
	n = a.nr_chunks;
	ASSERT_LE(1U, n);

	/* count 0: only the total, the pointer is not touched. */
	memset(&c, 0, sizeof(c));
	c.handle = a.handle;
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));
	ASSERT_EQ(n, c.nr_chunks);

	ch = calloc(n + 1, sizeof(*ch));
	ASSERT_NE(NULL, ch);
	memset(&ch[n], 0x5a, sizeof(ch[n]));
	c.count = n + 1;	/* more room than needed */
	c.chunks = (uintptr_t)ch;
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));
	ASSERT_EQ(n, c.nr_chunks);
	ASSERT_EQ(0x5a5a5a5a5a5a5a5aULL, ch[n].offset);	/* not written */

	ASSERT_EQ(a.global_addr, ch[0].global_addr);
	for (uint32_t k = 0; k < n; k++) {
		uint64_t g = ch[k].global_addr;

		ASSERT_EQ(off, ch[k].offset);
		ASSERT_TRUE(is_pow2(ch[k].len));
		ASSERT_LE((__u64)self->page, ch[k].len);
		ASSERT_LE(ch[k].len, self->info.max_chunk);
		ASSERT_EQ(0ULL, g % self->page);
		ASSERT_EQ(self->info.node_id, (__u32)(g / self->info.slice_size));
		ASSERT_LE(g - node_base + ch[k].len, self->info.host_size);
		off += ch[k].len;
	}
	ASSERT_EQ(a.size, off);

	/* A window onto the list. */
	c.first = n - 1;
	c.count = 1;
	c.chunks = (uintptr_t)&one;
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));
	ASSERT_EQ(0, memcmp(&one, &ch[n - 1], sizeof(one)));
	c.first = n;		/* at the end: nothing to copy */
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));
	ASSERT_EQ(n, c.nr_chunks);
	c.first = n + 1;	/* past the end */
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));
	c.first = UINT32_MAX;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));

	free(ch);
	ASSERT_EQ(0, do_free(self->fd, a.handle));
}

TEST_F(peach2, chunks_count_zero_null)
{
	struct peach2_chunks c;
	struct peach2_alloc a;

	ASSERT_EQ(0, do_alloc(self->fd, self->page, &a));
	memset(&c, 0, sizeof(c));
	c.handle = a.handle;
	c.count = 0;
	c.chunks = 0;
	c.nr_chunks = 1234;	/* output only */
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));
	ASSERT_EQ(a.nr_chunks, c.nr_chunks);
	ASSERT_EQ(0, do_free(self->fd, a.handle));
}

TEST_F(peach2, chunks_bad_pointers)
{
	struct peach2_chunks c, *ro;
	struct peach2_alloc a;

	ASSERT_EQ(0, do_alloc(self->fd, self->page, &a));
	memset(&c, 0, sizeof(c));
	c.handle = a.handle;
	c.count = 1;

	c.chunks = 0;
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));
	c.chunks = 16;
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));
	c.chunks = ~0ULL - 4095;	/* kernel space */
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));
	c.chunks = 0xffff888000000000ULL;	/* the direct map */
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));

	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_CHUNKS, NULL));

	/* Readable but not writable: the result cannot be returned. */
	ro = mmap(NULL, self->page, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	memset(ro, 0, sizeof(*ro));
	ro->handle = a.handle;
	ASSERT_EQ(0, mprotect(ro, self->page, PROT_READ));
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_CHUNKS, ro));
	munmap(ro, self->page);

	ASSERT_EQ(0, do_free(self->fd, a.handle));
}

TEST_F(peach2, chunks_reserved_and_handle)
{
	struct peach2_chunks c;
	struct peach2_alloc a;

	ASSERT_EQ(0, do_alloc(self->fd, self->page, &a));
	memset(&c, 0, sizeof(c));
	c.handle = a.handle;
	c.reserved = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));
	c.reserved = 0;
	c.handle = 0;
	ASSERT_EQ(ENOENT, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));
	c.handle = a.handle + 1000;
	ASSERT_EQ(ENOENT, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));
	ASSERT_EQ(0, do_free(self->fd, a.handle));
	c.handle = a.handle;
	ASSERT_EQ(ENOENT, xioctl(self->fd, PEACH2_IOC_CHUNKS, &c));
}

/* ---- mmap: the window ------------------------------------------------ */

TEST_F(peach2, window_needs_map_shared)
{
	ASSERT_EQ(EINVAL, try_mmap(self->fd, self->page, PROT_WRITE,
				   MAP_PRIVATE, 0, NULL));
	ASSERT_EQ(EINVAL, try_mmap(self->fd, self->page, PROT_NONE,
				   MAP_PRIVATE, 0, NULL));
}

TEST_F(peach2, window_refuses_read)
{
	ASSERT_EQ(EPERM, try_mmap(self->fd, self->page, PROT_READ,
				  MAP_SHARED, 0, NULL));
	ASSERT_EQ(EPERM, try_mmap(self->fd, self->page, PROT_READ | PROT_WRITE,
				  MAP_SHARED, 0, NULL));
}

TEST_F(peach2, window_refuses_exec)
{
	ASSERT_EQ(EPERM, try_mmap(self->fd, self->page, PROT_WRITE | PROT_EXEC,
				  MAP_SHARED, 0, NULL));
	ASSERT_EQ(EPERM, try_mmap(self->fd, self->page, PROT_EXEC,
				  MAP_SHARED, 0, NULL));
}

TEST_F(peach2, window_past_end)
{
	uint64_t ws = self->info.window_size;

	ASSERT_EQ(EINVAL, try_mmap(self->fd, self->page, PROT_WRITE,
				   MAP_SHARED, ws, NULL));
	ASSERT_EQ(EINVAL, try_mmap(self->fd, 2 * self->page, PROT_WRITE,
				   MAP_SHARED, ws - self->page, NULL));
	ASSERT_EQ(EINVAL, try_mmap(self->fd, ws + self->page, PROT_WRITE,
				   MAP_SHARED, 0, NULL));
	/* Between the window and the mailbox. */
	ASSERT_EQ(EINVAL, try_mmap(self->fd, self->page, PROT_WRITE,
				   MAP_SHARED, PEACH2_MMAP_CARDMEM - self->page,
				   NULL));
	/* The last page is fine. */
	ASSERT_EQ(0, try_mmap(self->fd, self->page, PROT_WRITE, MAP_SHARED,
			      ws - self->page, NULL));
}

TEST_F(peach2, window_offset_overflow)
{
	uint64_t top = ~(uint64_t)(self->page - 1);
	int ret;

	/* The kernel answers EOVERFLOW itself for some, we EINVAL. */
	ret = try_mmap(self->fd, 2 * self->page, PROT_WRITE, MAP_SHARED, top,
		       NULL);
	ASSERT_TRUE(ret == EINVAL || ret == EOVERFLOW) {
		TH_LOG("errno %d", ret);
	}
	ret = try_mmap(self->fd, 16 * self->page, PROT_WRITE, MAP_SHARED,
		       top - 4 * self->page, NULL);
	ASSERT_TRUE(ret == EINVAL || ret == EOVERFLOW) {
		TH_LOG("errno %d", ret);
	}
	ret = try_mmap(self->fd, self->page, PROT_WRITE, MAP_SHARED,
		       1ULL << 63, NULL);
	ASSERT_TRUE(ret == EINVAL || ret == EOVERFLOW) {
		TH_LOG("errno %d", ret);
	}
}

/* Lazy mapping: the whole 32 GiB window maps at once. */
TEST_F(peach2, window_map_whole)
{
	size_t ws = self->info.window_size;
	void *w = NULL;

	ASSERT_EQ(0, try_mmap(self->fd, ws, PROT_WRITE, MAP_SHARED, 0, &w));
	/* Never readable, never executable, even later. */
	ASSERT_EQ(-1, mprotect(w, self->page, PROT_READ | PROT_WRITE));
	ASSERT_EQ(EACCES, errno);
	ASSERT_EQ(-1, mprotect(w, self->page, PROT_WRITE | PROT_EXEC));
	ASSERT_EQ(EACCES, errno);
	ASSERT_EQ(0, mprotect(w, self->page, PROT_NONE));
	ASSERT_EQ(0, mprotect(w, self->page, PROT_WRITE));
	ASSERT_EQ(0, munmap(w, ws));
}

/* A store into this node's slice at a buffer's global address lands in it. */
TEST_F(peach2, window_loopback_store)
{
	volatile uint64_t *win = NULL, *mem = NULL;
	struct peach2_alloc a;
	struct timespec t0, t;
	int k, ok = 0;

	ASSERT_EQ(0, map_loopback(self->fd, self->page, &a, &mem, &win));
	for (k = 0; k < 8; k++)
		win[k] = 0x1111111111111111ULL * (k + 1);
	__sync_synchronize();	/* drain write-combining buffers */

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (ok = 1, k = 0; k < 8; k++)
			ok &= mem[k] == 0x1111111111111111ULL * (k + 1);
		if (ok)
			break;
		usleep(1000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 5);
	ASSERT_TRUE(ok) {
		TH_LOG("stores to global 0x%llx did not reach the buffer (first word 0x%llx)",
		       (unsigned long long)a.global_addr,
		       (unsigned long long)mem[0]);
	}
	ASSERT_EQ(0, unmap_loopback(self->fd, self->page, &a, mem, win));
}

/*
 * Stores nobody fences still arrive: the card sends an open write-combining
 * buffer after a pause in the stores (docs/hardware.md §3), also once fences
 * have been doing that job for a while, when the card looks less often.
 */
TEST_F(peach2, window_unfenced_stores_arrive)
{
	volatile uint64_t *win = NULL, *mem = NULL;
	struct peach2_alloc a;
	struct timespec t0, t;
	int round, k;

	ASSERT_EQ(0, map_loopback(self->fd, self->page, &a, &mem, &win));
	/* Fenced puts, spread out: the card's fallback learns it is idle. */
	for (k = 0; k < 40; k++) {
		win[0] = k;
		__sync_synchronize();
		usleep(500);
	}
	for (round = 1; round <= 3; round++) {
		uint64_t want = 0x5a5a000000000000ULL + round;
		double ms;

		for (k = 0; k < 4; k++)
			win[k] = want + k;
		asm volatile("" ::: "memory");	/* no fence: the card must send */
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (;;) {
			int ok = 1;

			for (k = 0; k < 4; k++)
				ok &= mem[k] == want + k;
			clock_gettime(CLOCK_MONOTONIC, &t);
			ms = (t.tv_sec - t0.tv_sec) * 1e3 +
			     (t.tv_nsec - t0.tv_nsec) / 1e6;
			if (ok || ms > 5000)
				break;
			usleep(200);
		}
		TH_LOG("unfenced write %d arrived after %.2f ms", round, ms);
		ASSERT_GT(5000, ms) {
			TH_LOG("4 unfenced stores to global 0x%llx never arrived (first word 0x%llx)",
			       (unsigned long long)a.global_addr,
			       (unsigned long long)mem[0]);
		}
	}
	ASSERT_EQ(0, unmap_loopback(self->fd, self->page, &a, mem, win));
}

/*
 * A store to a node that does not exist is an error the card counts and
 * reports (interrupt, then the driver logs and unlatches it).
 */
TEST_F(peach2, window_store_no_such_node)
{
	unsigned long long before, after;
	char path[PATH_MAX], buf[4096];
	volatile uint32_t *win = NULL;
	uint64_t off;
	int k;

	/* No card can offer this in a full cluster. */
	if (self->info.node_count >= PEACH2_MAX_NODES)
		SKIP(return, "every slice of the window has a node");
	class_attr(path, sizeof(path), "err_count");
	before = read_sysfs_ull(path);
	off = (uint64_t)self->info.node_count * self->info.slice_size;
	ASSERT_EQ(0, try_mmap(self->fd, self->page, PROT_WRITE, MAP_SHARED,
			      off, (void **)&win));
	win[0] = 1;
	__sync_synchronize();
	for (k = 0; k < 500; k++) {
		after = read_sysfs_ull(path);
		if (after > before)
			break;
		usleep(10000);
	}
	ASSERT_LT(before, after);
	class_attr(path, sizeof(path), "err_last");
	ASSERT_EQ((unsigned long long)PEACH2_ERR_NO_SUCH_NODE,
		  read_sysfs_ull(path));
	class_attr(path, sizeof(path), "errors_by_code");
	ASSERT_LT(0, read_sysfs(path, buf, sizeof(buf)));
	ASSERT_NE(NULL, strstr(buf, "1 NO_SUCH_NODE ")) {
		TH_LOG("errors_by_code: '%s'", buf);
	}
	munmap((void *)win, self->page);
}

/* ---- mmap: the mailbox ----------------------------------------------- */

TEST_F(peach2, mailbox_read_only)
{
	volatile uint32_t *mb = NULL;

	ASSERT_EQ(0, try_mmap(self->fd, PEACH2_MAILBOX_SIZE, PROT_READ,
			      MAP_SHARED, PEACH2_MMAP_CARDMEM, (void **)&mb));
	(void)mb[0];
	(void)mb[PEACH2_MAILBOX_SIZE / 4 - 1];
	ASSERT_EQ(-1, mprotect((void *)mb, self->page, PROT_READ | PROT_WRITE));
	ASSERT_EQ(EACCES, errno);
	ASSERT_EQ(-1, mprotect((void *)mb, self->page, PROT_READ | PROT_EXEC));
	ASSERT_EQ(EACCES, errno);
	ASSERT_EQ(0, munmap((void *)mb, PEACH2_MAILBOX_SIZE));
}

TEST_F(peach2, mailbox_refuses_write)
{
	ASSERT_EQ(EPERM, try_mmap(self->fd, self->page, PROT_WRITE,
				  MAP_SHARED, PEACH2_MMAP_CARDMEM, NULL));
	ASSERT_EQ(EPERM, try_mmap(self->fd, self->page, PROT_READ | PROT_WRITE,
				  MAP_SHARED, PEACH2_MMAP_CARDMEM, NULL));
	ASSERT_EQ(EPERM, try_mmap(self->fd, self->page, PROT_READ | PROT_EXEC,
				  MAP_SHARED, PEACH2_MMAP_CARDMEM, NULL));
	ASSERT_EQ(EINVAL, try_mmap(self->fd, self->page, PROT_READ,
				   MAP_PRIVATE, PEACH2_MMAP_CARDMEM, NULL));
}

TEST_F(peach2, mailbox_bounds)
{
	ASSERT_EQ(EINVAL, try_mmap(self->fd, PEACH2_MAILBOX_SIZE + self->page,
				   PROT_READ, MAP_SHARED, PEACH2_MMAP_CARDMEM,
				   NULL));
	ASSERT_EQ(EINVAL, try_mmap(self->fd, self->page, PROT_READ, MAP_SHARED,
				   PEACH2_MMAP_CARDMEM + PEACH2_MAILBOX_SIZE,
				   NULL));
	ASSERT_EQ(EINVAL, try_mmap(self->fd, 2 * self->page, PROT_READ,
				   MAP_SHARED, PEACH2_MMAP_CARDMEM +
				   PEACH2_MAILBOX_SIZE - self->page, NULL));
	/* Between the mailbox and the buffers, and buffer slot 0. */
	ASSERT_EQ(EINVAL, try_mmap(self->fd, self->page, PROT_READ, MAP_SHARED,
				   PEACH2_MMAP_CARDMEM + (1ULL << 30), NULL));
	ASSERT_EQ(EINVAL, try_mmap(self->fd, self->page, PROT_READ, MAP_SHARED,
				   PEACH2_MMAP_BUF_BASE, NULL));
	/* Inside is fine. */
	ASSERT_EQ(0, try_mmap(self->fd, self->page, PROT_READ, MAP_SHARED,
			      PEACH2_MMAP_CARDMEM + PEACH2_MAILBOX_SIZE -
			      self->page, NULL));
}

/* MAP_SHARED of a read-only fd is not VM_SHARED, but is still shared. */
TEST_F(peach2, mailbox_read_only_fd)
{
	int fd2;

	fd2 = open(dev_path(), O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, try_mmap(fd2, self->page, PROT_READ, MAP_SHARED,
			      PEACH2_MMAP_CARDMEM, NULL));
	close(fd2);
}

/* ---- mmap: buffers --------------------------------------------------- */

TEST_F(peach2, buf_mmap_bounds)
{
	struct peach2_alloc a;
	size_t size = 16 * self->page;
	int rw = PROT_READ | PROT_WRITE;

	ASSERT_EQ(0, do_alloc(self->fd, size, &a));
	/* Bigger than the buffer. */
	ASSERT_EQ(EINVAL, try_mmap(self->fd, size + self->page, rw,
				   MAP_SHARED, a.mmap_offset, NULL));
	/* Not at its start. */
	ASSERT_EQ(EINVAL, try_mmap(self->fd, self->page, rw, MAP_SHARED,
				   a.mmap_offset + self->page, NULL));
	ASSERT_EQ(EINVAL, try_mmap(self->fd, self->page, rw, MAP_SHARED,
				   a.mmap_offset - self->page, NULL));
	/* Private, executable. */
	ASSERT_EQ(EINVAL, try_mmap(self->fd, size, rw, MAP_PRIVATE,
				   a.mmap_offset, NULL));
	ASSERT_EQ(EPERM, try_mmap(self->fd, size, rw | PROT_EXEC, MAP_SHARED,
				  a.mmap_offset, NULL));
	/* Whole and partial mappings. */
	ASSERT_EQ(0, try_mmap(self->fd, size, rw, MAP_SHARED, a.mmap_offset,
			      NULL));
	ASSERT_EQ(0, try_mmap(self->fd, self->page, rw, MAP_SHARED,
			      a.mmap_offset, NULL));
	ASSERT_EQ(0, do_free(self->fd, a.handle));
	/* Gone with its handle. */
	ASSERT_EQ(EINVAL, try_mmap(self->fd, self->page, rw, MAP_SHARED,
				   a.mmap_offset, NULL));
}

TEST_F(peach2, buf_read_write)
{
	size_t size = 3 * self->page + 1, mapped;
	uint8_t *p = NULL, *q = NULL;
	struct peach2_alloc a;

	ASSERT_EQ(0, do_alloc(self->fd, size, &a));
	mapped = a.size;
	ASSERT_EQ((__u64)(4 * self->page), a.size);
	ASSERT_EQ(0, try_mmap(self->fd, mapped, PROT_READ | PROT_WRITE,
			      MAP_SHARED, a.mmap_offset, (void **)&p));
	for (size_t k = 0; k < mapped; k++) {
		ASSERT_EQ(0, p[k]) {	/* zeroed */
			TH_LOG("byte %zu", k);
		}
	}
	for (size_t k = 0; k < mapped; k++)
		p[k] = (uint8_t)(k * 7 + 3);
	/* A second mapping sees the same memory. */
	ASSERT_EQ(0, try_mmap(self->fd, mapped, PROT_READ, MAP_SHARED,
			      a.mmap_offset, (void **)&q));
	ASSERT_EQ(0, memcmp(p, q, mapped));
	ASSERT_EQ(-1, mprotect(p, self->page, PROT_READ | PROT_EXEC));
	ASSERT_EQ(EACCES, errno);
	munmap(q, mapped);
	munmap(p, mapped);
	ASSERT_EQ(0, do_free(self->fd, a.handle));
}

/* Every page of a buffer of several chunks maps to its own memory. */
TEST_F_TIMEOUT(peach2, buf_multi_chunk, 120)
{
	uint64_t size = self->info.max_chunk + 2 * self->page;
	struct peach2_alloc a;
	uint64_t *p = NULL;

	ASSERT_LE(size, self->info.max_alloc) {
		TH_LOG("max_alloc %llu is below max_chunk + 2 pages",
		       (unsigned long long)self->info.max_alloc);
	}
	ASSERT_EQ(0, do_alloc(self->fd, size, &a));
	ASSERT_LE(2U, a.nr_chunks);
	ASSERT_EQ(0, try_mmap(self->fd, size, PROT_READ | PROT_WRITE,
			      MAP_SHARED, a.mmap_offset, (void **)&p));
	for (uint64_t off = 0; off < size; off += self->page)
		p[off / 8] = off ^ 0xfeedfacecafef00dULL;
	for (uint64_t off = 0; off < size; off += self->page)
		ASSERT_EQ(off ^ 0xfeedfacecafef00dULL, p[off / 8]);
	munmap(p, size);
	ASSERT_EQ(0, do_free(self->fd, a.handle));
}

/* FREE while mapped: the memory stays until munmap. */
TEST_F(peach2, buf_free_while_mapped)
{
	size_t size = 4 * self->page;
	struct peach2_alloc a;
	uint32_t *p = NULL;

	ASSERT_EQ(0, do_alloc(self->fd, size, &a));
	ASSERT_EQ(0, try_mmap(self->fd, size, PROT_READ | PROT_WRITE,
			      MAP_SHARED, a.mmap_offset, (void **)&p));
	p[0] = 0x12345678;
	ASSERT_EQ(0, do_free(self->fd, a.handle));
	ASSERT_EQ(ENOENT, do_free(self->fd, a.handle));
	ASSERT_EQ(0x12345678U, p[0]);
	/* Pages not touched before FREE still fault in. */
	p[size / 4 - 1] = 0xabcdef01;
	ASSERT_EQ(0xabcdef01U, p[size / 4 - 1]);
	/* No new mapping through the freed handle. */
	ASSERT_EQ(EINVAL, try_mmap(self->fd, size, PROT_READ | PROT_WRITE,
				   MAP_SHARED, a.mmap_offset, NULL));
	ASSERT_EQ(0, munmap(p, size));
}

/* close() while mapped: the memory stays until munmap. */
TEST_F(peach2, buf_close_while_mapped)
{
	size_t size = 2 * self->page;
	struct peach2_alloc a;
	uint32_t *p = NULL;
	int fd2;

	fd2 = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, do_alloc(fd2, size, &a));
	ASSERT_EQ(0, try_mmap(fd2, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			      a.mmap_offset, (void **)&p));
	p[0] = 0x5555aaaa;
	ASSERT_EQ(0, close(fd2));
	ASSERT_EQ(0x5555aaaaU, p[0]);
	p[size / 4 - 1] = 7;
	ASSERT_EQ(7U, p[size / 4 - 1]);
	ASSERT_EQ(0, munmap(p, size));
}

/* A forked child shares the mapping (and holds its own reference). */
TEST_F(peach2, buf_fork)
{
	size_t size = self->page;
	struct peach2_alloc a;
	volatile uint32_t *p = NULL;
	int status;
	pid_t pid;

	ASSERT_EQ(0, do_alloc(self->fd, size, &a));
	ASSERT_EQ(0, try_mmap(self->fd, size, PROT_READ | PROT_WRITE,
			      MAP_SHARED, a.mmap_offset, (void **)&p));
	ASSERT_EQ(0, do_free(self->fd, a.handle));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		p[1] = 0xc0ffee;
		_exit(p[0] == 0 ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_EQ(0xc0ffeeU, p[1]);
	ASSERT_EQ(0, munmap((void *)p, size));
}

/* ---- sysfs ----------------------------------------------------------- */

TEST_F(peach2, sysfs_attributes)
{
	static const char * const links[] = { "link_e", "link_w", "link_s" };
	static const char * const plain[] = {
		"err_count", "err_last", "err_status", "errors_by_code",
	};
	char path[PATH_MAX], buf[4096], want[64];
	unsigned int code, count;
	char name[64], *line;
	int n;

	class_attr(path, sizeof(path), "node_id");
	ASSERT_LT(0, read_sysfs(path, buf, sizeof(buf)));
	ASSERT_EQ(self->info.node_id, (__u32)strtoul(buf, NULL, 10));
	class_attr(path, sizeof(path), "node_count");
	ASSERT_LT(0, read_sysfs(path, buf, sizeof(buf)));
	ASSERT_EQ(self->info.node_count, (__u32)strtoul(buf, NULL, 10));
	class_attr(path, sizeof(path), "hw_version");
	ASSERT_LT(0, read_sysfs(path, buf, sizeof(buf)));
	snprintf(want, sizeof(want), "%u.%u\n", self->info.hw_version >> 16,
		 self->info.hw_version & 0xffff);
	ASSERT_STREQ(want, buf);

	for (size_t k = 0; k < ARRAY_SIZE(links); k++) {
		class_attr(path, sizeof(path), links[k]);
		ASSERT_LT(0, read_sysfs(path, buf, sizeof(buf)));
		ASSERT_TRUE(!strcmp(buf, "down\n") ||
			    !strcmp(buf, "connected\n") ||
			    !strncmp(buf, "up peer=", 8)) {
			TH_LOG("%s: '%s'", links[k], buf);
		}
	}
	for (size_t k = 0; k < ARRAY_SIZE(plain); k++) {
		class_attr(path, sizeof(path), plain[k]);
		ASSERT_LE(0, read_sysfs(path, buf, sizeof(buf))) {
			TH_LOG("%s", path);
		}
	}
	class_attr(path, sizeof(path), "err_status");
	read_sysfs(path, buf, sizeof(buf));
	ASSERT_EQ(0, strncmp(buf, "0x", 2));

	class_attr(path, sizeof(path), "errors_by_code");
	read_sysfs(path, buf, sizeof(buf));
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		ASSERT_EQ(3, sscanf(line, "%u %63s %u", &code, name, &count)) {
			TH_LOG("'%s'", line);
		}
		ASSERT_LT(code, (unsigned int)PEACH2_ERR_NR_CODES);
		ASSERT_LT(0U, count);
	}

	class_attr(path, sizeof(path), "counters");
	ASSERT_LT(0, read_sysfs(path, buf, sizeof(buf)));
	n = 0;
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"), n++) {
		unsigned long long v[4];
		char port;

		ASSERT_EQ(5, sscanf(line, "%c tx_pkts=%llu tx_bytes=%llu rx_pkts=%llu rx_bytes=%llu",
				    &port, &v[0], &v[1], &v[2], &v[3])) {
			TH_LOG("'%s'", line);
		}
		ASSERT_LT(n, 4);
		ASSERT_EQ("NEWS"[n], port);
	}
	ASSERT_EQ(4, n);
}

/* ---- unbind under live mappings (opt-in) ------------------------------ */

FIXTURE(unbind) {
	int fd;
	size_t page;
	char pci_addr[64];
	int unbound;
};

FIXTURE_SETUP(unbind)
{
	struct peach2_info info;

	self->page = (size_t)sysconf(_SC_PAGESIZE);
	self->fd = open_card(_metadata, &info, 1);
	ASSERT_EQ(0, card_pci_addr(self->pci_addr, sizeof(self->pci_addr)));
}

FIXTURE_TEARDOWN(unbind)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->unbound)
		write_sysfs(SYSFS_DRIVER "/bind", self->pci_addr);
}

TEST_F(unbind, mappings_sigbus_ioctls_enodev)
{
	uint8_t *buf = NULL, *mbox = NULL, *win = NULL, *orphan = NULL;
	struct peach2_info info;
	struct peach2_alloc a;
	struct stat st;
	int k, fd;

	SKIP_UNLESS_UNBIND_OPTED_IN();
	/* A mapping whose fd is already closed: only the vma holds the card. */
	fd = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, do_alloc(fd, self->page, &a));
	ASSERT_EQ(0, try_mmap(fd, self->page, PROT_READ | PROT_WRITE,
			      MAP_SHARED, a.mmap_offset, (void **)&orphan));
	ASSERT_EQ(0, close(fd));
	ASSERT_EQ(0, touch(orphan, 1));

	ASSERT_EQ(0, do_alloc(self->fd, self->page, &a));
	ASSERT_EQ(0, try_mmap(self->fd, self->page, PROT_READ | PROT_WRITE,
			      MAP_SHARED, a.mmap_offset, (void **)&buf));
	ASSERT_EQ(0, try_mmap(self->fd, self->page, PROT_READ, MAP_SHARED,
			      PEACH2_MMAP_CARDMEM, (void **)&mbox));
	ASSERT_EQ(0, try_mmap(self->fd, self->page, PROT_WRITE, MAP_SHARED,
			      a.global_addr, (void **)&win));
	ASSERT_EQ(0, touch(buf, 1));
	ASSERT_EQ(0, touch(mbox, 0));

	ASSERT_EQ(0, write_sysfs(SYSFS_DRIVER "/unbind", self->pci_addr));
	self->unbound = 1;

	ASSERT_EQ(ENODEV, xioctl(self->fd, PEACH2_IOC_INFO, &info));
	ASSERT_EQ(ENODEV, do_alloc(self->fd, self->page, &a));
	ASSERT_EQ(ENODEV, try_mmap(self->fd, self->page, PROT_READ, MAP_SHARED,
				   PEACH2_MMAP_CARDMEM, NULL));
	ASSERT_EQ(SIGBUS, touch(buf, 0));
	ASSERT_EQ(SIGBUS, touch(mbox, 0));
	ASSERT_EQ(SIGBUS, touch(win, 1));
	ASSERT_EQ(SIGBUS, touch(orphan, 0));
	ASSERT_EQ(0, munmap(orphan, self->page));	/* frees the last of it */
	ASSERT_EQ(0, munmap(buf, self->page));
	ASSERT_EQ(0, munmap(mbox, self->page));
	ASSERT_EQ(0, munmap(win, self->page));
	ASSERT_EQ(0, close(self->fd));
	self->fd = -1;

	ASSERT_EQ(0, write_sysfs(SYSFS_DRIVER "/bind", self->pci_addr));
	self->unbound = 0;
	for (k = 0; k < 200 && stat(dev_path(), &st); k++)
		usleep(10000);
	fd = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, xioctl(fd, PEACH2_IOC_INFO, &info));
	close(fd);
}

TEST_HARNESS_MAIN
