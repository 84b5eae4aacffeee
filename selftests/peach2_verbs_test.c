// SPDX-License-Identifier: GPL-2.0
/*
 * peach2_verbs_test: what the driver adds for TCA Verbs (ABI 4): PIN (any
 * memory of the caller as a buffer), PUBLISH/UNPUBLISH and the read
 * proxy's LOOKUP (sent to this node: the card loops it back), the sharing
 * of inbound-filter ranges between overlapping pins, RLIMIT_MEMLOCK, and
 * the quarantine of freed memory peers were told to write (sysfs `verbs`).
 *
 * Needs a PEACH2 card with a read proxy, peach2.ko (ABI >= 4) and root;
 * fails (never skips) without them. Reads the device-wide sysfs `verbs`
 * counters: run it while nothing else registers memory on this node.
 */
#include "peach2_selftest.h"

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define PAGE		4096UL
#define WAIT_S		20.0

/* A counter of the sysfs `verbs` file, or -1. */
static long long verbs_counter(const char *name)
{
	return class_counter("verbs", name);
}

static int do_pin(int fd, void *addr, uint64_t len, struct peach2_pin *out)
{
	struct peach2_pin p;
	int ret;

	memset(&p, 0, sizeof(p));
	p.addr = (uintptr_t)addr;
	p.len = len;
	ret = xioctl(fd, PEACH2_IOC_PIN, &p);
	if (out)
		*out = p;
	return ret;
}

static int do_publish(int fd, uint32_t handle, uint32_t kind, uint64_t off, uint64_t len,
		      uint32_t flags, struct peach2_publish *out)
{
	struct peach2_publish p;
	int ret;

	memset(&p, 0, sizeof(p));
	p.handle = handle;
	p.kind = kind;
	p.offset = off;
	p.len = len;
	p.flags = flags;
	p.group = 77;
	memcpy(p.info, "selftest info", 14);
	ret = xioctl(fd, PEACH2_IOC_PUBLISH, &p);
	if (out)
		*out = p;
	return ret;
}

static int do_unpublish(int fd, uint32_t kind, uint32_t name)
{
	struct peach2_unpublish u = { .kind = kind, .name = name };

	return xioctl(fd, PEACH2_IOC_UNPUBLISH, &u);
}

/* Local copy of @len bytes (DMA, waited for): 0 or errno / card status. */
static int dma_copy(int fd, uint32_t src, uint64_t soff, uint32_t dst, uint64_t doff, uint64_t len)
{
	struct peach2_xfer x;
	struct peach2_dma_start s;
	int ret;

	memset(&x, 0, sizeof(x));
	x.src_handle = src;
	x.src_offset = soff;
	x.dst_handle = dst;
	x.dst = doff;
	x.len = len;
	memset(&s, 0, sizeof(s));
	s.count = 1;
	s.xfers = (uintptr_t)&x;
	s.flags = PEACH2_DMA_HOST_DESC | PEACH2_DMA_WAIT;
	s.channel = PEACH2_DMA_ANY_CHANNEL;
	ret = xioctl(fd, PEACH2_IOC_DMA_START, &s);
	return ret ? ret : (int)s.status;
}

FIXTURE(verbs) {
	int fd;
	struct peach2_info info;
	struct mbuf reply;	/* LOOKUP answers */
	struct mbuf cpl;	/* completion records */
	struct mbuf buf;	/* something to publish */
};

FIXTURE_SETUP(verbs)
{
	memset(&self->reply, 0, sizeof(self->reply));
	memset(&self->cpl, 0, sizeof(self->cpl));
	memset(&self->buf, 0, sizeof(self->buf));
	self->fd = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) {
		TH_LOG("%s: %s (no card, or peach2.ko not loaded)", dev_path(), strerror(errno));
	}
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_INFO, &self->info));
	ASSERT_LE(4U, self->info.abi_version) {
		TH_LOG("driver speaks ABI %u: no PIN or names", self->info.abi_version);
	}
	ASSERT_EQ(0, mbuf_alloc(self->fd, PAGE, &self->reply));
	ASSERT_EQ(0, mbuf_alloc(self->fd, PAGE, &self->cpl));
	ASSERT_EQ(0, mbuf_alloc(self->fd, 64 * 1024, &self->buf));
}

FIXTURE_TEARDOWN(verbs)
{
	if (self->fd >= 0) {
		mbuf_free(self->fd, &self->reply);
		mbuf_free(self->fd, &self->cpl);
		mbuf_free(self->fd, &self->buf);
		close(self->fd);
	}
}

/*
 * LOOKUP (kind, name) at @offset on this node: the record's status, the
 * answer in @out (self->reply). -1 if nothing came back.
 */
static int lookup(FIXTURE_DATA(verbs) *self, uint32_t kind, uint32_t name, uint64_t offset,
		  struct peach2_lookup **out)
{
	struct peach2_rp_cpl c;
	struct peach2_rp_submit s;

	memset(self->reply.p, 0, PAGE);
	memset(self->cpl.p, 0, sizeof(c));
	memset(&s, 0, sizeof(s));
	s.node = self->info.node_id;
	s.op = PEACH2_RP_OP_LOOKUP;
	s.export_id = kind;
	s.key = name;
	s.addr = offset;
	s.len = PEACH2_LOOKUP_MAX;
	s.reply_handle = self->reply.a.handle;
	s.cpl_handle = self->cpl.a.handle;
	if (xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s) || wait_cpl(self->cpl.p, s.tag, &c, WAIT_S))
		return -1;
	*out = (struct peach2_lookup *)self->reply.p;
	return (int)c.status;
}

TEST_F(verbs, pin_validation)
{
	struct peach2_pin p;
	char page[64];
	void *ro;

	memset(&p, 0, sizeof(p));
	p.addr = (uintptr_t)page;
	p.len = sizeof(page);
	p.flags = 1;
	EXPECT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_PIN, &p));
	p.flags = 0;
	p.reserved[1] = 1;
	EXPECT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_PIN, &p));
	p.reserved[1] = 0;
	p.len = 0;
	EXPECT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_PIN, &p));
	p.addr = ~0ULL - 100;
	p.len = 4096;
	EXPECT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_PIN, &p));
	/* Not mapped, and mapped read-only: pages the card could not write. */
	ro = mmap(NULL, 2 * PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(EFAULT, do_pin(self->fd, ro, PAGE, NULL));
	munmap(ro, 2 * PAGE);
	EXPECT_EQ(EFAULT, do_pin(self->fd, ro, PAGE, NULL));
	/* Its window mapping is no memory of the caller's either. */
	EXPECT_EQ(EFAULT, do_pin(self->fd, self->buf.p, PAGE, NULL));
}

TEST_F(verbs, pin_heap_and_stack)
{
	long long pages0 = verbs_counter("pinned_pages");
	volatile uint8_t stack[3 * PAGE];
	struct peach2_chunk c[16];
	struct peach2_chunks q;
	struct peach2_pin p;
	uint8_t *heap;
	uint64_t sum = 0;
	uint32_t i;

	ASSERT_LE(0, pages0);
	heap = malloc(5 * PAGE + 123);
	ASSERT_NE(NULL, heap);
	memset(heap, 0x5a, 5 * PAGE + 123);
	ASSERT_EQ(0, do_pin(self->fd, heap + 100, 5 * PAGE, &p));
	EXPECT_EQ(((uintptr_t)heap + 100) % PAGE, p.offset);
	EXPECT_EQ(0U, p.size % PAGE);
	EXPECT_LE(p.offset + 5 * PAGE, p.size);
	EXPECT_LE(1U, p.nr_chunks);
	EXPECT_EQ(pages0 + (long long)(p.size / PAGE), verbs_counter("pinned_pages"));

	/* CHUNKS covers it all, in order. */
	memset(&q, 0, sizeof(q));
	q.handle = p.handle;
	q.count = 16;
	q.chunks = (uintptr_t)c;
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_CHUNKS, &q));
	ASSERT_EQ(p.nr_chunks, q.nr_chunks);
	for (i = 0; i < q.nr_chunks && i < 16; i++) {
		EXPECT_EQ(sum, c[i].offset);
		sum += c[i].len;
	}
	if (q.nr_chunks <= 16)
		EXPECT_EQ(p.size, sum);

	/* The card writes the pinned heap (a DMA copy from an ALLOC'd buffer,
	 * same low 4 address bits on both sides)... */
	memset(self->buf.p, 0xc3, 5 * PAGE);
	ASSERT_EQ(0, dma_copy(self->fd, self->buf.a.handle, p.offset % 16, p.handle, p.offset,
			      4 * PAGE));
	for (i = 0; i < 4 * PAGE; i++)
		ASSERT_EQ(0xc3, heap[100 + i]);
	EXPECT_EQ(0x5a, heap[99]);
	/* ... and reads it. */
	memset(heap + 100, 0x17, 2 * PAGE);
	ASSERT_EQ(0, dma_copy(self->fd, p.handle, p.offset, self->buf.a.handle,
			      8 * PAGE + p.offset % 16, 2 * PAGE));
	for (i = 0; i < 2 * PAGE; i++)
		ASSERT_EQ(0x17, self->buf.p[8 * PAGE + p.offset % 16 + i]);
	/* mmap of a PIN is refused: it is mapped already. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd,
				   (off_t)(PEACH2_MMAP_BUF_BASE + ((uint64_t)p.handle << 32))));
	EXPECT_EQ(0, do_free(self->fd, p.handle));
	EXPECT_EQ(pages0, verbs_counter("pinned_pages"));
	free(heap);

	/* The stack too. */
	memset((void *)stack, 1, sizeof(stack));
	volatile uint8_t *s = (volatile uint8_t *)(((uintptr_t)stack + 15) & ~(uintptr_t)15) + 12;
	ASSERT_EQ(0, do_pin(self->fd, (void *)s, PAGE, &p));
	memset(self->buf.p, 0x99, 64);
	ASSERT_EQ(0, dma_copy(self->fd, self->buf.a.handle, 12, p.handle, p.offset, 48));
	EXPECT_EQ(0x99, s[0]);
	EXPECT_EQ(0x99, s[47]);
	EXPECT_EQ(1, s[-1]);
	EXPECT_EQ(1, s[48]);
	EXPECT_EQ(0, do_free(self->fd, p.handle));
	EXPECT_EQ(pages0, verbs_counter("pinned_pages"));
}

/* Two pins of the same pages share the first one's filter ranges. */
TEST_F(verbs, overlapping_pins_share_filter_ranges)
{
	long long ranges0 = verbs_counter("filter_ranges");
	struct peach2_pin a, b;
	uint8_t *mem;
	uint32_t i;

	mem = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		   -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_EQ(0, do_pin(self->fd, mem, 8 * PAGE, &a));
	long long ranges1 = verbs_counter("filter_ranges");
	EXPECT_LT(ranges0, ranges1);
	ASSERT_EQ(0, do_pin(self->fd, mem + 4 * PAGE, 8 * PAGE, &b));
	long long ranges2 = verbs_counter("filter_ranges");
	/* Only pages 8..11 were new. */
	EXPECT_LE(ranges2 - ranges1, 4);
	/* b outlives a: its shared pages stay reachable. */
	EXPECT_EQ(0, do_free(self->fd, a.handle));
	memset(self->buf.p, 0x44, 8 * PAGE);
	ASSERT_EQ(0, dma_copy(self->fd, self->buf.a.handle, 0, b.handle, 0, 8 * PAGE));
	for (i = 0; i < 8 * PAGE; i++)
		ASSERT_EQ(0x44, mem[4 * PAGE + i]);
	EXPECT_EQ(0, do_free(self->fd, b.handle));
	EXPECT_EQ(ranges0, verbs_counter("filter_ranges"));
	munmap(mem, 16 * PAGE);
}

/*
 * A buffer whose pages are all physically apart takes a filter range per
 * page, as malloc'ed memory of a node that has run a while does (an MPI
 * rank's 8 MiB pool needed 2000 ranges). 5000 of them: more than the old
 * card table (4096) and user share (1024) held. Every page must take DMA.
 */
#define SCATTERED_PAGES 5000U
TEST_F(verbs, scattered_pages_take_a_range_each)
{
	long long ranges0 = verbs_counter("filter_ranges");
	size_t len = SCATTERED_PAGES * PAGE;
	uint32_t i, failed = 0, wrong = 0;
	uint8_t *src, *mem;
	struct peach2_pin p;
	int ret;

	/* Every other page of a populated area, moved side by side. */
	src = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, src);
	mem = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	for (i = 0; i < SCATTERED_PAGES; i++)
		if (mremap(src + 2UL * i * PAGE, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
			   mem + (size_t)i * PAGE) == MAP_FAILED)
			failed++;
	ASSERT_EQ(0U, failed);
	munmap(src, 2 * len);
	memset(mem, 1, len);

	ASSERT_EQ(0, do_pin(self->fd, mem, len, &p)) {
		TH_LOG("PIN of %u scattered pages: %s", SCATTERED_PAGES, strerror(errno));
	}
	long long ranges1 = verbs_counter("filter_ranges");
	TH_LOG("%u scattered pages took %lld filter ranges", SCATTERED_PAGES, ranges1 - ranges0);
	/* Not a test of the allocator: most pages must be apart for this to mean anything. */
	ASSERT_LT(4096, ranges1 - ranges0);
	EXPECT_GE((long long)SCATTERED_PAGES, ranges1 - ranges0);
	/* Every 97th page gets [96, 304) by DMA (same low 4 address bits as the source). */
	memset(self->buf.p, 0x5a, PAGE);
	for (i = 0; i < SCATTERED_PAGES; i += 97) {
		ret = dma_copy(self->fd, self->buf.a.handle, 96, p.handle,
			       p.offset + (uint64_t)i * PAGE + 96, 208);
		if (ret && !failed++)
			TH_LOG("DMA into page %u: %d", i, ret);
	}
	EXPECT_EQ(0U, failed);
	for (i = 0; i < SCATTERED_PAGES; i++) {
		uint8_t *pg = mem + (size_t)i * PAGE;
		uint8_t want = i % 97 ? 1 : 0x5a;

		if ((pg[96] != want || pg[303] != want || pg[95] != 1 || pg[304] != 1) &&
		    !wrong++)
			TH_LOG("page %u: %#x %#x %#x %#x", i, pg[95], pg[96], pg[303], pg[304]);
	}
	EXPECT_EQ(0U, wrong);
	EXPECT_EQ(0, do_free(self->fd, p.handle));
	EXPECT_EQ(ranges0, verbs_counter("filter_ranges"));
	munmap(mem, len);
}

/* Without CAP_IPC_LOCK, pins count against RLIMIT_MEMLOCK. */
TEST_F(verbs, memlock_limit)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
		struct __user_cap_data_struct data[2];
		struct rlimit rl = { 64 * 1024, 64 * 1024 };
		uint8_t *mem = mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct peach2_pin p;

		if (syscall(SYS_capget, &hdr, data))
			_exit(10);
		data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
		if (syscall(SYS_capset, &hdr, data) || setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(11);
		if (do_pin(self->fd, mem, 32 * PAGE, NULL) != ENOMEM)
			_exit(12);
		if (do_pin(self->fd, mem, 8 * PAGE, &p))
			_exit(13);
		if (do_pin(self->fd, mem + 8 * PAGE, 16 * PAGE, NULL) != ENOMEM)
			_exit(14); /* 8 + 16 pages > 16 */
		if (do_free(self->fd, p.handle) || do_pin(self->fd, mem, 16 * PAGE, &p))
			_exit(15); /* freed pages count no more */
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_F(verbs, publish_validation)
{
	struct peach2_publish p;

	EXPECT_EQ(EINVAL, do_publish(self->fd, self->buf.a.handle, 3, 0, PAGE, 0, NULL));
	EXPECT_EQ(EINVAL, do_publish(self->fd, self->buf.a.handle, PEACH2_NAME_KEY, 0, 0, 0, NULL));
	EXPECT_EQ(EINVAL, do_publish(self->fd, self->buf.a.handle, PEACH2_NAME_KEY, 0, PAGE, 8, NULL));
	EXPECT_EQ(EINVAL, do_publish(self->fd, self->buf.a.handle, PEACH2_NAME_KEY, 60 * 1024,
				     8 * 1024, 0, NULL));
	EXPECT_EQ(ENOENT, do_publish(self->fd, 0xfffff, PEACH2_NAME_KEY, 0, PAGE, 0, NULL));
	memset(&p, 0, sizeof(p));
	p.handle = self->buf.a.handle;
	p.kind = PEACH2_NAME_QP;
	p.len = PAGE;
	p.pad0 = 1;
	EXPECT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_PUBLISH, &p));
	EXPECT_EQ(ENOENT, do_unpublish(self->fd, PEACH2_NAME_QP, 0x100));
	EXPECT_EQ(EINVAL, do_unpublish(self->fd, 9, 0x100));
}

TEST_F(verbs, lookup_of_own_names)
{
	struct peach2_publish qp, key;
	struct peach2_lookup *l;
	struct peach2_chunk c[16];
	struct peach2_chunks q;
	uint64_t sum = 0;
	uint32_t i;

	ASSERT_EQ(0, do_publish(self->fd, self->buf.a.handle, PEACH2_NAME_QP, 4096, 8192,
				PEACH2_NAME_WRITE, &qp));
	EXPECT_LE(0x100U, qp.name);
	EXPECT_GE(0xffffffU, qp.name);
	EXPECT_EQ(0U, qp.export_id);
	ASSERT_EQ(0, do_publish(self->fd, self->buf.a.handle, PEACH2_NAME_KEY, 100, 60000,
				PEACH2_NAME_READ | PEACH2_NAME_ATOMIC, &key));
	EXPECT_NE(0U, key.export_id);

	ASSERT_EQ(0, lookup(self, PEACH2_NAME_QP, qp.name, 0, &l));
	EXPECT_EQ(PEACH2_NAME_QP, l->kind);
	EXPECT_EQ(qp.name, l->name);
	EXPECT_EQ(PEACH2_NAME_WRITE, l->flags);
	EXPECT_EQ(77U, l->group);
	EXPECT_EQ(8192U, l->len);
	EXPECT_EQ(0U, l->export_id);
	EXPECT_LT(0U, l->lease_ms);
	EXPECT_EQ(0, memcmp(l->info, "selftest info", 14));
	ASSERT_LE(1U, l->nr_pieces);

	/* The pieces are the buffer's chunks from byte 4096 on. */
	memset(&q, 0, sizeof(q));
	q.handle = self->buf.a.handle;
	q.count = 16;
	q.chunks = (uintptr_t)c;
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_CHUNKS, &q));
	EXPECT_EQ(c[0].global_addr + 4096, l->pieces[0].global_addr);
	for (i = 0; i < l->nr_pieces; i++)
		sum += l->pieces[i].len;
	EXPECT_EQ(8192U, sum);

	ASSERT_EQ(0, lookup(self, PEACH2_NAME_KEY, key.name, 1000, &l));
	EXPECT_EQ(1000U, l->offset);
	EXPECT_EQ(key.export_id, l->export_id);
	EXPECT_EQ(key.key, l->key);
	EXPECT_EQ(c[0].global_addr + 1100, l->pieces[0].global_addr);

	/*
	 * Misses: another kind, a wrong name, past the end; gone after
	 * UNPUBLISH. The QP's number is a key's name too when the key's index
	 * and random byte make it (index << 8 | byte: 1 in 256 for a key of
	 * index qp.name >> 8, as a driver's first key is when qp.name < 0x200).
	 */
	if (key.name != qp.name)
		EXPECT_EQ(PEACH2_ERR_RP_NOT_EXPORTED,
			  lookup(self, PEACH2_NAME_KEY, qp.name, 0, &l));
	EXPECT_EQ(PEACH2_ERR_RP_NOT_EXPORTED, lookup(self, PEACH2_NAME_KEY, key.name ^ 0x80, 0, &l));
	EXPECT_EQ(PEACH2_ERR_RP_RANGE, lookup(self, PEACH2_NAME_QP, qp.name, 8192, &l));
	EXPECT_EQ(0, do_unpublish(self->fd, PEACH2_NAME_QP, qp.name));
	EXPECT_EQ(PEACH2_ERR_RP_NOT_EXPORTED, lookup(self, PEACH2_NAME_QP, qp.name, 0, &l));
	EXPECT_EQ(ENOENT, do_unpublish(self->fd, PEACH2_NAME_QP, qp.name));
	/* FREE of the buffer ends its names (and their exports). */
	mbuf_free(self->fd, &self->buf);
	EXPECT_EQ(PEACH2_ERR_RP_NOT_EXPORTED, lookup(self, PEACH2_NAME_KEY, key.name, 0, &l));
}

/*
 * Submit @n LOOKUPs of KEY names (@name ^ (i + 1) if @vary, else @name) at
 * once, each with its own completion slot, and check each is refused
 * RP_NOT_EXPORTED.
 */
static void lookup_misses(struct __test_metadata *_metadata, FIXTURE_DATA(verbs) *self,
			  uint32_t name, int vary, int n)
{
	struct peach2_rp_submit s;
	struct peach2_rp_cpl c;
	uint64_t tags[100];
	int i;

	ASSERT_GE(100, n);
	memset(self->cpl.p, 0, PAGE);
	for (i = 0; i < n; i++) {
		memset(&s, 0, sizeof(s));
		s.node = self->info.node_id;
		s.op = PEACH2_RP_OP_LOOKUP;
		s.export_id = PEACH2_NAME_KEY;
		s.key = vary ? name ^ (uint32_t)(i + 1) : name;
		s.len = PEACH2_LOOKUP_MAX;
		s.reply_handle = self->reply.a.handle;
		s.cpl_handle = self->cpl.a.handle;
		s.cpl_offset = sizeof(c) * (uint64_t)(i + 1);
		ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
		tags[i] = s.tag;
	}
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, wait_cpl(self->cpl.p + sizeof(c) * (i + 1), tags[i], &c, WAIT_S))
			TH_LOG("lookup %d: no answer", i);
		ASSERT_EQ((uint32_t)PEACH2_ERR_RP_NOT_EXPORTED, c.status)
			TH_LOG("lookup %d: status %u", i, c.status);
	}
}

/*
 * A key is an index handed out in order and 8 random bits; only the bits
 * are secret. More than 64 lookups from one node within a second of keys
 * whose index exists with other bits are guesses: the node's requests are
 * refused for a second. Lookups of names that are gone (unpublished keys)
 * are not: an honest node makes them (a datagram to a destroyed QP, a
 * deregistered key), and counting them locked every process of the node
 * out of this one.
 */
TEST_F(verbs, lookups_of_gone_names_are_no_guesses)
{
	struct peach2_publish gone, key;
	struct peach2_lookup *l;
	long long thr0, thr1;
	double t0;

	/* Throttling by earlier tests (if any) is over after 1 s. */
	usleep(1100000);
	ASSERT_EQ(0, do_publish(self->fd, self->buf.a.handle, PEACH2_NAME_KEY, 0, 4096, 0, &gone));
	ASSERT_EQ(0, do_unpublish(self->fd, PEACH2_NAME_KEY, gone.name));
	ASSERT_EQ(0, do_publish(self->fd, self->buf.a.handle, PEACH2_NAME_KEY, 0, 4096, 0, &key));

	/* 100 lookups of a name that is gone, at once: no throttle. */
	thr0 = class_counter("rproxy", "refused_throttled");
	ASSERT_LE(0, thr0);
	t0 = now_s();
	lookup_misses(_metadata, self, gone.name, 0, 100);
	ASSERT_EQ(0, lookup(self, PEACH2_NAME_KEY, key.name, 0, &l)) {
		TH_LOG("lookups of a gone name throttled this node (after %.3f s)",
		       now_s() - t0);
	}
	ASSERT_EQ(thr0, class_counter("rproxy", "refused_throttled"));

	/* 100 wrong random bits of an existing index: throttled. */
	usleep(1100000);
	t0 = now_s();
	lookup_misses(_metadata, self, key.name, 1, 100);
	thr1 = class_counter("rproxy", "refused_throttled");
	if (now_s() - t0 < 0.5) {
		/* 65 looked up (the 65th trips it), the other 35 refused unseen;
		 * the throttle lasts 1 s from the 65th, past this lookup. */
		EXPECT_EQ(thr0 + 35, thr1);
		EXPECT_EQ(PEACH2_ERR_RP_NOT_EXPORTED, lookup(self, PEACH2_NAME_KEY, key.name, 0, &l));
		EXPECT_EQ(thr1 + 1, class_counter("rproxy", "refused_throttled"));
	} else {
		TH_LOG("100 lookups took %.2f s: too slow to see the throttle", now_s() - t0);
	}
	/* After the throttle's second, the node is served again. */
	usleep(1200000);
	EXPECT_EQ(0, lookup(self, PEACH2_NAME_KEY, key.name, 0, &l));
	EXPECT_EQ(0, do_unpublish(self->fd, PEACH2_NAME_KEY, key.name));
}

/* Memory named for remote writers is quarantined when freed, then freed. */
TEST_F(verbs, quarantine)
{
	char path[PATH_MAX], old[32];
	long long q0, pages0, ranges0;
	struct peach2_pin p;
	uint8_t *mem;
	double end;

	snprintf(path, sizeof(path), "%s/name_quarantine_ms", SYSFS_PARAMS);
	ASSERT_LT(0, read_sysfs(path, old, sizeof(old)));
	ASSERT_EQ(0, write_sysfs(path, "500"));
	/* Earlier tests' buffers may still be in quarantine: let them go. */
	end = now_s() + 15;
	while (verbs_counter("quarantined_bufs") != 0 && now_s() < end)
		usleep(50000);
	q0 = verbs_counter("quarantined_bufs");
	pages0 = verbs_counter("pinned_pages");
	ranges0 = verbs_counter("filter_ranges");
	ASSERT_EQ(0, q0);
	mem = mmap(NULL, 8 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		   -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_EQ(0, do_pin(self->fd, mem, 8 * PAGE, &p));
	ASSERT_EQ(0, do_publish(self->fd, p.handle, PEACH2_NAME_KEY, 0, 8 * PAGE, PEACH2_NAME_WRITE,
				NULL));
	EXPECT_EQ(0, do_free(self->fd, p.handle));
	/* Out of the filter at once, still pinned for a while. */
	EXPECT_EQ(ranges0, verbs_counter("filter_ranges"));
	EXPECT_EQ(q0 + 1, verbs_counter("quarantined_bufs"));
	EXPECT_EQ(pages0 + 8, verbs_counter("pinned_pages"));
	end = now_s() + 10;
	while (verbs_counter("quarantined_bufs") != q0 && now_s() < end)
		usleep(20000);
	EXPECT_EQ(q0, verbs_counter("quarantined_bufs"));
	EXPECT_EQ(pages0, verbs_counter("pinned_pages"));
	write_sysfs(path, old);
	munmap(mem, 8 * PAGE);
}

/* close() ends the file's names and pins. */
TEST_F(verbs, close_releases_everything)
{
	long long names0 = verbs_counter("names"), pages0 = verbs_counter("pinned_pages");
	int fd2 = open(dev_path(), O_RDWR | O_CLOEXEC);
	struct peach2_publish n;
	struct peach2_pin p;
	struct peach2_lookup *l;
	uint8_t *mem = malloc(4 * PAGE);

	ASSERT_LE(0, fd2);
	ASSERT_NE(NULL, mem);
	ASSERT_EQ(0, do_pin(fd2, mem, 4 * PAGE, &p));
	ASSERT_EQ(0, do_publish(fd2, p.handle, PEACH2_NAME_KEY, 0, PAGE, PEACH2_NAME_READ, &n));
	EXPECT_EQ(names0 + 1, verbs_counter("names"));
	ASSERT_EQ(0, lookup(self, PEACH2_NAME_KEY, n.name, 0, &l));
	close(fd2);
	EXPECT_EQ(names0, verbs_counter("names"));
	EXPECT_EQ(pages0, verbs_counter("pinned_pages")); /* not WRITE: no quarantine */
	EXPECT_EQ(PEACH2_ERR_RP_NOT_EXPORTED, lookup(self, PEACH2_NAME_KEY, n.name, 0, &l));
	free(mem);
}

TEST_HARNESS_MAIN
