// SPDX-License-Identifier: GPL-2.0
/*
 * peach2_dma_test: the DMA ioctls of /dev/peach2-<n> (CHAIN_CREATE/DESTROY,
 * DMA_START, DMA_WAIT, poll), include/peach2/peach2_uapi.h.
 *
 * Validation first: every transfer is checked against the caller's own
 * buffers, so a process can read only its buffers and write only its
 * buffers or another node's memory through the window; nothing else gets
 * to the card. Then local transfers (no second node needed) with byte
 * verification: copies with on-card, host and register-mode descriptors,
 * block-stride, immediates, persistent chains, all channels, tickets,
 * poll(), and a process killed mid-DMA.
 *
 * Needs a PEACH2 card and peach2.ko (ABI >= 2), and root; without them every
 * test fails (peach2_selftest.h: the skip policy). Tests that do the same in
 * every descriptor mode (on-card, host, register) use the dma_mode fixture,
 * one variant per mode. PEACH2_DEV=/dev/peach2-1 picks another card. PEACH2_TEST_UNBIND=1
 * also unbinds the driver with DMA in flight (and binds it again). Some tests
 * read device-wide state (sysfs `dma`, `dma_desc_ram`): run the suite while
 * nothing else uses the card's DMA.
 */
#include "peach2_selftest.h"

#define BUF_SIZE (64 * 1024)
#define MIB (1024 * 1024ULL)

/* Every channel idle with nothing queued (per the sysfs `dma` file). */
static int dma_all_idle(void)
{
	char path[PATH_MAX], buf[1024], *line;
	int n = 0;

	class_attr(path, sizeof(path), "dma");
	if (read_sysfs(path, buf, sizeof(buf)) <= 0)
		return 0;
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"), n++)
		if (!strstr(line, " idle queued=0 "))
			return 0;
	return n == PEACH2_DMA_CHANNELS;
}

static int wait_all_idle(double seconds)
{
	double end = now_s() + seconds;

	while (now_s() < end) {
		if (dma_all_idle())
			return 1;
		usleep(10000);
	}
	return dma_all_idle();
}

/* Runs that ended with an error, all channels (sysfs `dma`), or -1. */
static long long dma_errors_total(void)
{
	char path[PATH_MAX], buf[1024], *line;
	unsigned long long completed, errors;
	long long sum = 0;

	class_attr(path, sizeof(path), "dma");
	if (read_sysfs(path, buf, sizeof(buf)) <= 0)
		return -1;
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		line = strstr(line, "completed=");
		if (!line || sscanf(line, "completed=%llu errors=%llu",
				    &completed, &errors) != 2)
			return -1;
		sum += (long long)errors;
	}
	return sum;
}

/* Slots in use in on-card descriptor RAM, or -1. */
static int desc_ram_used(void)
{
	char path[PATH_MAX], buf[128];
	unsigned int used, free_slots;

	class_attr(path, sizeof(path), "dma_desc_ram");
	if (read_sysfs(path, buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "used=%u free=%u", &used, &free_slots) != 2)
		return -1;
	return (int)used;
}

/* ---- buffers and requests ---------------------------------------------- */

/* Chunks of a buffer (at most @max), returns nr_chunks or -errno. */
static int get_chunks(int fd, uint32_t handle, struct peach2_chunk *c,
		      uint32_t max)
{
	struct peach2_chunks req = {
		.handle = handle, .count = max,
		.chunks = (uintptr_t)c,
	};
	int ret = xioctl(fd, PEACH2_IOC_CHUNKS, &req);

	return ret ? -ret : (int)req.nr_chunks;
}

static struct peach2_xfer xcopy(uint32_t sh, uint64_t soff, uint32_t dh,
				uint64_t dst, uint64_t len)
{
	struct peach2_xfer x;

	memset(&x, 0, sizeof(x));
	x.src_handle = sh;
	x.src_offset = soff;
	x.dst_handle = dh;
	x.dst = dst;
	x.len = len;
	return x;
}

static struct peach2_xfer ximm(uint32_t dh, uint64_t dst, uint64_t len,
			       uint64_t value)
{
	struct peach2_xfer x;

	memset(&x, 0, sizeof(x));
	x.dst_handle = dh;
	x.dst = dst;
	x.len = len;
	x.flags = PEACH2_XFER_IMM;
	x.imm = value;
	return x;
}

/* DMA_START of a one-shot list; @out (may be NULL) gets the request back. */
static int start_xfers(int fd, const struct peach2_xfer *x, uint32_t n,
		       uint32_t flags, uint32_t channel, uint32_t timeout_ms,
		       struct peach2_dma_start *out)
{
	struct peach2_dma_start s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.xfers = (uintptr_t)x;
	s.count = n;
	s.flags = flags;
	s.channel = channel;
	s.timeout_ms = timeout_ms;
	ret = xioctl(fd, PEACH2_IOC_DMA_START, &s);
	if (out)
		*out = s;
	return ret;
}

static int start_chain(int fd, uint32_t chain, uint32_t flags,
		       uint32_t channel, struct peach2_dma_start *out)
{
	struct peach2_dma_start s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.chain = chain;
	s.flags = flags;
	s.channel = channel;
	ret = xioctl(fd, PEACH2_IOC_DMA_START, &s);
	if (out)
		*out = s;
	return ret;
}

/* One transfer, started and waited for: errno, or the card's status in
 * *status. */
static int run1(int fd, struct peach2_xfer x, uint32_t flags,
		uint32_t *status)
{
	struct peach2_dma_start s;
	int ret;

	ret = start_xfers(fd, &x, 1, flags | PEACH2_DMA_WAIT,
			  PEACH2_DMA_ANY_CHANNEL, 0, &s);
	if (status)
		*status = s.status;
	return ret;
}

/* Validation result of one transfer (nothing runs when it is refused). */
static int check1(int fd, struct peach2_xfer x)
{
	uint32_t status = ~0U;
	int ret = run1(fd, x, 0, &status);

	if (!ret && status)
		return 1000 + (int)status;	/* the card refused it */
	return ret;
}

static int dma_wait(int fd, uint64_t ticket, uint32_t timeout_ms,
		    uint32_t *status, uint64_t *bytes)
{
	struct peach2_dma_wait w;
	int ret;

	memset(&w, 0, sizeof(w));
	w.ticket = ticket;
	w.timeout_ms = timeout_ms;
	w.status = 0xdead;
	ret = xioctl(fd, PEACH2_IOC_DMA_WAIT, &w);
	if (status)
		*status = w.status;
	if (bytes)
		*bytes = w.bytes;
	return ret;
}

static int chain_create(int fd, const struct peach2_xfer *x, uint32_t n,
			uint32_t flags, uint32_t *chain, uint32_t *nr_desc)
{
	struct peach2_chain_create c;
	int ret;

	memset(&c, 0, sizeof(c));
	c.xfers = (uintptr_t)x;
	c.count = n;
	c.flags = flags;
	ret = xioctl(fd, PEACH2_IOC_CHAIN_CREATE, &c);
	if (chain)
		*chain = c.chain;
	if (nr_desc)
		*nr_desc = c.nr_desc;
	return ret;
}

static int chain_destroy(int fd, uint32_t chain)
{
	struct peach2_chain_destroy d = { .chain = chain };

	return xioctl(fd, PEACH2_IOC_CHAIN_DESTROY, &d);
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245 + 12345;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* ---- fixtures ----------------------------------------------------------- */

/* What every DMA test holds: the card (ABI 2: DMA) and two mapped buffers
 * of BUF_SIZE. */
static int open_dma_card(struct __test_metadata *_metadata,
			 struct peach2_info *info, struct mbuf *a,
			 struct mbuf *b)
{
	int fd = open_card(_metadata, info, 2);

	ASSERT_EQ(0, mbuf_alloc(fd, BUF_SIZE, a));
	ASSERT_EQ(0, mbuf_alloc(fd, BUF_SIZE, b));
	return fd;
}

static void close_dma_card(int fd, struct mbuf *a, struct mbuf *b)
{
	mbuf_free(fd, a);
	mbuf_free(fd, b);
	close(fd);
}

FIXTURE(dma) {
	int fd;
	struct peach2_info info;
	struct mbuf a, b;
};

FIXTURE_SETUP(dma)
{
	self->fd = open_dma_card(_metadata, &self->info, &self->a, &self->b);
}

FIXTURE_TEARDOWN(dma)
{
	close_dma_card(self->fd, &self->a, &self->b);
}

/* The same tests in each descriptor mode: DMA_START/CHAIN_CREATE flags. */
FIXTURE(dma_mode) {
	int fd;
	struct peach2_info info;
	struct mbuf a, b;
};

FIXTURE_VARIANT(dma_mode) {
	uint32_t flags;
};

FIXTURE_VARIANT_ADD(dma_mode, card) {
	.flags = 0,
};

FIXTURE_VARIANT_ADD(dma_mode, host) {
	.flags = PEACH2_DMA_HOST_DESC,
};

FIXTURE_VARIANT_ADD(dma_mode, reg) {
	.flags = PEACH2_DMA_REG_MODE,
};

FIXTURE_SETUP(dma_mode)
{
	self->fd = open_dma_card(_metadata, &self->info, &self->a, &self->b);
}

FIXTURE_TEARDOWN(dma_mode)
{
	close_dma_card(self->fd, &self->a, &self->b);
}

/* ---- validation: requests ---------------------------------------------- */

TEST_F(dma, start_flags_reserved_channel)
{
	struct peach2_xfer x = xcopy(self->a.a.handle, 0, self->b.a.handle, 0,
				     64);
	struct peach2_dma_start s;

	for (int bit = 0; bit < 32; bit++) {
		if (PEACH2_DMA_FLAGS_ALL & (1U << bit))
			continue;
		ASSERT_EQ(EINVAL, start_xfers(self->fd, &x, 1, 1U << bit,
					      PEACH2_DMA_ANY_CHANNEL, 0, NULL));
	}
	ASSERT_EQ(EINVAL, start_xfers(self->fd, &x, 1,
				      PEACH2_DMA_REG_MODE | PEACH2_DMA_HOST_DESC,
				      0, 0, NULL));
	ASSERT_EQ(EINVAL, start_xfers(self->fd, &x, 1, 0, PEACH2_DMA_CHANNELS,
				      0, NULL));
	ASSERT_EQ(EINVAL, start_xfers(self->fd, &x, 1, 0, 0xfffffffe, 0, NULL));
	/* timeout_ms only goes with PEACH2_DMA_WAIT */
	ASSERT_EQ(EINVAL, start_xfers(self->fd, &x, 1, 0, 0, 10, NULL));

	memset(&s, 0, sizeof(s));
	s.xfers = (uintptr_t)&x;
	s.count = 1;
	s.refusal.bad_xfer = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_DMA_START, &s));
	s.refusal.bad_xfer = 0;
	s.reserved = 1ULL << 63;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_DMA_START, &s));
	/* Output fields are not inputs. */
	s.reserved = 0;
	s.flags = PEACH2_DMA_WAIT;
	s.status = 77;
	s.ticket = ~0ULL;
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_DMA_START, &s));
	ASSERT_EQ(0U, s.status);
	ASSERT_NE(~0ULL, s.ticket);
}

TEST_F(dma, count_limits_and_pointers)
{
	struct peach2_xfer *many;
	uint32_t id;

	many = calloc(PEACH2_DMA_MAX_XFERS + 1, sizeof(*many));
	ASSERT_NE(NULL, many);
	for (uint32_t i = 0; i <= PEACH2_DMA_MAX_XFERS; i++)
		many[i] = xcopy(self->a.a.handle, 0, self->b.a.handle, 0, 4);
	ASSERT_EQ(EINVAL, start_xfers(self->fd, many, 0, 0,
				      PEACH2_DMA_ANY_CHANNEL, 0, NULL));
	ASSERT_EQ(EINVAL, start_xfers(self->fd, many, PEACH2_DMA_MAX_XFERS + 1,
				      0, PEACH2_DMA_ANY_CHANNEL, 0, NULL));
	ASSERT_EQ(EINVAL, chain_create(self->fd, many, 0, 0, &id, NULL));
	ASSERT_EQ(EINVAL, chain_create(self->fd, many,
				       PEACH2_DMA_MAX_XFERS + 1, 0, &id, NULL));
	/* The most transfers there may be (host descriptors: 4096 > 1024). */
	ASSERT_EQ(0, chain_create(self->fd, many, PEACH2_DMA_MAX_XFERS,
				  PEACH2_DMA_HOST_DESC, &id, NULL));
	ASSERT_EQ(0, chain_destroy(self->fd, id));
	free(many);

	ASSERT_EQ(EFAULT, start_xfers(self->fd, NULL, 1, 0,
				      PEACH2_DMA_ANY_CHANNEL, 0, NULL));
	ASSERT_EQ(EFAULT, start_xfers(self->fd, (void *)8, 1, 0,
				      PEACH2_DMA_ANY_CHANNEL, 0, NULL));
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_DMA_START, NULL));
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_DMA_WAIT, NULL));
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_CHAIN_CREATE, NULL));
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_CHAIN_DESTROY, NULL));
}

TEST_F(dma, chain_create_flags_reserved)
{
	struct peach2_xfer x = xcopy(self->a.a.handle, 0, self->b.a.handle, 0,
				     64);
	struct peach2_chain_create c;
	uint32_t id;

	ASSERT_EQ(EINVAL, chain_create(self->fd, &x, 1, PEACH2_DMA_WAIT, &id,
				       NULL));
	ASSERT_EQ(EINVAL, chain_create(self->fd, &x, 1, 1U << 5, &id, NULL));
	ASSERT_EQ(EINVAL, chain_create(self->fd, &x, 1, PEACH2_DMA_REG_MODE |
				       PEACH2_DMA_HOST_DESC, &id, NULL));
	memset(&c, 0, sizeof(c));
	c.xfers = (uintptr_t)&x;
	c.count = 1;
	c.reserved = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_CHAIN_CREATE, &c));
}

/* ---- validation: transfers --------------------------------------------- */

TEST_F(dma, xfer_flags_and_fields)
{
	uint32_t ah = self->a.a.handle, bh = self->b.a.handle;
	struct peach2_xfer x;

	for (int bit = 0; bit < 32; bit++) {
		if (PEACH2_XFER_FLAGS_ALL & (1U << bit))
			continue;
		x = xcopy(ah, 0, bh, 0, 64);
		x.flags = 1U << bit;
		ASSERT_EQ(EINVAL, check1(self->fd, x));
	}
	x = xcopy(ah, 0, bh, 0, 64);
	x.imm = 1;			/* only with PEACH2_XFER_IMM */
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	x = xcopy(ah, 0, bh, 0, 0);	/* len 0 */
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	x = xcopy(ah, 0, bh, 0, 64);
	x.gap = 16;			/* gap without burst */
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	x = xcopy(ah, 0, bh, 0, 64);
	x.flags = PEACH2_XFER_STRIDE_SRC;	/* stride without burst */
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	x = xcopy(ah, 0, bh, 0, 64);
	x.burst = 16;			/* burst without a stride side */
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	/* The valid one, for contrast. */
	ASSERT_EQ(0, check1(self->fd, xcopy(ah, 0, bh, 0, 64)));
}

TEST_F(dma, imm_misuse)
{
	uint32_t ah = self->a.a.handle, bh = self->b.a.handle;
	struct peach2_xfer x;

	x = ximm(bh, 0, 4, 1);
	x.src_handle = ah;		/* no source with IMM */
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	x = ximm(bh, 0, 4, 1);
	x.src_offset = 4;
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	for (uint64_t len = 0; len <= 16; len++) {
		if (len == 4 || len == 8)
			continue;
		ASSERT_EQ(EINVAL, check1(self->fd, ximm(bh, 0, len, 1)));
	}
	x = ximm(bh, 0, 8, 1);
	x.burst = 4;
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	x = ximm(bh, 0, 8, 1);
	x.flags |= PEACH2_XFER_STRIDE_DST;
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	ASSERT_EQ(EINVAL, check1(self->fd, ximm(bh, 2, 4, 1)));	/* align */
	ASSERT_EQ(EINVAL, check1(self->fd, ximm(bh, BUF_SIZE - 4, 8, 1)));
	ASSERT_EQ(EINVAL, check1(self->fd, ximm(bh, BUF_SIZE, 4, 1)));
	ASSERT_EQ(0, check1(self->fd, ximm(bh, BUF_SIZE - 8, 8, 1)));
}

TEST_F(dma, alignment_restrictions)
{
	uint32_t ah = self->a.a.handle, bh = self->b.a.handle;

	memset(self->b.p, 0x5a, BUF_SIZE);
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 2, bh, 2, 64)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 1, bh, 1, 64)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, bh, 0, 62)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, bh, 0, 6)));
	/* Low 4 address bits must be equal on both sides. */
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, bh, 4, 64)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 8, bh, 0, 64)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 4, bh, 24, 64)));
	/* Nothing moved. */
	for (size_t i = 0; i < BUF_SIZE; i++)
		ASSERT_EQ(0x5a, self->b.p[i]);
	/* Equal low bits, any 16-byte phase: fine. */
	ASSERT_EQ(0, check1(self->fd, xcopy(ah, 4, bh, 4 + 4096, 60)));
	ASSERT_EQ(0, check1(self->fd, xcopy(ah, 12, bh, 44, 4)));
}

TEST_F(dma, stride_rules)
{
	uint32_t ah = self->a.a.handle, bh = self->b.a.handle;
	struct peach2_xfer x;

	x = xcopy(ah, 0, bh, 0, 64);
	x.flags = PEACH2_XFER_STRIDE_SRC;
	x.burst = 6;				/* burst % 4 */
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	x.burst = 8;
	x.gap = 6;				/* gap % 4 */
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	x.gap = 8;				/* one side: gap % 16 */
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	x.flags = PEACH2_XFER_STRIDE_DST;
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	x.flags = PEACH2_XFER_STRIDE_SRC | PEACH2_XFER_STRIDE_DST;
	ASSERT_EQ(0, check1(self->fd, x));	/* both sides: 8 is fine */
	x.flags = PEACH2_XFER_STRIDE_SRC;
	x.gap = 16;
	ASSERT_EQ(0, check1(self->fd, x));
	/* The strided span must fit the buffer: 64 B in 8 B blocks with a
	 * 16 B gap span 8 * 24 - 16 = 176 bytes. */
	x.src_offset = BUF_SIZE - 176;
	x.dst = x.src_offset;
	ASSERT_EQ(0, check1(self->fd, x));
	x.src_offset = BUF_SIZE - 160;
	x.dst = x.src_offset;
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	/* A huge gap span overflows nothing and fits nowhere. */
	x = xcopy(ah, 0, bh, 0, BUF_SIZE);
	x.flags = PEACH2_XFER_STRIDE_SRC;
	x.burst = 4;
	x.gap = 0xfff0;
	ASSERT_EQ(EINVAL, check1(self->fd, x));
}

TEST_F(dma, range_checks)
{
	uint32_t ah = self->a.a.handle, bh = self->b.a.handle;
	const uint64_t huge[] = {
		UINT64_MAX - 15, UINT64_MAX - 63, 1ULL << 63, 1ULL << 40,
		BUF_SIZE, BUF_SIZE + 64,
	};
	const uint64_t lens[] = {
		UINT64_MAX - 15, UINT64_MAX - 3, 1ULL << 63, 1ULL << 40,
		BUF_SIZE + 16, 2 * BUF_SIZE,
	};

	ASSERT_EQ(0, check1(self->fd, xcopy(ah, 0, bh, 0, BUF_SIZE)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, bh, 0, BUF_SIZE + 16)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 16, bh, 0, BUF_SIZE)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, bh, 16, BUF_SIZE)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, BUF_SIZE - 16, bh, 0, 32)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, bh, BUF_SIZE - 16, 32)));
	for (size_t k = 0; k < ARRAY_SIZE(huge); k++) {
		ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, huge[k], bh, huge[k], 64)));
		ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, bh, 0, lens[k])));
		ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, huge[k] & ~15ULL, bh,
							  0, 64)));
	}
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 64, bh, 64,
						  UINT64_MAX - 63)));
}

/* A process reaches only its own buffers: handles are per open file. */
TEST_F(dma, handles_are_per_fd)
{
	uint32_t ah = self->a.a.handle, bh = self->b.a.handle;
	struct mbuf other;
	int fd2;

	ASSERT_EQ(ENOENT, check1(self->fd, xcopy(0, 0, bh, 0, 64)));
	ASSERT_EQ(ENOENT, check1(self->fd, xcopy(ah, 0, 0xfffff, 0, 64)));
	ASSERT_EQ(ENOENT, check1(self->fd, xcopy(0xfffff, 0, bh, 0, 64)));

	fd2 = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, mbuf_alloc(fd2, BUF_SIZE, &other));
	/* Another fd's handle, as source and as destination. */
	if (other.a.handle != ah && other.a.handle != bh) {
		ASSERT_EQ(ENOENT, check1(self->fd, xcopy(other.a.handle, 0, bh,
							  0, 64)));
		ASSERT_EQ(ENOENT, check1(self->fd, xcopy(ah, 0, other.a.handle,
							  0, 64)));
	}
	/* And the other way round. */
	ASSERT_EQ(0, check1(fd2, xcopy(other.a.handle, 0, other.a.handle,
				       4096, 64)));
	if (ah != other.a.handle)
		ASSERT_EQ(ENOENT, check1(fd2, xcopy(ah, 0, other.a.handle, 0,
						    64)));
	mbuf_free(fd2, &other);
	close(fd2);
}

TEST_F(dma, freed_handle)
{
	struct mbuf c;
	uint32_t h;

	ASSERT_EQ(0, mbuf_alloc(self->fd, BUF_SIZE, &c));
	h = c.a.handle;
	ASSERT_EQ(0, check1(self->fd, xcopy(h, 0, self->b.a.handle, 0, 64)));
	mbuf_free(self->fd, &c);
	ASSERT_EQ(ENOENT, check1(self->fd, xcopy(h, 0, self->b.a.handle, 0,
						  64)));
	ASSERT_EQ(ENOENT, check1(self->fd, xcopy(self->a.a.handle, 0, h, 0,
						  64)));
}

/* A remote destination is another node's host memory, nothing else. */
TEST_F(dma, remote_destination_rules)
{
	const struct peach2_info *i = &self->info;
	uint32_t ah = self->a.a.handle;
	uint64_t own = (uint64_t)i->node_id << PEACH2_SLICE_SHIFT;
	uint32_t other = (i->node_id + 1) % i->node_count;
	uint64_t obase = (uint64_t)other << PEACH2_SLICE_SHIFT;
	uint32_t id;

	/* Own node, even our own buffer's global address: no loopback. */
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, 0,
						  self->b.a.global_addr, 64)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, 0, own, 64)));
	/* Nodes that do not exist, and addresses beyond the window. */
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, 0,
			(uint64_t)i->node_count << PEACH2_SLICE_SHIFT, 64)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, 0,
			(uint64_t)PEACH2_MAX_NODES << PEACH2_SLICE_SHIFT, 64)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, 0, 1ULL << 63, 64)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, 0,
			(1ULL << 32 << PEACH2_SLICE_SHIFT) + obase, 64)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, 0, UINT64_MAX - 63,
						  64)));
	if (i->node_count < 2)
		return;
	/* Outside the other node's host region: its card, its GPU range,
	 * the end of the region. */
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, 0,
			obase + PEACH2_CARD_OFF, 64)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, 0,
			obase + PEACH2_GPU_OFF, 64)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, 0,
			obase + i->host_size, 64)));
	ASSERT_EQ(EINVAL, check1(self->fd, xcopy(ah, 0, 0,
			obase + i->host_size - 32, 64)));
	ASSERT_EQ(EINVAL, check1(self->fd, ximm(0, obase + i->host_size - 4,
						 8, 1)));
	/* Inside: accepted (built, not started: nothing listens there). */
	ASSERT_EQ(0, chain_create(self->fd, (struct peach2_xfer[]){
		xcopy(ah, 0, 0, obase + i->host_size - 64, 64) }, 1, 0, &id,
		NULL));
	ASSERT_EQ(0, chain_destroy(self->fd, id));
	ASSERT_EQ(0, chain_create(self->fd, (struct peach2_xfer[]){
		ximm(0, obase + 0x1000, 8, 7) }, 1, PEACH2_DMA_HOST_DESC, &id,
		NULL));
	ASSERT_EQ(0, chain_destroy(self->fd, id));
}

/* An 8 MiB buffer: more than a chunk (max_chunk), so several. Returns
 * its chunk count. */
static int alloc_multi_chunk(struct __test_metadata *_metadata, int fd,
			     const struct peach2_info *info, struct mbuf *b,
			     struct peach2_chunk *c, int max)
{
	int n;

	ASSERT_GT(8 * MIB, info->max_chunk);
	ASSERT_EQ(0, mbuf_alloc(fd, 8 * MIB, b));
	n = get_chunks(fd, b->a.handle, c, max);
	ASSERT_LE(2, n);
	return n;
}

TEST_F(dma, stride_and_reg_mode_across_chunks)
{
	struct peach2_chunk c[64];
	struct peach2_xfer x;
	struct mbuf m;
	uint64_t edge;
	uint32_t id, nr;

	alloc_multi_chunk(_metadata, self->fd, &self->info, &m, c, 64);
	edge = c[1].offset;
	/* Contiguous across the edge: split into two descriptors. */
	x = xcopy(m.a.handle, edge - 64, self->b.a.handle, 0, 128);
	ASSERT_EQ(0, chain_create(self->fd, &x, 1, 0, &id, &nr));
	ASSERT_EQ(2U, nr);
	ASSERT_EQ(0, chain_destroy(self->fd, id));
	/* ... so register mode refuses it. */
	ASSERT_EQ(EINVAL, chain_create(self->fd, &x, 1, PEACH2_DMA_REG_MODE,
				       &id, &nr));
	ASSERT_EQ(EINVAL, run1(self->fd, x, PEACH2_DMA_REG_MODE, NULL));
	/* Block-stride must lie in one chunk on each side. */
	x.flags = PEACH2_XFER_STRIDE_SRC;
	x.burst = 16;
	x.gap = 16;
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	x.flags = PEACH2_XFER_STRIDE_DST;
	x.src_offset = 0;
	x.src_handle = self->a.a.handle;
	x.dst_handle = m.a.handle;
	x.dst = edge - 64;
	ASSERT_EQ(EINVAL, check1(self->fd, x));
	x.dst = edge - 256;		/* 128 B in 16 B blocks span 240 B */
	ASSERT_EQ(0, check1(self->fd, x));
	/* An immediate never straddles chunks either. */
	ASSERT_EQ(EINVAL, check1(self->fd, ximm(m.a.handle, edge - 4, 8, 1)));
	ASSERT_EQ(0, check1(self->fd, ximm(m.a.handle, edge - 8, 8, 1)));
	mbuf_free(self->fd, &m);
}

TEST_F(dma, reg_mode_one_descriptor)
{
	struct peach2_xfer x[2] = {
		xcopy(self->a.a.handle, 0, self->b.a.handle, 0, 64),
		xcopy(self->a.a.handle, 64, self->b.a.handle, 64, 64),
	};
	uint32_t id;

	ASSERT_EQ(EINVAL, start_xfers(self->fd, x, 2, PEACH2_DMA_REG_MODE,
				      PEACH2_DMA_ANY_CHANNEL, 0, NULL));
	ASSERT_EQ(EINVAL, chain_create(self->fd, x, 2, PEACH2_DMA_REG_MODE,
				       &id, NULL));
	ASSERT_EQ(0, chain_create(self->fd, x, 1, PEACH2_DMA_REG_MODE, &id,
				  NULL));
	ASSERT_EQ(0, chain_destroy(self->fd, id));
}

/* A list with one bad transfer is refused whole: nothing moves. */
TEST_F(dma, refused_list_moves_nothing)
{
	struct peach2_xfer x[3] = {
		xcopy(self->a.a.handle, 0, self->b.a.handle, 0, 4096),
		ximm(self->b.a.handle, 8192, 8, 0x1122334455667788ULL),
		xcopy(self->a.a.handle, 0, self->b.a.handle, 2, 64),
	};

	memset(self->a.p, 0xa5, BUF_SIZE);
	memset(self->b.p, 0, BUF_SIZE);
	ASSERT_EQ(EINVAL, start_xfers(self->fd, x, 3, PEACH2_DMA_WAIT,
				      PEACH2_DMA_ANY_CHANNEL, 0, NULL));
	x[2] = xcopy(self->a.a.handle, 0, 0xfffff, 0, 64);
	ASSERT_EQ(ENOENT, start_xfers(self->fd, x, 3, PEACH2_DMA_WAIT,
				      PEACH2_DMA_ANY_CHANNEL, 0, NULL));
	usleep(50000);
	for (size_t i = 0; i < BUF_SIZE; i++)
		ASSERT_EQ(0, self->b.p[i]);
}

TEST_F(dma, chain_and_wait_ioctls)
{
	struct peach2_xfer x = xcopy(self->a.a.handle, 0, self->b.a.handle, 0,
				     64);
	struct peach2_chain_destroy d;
	struct peach2_dma_start s;
	struct peach2_dma_wait w;
	uint32_t id, status;
	uint64_t bytes;

	ASSERT_EQ(ENOENT, chain_destroy(self->fd, 0));
	ASSERT_EQ(ENOENT, chain_destroy(self->fd, 12345));
	ASSERT_EQ(ENOENT, start_chain(self->fd, 12345, 0,
				      PEACH2_DMA_ANY_CHANNEL, NULL));
	ASSERT_EQ(0, chain_create(self->fd, &x, 1, 0, &id, NULL));
	ASSERT_NE(0U, id);
	d.chain = id;
	d.flags = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_CHAIN_DESTROY, &d));
	/* A chain start takes no list and no descriptor mode. */
	memset(&s, 0, sizeof(s));
	s.chain = id;
	s.count = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_DMA_START, &s));
	s.count = 0;
	s.xfers = (uintptr_t)&x;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_DMA_START, &s));
	s.xfers = 0;
	s.flags = PEACH2_DMA_HOST_DESC;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_DMA_START, &s));
	s.flags = PEACH2_DMA_REG_MODE;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_DMA_START, &s));

	/* Tickets: unknown, reserved, then one waited once. */
	ASSERT_EQ(ENOENT, dma_wait(self->fd, 0, 0, NULL, NULL));
	ASSERT_EQ(ENOENT, dma_wait(self->fd, 1ULL << 40, 100, NULL, NULL));
	ASSERT_EQ(ENOENT, dma_wait(self->fd, UINT64_MAX, 0, NULL, NULL));
	ASSERT_EQ(0, start_chain(self->fd, id, 0, PEACH2_DMA_ANY_CHANNEL, &s));
	memset(&w, 0, sizeof(w));
	w.ticket = s.ticket;
	w.timeout_ms = 5000;
	w.reserved = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_DMA_WAIT, &w));
	ASSERT_EQ(ENOENT, dma_wait(self->fd, s.ticket + 1, 0, NULL, NULL));
	ASSERT_EQ(0, dma_wait(self->fd, s.ticket, 5000, &status, &bytes));
	ASSERT_EQ(0U, status);
	ASSERT_EQ(64ULL, bytes);
	ASSERT_EQ(ENOENT, dma_wait(self->fd, s.ticket, 0, NULL, NULL));
	ASSERT_EQ(ENOENT, dma_wait(self->fd, s.ticket, 100, NULL, NULL));
	ASSERT_EQ(0, chain_destroy(self->fd, id));
	ASSERT_EQ(ENOENT, chain_destroy(self->fd, id));
	ASSERT_EQ(ENOENT, start_chain(self->fd, id, 0, PEACH2_DMA_ANY_CHANNEL,
				      NULL));
}

/* Chains and tickets are per open file as well. */
TEST_F(dma, chains_and_tickets_per_fd)
{
	struct peach2_xfer x = xcopy(self->a.a.handle, 0, self->b.a.handle, 0,
				     64);
	struct peach2_dma_start s;
	uint32_t id;
	int fd2;

	ASSERT_EQ(0, chain_create(self->fd, &x, 1, 0, &id, NULL));
	ASSERT_EQ(0, start_chain(self->fd, id, 0, PEACH2_DMA_ANY_CHANNEL, &s));
	fd2 = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(ENOENT, start_chain(fd2, id, 0, PEACH2_DMA_ANY_CHANNEL,
				      NULL));
	ASSERT_EQ(ENOENT, chain_destroy(fd2, id));
	ASSERT_EQ(ENOENT, dma_wait(fd2, s.ticket, 100, NULL, NULL));
	close(fd2);
	ASSERT_EQ(0, dma_wait(self->fd, s.ticket, 5000, NULL, NULL));
	ASSERT_EQ(0, chain_destroy(self->fd, id));
}

/* ---- local transfers ---------------------------------------------------- */

static void copy_and_verify(struct __test_metadata *_metadata, int fd,
			    struct mbuf *a, struct mbuf *b, uint32_t flags,
			    uint64_t soff, uint64_t doff, uint64_t len,
			    uint32_t seed)
{
	struct peach2_xfer x = xcopy(a->a.handle, soff, b->a.handle, doff,
				     len);
	struct peach2_dma_start s;
	uint64_t bytes;
	uint32_t status;

	fill(a->p, a->a.size, seed);
	memset(b->p, 0, b->a.size);
	ASSERT_EQ(0, start_xfers(fd, &x, 1, flags, PEACH2_DMA_ANY_CHANNEL, 0,
				 &s));
	ASSERT_LT(0ULL, s.ticket);
	ASSERT_EQ(0, dma_wait(fd, s.ticket, 10000, &status, &bytes));
	ASSERT_EQ(0U, status);
	ASSERT_EQ(len, bytes);
	ASSERT_EQ(0, memcmp(a->p + soff, b->p + doff, len));
	for (uint64_t i = 0; i < doff; i++)
		ASSERT_EQ(0, b->p[i]);
	for (uint64_t i = doff + len; i < b->a.size; i++)
		ASSERT_EQ(0, b->p[i]);
}

/* Whole buffers, and odd offsets and lengths across pages. */
TEST_F(dma_mode, copy)
{
	const struct {
		uint64_t soff, doff, len;
	} shapes[] = {
		{ 0, 0, BUF_SIZE }, { 4, 4 + 4096, 1000 }, { 12, 28, 4 },
		{ 8, 8200, 4096 + 32 }, { 16, 48, 64 },
	};

	for (size_t k = 0; k < ARRAY_SIZE(shapes); k++)
		copy_and_verify(_metadata, self->fd, &self->a, &self->b,
				variant->flags, shapes[k].soff, shapes[k].doff,
				shapes[k].len, 1 + (uint32_t)k + variant->flags);
}

TEST_F(dma, copy_start_wait_inline)
{
	struct peach2_xfer x = xcopy(self->a.a.handle, 0, self->b.a.handle, 0,
				     BUF_SIZE);
	struct peach2_dma_start s;

	fill(self->a.p, BUF_SIZE, 8);
	memset(self->b.p, 0, BUF_SIZE);
	ASSERT_EQ(0, start_xfers(self->fd, &x, 1, PEACH2_DMA_WAIT, 2, 5000,
				 &s));
	ASSERT_EQ(0U, s.status);
	ASSERT_EQ(0, memcmp(self->a.p, self->b.p, BUF_SIZE));
	/* Waited inline: the ticket is used up. */
	ASSERT_EQ(ENOENT, dma_wait(self->fd, s.ticket, 0, NULL, NULL));
	/* The channel asked for is the one reported. */
	ASSERT_EQ(2U, s.channel);
}

/*
 * A list whose transfers change buffers at every step (a to b, then b to a,
 * ...): each takes its own references, more than a prog keeps inline.
 */
TEST_F(dma, transfers_alternating_buffers)
{
	const uint32_t half = BUF_SIZE / 2, piece = 1024, n = 2 * half / piece;
	struct peach2_xfer x[64];
	struct peach2_dma_start s;
	uint32_t i;

	ASSERT_EQ(ARRAY_SIZE(x), n);
	for (i = 0; i < n; i += 2) {
		x[i] = xcopy(self->a.a.handle, i / 2 * piece,
			     self->b.a.handle, i / 2 * piece, piece);
		x[i + 1] = xcopy(self->b.a.handle, half + i / 2 * piece,
				 self->a.a.handle, half + i / 2 * piece, piece);
	}
	fill(self->a.p, half, 21);
	memset(self->a.p + half, 0, half);
	memset(self->b.p, 0, half);
	fill(self->b.p + half, half, 22);
	ASSERT_EQ(0, start_xfers(self->fd, x, n,
				 PEACH2_DMA_WAIT | PEACH2_DMA_HOST_DESC,
				 PEACH2_DMA_ANY_CHANNEL, 5000, &s));
	ASSERT_EQ(0U, s.status);
	ASSERT_EQ(0, memcmp(self->a.p, self->b.p, half));
	ASSERT_EQ(0, memcmp(self->a.p + half, self->b.p + half, half));
}

/*
 * A run started with PEACH2_DMA_REAP: its status in *status, from the start
 * if it came back ENDED (then its ticket is gone), else from DMA_WAIT.
 */
static int reaped_or_waited(int fd, const struct peach2_dma_start *s,
			    uint32_t *status)
{
	if (!(s->flags & PEACH2_DMA_ENDED))
		return dma_wait(fd, s->ticket, 10000, status, NULL);
	*status = s->status;
	return dma_wait(fd, s->ticket, 0, NULL, NULL) == ENOENT ? 0 : EEXIST;
}

/*
 * PEACH2_DMA_REAP: a short run on an idle channel ends inside its start (the
 * emulated card's first slice, docs/hardware.md) and comes back collected;
 * one that has not ended is waited for as always. Not with WAIT.
 */
TEST_F(dma, start_reap_collects_an_ended_run)
{
	struct peach2_xfer x = xcopy(self->a.a.handle, 0, self->b.a.handle, 0,
				     4096);
	struct peach2_xfer many[256];
	struct peach2_dma_start s, big;
	uint32_t id, status;
	int i;

	ASSERT_EQ(1, wait_all_idle(10));
	ASSERT_EQ(EINVAL, start_xfers(self->fd, &x, 1,
				      PEACH2_DMA_REAP | PEACH2_DMA_WAIT, 0,
				      100, NULL));
	fill(self->a.p, 4096, 31);
	memset(self->b.p, 0, 4096);
	ASSERT_EQ(0, start_xfers(self->fd, &x, 1, PEACH2_DMA_REAP, 3, 0, &s));
	ASSERT_EQ(PEACH2_DMA_REAP | PEACH2_DMA_ENDED, s.flags);
	ASSERT_EQ(0U, s.status);
	ASSERT_EQ(0, memcmp(self->a.p, self->b.p, 4096));
	ASSERT_EQ(ENOENT, dma_wait(self->fd, s.ticket, 0, NULL, NULL));

	/* A chain start may ask it too. */
	ASSERT_EQ(0, chain_create(self->fd, &x, 1, 0, &id, NULL));
	ASSERT_EQ(0, start_chain(self->fd, id, PEACH2_DMA_REAP, 3, &s));
	ASSERT_EQ(PEACH2_DMA_REAP | PEACH2_DMA_ENDED, s.flags);
	ASSERT_EQ(ENOENT, dma_wait(self->fd, s.ticket, 0, NULL, NULL));
	ASSERT_EQ(0, chain_destroy(self->fd, id));

	/*
	 * 16 MiB on channel 3 usually runs on after its start, and a run
	 * queued behind it then ends later too; but the bottom half or the
	 * interrupt thread may finish either first. Whichever it was, ENDED
	 * and DMA_WAIT agree, and each run's status is collected once.
	 */
	for (i = 0; i < 256; i++)
		many[i] = xcopy(self->a.a.handle, 0, self->b.a.handle, 0,
				BUF_SIZE);
	ASSERT_EQ(0, start_xfers(self->fd, many, 256, PEACH2_DMA_REAP, 3, 0,
				 &big));
	ASSERT_EQ(0, start_xfers(self->fd, &x, 1, PEACH2_DMA_REAP, 3, 0, &s));
	TH_LOG("16 MiB %s, the run behind it %s",
	       big.flags & PEACH2_DMA_ENDED ? "ended in its start" : "ran on",
	       s.flags & PEACH2_DMA_ENDED ? "ended in its start" : "ran on");
	ASSERT_EQ(0, reaped_or_waited(self->fd, &big, &status));
	ASSERT_EQ(0U, status);
	ASSERT_EQ(0, reaped_or_waited(self->fd, &s, &status));
	ASSERT_EQ(0U, status);
	ASSERT_EQ(1, wait_all_idle(10));
}

/*
 * Interrupts of channel @ch so far (/proc/interrupts, every CPU), or -1
 * when its line is missing.
 */
static long long chan_irqs(unsigned int ch)
{
	const char *dev = strrchr(dev_path(), '/');
	char name[64], line[1024];
	long long sum = -1;
	FILE *f;

	snprintf(name, sizeof(name), " %s-dma%u", dev ? dev + 1 : dev_path(),
		 ch);
	f = fopen("/proc/interrupts", "r");
	if (!f)
		return -1;
	while (sum < 0 && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':'), *end;
		long long n;

		if (!p || !strstr(line, name))
			continue;
		for (sum = 0, p++;; p = end) {
			n = strtoll(p, &end, 10);
			if (end == p)
				break;
			sum += n;
		}
	}
	fclose(f);
	return sum;
}

/*
 * An idle channel's interrupt is masked: a run that ends inside its start
 * costs no interrupt at all; a run that outlasts its start still gets one.
 */
TEST_F(dma, short_runs_raise_no_interrupt)
{
	struct peach2_xfer x = xcopy(self->a.a.handle, 0, self->b.a.handle, 0,
				     4096);
	struct peach2_xfer many[256];
	struct peach2_dma_start s;
	long long before, after;
	uint32_t status;
	int i, ended = 0;

	ASSERT_EQ(1, wait_all_idle(10));
	before = chan_irqs(2);
	ASSERT_LE(0, before);
	for (i = 0; i < 100; i++) {
		ASSERT_EQ(0, start_xfers(self->fd, &x, 1, PEACH2_DMA_REAP, 2, 0,
					 &s));
		ASSERT_EQ(0, reaped_or_waited(self->fd, &s, &status));
		ASSERT_EQ(0U, status);
		ended += !!(s.flags & PEACH2_DMA_ENDED);
	}
	after = chan_irqs(2);
	TH_LOG("100 runs of 4 KiB, %d ended in their start: %lld interrupts",
	       ended, after - before);
	ASSERT_EQ(100, ended);
	ASSERT_EQ(before, after);

	for (i = 0; i < 256; i++)
		many[i] = xcopy(self->a.a.handle, 0, self->b.a.handle, 0,
				BUF_SIZE);
	ASSERT_EQ(0, start_xfers(self->fd, many, 256, PEACH2_DMA_REAP, 2, 0,
				 &s));
	ASSERT_EQ(0, reaped_or_waited(self->fd, &s, &status));
	ASSERT_EQ(0U, status);
	if (!(s.flags & PEACH2_DMA_ENDED))
		ASSERT_LT(after, chan_irqs(2));
	ASSERT_EQ(1, wait_all_idle(10));
}

TEST_F(dma, start_reports_the_channel_any_picked)
{
	struct peach2_xfer x = xcopy(self->a.a.handle, 0, self->b.a.handle, 0,
				     4096);
	struct peach2_dma_start s;
	uint32_t seen = 0;

	for (int i = 0; i < 16; i++) {
		ASSERT_EQ(0, start_xfers(self->fd, &x, 1, PEACH2_DMA_WAIT,
					 PEACH2_DMA_ANY_CHANNEL, 5000, &s));
		ASSERT_EQ(0U, s.status);
		ASSERT_GT(PEACH2_DMA_CHANNELS, s.channel);
		seen |= 1U << s.channel;
	}
	ASSERT_NE(0U, seen);
}

TEST_F_TIMEOUT(dma, copy_multi_chunk, 120)
{
	struct peach2_chunk c[64];
	struct mbuf m1, m2;
	struct peach2_xfer x;
	uint32_t id, nr;

	alloc_multi_chunk(_metadata, self->fd, &self->info, &m1, c, 64);
	ASSERT_EQ(0, mbuf_alloc(self->fd, 8 * MIB, &m2));
	/* Whole buffer, shifted by 4 KiB + 16 so the edges do not line up. */
	x = xcopy(m1.a.handle, 16, m2.a.handle, 4096 + 32, 8 * MIB - 8192);
	ASSERT_EQ(0, chain_create(self->fd, &x, 1, 0, &id, &nr));
	ASSERT_LE(2U, nr);
	ASSERT_EQ(0, chain_destroy(self->fd, id));
	x.dst = 4096 + 16;
	ASSERT_EQ(0, chain_create(self->fd, &x, 1, 0, &id, &nr));
	ASSERT_LE(2U, nr);
	ASSERT_EQ(0, chain_destroy(self->fd, id));
	copy_and_verify(_metadata, self->fd, &m1, &m2, 0, 16, 4096 + 16,
			8 * MIB - 8192, 9);
	copy_and_verify(_metadata, self->fd, &m1, &m2, PEACH2_DMA_HOST_DESC, 0,
			0, 8 * MIB, 10);
	mbuf_free(self->fd, &m1);
	mbuf_free(self->fd, &m2);
}

TEST_F(dma_mode, block_stride)
{
	struct peach2_xfer x;
	uint32_t status;
	uint8_t *a = self->a.p, *b = self->b.p;

	/* Gather a column: 16 B of every 64 B row (gap 48) into a line. */
	fill(a, BUF_SIZE, 11);
	memset(b, 0, BUF_SIZE);
	x = xcopy(self->a.a.handle, 32, self->b.a.handle, 4096, 16 * 100);
	x.flags = PEACH2_XFER_STRIDE_SRC;
	x.burst = 16;
	x.gap = 48;
	ASSERT_EQ(0, run1(self->fd, x, variant->flags, &status));
	ASSERT_EQ(0U, status);
	for (int r = 0; r < 100; r++)
		ASSERT_EQ(0, memcmp(a + 32 + 64 * r, b + 4096 + 16 * r, 16));
	ASSERT_EQ(0, b[4096 + 1600]);

	/* Scatter it back into rows of 48 B + 32 B gap (one-sided: gap % 16
	 * == 0), last block partial. */
	memset(a, 0, BUF_SIZE);
	x = xcopy(self->b.a.handle, 4096, self->a.a.handle, 0, 16 * 100 - 8);
	x.flags = PEACH2_XFER_STRIDE_DST;
	x.burst = 48;
	x.gap = 32;
	ASSERT_EQ(0, run1(self->fd, x, variant->flags, &status));
	ASSERT_EQ(0U, status);
	for (int k = 0; k < 1592; k++) {
		ASSERT_EQ(b[4096 + k], a[(k / 48) * 80 + k % 48]) {
			TH_LOG("byte %d", k);
		}
	}
	ASSERT_EQ(0, a[(1592 / 48) * 80 + 1592 % 48]);
	ASSERT_EQ(0, a[48]);

	/* Both sides strided alike, with a gap of 8. */
	fill(a, BUF_SIZE, 12);
	memset(b, 0, BUF_SIZE);
	x = xcopy(self->a.a.handle, 0, self->b.a.handle, 0, 400);
	x.flags = PEACH2_XFER_STRIDE_SRC | PEACH2_XFER_STRIDE_DST;
	x.burst = 8;
	x.gap = 8;
	ASSERT_EQ(0, run1(self->fd, x, variant->flags, &status));
	ASSERT_EQ(0U, status);
	for (int k = 0; k < 800; k++)
		ASSERT_EQ(k % 16 < 8 ? a[k] : 0, b[k]);
}

TEST_F(dma, immediate_completion_word)
{
	struct peach2_xfer x[3] = {
		xcopy(self->a.a.handle, 0, self->b.a.handle, 0, 8192),
		ximm(self->b.a.handle, 8192, 8, 0x1122334455667788ULL),
		ximm(self->b.a.handle, 8200, 4, 0xcafef00dULL),
	};
	struct peach2_dma_start s;
	uint64_t v64;
	uint32_t v32;

	fill(self->a.p, BUF_SIZE, 13);
	memset(self->b.p, 0, BUF_SIZE);
	ASSERT_EQ(0, start_xfers(self->fd, x, 3, PEACH2_DMA_WAIT,
				 PEACH2_DMA_ANY_CHANNEL, 5000, &s));
	ASSERT_EQ(0U, s.status);
	ASSERT_EQ(0, memcmp(self->a.p, self->b.p, 8192));
	memcpy(&v64, self->b.p + 8192, 8);
	memcpy(&v32, self->b.p + 8200, 4);
	ASSERT_EQ(0x1122334455667788ULL, v64);
	ASSERT_EQ(0xcafef00dU, v32);
	ASSERT_EQ(0, self->b.p[8204]);
	/* An immediate alone, in register mode. */
	ASSERT_EQ(0, start_xfers(self->fd, &x[2], 1,
				 PEACH2_DMA_WAIT | PEACH2_DMA_REG_MODE, 1, 0,
				 &s));
	ASSERT_EQ(0U, s.status);
}

TEST_F_TIMEOUT(dma_mode, persistent_chain_100_starts, 120)
{
	struct peach2_xfer x[2] = {
		xcopy(self->a.a.handle, 0, self->b.a.handle, 0, 4096),
		ximm(self->b.a.handle, 4096, 4, 0),
	};
	/* Register mode: one descriptor per chain. */
	const uint32_t n = variant->flags == PEACH2_DMA_REG_MODE ? 1 : 2;
	struct peach2_dma_start s;
	uint32_t id, status, seq;

	ASSERT_EQ(0, chain_create(self->fd, x, n, variant->flags, &id, NULL));
	for (uint32_t it = 1; it <= 100; it++) {
		/* The chain reads the source as it is now. */
		fill(self->a.p, 4096, it * 31 + variant->flags);
		memset(self->b.p, 0, 8192);
		ASSERT_EQ(0, start_chain(self->fd, id, PEACH2_DMA_WAIT,
					 it % 2 ? PEACH2_DMA_ANY_CHANNEL : it % 4,
					 &s));
		ASSERT_EQ(0U, s.status);
		ASSERT_EQ(0, memcmp(self->a.p, self->b.p, 4096));
	}
	ASSERT_EQ(0, chain_destroy(self->fd, id));
	/* Started without WAIT, waited separately. */
	ASSERT_EQ(0, chain_create(self->fd, x, n, variant->flags, &id, NULL));
	for (seq = 0; seq < 20; seq++) {
		ASSERT_EQ(0, start_chain(self->fd, id, 0, seq % 4, &s));
		ASSERT_EQ(0, dma_wait(self->fd, s.ticket, 5000, &status, NULL));
		ASSERT_EQ(0U, status);
	}
	ASSERT_EQ(0, chain_destroy(self->fd, id));
}

/* The whole descriptor RAM as one chain: 1024 transfers of 64 B. */
TEST_F_TIMEOUT(dma, chain_of_1024_descriptors, 120)
{
	struct peach2_xfer *x;
	struct peach2_dma_start s;
	uint32_t id, nr, id2;
	int used0;

	used0 = desc_ram_used();
	ASSERT_EQ(0, used0) {
		TH_LOG("descriptor RAM in use by someone else (%d): run the suite while nothing else uses the card's DMA",
		       used0);
	}
	x = calloc(PEACH2_DESC_MAX, sizeof(*x));
	ASSERT_NE(NULL, x);
	/* Reverse the 64 B blocks of a into b. */
	for (uint32_t i = 0; i < PEACH2_DESC_MAX; i++)
		x[i] = xcopy(self->a.a.handle, 64 * i, self->b.a.handle,
			     BUF_SIZE - 64 * (i + 1), 64);
	ASSERT_EQ(0, chain_create(self->fd, x, PEACH2_DESC_MAX, 0, &id, &nr));
	ASSERT_EQ(PEACH2_DESC_MAX, nr);
	ASSERT_EQ((int)PEACH2_DESC_MAX, desc_ram_used());
	for (int it = 0; it < 3; it++) {
		fill(self->a.p, BUF_SIZE, 14 + it);
		memset(self->b.p, 0, BUF_SIZE);
		ASSERT_EQ(0, start_chain(self->fd, id, PEACH2_DMA_WAIT,
					 PEACH2_DMA_ANY_CHANNEL, &s));
		ASSERT_EQ(0U, s.status);
		for (uint32_t i = 0; i < PEACH2_DESC_MAX; i++)
			ASSERT_EQ(0, memcmp(self->a.p + 64 * i,
					    self->b.p + BUF_SIZE - 64 * (i + 1),
					    64));
	}
	/* The RAM is full: on-card lists are refused, host ones work. */
	ASSERT_EQ(ENOSPC, start_xfers(self->fd, x, 1, PEACH2_DMA_WAIT,
				      PEACH2_DMA_ANY_CHANNEL, 0, NULL));
	ASSERT_EQ(ENOSPC, chain_create(self->fd, x, 1, 0, &id2, NULL));
	ASSERT_EQ(0, start_xfers(self->fd, x, 1, PEACH2_DMA_WAIT |
				 PEACH2_DMA_HOST_DESC, PEACH2_DMA_ANY_CHANNEL,
				 0, &s));
	ASSERT_EQ(0U, s.status);
	ASSERT_EQ(0, start_xfers(self->fd, x, 1, PEACH2_DMA_WAIT |
				 PEACH2_DMA_REG_MODE, PEACH2_DMA_ANY_CHANNEL,
				 0, &s));
	ASSERT_EQ(0, chain_destroy(self->fd, id));
	ASSERT_EQ(0, desc_ram_used());
	/* More than 1024 descriptors never fit on the card. */
	free(x);
	x = calloc(PEACH2_DESC_MAX + 1, sizeof(*x));
	ASSERT_NE(NULL, x);
	for (uint32_t i = 0; i <= PEACH2_DESC_MAX; i++)
		x[i] = xcopy(self->a.a.handle, 0, self->b.a.handle, 0, 64);
	ASSERT_EQ(ENOSPC, chain_create(self->fd, x, PEACH2_DESC_MAX + 1, 0,
				       &id, NULL));
	ASSERT_EQ(0, chain_create(self->fd, x, PEACH2_DESC_MAX + 1,
				  PEACH2_DMA_HOST_DESC, &id, &nr));
	ASSERT_EQ(PEACH2_DESC_MAX + 1, nr);
	ASSERT_EQ(0, start_chain(self->fd, id, PEACH2_DMA_WAIT, 3, &s));
	ASSERT_EQ(0U, s.status);
	ASSERT_EQ(0, chain_destroy(self->fd, id));
	free(x);
}

/* Two 4 MiB buffers (one chunk each, if memory allows). */
struct big {
	struct mbuf s, d;
};

static int big_alloc(int fd, struct big *g)
{
	int ret = mbuf_alloc(fd, 4 * MIB, &g->s);

	if (!ret)
		ret = mbuf_alloc(fd, 4 * MIB, &g->d);
	return ret;
}

static void big_free(int fd, struct big *g)
{
	mbuf_free(fd, &g->s);
	mbuf_free(fd, &g->d);
}

/* @n copies of the whole 4 MiB source into the destination: a long run. */
static struct peach2_xfer *big_xfers(struct big *g, uint32_t n)
{
	struct peach2_xfer *x = calloc(n, sizeof(*x));

	for (uint32_t i = 0; x && i < n; i++)
		x[i] = xcopy(g->s.a.handle, 0, g->d.a.handle, 0, 4 * MIB);
	return x;
}

/*
 * Queue @n long runs (each @per copies of 4 MiB, host descriptors) on
 * channel @ch: whatever is started on @ch next waits behind them, which
 * makes "still queued" deterministic however fast the card copies. Many
 * runs rather than one huge one: under TCG the guest hardly runs while the
 * card copies, but each run's end needs the guest to start the next, so
 * guest time passes along a queue.
 */
static int clog_channel(int fd, struct big *g, uint32_t ch, int n,
			uint32_t per, uint64_t *last)
{
	struct peach2_xfer *x = big_xfers(g, per);
	struct peach2_dma_start s;
	int ret = ENOMEM;

	for (int i = 0; x && i < n; i++) {
		ret = start_xfers(fd, x, per, PEACH2_DMA_HOST_DESC, ch, 0, &s);
		if (ret)
			break;
		if (last)
			*last = s.ticket;
	}
	free(x);
	return ret;
}

TEST_F_TIMEOUT(dma, four_channels_at_once, 120)
{
	struct big g[PEACH2_DMA_CHANNELS];
	struct peach2_dma_start s[PEACH2_DMA_CHANNELS];
	uint32_t status, busy = 0;
	char path[PATH_MAX], buf[1024];
	uint64_t bytes;

	for (int ch = 0; ch < (int)PEACH2_DMA_CHANNELS; ch++) {
		ASSERT_EQ(0, big_alloc(self->fd, &g[ch]));
		fill(g[ch].s.p, 4 * MIB, 20 + ch);
		memset(g[ch].d.p, 0, 4 * MIB);
	}
	for (int ch = 0; ch < (int)PEACH2_DMA_CHANNELS; ch++) {
		struct peach2_xfer x = xcopy(g[ch].s.a.handle, 0,
					     g[ch].d.a.handle, 0, 4 * MIB);

		ASSERT_EQ(0, start_xfers(self->fd, &x, 1, PEACH2_DMA_HOST_DESC,
					 ch, 0, &s[ch]));
		if (ch)
			ASSERT_LT(s[ch - 1].ticket, s[ch].ticket);
	}
	class_attr(path, sizeof(path), "dma");
	ASSERT_LT(0, read_sysfs(path, buf, sizeof(buf)));
	for (char *p = buf; (p = strstr(p, " busy ")); p++)
		busy++;
	TH_LOG("channels busy right after the starts: %u", busy);
	/* Waited for in reverse order. */
	for (int ch = PEACH2_DMA_CHANNELS - 1; ch >= 0; ch--) {
		ASSERT_EQ(0, dma_wait(self->fd, s[ch].ticket, 30000, &status,
				      &bytes));
		ASSERT_EQ(0U, status);
		ASSERT_EQ(4 * MIB, bytes);
		ASSERT_EQ(0, memcmp(g[ch].s.p, g[ch].d.p, 4 * MIB));
	}
	for (int ch = 0; ch < (int)PEACH2_DMA_CHANNELS; ch++)
		big_free(self->fd, &g[ch]);
}

/* Runs on one channel run in order: the last write wins. */
TEST_F(dma, channel_fifo_order)
{
	struct peach2_xfer x1 = xcopy(self->a.a.handle, 0, self->b.a.handle, 0,
				      BUF_SIZE);
	struct peach2_xfer x2 = ximm(self->b.a.handle, 0, 8, 0x0102030405060708ULL);
	struct peach2_dma_start s1, s2, s3;
	uint64_t v;

	for (int round = 0; round < 10; round++) {
		fill(self->a.p, BUF_SIZE, 30 + round);
		memset(self->b.p, 0, BUF_SIZE);
		ASSERT_EQ(0, start_xfers(self->fd, &x1, 1, 0, 1, 0, &s1));
		ASSERT_EQ(0, start_xfers(self->fd, &x2, 1, 0, 1, 0, &s2));
		ASSERT_EQ(0, start_xfers(self->fd, &x1, 1, PEACH2_DMA_HOST_DESC,
					 2, 0, &s3));
		ASSERT_EQ(0, dma_wait(self->fd, s2.ticket, 5000, NULL, NULL));
		ASSERT_EQ(0, dma_wait(self->fd, s1.ticket, 0, NULL, NULL));
		ASSERT_EQ(0, dma_wait(self->fd, s3.ticket, 5000, NULL, NULL));
		memcpy(&v, self->b.p, 8);
		/* s3 (channel 2) may have landed after s2: either value. */
		ASSERT_TRUE(v == 0x0102030405060708ULL ||
			    !memcmp(self->b.p, self->a.p, 8));
		ASSERT_EQ(0, memcmp(self->a.p + 8, self->b.p + 8,
				    BUF_SIZE - 8));
	}
	/* Same again, all on one channel: the immediate is last. */
	fill(self->a.p, BUF_SIZE, 40);
	ASSERT_EQ(0, start_xfers(self->fd, &x1, 1, 0, 3, 0, &s1));
	ASSERT_EQ(0, start_xfers(self->fd, &x2, 1, PEACH2_DMA_REG_MODE, 3, 0,
				 &s2));
	ASSERT_EQ(0, dma_wait(self->fd, s2.ticket, 5000, NULL, NULL));
	memcpy(&v, self->b.p, 8);
	ASSERT_EQ(0x0102030405060708ULL, v);
	ASSERT_EQ(0, dma_wait(self->fd, s1.ticket, 0, NULL, NULL));
}

TEST_F_TIMEOUT(dma, wait_timeout_zero_polls, 120)
{
	struct big g;
	struct peach2_xfer *x;
	struct peach2_dma_start s;
	uint32_t status = ~0U;
	uint64_t bytes = 0;
	int polls = 0, ret;

	ASSERT_EQ(0, big_alloc(self->fd, &g));
	x = big_xfers(&g, 16);
	ASSERT_NE(NULL, x);
	ASSERT_EQ(0, start_xfers(self->fd, x, 16, 0, PEACH2_DMA_ANY_CHANNEL, 0,
				 &s));
	while ((ret = dma_wait(self->fd, s.ticket, 0, &status, &bytes)) ==
	       ETIMEDOUT) {
		polls++;
		usleep(1000);
	}
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0U, status);
	ASSERT_EQ(16 * 4 * MIB, bytes);
	TH_LOG("%d polls answered ETIMEDOUT before 64 MiB were copied", polls);
	ASSERT_EQ(ENOENT, dma_wait(self->fd, s.ticket, 0, NULL, NULL));
	free(x);
	big_free(self->fd, &g);
}

TEST_F_TIMEOUT(dma, start_wait_times_out_and_continues, 120)
{
	struct big g;
	struct peach2_xfer *x;
	struct peach2_dma_start s;
	uint32_t status;
	double t0;
	int ret;

	ASSERT_EQ(0, big_alloc(self->fd, &g));
	x = big_xfers(&g, 4);
	ASSERT_NE(NULL, x);
	fill(g.s.p, 4 * MIB, 50);
	memset(g.d.p, 0, 4 * MIB);
	t0 = now_s();
	ASSERT_EQ(0, clog_channel(self->fd, &g, 2, 32, 64, NULL));
	ret = start_xfers(self->fd, x, 4, PEACH2_DMA_WAIT, 2, 1, &s);
	ASSERT_EQ(ETIMEDOUT, ret);
	ASSERT_LT(0ULL, s.ticket);	/* the ticket came back anyway */
	ASSERT_EQ(0, dma_wait(self->fd, s.ticket, 120000, &status, NULL));
	ASSERT_EQ(0U, status);
	TH_LOG("8 GiB queued ahead took %.2f s", now_s() - t0);
	ASSERT_EQ(0, memcmp(g.s.p, g.d.p, 4 * MIB));
	free(x);
	big_free(self->fd, &g);
}

TEST_F_TIMEOUT(dma, poll_reports_completions, 60)
{
	struct peach2_xfer x = xcopy(self->a.a.handle, 0, self->b.a.handle, 0,
				     BUF_SIZE);
	struct pollfd p = { .fd = self->fd, .events = POLLIN };
	struct peach2_dma_start s1, s2;

	ASSERT_EQ(0, poll(&p, 1, 0));
	ASSERT_EQ(0, start_xfers(self->fd, &x, 1, 0, PEACH2_DMA_ANY_CHANNEL, 0,
				 &s1));
	ASSERT_EQ(1, poll(&p, 1, 10000));
	ASSERT_TRUE(p.revents & POLLIN);
	ASSERT_EQ(0, start_xfers(self->fd, &x, 1, 0, PEACH2_DMA_ANY_CHANNEL, 0,
				 &s2));
	ASSERT_EQ(0, dma_wait(self->fd, s1.ticket, 0, NULL, NULL));
	ASSERT_EQ(1, poll(&p, 1, 10000));	/* s2 */
	ASSERT_EQ(0, dma_wait(self->fd, s2.ticket, 10000, NULL, NULL));
	p.revents = 0;
	ASSERT_EQ(0, poll(&p, 1, 0));
	ASSERT_EQ(0, p.revents);
	/* Inline waits leave nothing to report. */
	ASSERT_EQ(0, start_xfers(self->fd, &x, 1, PEACH2_DMA_WAIT,
				 PEACH2_DMA_ANY_CHANNEL, 0, NULL));
	ASSERT_EQ(0, poll(&p, 1, 0));
}

TEST_F_TIMEOUT(dma, chain_busy_while_running, 120)
{
	struct big g;
	struct peach2_xfer *x;
	struct peach2_dma_start s, s2;
	uint32_t id, status;
	int ret;

	ASSERT_EQ(0, big_alloc(self->fd, &g));
	x = big_xfers(&g, 64);
	ASSERT_NE(NULL, x);
	ASSERT_EQ(0, chain_create(self->fd, x, 64, 0, &id, NULL));
	/* Queued behind 8 GiB of copies on channel 1: busy for a while. */
	ASSERT_EQ(0, clog_channel(self->fd, &g, 1, 32, 64, NULL));
	ASSERT_EQ(0, start_chain(self->fd, id, 0, 1, &s));
	ret = start_chain(self->fd, id, 0, PEACH2_DMA_ANY_CHANNEL, &s2);
	ASSERT_EQ(EBUSY, ret);
	ASSERT_EQ(EBUSY, chain_destroy(self->fd, id));
	ASSERT_EQ(ETIMEDOUT, dma_wait(self->fd, s.ticket, 0, NULL, NULL));
	ASSERT_EQ(0, dma_wait(self->fd, s.ticket, 120000, &status, NULL));
	ASSERT_EQ(0U, status);
	/* Done: it can start again, and go. */
	ASSERT_EQ(0, start_chain(self->fd, id, PEACH2_DMA_WAIT, 1, &s));
	ASSERT_EQ(0U, s.status);
	ASSERT_EQ(0, chain_destroy(self->fd, id));
	free(x);
	big_free(self->fd, &g);
}

/* A chain holds its buffers: FREE does not pull them from under it. */
TEST_F(dma, chain_keeps_freed_buffers)
{
	struct peach2_dma_start s;
	struct mbuf c, d;
	struct peach2_xfer x;
	uint32_t id;

	ASSERT_EQ(0, mbuf_alloc(self->fd, BUF_SIZE, &c));
	ASSERT_EQ(0, mbuf_alloc(self->fd, BUF_SIZE, &d));
	fill(c.p, BUF_SIZE, 60);
	memset(d.p, 0, BUF_SIZE);
	x = xcopy(c.a.handle, 0, d.a.handle, 0, BUF_SIZE);
	ASSERT_EQ(0, chain_create(self->fd, &x, 1, 0, &id, NULL));
	/* Free both handles; the mappings keep the memory visible to us. */
	ASSERT_EQ(0, do_free(self->fd, c.a.handle));
	ASSERT_EQ(0, do_free(self->fd, d.a.handle));
	ASSERT_EQ(ENOENT, check1(self->fd, x));
	ASSERT_EQ(0, start_chain(self->fd, id, PEACH2_DMA_WAIT, 0, &s));
	ASSERT_EQ(0U, s.status);
	ASSERT_EQ(0, memcmp(c.p, d.p, BUF_SIZE));
	ASSERT_EQ(0, chain_destroy(self->fd, id));
	munmap(c.p, BUF_SIZE);
	munmap(d.p, BUF_SIZE);
}

/* More unwaited completions than the driver keeps: the oldest go. */
TEST_F_TIMEOUT(dma, unwaited_tickets_are_bounded, 180)
{
	struct peach2_xfer x = ximm(self->b.a.handle, 0, 4, 0);
	struct peach2_dma_start s, first;
	const int n = 1100;
	int again = 0, ret;

	memset(&first, 0, sizeof(first));
	for (int i = 0; i < n; i++) {
		x.imm = (uint64_t)i;
		/* One channel: completions come in ticket order. */
		ret = start_xfers(self->fd, &x, 1, PEACH2_DMA_REG_MODE, 3, 0,
				  &s);
		if (ret == EAGAIN) {	/* 1024 runs in flight */
			again++;
			usleep(1000);
			i--;
			continue;
		}
		ASSERT_EQ(0, ret);
		if (!i)
			first = s;
	}
	ASSERT_TRUE(wait_all_idle(30));
	TH_LOG("EAGAIN %d times", again);
	ASSERT_EQ(ENOENT, dma_wait(self->fd, first.ticket, 0, NULL, NULL));
	ASSERT_EQ(0, dma_wait(self->fd, s.ticket, 0, NULL, NULL));
	ASSERT_EQ(0, dma_wait(self->fd, s.ticket - 1000, 0, NULL, NULL));
}

/* close() with runs in flight: they finish, then everything is freed. */
TEST_F_TIMEOUT(dma, close_with_dma_in_flight, 120)
{
	struct peach2_dma_start s;
	struct peach2_xfer *x;
	struct big g;
	long long errors0;
	uint32_t id;
	int fd, used0;

	used0 = desc_ram_used();
	errors0 = dma_errors_total();
	fd = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, big_alloc(fd, &g));
	x = big_xfers(&g, 32);
	ASSERT_NE(NULL, x);
	ASSERT_EQ(0, chain_create(fd, x, 32, 0, &id, NULL));
	ASSERT_EQ(0, clog_channel(fd, &g, 0, 16, 64, NULL));
	ASSERT_EQ(0, start_chain(fd, id, 0, 0, &s));
	ASSERT_EQ(0, start_xfers(fd, x, 32, PEACH2_DMA_HOST_DESC, 0, 0, &s));
	ASSERT_EQ(0, start_xfers(fd, x, 8, 0, 1, 0, &s));
	/* Unmap and close everything while the card works on it. */
	munmap(g.s.p, g.s.a.size);
	munmap(g.d.p, g.d.a.size);
	close(fd);
	free(x);
	ASSERT_TRUE(wait_all_idle(60));
	ASSERT_EQ(used0, desc_ram_used());
	ASSERT_EQ(errors0, dma_errors_total());
	/* The card still works. */
	copy_and_verify(_metadata, self->fd, &self->a, &self->b, 0, 0, 0,
			BUF_SIZE, 70);
}

/*
 * A process killed in the middle of DMA: the card finishes with its buffers
 * (still registered and alive), nothing leaks, the next user is fine. The
 * child's runs queue behind ours on one channel, so they are provably still
 * pending when it dies.
 */
TEST_F_TIMEOUT(dma, child_killed_mid_dma, 180)
{
	int c2p[2], p2c[2], status, used0;
	struct mbuf fresh[8];
	uint64_t ours = 0;
	long long errors0;
	struct big g;
	double t0;
	pid_t pid;
	char c;

	memset(fresh, 0, sizeof(fresh));
	used0 = desc_ram_used();
	errors0 = dma_errors_total();
	ASSERT_LE(0, errors0);
	ASSERT_EQ(0, big_alloc(self->fd, &g));
	ASSERT_EQ(0, pipe(c2p));
	ASSERT_EQ(0, pipe(p2c));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct peach2_dma_start s;
		struct peach2_xfer *x;
		struct big cg;
		uint32_t id;
		int fd;

		close(c2p[0]);
		close(p2c[1]);
		fd = open(dev_path(), O_RDWR | O_CLOEXEC);
		if (fd < 0 || big_alloc(fd, &cg))
			_exit(1);
		memset(cg.s.p, 0xee, 4 * MIB);
		x = big_xfers(&cg, 64);
		if (!x || chain_create(fd, x, 64, PEACH2_DMA_HOST_DESC, &id,
				       NULL))
			_exit(2);
		/* Ready; queue up once the parent has clogged channel 3. */
		if (write(c2p[1], "r", 1) != 1 || read(p2c[0], &c, 1) != 1)
			_exit(3);
		if (clog_channel(fd, &cg, 3, 8, 64, NULL) ||
		    start_chain(fd, id, 0, 3, &s) ||
		    start_xfers(fd, x, 64, 0, 3, 0, &s) ||
		    start_xfers(fd, x, 1, PEACH2_DMA_REG_MODE, 3, 0, &s) ||
		    start_xfers(fd, x, 16, PEACH2_DMA_HOST_DESC, 3, 0, &s))
			_exit(4);
		if (write(c2p[1], "q", 1) != 1)
			_exit(5);
		/* Blocked in DMA_WAIT when the signal comes. */
		dma_wait(fd, s.ticket, 60000, NULL, NULL);
		_exit(6);
	}
	close(c2p[1]);
	close(p2c[0]);
	ASSERT_EQ(1, read(c2p[0], &c, 1));
	ASSERT_EQ(0, clog_channel(self->fd, &g, 3, 24, 256, &ours));
	ASSERT_EQ(1, write(p2c[1], "g", 1));
	ASSERT_EQ(1, read(c2p[0], &c, 1));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	close(c2p[0]);
	close(p2c[1]);
	/* Our queue was not through: all of the child's runs were pending. */
	ASSERT_EQ(ETIMEDOUT, dma_wait(self->fd, ours, 0, NULL, NULL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status)) {
		TH_LOG("child exited with %d", WEXITSTATUS(status));
	}
	ASSERT_EQ(SIGKILL, WTERMSIG(status));
	/*
	 * Grab fresh memory while the card still has the dead child's
	 * copies to do. Had its buffers been freed early, their pages could
	 * be ours now (and registered with the card again): the card's
	 * copies would then change our bytes.
	 */
	t0 = now_s();
	for (int k = 0; k < 8; k++) {
		if (mbuf_alloc(self->fd, 4 * MIB, &fresh[k]))
			break;
		memset(fresh[k].p, 0x10 + k, 4 * MIB);
	}
	ASSERT_TRUE(wait_all_idle(120));
	TH_LOG("idle %.2f s after the kill", now_s() - t0);
	/* Its buffers stayed registered and alive to the end: no run of the
	 * dead process failed (the card refuses writes to freed memory). */
	ASSERT_EQ(errors0, dma_errors_total());
	for (int k = 0; k < 8 && fresh[k].p; k++) {
		for (size_t i = 0; i < 4 * MIB; i += 64)
			ASSERT_EQ(0x10 + k, fresh[k].p[i]);
		mbuf_free(self->fd, &fresh[k]);
	}
	ASSERT_EQ(0, dma_wait(self->fd, ours, 0, NULL, NULL));
	ASSERT_EQ(used0, desc_ram_used());
	big_free(self->fd, &g);
	copy_and_verify(_metadata, self->fd, &self->a, &self->b, 0, 0, 0,
			BUF_SIZE, 80);
}

TEST_F(dma, sysfs_dma_format)
{
	char path[PATH_MAX], buf[1024], state[16], *line;
	unsigned int ch, queued, n = 0;
	unsigned long long completed, errors;

	class_attr(path, sizeof(path), "dma");
	ASSERT_LT(0, read_sysfs(path, buf, sizeof(buf)));
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"), n++) {
		ASSERT_EQ(5, sscanf(line, "ch%u %15s queued=%u completed=%llu errors=%llu",
				    &ch, state, &queued, &completed, &errors)) {
			TH_LOG("'%s'", line);
		}
		ASSERT_EQ(n, ch);
		ASSERT_TRUE(!strcmp(state, "idle") || !strcmp(state, "busy"));
		ASSERT_LE(errors, completed);
	}
	ASSERT_EQ(PEACH2_DMA_CHANNELS, n);
	class_attr(path, sizeof(path), "dma_desc_ram");
	ASSERT_LT(0, read_sysfs(path, buf, sizeof(buf)));
	ASSERT_EQ(0, strncmp(buf, "used=", 5));
}

/* ---- unbind with DMA in flight (opt-in) --------------------------------- */

FIXTURE(unbind) {
	int fd;
	char pci_addr[64];
	int unbound;
};

FIXTURE_SETUP(unbind)
{
	struct peach2_info info;

	self->fd = open_card(_metadata, &info, 2);
	ASSERT_EQ(0, card_pci_addr(self->pci_addr, sizeof(self->pci_addr)));
}

FIXTURE_TEARDOWN(unbind)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->unbound)
		rebind_card(self->pci_addr);
}

/* Unbind aborts the channels: waiters wake with DMA_ABORTED, then every
 * ioctl answers ENODEV. */
TEST_F_TIMEOUT(unbind, dma_in_flight, 180)
{
	struct peach2_dma_start s;
	struct peach2_xfer *x;
	struct big g;
	uint32_t id;
	int status, fd, pipefd[2];
	pid_t pid;
	char c;

	SKIP_UNLESS_UNBIND_OPTED_IN();
	ASSERT_EQ(0, big_alloc(self->fd, &g));
	x = big_xfers(&g, 256);
	ASSERT_NE(NULL, x);
	ASSERT_EQ(0, chain_create(self->fd, x, 256, 0, &id, NULL));
	/* Every channel busy; the last one for longest. */
	for (uint32_t ch = 0; ch < PEACH2_DMA_CHANNELS; ch++)
		ASSERT_EQ(0, clog_channel(self->fd, &g, ch,
					  ch == PEACH2_DMA_CHANNELS - 1 ? 96 : 8,
					  64, NULL));
	/* Queued behind the channel clogged last. */
	ASSERT_EQ(0, start_chain(self->fd, id, 0, PEACH2_DMA_CHANNELS - 1,
				 &s));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		uint32_t st2 = 0;

		/* Same open file: its tickets. */
		close(pipefd[0]);
		if (write(pipefd[1], "x", 1) != 1 ||
		    dma_wait(self->fd, s.ticket, 120000, &st2, NULL))
			_exit(1);
		_exit(st2 == PEACH2_ERR_DMA_ABORTED ? 0 : 2);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	close(pipefd[0]);
	usleep(50000);		/* into DMA_WAIT */
	ASSERT_EQ(ETIMEDOUT, dma_wait(self->fd, s.ticket, 0, NULL, NULL));
	ASSERT_EQ(0, write_sysfs(SYSFS_DRIVER "/unbind", self->pci_addr));
	self->unbound = 1;
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(ENODEV, start_chain(self->fd, id, 0, 0, NULL));
	ASSERT_EQ(ENODEV, chain_destroy(self->fd, id));
	ASSERT_EQ(ENODEV, dma_wait(self->fd, s.ticket, 0, NULL, NULL));
	munmap(g.s.p, g.s.a.size);
	munmap(g.d.p, g.d.a.size);
	free(x);
	ASSERT_EQ(0, close(self->fd));
	self->fd = -1;

	ASSERT_EQ(0, rebind_card(self->pci_addr));
	self->unbound = 0;
	fd = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_TRUE(dma_all_idle());
	close(fd);
}

/*
 * A DMA aimed at the card's own BARs (issue 14: the device's re-entrancy
 * guard). With the driver unbound, root drives channel 0 itself through
 * sysfs resource0 (bus mastering on): register-mode runs whose source is
 * the card's own BAR 2, 0 or 4, and a chain whose head is a host address
 * inside its own BAR 0. QEMU's memory core (for BAR 4 the card itself)
 * refuses a device's access to itself: each run ends with ERROR and
 * DMA_READ, QEMU keeps running, and the driver then binds to a working
 * card. A control run from guest RAM gets past the read
 * (it ends on the empty inbound filter instead), so the refusal is the
 * BAR's, not a bus-mastering one.
 */
static uint32_t own_bar_run(volatile uint32_t *regs, uint32_t ctrl,
			    uint64_t src, uint64_t dst, uint64_t head)
{
	volatile uint32_t *ch = regs + PEACH2_REG_DMA(0, 0) / 4;
	uint32_t st = 0;
	int k;

	ch[PEACH2_DMA_STATUS / 4] = PEACH2_DMA_ST_ENDED;
	ch[PEACH2_DMA_SRC_LO / 4] = (uint32_t)src;
	ch[PEACH2_DMA_SRC_HI / 4] = (uint32_t)(src >> 32);
	ch[PEACH2_DMA_DST_LO / 4] = (uint32_t)dst;
	ch[PEACH2_DMA_DST_HI / 4] = (uint32_t)(dst >> 32);
	ch[PEACH2_DMA_LEN / 4] = 64;
	ch[PEACH2_DMA_BLOCK / 4] = 0;
	ch[PEACH2_DMA_FLAGS / 4] = 0;
	ch[PEACH2_DMA_HEAD_LO / 4] = (uint32_t)head;
	ch[PEACH2_DMA_HEAD_HI / 4] = (uint32_t)(head >> 32);
	ch[PEACH2_DMA_CTRL / 4] = ctrl;
	for (k = 0; k < 500; k++) {
		st = ch[PEACH2_DMA_STATUS / 4];
		if (st & PEACH2_DMA_ST_ENDED)
			break;
		usleep(10000);
	}
	return st;
}

TEST_F_TIMEOUT(unbind, dma_at_own_bars, 60)
{
	unsigned long long start[6] = { 0 }, end, flags;
	char path[PATH_MAX], text[1024], *line;
	struct peach2_info info;
	volatile uint32_t *regs;
	uint16_t cmd;
	uint32_t st;
	uint64_t here;
	int i, rfd, cfd, fd;

	SKIP_UNLESS_UNBIND_OPTED_IN();
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_INFO, &info));
	here = PEACH2_NODE_BASE(info.node_id) + 0x1000;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", self->pci_addr);
	ASSERT_LT(0, read_sysfs(path, text, sizeof(text)));
	for (i = 0, line = text; i < 6 && line && *line; i++) {
		ASSERT_EQ(3, sscanf(line, "%llx %llx %llx", &start[i], &end, &flags));
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	ASSERT_NE(0ULL, start[PEACH2_BAR_REGS]);
	ASSERT_NE(0ULL, start[PEACH2_BAR_CARDMEM]);
	ASSERT_NE(0ULL, start[PEACH2_BAR_WINDOW]);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, write_sysfs(SYSFS_DRIVER "/unbind", self->pci_addr));
	self->unbound = 1;

	/* Memory space and bus mastering, which the unbind switched off. */
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", self->pci_addr);
	cfd = open(path, O_RDWR);
	ASSERT_LE(0, cfd);
	ASSERT_EQ(2, pread(cfd, &cmd, 2, 4));
	cmd |= 0x6;
	ASSERT_EQ(2, pwrite(cfd, &cmd, 2, 4));
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource0", self->pci_addr);
	rfd = open(path, O_RDWR | O_SYNC);
	ASSERT_LE(0, rfd);
	regs = mmap(NULL, PEACH2_REGS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
	ASSERT_NE(MAP_FAILED, regs);

	/* Control: from guest RAM the read succeeds. */
	st = own_bar_run(regs, PEACH2_DMA_CTRL_START_REG, 0x100000, here, 0);
	ASSERT_NE(0U, st & PEACH2_DMA_ST_ERROR) TH_LOG("status 0x%x", st);
	ASSERT_NE((uint32_t)PEACH2_ERR_DMA_READ, (st & PEACH2_DMA_ST_CODE) >> PEACH2_DMA_ST_CODE_SHIFT);
	/*
	 * The source in its own card memory, its registers, then its window
	 * (which QEMU's memory core does not guard: the card refuses itself).
	 */
	for (i = 0; i < 3; i++) {
		static const int bars[] = { PEACH2_BAR_CARDMEM, PEACH2_BAR_REGS,
					    PEACH2_BAR_WINDOW };
		uint64_t src = start[bars[i]];

		st = own_bar_run(regs, PEACH2_DMA_CTRL_START_REG, src, here, 0);
		ASSERT_NE(0U, st & PEACH2_DMA_ST_ERROR) TH_LOG("status 0x%x", st);
		ASSERT_EQ((uint32_t)PEACH2_ERR_DMA_READ,
			  (st & PEACH2_DMA_ST_CODE) >> PEACH2_DMA_ST_CODE_SHIFT);
	}
	/* A chain whose descriptors would be fetched from its own registers. */
	st = own_bar_run(regs, PEACH2_DMA_CTRL_START_CHAIN, 0, 0,
			 start[PEACH2_BAR_REGS] | PEACH2_DMA_HEAD_HOST);
	ASSERT_NE(0U, st & PEACH2_DMA_ST_ERROR) TH_LOG("status 0x%x", st);
	ASSERT_EQ((uint32_t)PEACH2_ERR_DMA_READ, (st & PEACH2_DMA_ST_CODE) >> PEACH2_DMA_ST_CODE_SHIFT);
	munmap((void *)regs, PEACH2_REGS_SIZE);
	close(rfd);
	close(cfd);

	ASSERT_EQ(0, rebind_card(self->pci_addr));
	self->unbound = 0;
	fd = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_TRUE(dma_all_idle());
	close(fd);
}

TEST_HARNESS_MAIN
