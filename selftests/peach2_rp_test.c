// SPDX-License-Identifier: GPL-2.0
/*
 * peach2_rp_test: the read-proxy ioctls of /dev/peach2-<n> (EXPORT,
 * UNEXPORT, RP_SUBMIT), include/peach2/peach2_uapi.h, and the read proxy
 * end to end on one node: a node may send requests to itself (the card
 * loops them back), so every check of the target driver (export, key,
 * permission, range, alignment) and every answer (READ data, CAS, FAA,
 * refusals with their status) is visible here through the completion
 * record in our own buffer.
 *
 * Needs a PEACH2 card with a read proxy and peach2.ko (ABI >= 3), and root.
 * It fails (never skips) without them (peach2_selftest.h: the skip policy).
 * PEACH2_DEV=/dev/peach2-1 picks another card. PEACH2_TEST_UNBIND=1 also
 * unbinds the driver with requests queued (and binds it again); without it
 * that one test SKIPs (the VM tests always set it). Some checks read the device-wide
 * sysfs `rproxy` counters: run the suite while nothing else uses the read
 * proxy of this node.
 */
#include "peach2_selftest.h"

#define BUF_SIZE	(64 * 1024)
#define CPL_SIZE	(64 * 1024)	/* 2048 completion records */
#define MIB		(1024 * 1024ULL)
#define WAIT_S		20.0

/* ---- buffers ------------------------------------------------------------ */

/*
 * Host bus address of byte @off of buffer @handle, and the bytes left in
 * its chunk from there (@bus or @left may be NULL). 0 or errno.
 */
static int bus_of(int fd, const struct peach2_info *info, uint32_t handle,
		  uint64_t off, uint64_t *bus, uint64_t *left)
{
	struct peach2_chunk c[256];
	struct peach2_chunks req;
	uint32_t first = 0, i;

	for (;;) {
		memset(&req, 0, sizeof(req));
		req.handle = handle;
		req.first = first;
		req.count = 256;
		req.chunks = (uintptr_t)c;
		if (xioctl(fd, PEACH2_IOC_CHUNKS, &req))
			return errno;
		for (i = 0; i < 256 && first + i < req.nr_chunks; i++) {
			if (off >= c[i].offset && off - c[i].offset < c[i].len) {
				if (bus)
					*bus = c[i].global_addr -
					       PEACH2_NODE_BASE(info->node_id) +
					       (off - c[i].offset);
				if (left)
					*left = c[i].len - (off - c[i].offset);
				return 0;
			}
		}
		first += 256;
		if (first >= req.nr_chunks)
			return ENOENT;
	}
}

/* ---- ioctls ------------------------------------------------------------- */

static int do_export(int fd, uint32_t handle, uint64_t off, uint64_t len,
		     uint32_t flags, uint32_t *id, uint32_t *key)
{
	struct peach2_export e;
	int ret;

	memset(&e, 0, sizeof(e));
	e.handle = handle;
	e.offset = off;
	e.len = len;
	e.flags = flags;
	ret = xioctl(fd, PEACH2_IOC_EXPORT, &e);
	if (!ret) {
		if (id)
			*id = e.export_id;
		if (key)
			*key = e.key;
	}
	return ret;
}

static int do_unexport(int fd, uint32_t id)
{
	struct peach2_unexport u = { .export_id = id };

	return xioctl(fd, PEACH2_IOC_UNEXPORT, &u);
}

static struct peach2_rp_submit rp_read(uint32_t node, uint32_t id,
				       uint32_t key, uint64_t addr,
				       uint32_t len, uint32_t reply_handle,
				       uint64_t reply_offset,
				       uint32_t cpl_handle, uint64_t cpl_offset)
{
	struct peach2_rp_submit s;

	memset(&s, 0, sizeof(s));
	s.node = node;
	s.op = PEACH2_RP_OP_READ;
	s.export_id = id;
	s.key = key;
	s.addr = addr;
	s.len = len;
	s.reply_handle = reply_handle;
	s.reply_offset = reply_offset;
	s.cpl_handle = cpl_handle;
	s.cpl_offset = cpl_offset;
	return s;
}

static struct peach2_rp_submit rp_atomic(uint32_t node, uint32_t op,
					 uint32_t id, uint32_t key,
					 uint64_t addr, uint64_t op0,
					 uint64_t op1, uint32_t cpl_handle,
					 uint64_t cpl_offset)
{
	struct peach2_rp_submit s;

	memset(&s, 0, sizeof(s));
	s.node = node;
	s.op = op;
	s.export_id = id;
	s.key = key;
	s.addr = addr;
	s.len = 8;
	s.operand[0] = op0;
	s.operand[1] = op1;
	s.cpl_handle = cpl_handle;
	s.cpl_offset = cpl_offset;
	return s;
}

/*
 * Submit @s and wait for its completion record (at s->cpl_offset of
 * @cplbuf, cleared first). 0, an errno of the ioctl, or ETIMEDOUT.
 */
static int rp_do(int fd, struct peach2_rp_submit *s, uint8_t *cplbuf,
		 struct peach2_rp_cpl *out)
{
	int ret;

	memset(cplbuf + s->cpl_offset, 0, sizeof(*out));
	ret = xioctl(fd, PEACH2_IOC_RP_SUBMIT, s);
	if (ret)
		return ret;
	return wait_cpl(cplbuf + s->cpl_offset, s->tag, out, WAIT_S);
}

/* A counter of the sysfs `rproxy` file, or -1. */
static long long rp_counter(const char *name)
{
	return class_counter("rproxy", name);
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* ---- fixture ------------------------------------------------------------ */

FIXTURE(rp) {
	int fd;
	struct peach2_info info;
	uint32_t me;
	struct mbuf src;	/* exported */
	struct mbuf dst;	/* replies */
	struct mbuf cpl;	/* completion records */
	uint64_t src_bus;	/* bus address of src byte 0 */
	uint64_t src_left;	/* bytes of src's first chunk */
};

FIXTURE_SETUP(rp)
{
	memset(&self->src, 0, sizeof(self->src));
	memset(&self->dst, 0, sizeof(self->dst));
	memset(&self->cpl, 0, sizeof(self->cpl));
	self->fd = open_card(_metadata, &self->info, 3); /* 3: read proxy */
	self->me = self->info.node_id;
	ASSERT_EQ(0, mbuf_alloc(self->fd, BUF_SIZE, &self->src));
	ASSERT_EQ(0, mbuf_alloc(self->fd, BUF_SIZE, &self->dst));
	ASSERT_EQ(0, mbuf_alloc(self->fd, CPL_SIZE, &self->cpl));
	ASSERT_EQ(0, bus_of(self->fd, &self->info, self->src.a.handle, 0,
			    &self->src_bus, &self->src_left));
	ASSERT_EQ(self->src.a.bus_addr, self->src_bus);
}

FIXTURE_TEARDOWN(rp)
{
	mbuf_free(self->fd, &self->src);
	mbuf_free(self->fd, &self->dst);
	mbuf_free(self->fd, &self->cpl);
	close(self->fd);
}

/* ---- EXPORT / UNEXPORT validation ---------------------------------------- */

TEST_F(rp, export_validation)
{
	uint32_t h = self->src.a.handle, id = 0, key = 0;
	struct peach2_export e;
	int bit;

	/* Reserved fields. */
	for (int k = 0; k < 2; k++) {
		memset(&e, 0, sizeof(e));
		e.handle = h;
		e.len = 4096;
		e.flags = PEACH2_EXPORT_READ;
		e.reserved[k] = 1;
		ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_EXPORT, &e));
	}
	/* Flags: none, and every undefined bit. */
	ASSERT_EQ(EINVAL, do_export(self->fd, h, 0, 4096, 0, NULL, NULL));
	for (bit = 0; bit < 32; bit++) {
		if (PEACH2_EXPORT_FLAGS_ALL & (1U << bit))
			continue;
		ASSERT_EQ(EINVAL, do_export(self->fd, h, 0, 4096,
					    PEACH2_EXPORT_READ | 1U << bit,
					    NULL, NULL));
	}
	/* Ranges. */
	ASSERT_EQ(EINVAL, do_export(self->fd, h, 0, 0, PEACH2_EXPORT_READ,
				    NULL, NULL));
	ASSERT_EQ(EINVAL, do_export(self->fd, h, 0, BUF_SIZE + 1,
				    PEACH2_EXPORT_READ, NULL, NULL));
	ASSERT_EQ(EINVAL, do_export(self->fd, h, BUF_SIZE, 4,
				    PEACH2_EXPORT_READ, NULL, NULL));
	ASSERT_EQ(EINVAL, do_export(self->fd, h, 4, BUF_SIZE,
				    PEACH2_EXPORT_READ, NULL, NULL));
	ASSERT_EQ(EINVAL, do_export(self->fd, h, UINT64_MAX - 1, 4,
				    PEACH2_EXPORT_READ, NULL, NULL));
	ASSERT_EQ(EINVAL, do_export(self->fd, h, 8, UINT64_MAX - 4,
				    PEACH2_EXPORT_READ, NULL, NULL));
	/* Handles. */
	ASSERT_EQ(ENOENT, do_export(self->fd, 0, 0, 4096, PEACH2_EXPORT_READ,
				    NULL, NULL));
	ASSERT_EQ(ENOENT, do_export(self->fd, 0xfffff, 0, 4096,
				    PEACH2_EXPORT_READ, NULL, NULL));
	/* Pointers. */
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_EXPORT, NULL));
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_UNEXPORT, NULL));

	/* Good ones: whole buffer, last byte, any flag combination. */
	ASSERT_EQ(0, do_export(self->fd, h, 0, BUF_SIZE, PEACH2_EXPORT_READ,
			       &id, &key));
	ASSERT_NE(0U, id);
	ASSERT_EQ(0, do_unexport(self->fd, id));
	ASSERT_EQ(0, do_export(self->fd, h, BUF_SIZE - 1, 1,
			       PEACH2_EXPORT_ATOMIC, &id, NULL));
	ASSERT_EQ(0, do_unexport(self->fd, id));
	ASSERT_EQ(0, do_export(self->fd, h, 3, 5, PEACH2_EXPORT_FLAGS_ALL,
			       &id, NULL));
	ASSERT_EQ(0, do_unexport(self->fd, id));
}

TEST_F(rp, export_ids)
{
	uint32_t ids[64], keys[64], i, j, prev_keys_equal = 0;

	for (i = 0; i < 64; i++) {
		ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, 4096,
				       PEACH2_EXPORT_READ, &ids[i], &keys[i]));
		ASSERT_NE(0U, ids[i]);
		for (j = 0; j < i; j++)
			ASSERT_NE(ids[j], ids[i]);
		if (i && keys[i] == keys[i - 1])
			prev_keys_equal++;
	}
	/* Keys are random: 63 equal neighbours out of 2^32 do not happen. */
	ASSERT_GT(10U, prev_keys_equal);
	/* Ids are not reused at once (cyclic). */
	ASSERT_EQ(0, do_unexport(self->fd, ids[63]));
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, 4096,
			       PEACH2_EXPORT_READ, &ids[63], NULL));
	for (j = 0; j < 63; j++)
		ASSERT_NE(ids[j], ids[63]);
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, do_unexport(self->fd, ids[i]));
}

TEST_F(rp, unexport_validation)
{
	struct peach2_unexport u;
	uint32_t id, other_id;
	struct mbuf b;
	int fd2;

	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, 4096,
			       PEACH2_EXPORT_READ, &id, NULL));
	memset(&u, 0, sizeof(u));
	u.export_id = id;
	u.flags = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_UNEXPORT, &u));
	ASSERT_EQ(ENOENT, do_unexport(self->fd, 0));
	ASSERT_EQ(ENOENT, do_unexport(self->fd, 0xffffffffu));
	ASSERT_EQ(0, do_unexport(self->fd, id));
	ASSERT_EQ(ENOENT, do_unexport(self->fd, id));

	/* Another file's export is not ours to end. */
	fd2 = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, mbuf_alloc(fd2, 4096, &b));
	ASSERT_EQ(0, do_export(fd2, b.a.handle, 0, 4096, PEACH2_EXPORT_READ,
			       &other_id, NULL));
	ASSERT_EQ(ENOENT, do_unexport(self->fd, other_id));
	ASSERT_EQ(0, do_unexport(fd2, other_id));
	mbuf_free(fd2, &b);
	close(fd2);
}

TEST_F(rp, export_limit_and_close)
{
	long long base = rp_counter("exports");
	uint32_t id, first = 0;
	struct mbuf b;
	int fd2;

	ASSERT_LE(0, base);
	fd2 = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, mbuf_alloc(fd2, 4096, &b));
	for (unsigned int i = 0; i < PEACH2_MAX_EXPORTS_PER_FD; i++) {
		ASSERT_EQ(0, do_export(fd2, b.a.handle, 0, 4096,
				       PEACH2_EXPORT_READ, &id, NULL));
		if (!i)
			first = id;
	}
	ASSERT_EQ(ENOSPC, do_export(fd2, b.a.handle, 0, 4096,
				    PEACH2_EXPORT_READ, NULL, NULL));
	ASSERT_EQ(base + PEACH2_MAX_EXPORTS_PER_FD, rp_counter("exports"));
	/* Another file has its own budget. */
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, 4096,
			       PEACH2_EXPORT_READ, &id, NULL));
	ASSERT_EQ(0, do_unexport(self->fd, id));
	ASSERT_EQ(0, do_unexport(fd2, first));
	ASSERT_EQ(0, do_export(fd2, b.a.handle, 0, 4096, PEACH2_EXPORT_READ,
			       NULL, NULL));
	/*
	 * The file's release ends them all. A mapping of one of its buffers
	 * holds the file: with it, close() alone ends nothing.
	 */
	ASSERT_EQ(0, close(fd2));
	ASSERT_EQ(base + PEACH2_MAX_EXPORTS_PER_FD, rp_counter("exports"));
	ASSERT_EQ(0, munmap(b.p, b.a.size));
	ASSERT_EQ(base, rp_counter("exports"));
}

TEST_F(rp, free_revokes)
{
	long long base = rp_counter("exports");
	uint32_t id1, id2, id3;
	struct mbuf b;

	ASSERT_EQ(0, mbuf_alloc(self->fd, 8192, &b));
	ASSERT_EQ(0, do_export(self->fd, b.a.handle, 0, 4096,
			       PEACH2_EXPORT_READ, &id1, NULL));
	ASSERT_EQ(0, do_export(self->fd, b.a.handle, 4096, 4096,
			       PEACH2_EXPORT_ATOMIC, &id2, NULL));
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, 4096,
			       PEACH2_EXPORT_READ, &id3, NULL));
	ASSERT_EQ(base + 3, rp_counter("exports"));
	/* FREE while mapped: the exports of that buffer go, others stay. */
	ASSERT_EQ(0, do_free(self->fd, b.a.handle));
	ASSERT_EQ(base + 1, rp_counter("exports"));
	ASSERT_EQ(ENOENT, do_unexport(self->fd, id1));
	ASSERT_EQ(ENOENT, do_unexport(self->fd, id2));
	ASSERT_EQ(0, do_unexport(self->fd, id3));
	munmap(b.p, b.a.size);
	ASSERT_EQ(base, rp_counter("exports"));
}

/* ---- RP_SUBMIT validation ------------------------------------------------ */

TEST_F(rp, submit_validation)
{
	uint32_t sh = self->dst.a.handle, ch = self->cpl.a.handle;
	struct peach2_rp_submit good, s;
	struct peach2_rp_cpl c;
	uint64_t last_tag;
	struct mbuf big;
	uint64_t clen;

	good = rp_read(self->me, 0, 0, self->src_bus, 64, sh, 0, ch, 0);

	/* A good one goes out (to export 0: refused, but answered). */
	s = good;
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_NE(0ULL, s.tag);
	ASSERT_EQ((uint32_t)PEACH2_ERR_RP_NOT_EXPORTED, c.status);
	last_tag = s.tag;

	s = good; s.flags = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.flags = 0x80000000u;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.reserved[0] = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.reserved[1] = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.op = 0;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.op = 4;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.op = 0xffffffffu;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));

	/* READ lengths and fields. */
	s = good; s.len = 0;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.len = 2;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.len = 66;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.len = PEACH2_RP_MAX_LEN + 4;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.len = 0xfffffffcu;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.operand[0] = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.operand[1] = 1;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.reply_handle = 0;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.reply_handle = 0xfffff;
	ASSERT_EQ(ENOENT, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.reply_offset = BUF_SIZE - 60;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.reply_offset = BUF_SIZE;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.reply_offset = UINT64_MAX - 31;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.len = BUF_SIZE + 4;	/* longer than the reply buffer */
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));

	/* Completion record. */
	s = good; s.cpl_offset = 16;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.cpl_offset = 8;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.cpl_offset = CPL_SIZE;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.cpl_offset = UINT64_MAX - 31;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.cpl_handle = 0;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.cpl_handle = 0xfffff;
	ASSERT_EQ(ENOENT, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));

	/* Nodes. */
	s = good; s.node = self->info.node_count;
	ASSERT_EQ(ENXIO, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.node = PEACH2_MAX_NODES;
	ASSERT_EQ(ENXIO, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.node = 0xffffffffu;
	ASSERT_EQ(ENXIO, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));

	/* Atomics. */
	s = rp_atomic(self->me, PEACH2_RP_OP_CAS, 0, 0, self->src_bus, 1, 2,
		      ch, 0);
	good = s;
	s = good; s.len = 4;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.len = 16;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.reply_handle = sh;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.reply_offset = 64;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.op = PEACH2_RP_OP_FAA;
	ASSERT_EQ(EINVAL, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	s = good; s.op = PEACH2_RP_OP_FAA; s.operand[1] = 0;
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_LT(last_tag, s.tag);
	last_tag = s.tag;
	ASSERT_EQ((uint32_t)PEACH2_ERR_RP_NOT_EXPORTED, c.status);
	s = good;
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_LT(last_tag, s.tag);
	ASSERT_EQ((uint32_t)PEACH2_ERR_RP_NOT_EXPORTED, c.status);

	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, NULL));
	ASSERT_EQ(EFAULT, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, (void *)8));

	/*
	 * A reply range across a chunk boundary of the reply buffer goes out
	 * with a list of its two runs (export 0 refuses it, as above).
	 */
	ASSERT_EQ(0, mbuf_alloc(self->fd, 8 * MIB, &big));
	ASSERT_EQ(0, bus_of(self->fd, &self->info, big.a.handle, 0, NULL,
			    &clen));
	ASSERT_LT(0ULL, clen);
	ASSERT_GT(8 * MIB, clen);
	s = rp_read(self->me, 0, 0, self->src_bus, 128, big.a.handle,
		    clen - 64, ch, 0);
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ((uint32_t)PEACH2_ERR_RP_NOT_EXPORTED, c.status);
	s.reply_offset = clen - 128;
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ((uint32_t)PEACH2_ERR_RP_NOT_EXPORTED, c.status);
	/* ... and a record crossing into the next chunk cannot exist. */
	mbuf_free(self->fd, &big);
}

/* Tags increase strictly, also between files. */
TEST_F(rp, tags_increase)
{
	struct peach2_rp_submit s;
	struct peach2_rp_cpl c;
	uint64_t last = 0, tags[64];
	uint32_t id, key;
	int fd2, i;
	struct mbuf c2;

	/*
	 * FAA on a READ-only export: refused, but with the right key (64
	 * wrong keys or unknown ids within 1 s would throttle this node).
	 */
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, 4096,
			       PEACH2_EXPORT_READ, &id, &key));
	fd2 = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, mbuf_alloc(fd2, 4096, &c2));
	for (i = 0; i < 64; i++) {
		int f = i % 2 ? fd2 : self->fd;
		uint32_t ch = i % 2 ? c2.a.handle : self->cpl.a.handle;

		s = rp_atomic(self->me, PEACH2_RP_OP_FAA, id, key,
			      self->src_bus, 1, 0, ch, 32 * (i / 2));
		ASSERT_EQ(0, xioctl(f, PEACH2_IOC_RP_SUBMIT, &s));
		ASSERT_LT(last, s.tag);
		last = s.tag;
		tags[i] = s.tag;
	}
	/* Every one is answered (refused), into its own record. */
	for (i = 0; i < 64; i++) {
		uint8_t *rec = (i % 2 ? c2.p : self->cpl.p) + 32 * (i / 2);

		ASSERT_EQ(0, wait_cpl(rec, tags[i], &c, WAIT_S));
		ASSERT_EQ((uint32_t)PEACH2_ERR_RP_NOT_EXPORTED, c.status);
	}
	mbuf_free(fd2, &c2);
	close(fd2);
	ASSERT_EQ(0, do_unexport(self->fd, id));
}

/* ---- end to end: READ ------------------------------------------------------ */

static void read_check(struct __test_metadata *_metadata,
		       FIXTURE_DATA(rp) *self, uint32_t id, uint32_t key,
		       uint64_t soff, uint64_t doff, uint32_t len)
{
	struct peach2_rp_submit s;
	struct peach2_rp_cpl c;

	memset(self->dst.p, 0x5a, BUF_SIZE);
	s = rp_read(self->me, id, key, self->src_bus + soff, len,
		    self->dst.a.handle, doff, self->cpl.a.handle, 0);
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c)) {
		TH_LOG("READ soff %llu doff %llu len %u",
		       (unsigned long long)soff, (unsigned long long)doff, len);
	}
	ASSERT_EQ(0U, c.status) {
		TH_LOG("READ soff %llu len %u: status %u", (unsigned long long)soff,
		       len, c.status);
	}
	ASSERT_EQ(len, c.len);
	ASSERT_EQ(0ULL, c.reserved);
	ASSERT_EQ(s.tag, c.tag);
	ASSERT_EQ(0, memcmp(self->dst.p + doff, self->src.p + soff, len));
	/* Nothing around it was written. */
	for (uint64_t i = 0; i < doff; i++)
		ASSERT_EQ(0x5a, self->dst.p[i]);
	for (uint64_t i = doff + len; i < BUF_SIZE; i++)
		ASSERT_EQ(0x5a, self->dst.p[i]);
}

TEST_F(rp, read_self)
{
	long long served = rp_counter("served_read");
	long long bytes = rp_counter("read_bytes");
	uint32_t id, key;
	static const struct { uint64_t soff, doff; uint32_t len; } cases[] = {
		{ 0, 0, 4 },
		{ 0, 0, 8 },
		{ 0, 0, 64 },
		{ 16, 32, 4096 },
		{ 4, 20, 60 },
		{ 4092, 12, 8 },
		{ 100, 4, 4000 },
		{ 0, 0, BUF_SIZE },
		{ 12, 28, BUF_SIZE - 32 },
	};
	long long total = 0;
	unsigned int i;

	ASSERT_LE(0, served);
	ASSERT_LE((uint64_t)BUF_SIZE, self->src_left) {
		TH_LOG("64 KiB buffer in more than one chunk");
	}
	fill(self->src.p, BUF_SIZE, 42);
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, BUF_SIZE,
			       PEACH2_EXPORT_READ, &id, &key));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		read_check(_metadata, self, id, key, cases[i].soff,
			   cases[i].doff, cases[i].len);
		total += cases[i].len;
	}
	/* The exporter changes its memory: a get sees the new bytes. */
	fill(self->src.p, BUF_SIZE, 7);
	read_check(_metadata, self, id, key, 0, 0, 256);
	total += 256;
	ASSERT_EQ(served + (long long)i + 1, rp_counter("served_read"));
	ASSERT_EQ(bytes + total, rp_counter("read_bytes"));
	ASSERT_EQ(0, do_unexport(self->fd, id));
}

/* Random sizes and offsets inside a sub-range export. */
TEST_F(rp, read_random)
{
	uint32_t id, key, seed = 1234;
	uint64_t eoff = 4096 + 48, elen = BUF_SIZE - 8192;

	fill(self->src.p, BUF_SIZE, 99);
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, eoff, elen,
			       PEACH2_EXPORT_READ, &id, &key));
	for (int i = 0; i < 40; i++) {
		uint64_t soff, doff;
		uint32_t len;

		seed = seed * 1103515245u + 12345u;
		len = 4 * (1 + (seed >> 8) % (elen / 4 / 2));
		seed = seed * 1103515245u + 12345u;
		soff = eoff + 4 * ((seed >> 8) % ((elen - len) / 4 + 1));
		seed = seed * 1103515245u + 12345u;
		/* Same low 4 bits on both sides (the DMA restriction). */
		doff = (soff & 15) + 16 * ((seed >> 8) %
					   ((BUF_SIZE - len - 16) / 16));
		read_check(_metadata, self, id, key, soff, doff, len);
	}
	ASSERT_EQ(0, do_unexport(self->fd, id));
}

/* A READ that crosses chunks of the exported buffer, and the largest one. */
TEST_F(rp, read_across_chunks)
{
	struct peach2_rp_submit s;
	struct peach2_rp_cpl c;
	struct mbuf big, reply;
	uint64_t clen, rlen, soff, bus;
	uint32_t id, key, len;

	ASSERT_EQ(0, mbuf_alloc(self->fd, 8 * MIB, &big));
	ASSERT_EQ(0, bus_of(self->fd, &self->info, big.a.handle, 0, NULL,
			    &clen));
	ASSERT_LT(0ULL, clen);
	ASSERT_GT(8 * MIB, clen);
	fill(big.p, 8 * MIB, 5);
	ASSERT_EQ(0, do_export(self->fd, big.a.handle, 0, 8 * MIB,
			       PEACH2_EXPORT_READ, &id, &key));

	/* 8 KiB around the first chunk boundary, into a 64 KiB buffer. */
	soff = clen - 4096 + 16;
	ASSERT_EQ(0, bus_of(self->fd, &self->info, big.a.handle, soff, &bus,
			    NULL));
	len = 8192;
	memset(self->dst.p, 0, BUF_SIZE);
	s = rp_read(self->me, id, key, bus, len, self->dst.a.handle, 16,
		    self->cpl.a.handle, 64);
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status);
	ASSERT_EQ(len, c.len);
	ASSERT_EQ(0, memcmp(self->dst.p + 16, big.p + soff, len));

	/*
	 * 8 KiB into the first chunk boundary of a reply buffer: the driver
	 * lists the two runs (struct peach2_rp_piece), the target's card
	 * queues the list, its driver cuts the reply where each ends.
	 */
	ASSERT_EQ(0, bus_of(self->fd, &self->info, big.a.handle, 16, &bus,
			    NULL));
	memset(big.p + clen - 4096, 0, 2 * 8192);
	s = rp_read(self->me, id, key, bus, len, big.a.handle,
		    clen - 4096 + 16, self->cpl.a.handle, 32);
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status);
	ASSERT_EQ(len, c.len);
	ASSERT_EQ(0, memcmp(big.p + clen - 4096 + 16, big.p + 16, len));
	ASSERT_EQ(0, big.p[clen - 4096 + 15]);
	ASSERT_EQ(0, big.p[clen - 4096 + 16 + len]);

	/* PEACH2_RP_MAX_LEN, across chunks, into one chunk of the reply. */
	ASSERT_EQ(0, mbuf_alloc(self->fd, PEACH2_RP_MAX_LEN, &reply));
	ASSERT_EQ(0, bus_of(self->fd, &self->info, reply.a.handle, 0, NULL,
			    &rlen));
	len = rlen >= PEACH2_RP_MAX_LEN ? PEACH2_RP_MAX_LEN : (uint32_t)rlen;
	if (len != PEACH2_RP_MAX_LEN)
		TH_LOG("reply buffer's first chunk is %llu bytes: reading that much",
		       (unsigned long long)rlen);
	soff = 8 * MIB - len - 4096;
	ASSERT_EQ(0, bus_of(self->fd, &self->info, big.a.handle, soff, &bus,
			    NULL));
	s = rp_read(self->me, id, key, bus, len, reply.a.handle, 0,
		    self->cpl.a.handle, 96);
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status);
	ASSERT_EQ(len, c.len);
	ASSERT_EQ(0, memcmp(reply.p, big.p + soff, len));

	/* Past the end of the buffer (and so the export). */
	s = rp_read(self->me, id, key, bus, len, reply.a.handle, 0,
		    self->cpl.a.handle, 96);
	ASSERT_EQ(0, bus_of(self->fd, &self->info, big.a.handle,
			    8 * MIB - 4096, &bus, NULL));
	s.addr = bus;
	s.len = 8192;
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ((uint32_t)PEACH2_ERR_RP_RANGE, c.status);
	ASSERT_EQ(0U, c.len);

	ASSERT_EQ(0, do_unexport(self->fd, id));
	mbuf_free(self->fd, &reply);
	mbuf_free(self->fd, &big);
}

/* ---- end to end: atomics ----------------------------------------------------- */

TEST_F(rp, cas_faa)
{
	long long cas0 = rp_counter("served_cas");
	long long faa0 = rp_counter("served_faa");
	volatile uint64_t *v = (volatile uint64_t *)(self->src.p + 256);
	uint64_t addr = self->src_bus + 256;
	struct peach2_rp_submit s;
	struct peach2_rp_cpl c;
	uint32_t id, key;

	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, 4096,
			       PEACH2_EXPORT_ATOMIC, &id, &key));
	*v = 5;
	v[1] = 0x1111;

	/* CAS that succeeds. */
	s = rp_atomic(self->me, PEACH2_RP_OP_CAS, id, key, addr, 5, 9,
		      self->cpl.a.handle, 0);
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status);
	ASSERT_EQ(5ULL, c.value);
	ASSERT_EQ(9ULL, *v);

	/* CAS that fails: old value back, memory unchanged. */
	s = rp_atomic(self->me, PEACH2_RP_OP_CAS, id, key, addr, 5, 11,
		      self->cpl.a.handle, 32);
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status);
	ASSERT_EQ(9ULL, c.value);
	ASSERT_EQ(9ULL, *v);

	/* FAA. */
	s = rp_atomic(self->me, PEACH2_RP_OP_FAA, id, key, addr, 7, 0,
		      self->cpl.a.handle, 64);
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status);
	ASSERT_EQ(9ULL, c.value);
	ASSERT_EQ(16ULL, *v);

	/* FAA wraps modulo 2^64. */
	s = rp_atomic(self->me, PEACH2_RP_OP_FAA, id, key, addr,
		      UINT64_MAX - 15, 0, self->cpl.a.handle, 96);
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status);
	ASSERT_EQ(16ULL, c.value);
	ASSERT_EQ(0ULL, *v);

	/* Full 64-bit values. */
	*v = 0xfedcba9876543210ULL;
	s = rp_atomic(self->me, PEACH2_RP_OP_CAS, id, key, addr,
		      0xfedcba9876543210ULL, 0x0123456789abcdefULL,
		      self->cpl.a.handle, 128);
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status);
	ASSERT_EQ(0xfedcba9876543210ULL, c.value);
	ASSERT_EQ(0x0123456789abcdefULL, *v);

	/* The neighbour word was never touched. */
	ASSERT_EQ(0x1111ULL, v[1]);
	/* A CAS at the last 8 bytes of the export. */
	*(volatile uint64_t *)(self->src.p + 4088) = 3;
	s = rp_atomic(self->me, PEACH2_RP_OP_CAS, id, key,
		      self->src_bus + 4088, 3, 4, self->cpl.a.handle, 160);
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status);
	ASSERT_EQ(3ULL, c.value);
	ASSERT_EQ(4ULL, *(volatile uint64_t *)(self->src.p + 4088));

	ASSERT_EQ(cas0 + 4, rp_counter("served_cas"));
	ASSERT_EQ(faa0 + 2, rp_counter("served_faa"));
	ASSERT_EQ(0, do_unexport(self->fd, id));
}

/*
 * Many FAAs in flight at once (more than the ring holds): each is either
 * served (old values all distinct, memory = their count) or answered
 * RP_FULL by the card.
 */
TEST_F(rp, faa_flood)
{
	const unsigned int n = 1024;
	volatile uint64_t *v = (volatile uint64_t *)(self->src.p + 512);
	struct peach2_rp_submit s;
	struct peach2_rp_cpl c;
	uint64_t *tags, served = 0, full = 0;
	uint8_t *seen;
	uint32_t id, key;
	unsigned int i;

	tags = calloc(n, sizeof(*tags));
	seen = calloc(n, 1);
	ASSERT_NE(NULL, tags);
	ASSERT_NE(NULL, seen);
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, 4096,
			       PEACH2_EXPORT_ATOMIC, &id, &key));
	*v = 0;
	memset(self->cpl.p, 0, CPL_SIZE);
	for (i = 0; i < n; i++) {
		s = rp_atomic(self->me, PEACH2_RP_OP_FAA, id, key,
			      self->src_bus + 512, 1, 0, self->cpl.a.handle,
			      32 * i);
		ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
		tags[i] = s.tag;
	}
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, wait_cpl(self->cpl.p + 32 * i, tags[i], &c,
				      WAIT_S)) {
			TH_LOG("request %u not answered", i);
		}
		if (c.status == (uint32_t)PEACH2_ERR_RP_FULL) {
			full++;
			continue;
		}
		ASSERT_EQ(0U, c.status);
		ASSERT_GT(n, c.value);
		ASSERT_EQ(0, seen[c.value]);
		seen[c.value] = 1;
		served++;
	}
	ASSERT_EQ(served, *v);
	ASSERT_LT(0ULL, served);
	TH_LOG("%llu served, %llu refused RP_FULL", (unsigned long long)served,
	       (unsigned long long)full);
	ASSERT_EQ(0, do_unexport(self->fd, id));
	free(tags);
	free(seen);
}

/* ---- end to end: refusals --------------------------------------------------- */

/* Submit @s, expect the record to say @status with len 0 and no data. */
static void expect_refused(struct __test_metadata *_metadata,
			   FIXTURE_DATA(rp) *self, struct peach2_rp_submit *s,
			   uint32_t status, const char *what)
{
	struct peach2_rp_cpl c;

	memset(self->dst.p, 0x77, BUF_SIZE);
	ASSERT_EQ(0, rp_do(self->fd, s, self->cpl.p, &c)) {
		TH_LOG("%s: no answer", what);
	}
	ASSERT_EQ(status, c.status) {
		TH_LOG("%s: status %u, expected %u", what, c.status, status);
	}
	ASSERT_EQ(0U, c.len);
	ASSERT_EQ(0ULL, c.value);
	for (unsigned int i = 0; i < BUF_SIZE; i++) {
		ASSERT_EQ(0x77, self->dst.p[i]) {
			TH_LOG("%s: reply buffer written at %u", what, i);
		}
	}
}

TEST_F(rp, refusals)
{
	long long ne0 = rp_counter("refused_not_exported");
	long long rg0 = rp_counter("refused_range");
	long long al0 = rp_counter("refused_align");
	long long br0 = rp_counter("refused_bad_request");
	uint32_t dh = self->dst.a.handle, ch = self->cpl.a.handle;
	uint32_t id, key, aid, akey, gone_id, gone_key;
	uint64_t base = self->src_bus, ebase = base + 4096, dbus;
	struct peach2_rp_submit s;
	struct mbuf b;
	uint64_t bbus;

	fill(self->src.p, BUF_SIZE, 3);
	/* [4096, 8192) readable; [8192, 12288) atomics only. */
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 4096, 4096,
			       PEACH2_EXPORT_READ, &id, &key));
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 8192, 4096,
			       PEACH2_EXPORT_ATOMIC, &aid, &akey));

	/* The good request, for reference. */
	s = rp_read(self->me, id, key, ebase, 64, dh, 0, ch, 0);
	{
		struct peach2_rp_cpl c;

		ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
		ASSERT_EQ(0U, c.status);
	}

	/* Not exported: id 0, unknown id, wrong key, wrong permission. */
	s = rp_read(self->me, 0, key, ebase, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_NOT_EXPORTED, "id 0");
	s = rp_read(self->me, id + 100000, key, ebase, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_NOT_EXPORTED,
		       "unknown id");
	s = rp_read(self->me, id, key ^ 1, ebase, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_NOT_EXPORTED,
		       "wrong key");
	s = rp_read(self->me, id, key ^ 0x80000000u, ebase, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_NOT_EXPORTED,
		       "wrong key (high bit)");
	s = rp_read(self->me, aid, akey, base + 8192, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_NOT_EXPORTED,
		       "READ of an ATOMIC-only export");
	s = rp_atomic(self->me, PEACH2_RP_OP_CAS, id, key, ebase, 0, 1, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_NOT_EXPORTED,
		       "CAS on a READ-only export");
	s = rp_atomic(self->me, PEACH2_RP_OP_FAA, id, key, ebase, 1, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_NOT_EXPORTED,
		       "FAA on a READ-only export");

	/* Range. */
	s = rp_read(self->me, id, key, ebase + 4096, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_RANGE,
		       "just past the export");
	s = rp_read(self->me, id, key, ebase - 16, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_RANGE,
		       "starting before the export");
	s = rp_read(self->me, id, key, ebase + 4096 - 64, 128, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_RANGE,
		       "ending past the export");
	s = rp_read(self->me, id, key, base, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_RANGE,
		       "same buffer, outside the export");
	ASSERT_EQ(0, bus_of(self->fd, &self->info, dh, 0, &dbus, NULL));
	s = rp_read(self->me, id, key, dbus, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_RANGE,
		       "another buffer");
	s = rp_read(self->me, id, key, 0, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_RANGE, "address 0");
	s = rp_read(self->me, id, key, UINT64_MAX - 15, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_RANGE,
		       "address near 2^64");
	s = rp_atomic(self->me, PEACH2_RP_OP_FAA, aid, akey, base + 8192 + 4096,
		      1, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_RANGE,
		       "FAA past the export");

	/* Alignment. */
	s = rp_read(self->me, id, key, ebase + 4, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_DMA_ALIGN,
		       "READ with (addr ^ reply) & 15 == 4");
	s = rp_read(self->me, id, key, ebase, 64, dh, 8, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_DMA_ALIGN,
		       "READ with (addr ^ reply) & 15 == 8");
	s = rp_read(self->me, id, key, ebase + 2, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_DMA_ALIGN,
		       "READ at an unaligned address");
	s = rp_atomic(self->me, PEACH2_RP_OP_CAS, aid, akey, base + 8192 + 4, 0,
		      1, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_BAD_REQUEST,
		       "CAS at addr % 8 == 4");
	s = rp_atomic(self->me, PEACH2_RP_OP_FAA, aid, akey, base + 8192 + 1, 1,
		      0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_BAD_REQUEST,
		       "FAA at addr % 8 == 1");

	/* After UNEXPORT. */
	ASSERT_EQ(0, do_unexport(self->fd, id));
	s = rp_read(self->me, id, key, ebase, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_NOT_EXPORTED,
		       "after UNEXPORT");

	/* After FREE of the exported buffer (still mapped). */
	ASSERT_EQ(0, mbuf_alloc(self->fd, 8192, &b));
	ASSERT_EQ(0, bus_of(self->fd, &self->info, b.a.handle, 0, &bbus, NULL));
	ASSERT_EQ(0, do_export(self->fd, b.a.handle, 0, 8192,
			       PEACH2_EXPORT_READ, &gone_id, &gone_key));
	s = rp_read(self->me, gone_id, gone_key, bbus, 64, dh, 0, ch, 0);
	{
		struct peach2_rp_cpl c;

		ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
		ASSERT_EQ(0U, c.status);
	}
	ASSERT_EQ(0, do_free(self->fd, b.a.handle));
	s = rp_read(self->me, gone_id, gone_key, bbus, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_NOT_EXPORTED,
		       "after FREE (mapped)");
	munmap(b.p, b.a.size);
	s = rp_read(self->me, gone_id, gone_key, bbus, 64, dh, 0, ch, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_NOT_EXPORTED,
		       "after FREE and munmap");

	/* The counters saw it all. */
	ASSERT_EQ(ne0 + 10, rp_counter("refused_not_exported"));
	ASSERT_EQ(rg0 + 8, rp_counter("refused_range"));
	ASSERT_EQ(al0 + 3, rp_counter("refused_align"));
	ASSERT_EQ(br0 + 2, rp_counter("refused_bad_request"));
	ASSERT_EQ(0, do_unexport(self->fd, aid));
}

/*
 * Submit @n requests like @s at once (@vary_key 1: wrong keys, 2: unknown
 * ids), each to its own record from @slot0 on, and expect every answer to
 * be RP_NOT_EXPORTED.
 */
static void refused_batch(struct __test_metadata *_metadata,
			  FIXTURE_DATA(rp) *self, struct peach2_rp_submit *s,
			  int n, int slot0, int vary_key)
{
	uint64_t tags[128];
	struct peach2_rp_cpl c;
	uint32_t key = s->key, id = s->export_id;
	int i;

	ASSERT_GE(128, n);
	ASSERT_GE(CPL_SIZE / 32, slot0 + n);
	for (i = 0; i < n; i++) {
		if (vary_key == 1)
			s->key = key ^ (uint32_t)(i + 1);
		else if (vary_key == 2)
			s->export_id = id + 100000 + (uint32_t)i;
		s->cpl_offset = 32ULL * (slot0 + i);
		memset(self->cpl.p + s->cpl_offset, 0, 32);
		ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, s));
		tags[i] = s->tag;
	}
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, wait_cpl(self->cpl.p + 32ULL * (slot0 + i), tags[i],
				      &c, WAIT_S));
		ASSERT_EQ((uint32_t)PEACH2_ERR_RP_NOT_EXPORTED, c.status) {
			TH_LOG("request %d: status %u", i, c.status);
		}
	}
	s->key = key;
	s->export_id = id;
}

/*
 * Key guessing: more than 64 wrong keys from one node within 1 s and the
 * target refuses every request from that node for 1 s, unseen
 * (RP_NOT_EXPORTED, counted in refused_throttled), even one with the right
 * key. Afterwards the node is served again: the wrong requests left no
 * state behind (their seq is not recorded either). Unknown ids (an export
 * that is gone) and refusals with the right key (a permission the export
 * lacks) do not count.
 */
TEST_F(rp, key_guess_throttle)
{
	uint32_t dh = self->dst.a.handle, ch = self->cpl.a.handle;
	long long ne0, thr0, ne1, thr1;
	struct peach2_rp_submit s, good;
	struct peach2_rp_cpl c;
	uint32_t id, key;
	double t0, t1;

	fill(self->src.p, BUF_SIZE, 21);
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, BUF_SIZE,
			       PEACH2_EXPORT_READ, &id, &key));
	good = rp_read(self->me, id, key, self->src_bus, 256, dh, 0, ch, 0);
	/* Throttling of earlier tests (if any) is over after 1 s. */
	usleep(1100000);
	ASSERT_EQ(0, rp_do(self->fd, &good, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status);

	/* Right key, missing permission: 100 refusals, no throttle. */
	s = rp_atomic(self->me, PEACH2_RP_OP_FAA, id, key, self->src_bus, 1, 0,
		      ch, 0);
	refused_batch(_metadata, self, &s, 100, 1, 0);
	good.cpl_offset = 32 * 101;
	ASSERT_EQ(0, rp_do(self->fd, &good, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status) {
		TH_LOG("permission refusals throttled the node: status %u",
		       c.status);
	}

	/* 100 unknown ids: no throttle either. */
	s = rp_read(self->me, id, key, self->src_bus, 256, dh, 0, ch, 0);
	refused_batch(_metadata, self, &s, 100, 1, 2);
	ASSERT_EQ(0, rp_do(self->fd, &good, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status) {
		TH_LOG("unknown ids throttled the node: status %u", c.status);
	}

	/* 100 wrong keys, all at once. */
	ne0 = rp_counter("refused_not_exported");
	thr0 = rp_counter("refused_throttled");
	ASSERT_LE(0, thr0);
	t0 = now_s();
	refused_batch(_metadata, self, &s, 100, 1, 1);
	/* The right key within the same second: refused unseen. */
	good.cpl_offset = 32 * 101;
	memset(self->dst.p, 0x77, 256);
	ASSERT_EQ(0, rp_do(self->fd, &good, self->cpl.p, &c));
	t1 = now_s();
	ASSERT_EQ((uint32_t)PEACH2_ERR_RP_NOT_EXPORTED, c.status) {
		TH_LOG("right key while throttled: status %u (after %.3f s)",
		       c.status, t1 - t0);
	}
	ASSERT_EQ(0U, c.len);
	ASSERT_EQ(0x77, self->dst.p[0]);
	ne1 = rp_counter("refused_not_exported");
	thr1 = rp_counter("refused_throttled");
	ASSERT_LT(thr0, thr1);
	/* Every refusal is counted once: looked up, or throttled. */
	ASSERT_EQ(101, (ne1 - ne0) + (thr1 - thr0));
	if (t1 - t0 < 0.9) {
		/* 65 looked up (the 65th trips it), 35 + 1 unseen. */
		ASSERT_EQ(ne0 + 65, ne1);
		ASSERT_EQ(thr0 + 36, thr1);
	}

	/* After the throttle's second, the node is served again. */
	usleep(1200000);
	good.cpl_offset = 32 * 102;
	memset(self->dst.p, 0, 256);
	ASSERT_EQ(0, rp_do(self->fd, &good, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status);
	ASSERT_EQ(256U, c.len);
	ASSERT_EQ(0, memcmp(self->dst.p, self->src.p, 256));
	ASSERT_EQ(thr1, rp_counter("refused_throttled"));
	ASSERT_EQ(0, do_unexport(self->fd, id));
}

/* An exporter's close() ends its exports for requesters. */
TEST_F(rp, close_revokes_for_requesters)
{
	struct peach2_rp_submit s;
	struct peach2_rp_cpl c;
	uint32_t id, key;
	uint64_t bus;
	struct mbuf b;
	int fd2;

	fd2 = open(dev_path(), O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, mbuf_alloc(fd2, 4096, &b));
	ASSERT_EQ(0, bus_of(fd2, &self->info, b.a.handle, 0, &bus, NULL));
	memset(b.p, 0xab, 4096);
	ASSERT_EQ(0, do_export(fd2, b.a.handle, 0, 4096, PEACH2_EXPORT_READ,
			       &id, &key));
	s = rp_read(self->me, id, key, bus, 128, self->dst.a.handle, 0,
		    self->cpl.a.handle, 0);
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status);
	ASSERT_EQ(0, memcmp(self->dst.p, b.p, 128));
	ASSERT_EQ(0, munmap(b.p, 4096));	/* else the mapping holds the file */
	ASSERT_EQ(0, close(fd2));
	s = rp_read(self->me, id, key, bus, 128, self->dst.a.handle, 0,
		    self->cpl.a.handle, 0);
	expect_refused(_metadata, self, &s, PEACH2_ERR_RP_NOT_EXPORTED,
		       "after the exporter's close()");
}

/* ---- unbind ----------------------------------------------------------------- */

/*
 * Unbind the driver with a flood of requests to this node queued and in
 * flight (remove() disables the ring, finishes the reply in flight and
 * answers the rest RP_OFF), then bind it again: it must come back with an
 * empty export table and serve again. The records cannot be checked after
 * the unbind (remove() zaps every mapping of the card): answers from the
 * drain are seen only by other nodes. Opt-in, as in the other suites.
 */
/*
 * The card's fault injection (sysfs fault_proxy_stall, root only) stalls the
 * next reply on the proxy channel: the driver must abort it after
 * rp_timeout_ms and still answer the requester, with DMA_ABORTED, and serve
 * the next request normally.
 */
TEST_F_TIMEOUT(rp, stalled_reply_is_aborted_and_answered, 60)
{
	const char *tmo = "/sys/module/peach2/parameters/rp_timeout_ms";
	long long errs = rp_counter("reply_errors");
	char fault[PATH_MAX], old_ms[32] = "", left[32] = "";
	struct peach2_rp_submit s;
	struct peach2_rp_cpl c;
	uint32_t id, key;

	ASSERT_LE(0, errs);
	class_attr(fault, sizeof(fault), "fault_proxy_stall");
	ASSERT_LT(0, read_sysfs(tmo, old_ms, sizeof(old_ms)));
	old_ms[strcspn(old_ms, "\n")] = '\0';
	ASSERT_EQ(0, write_sysfs(tmo, "200"));

	fill(self->src.p, BUF_SIZE, 5);
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, BUF_SIZE,
			       PEACH2_EXPORT_READ, &id, &key));
	ASSERT_EQ(0, write_sysfs(fault, "1")) TH_LOG("%s (needs root)", fault);
	s = rp_read(self->me, id, key, self->src_bus, 4096, self->dst.a.handle,
		    0, self->cpl.a.handle, 0);
	EXPECT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	EXPECT_EQ((uint32_t)PEACH2_ERR_DMA_ABORTED, c.status);
	EXPECT_EQ(0U, c.len);
	EXPECT_LT(0, read_sysfs(fault, left, sizeof(left)));
	EXPECT_EQ(0, strcmp(left, "0\n"));
	EXPECT_EQ(errs + 1, rp_counter("reply_errors"));

	/* The proxy goes on: the next request is served. */
	memset(self->dst.p, 0, 4096);
	s = rp_read(self->me, id, key, self->src_bus, 4096, self->dst.a.handle,
		    0, self->cpl.a.handle, 32);
	EXPECT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	EXPECT_EQ(0U, c.status);
	EXPECT_EQ(4096U, c.len);
	EXPECT_EQ(0, memcmp(self->src.p, self->dst.p, 4096));

	write_sysfs(fault, "0");
	write_sysfs(tmo, old_ms);
	ASSERT_EQ(0, do_unexport(self->fd, id));
}

/*
 * A lost wake-up (sysfs fault_rp_int_lost, root only: the card withholds
 * the next request interrupt, and its status bit then keeps back every
 * later one until the driver clears it): the request sits in the ring with
 * the serving thread asleep, and only the driver's watch (rp_watch_ms)
 * finds it, wakes the thread and counts it. Without the watch it would
 * wait for good, and so would every request after it.
 */
TEST_F_TIMEOUT(rp, lost_request_interrupt_is_made_up_by_the_watch, 60)
{
	const char *period = "/sys/module/peach2/parameters/rp_watch_ms";
	long long wakeups = rp_counter("watch_wakeups");
	char fault[PATH_MAX], ms[32] = "", left[32] = "";
	struct peach2_rp_submit s;
	struct peach2_rp_cpl c;
	double t0, took;
	uint32_t id, key;
	int rc;

	ASSERT_LE(0, wakeups);
	ASSERT_LT(0, read_sysfs(period, ms, sizeof(ms)));
	ASSERT_LT(0, atoi(ms)) TH_LOG("rp_watch_ms is 0: the watch is off");
	class_attr(fault, sizeof(fault), "fault_rp_int_lost");

	fill(self->src.p, BUF_SIZE, 31);
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, BUF_SIZE,
			       PEACH2_EXPORT_READ, &id, &key));
	/* Past any look the last request left running (rp_poll_us). */
	usleep(20000);
	ASSERT_EQ(0, write_sysfs(fault, "1")) TH_LOG("%s (needs root)", fault);
	s = rp_read(self->me, id, key, self->src_bus, 4096, self->dst.a.handle,
		    0, self->cpl.a.handle, 0);
	memset(self->cpl.p, 0, sizeof(c));
	t0 = now_s();
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	rc = wait_cpl(self->cpl.p, s.tag, &c, 10 * atoi(ms) / 1000.0 + 2);
	took = now_s() - t0;
	write_sysfs(fault, "0");
	ASSERT_EQ(0, rc) TH_LOG("not answered after %.1f s", took);
	EXPECT_EQ(0U, c.status);
	EXPECT_EQ(4096U, c.len);
	EXPECT_EQ(0, memcmp(self->src.p, self->dst.p, 4096));
	/* The card withheld its message: the watch answered it. */
	EXPECT_LT(0, read_sysfs(fault, left, sizeof(left)));
	EXPECT_EQ(0, strcmp(left, "0\n"));
	EXPECT_LE(wakeups + 1, rp_counter("watch_wakeups"));
	EXPECT_LE(0.9 * atoi(ms) / 1000.0, took);

	/* The proxy goes on by interrupt: the next request is served at once. */
	s = rp_read(self->me, id, key, self->src_bus + 4096, 4096,
		    self->dst.a.handle, 4096, self->cpl.a.handle, 32);
	t0 = now_s();
	EXPECT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	EXPECT_EQ(0U, c.status);
	EXPECT_GT(atoi(ms) / 1000.0, now_s() - t0);
	EXPECT_EQ(0, memcmp(self->src.p + 4096, self->dst.p + 4096, 4096));
	ASSERT_EQ(0, do_unexport(self->fd, id));
}

/*
 * Requests that queue while the proxy channel is busy are answered in
 * chains of many replies (sysfs reply_runs, replies, replies_max): a
 * stalled reply holds the thread for rp_timeout_ms while 60 READs, then a
 * READ, an FAA and a READ of one word queue behind it. Each is answered
 * once, with its own data; the FAA is not applied before the READ queued
 * ahead of it has read the word.
 */
TEST_F_TIMEOUT(rp, queued_requests_share_chains, 60)
{
	const char *tmo = "/sys/module/peach2/parameters/rp_timeout_ms";
	/*
	 * 60: after the stalled one, the thread takes 32 READs, then 28, the
	 * READ of the word and the FAA: there the FAA must wait for the next
	 * chain.
	 */
	const unsigned int n = 60, len = 1024;
	volatile uint64_t *word = (volatile uint64_t *)(self->src.p + BUF_SIZE - 64);
	long long runs = rp_counter("reply_runs");
	long long replies = rp_counter("replies");
	long long served = rp_counter("served_read");
	long long errs = rp_counter("reply_errors");
	char fault[PATH_MAX], old_ms[32] = "";
	struct peach2_rp_submit s, tail[3];
	struct peach2_rp_cpl c;
	uint64_t tags[60], soff[60], stalled;
	uint32_t id, key;
	unsigned int i;

	ASSERT_LE(0, runs);
	ASSERT_LE(0, replies);
	ASSERT_LE(0, rp_counter("replies_max"));
	ASSERT_LE((uint64_t)BUF_SIZE, self->src_left);
	class_attr(fault, sizeof(fault), "fault_proxy_stall");
	ASSERT_LT(0, read_sysfs(tmo, old_ms, sizeof(old_ms)));
	old_ms[strcspn(old_ms, "\n")] = '\0';
	ASSERT_EQ(0, write_sysfs(tmo, "1000"));

	fill(self->src.p, BUF_SIZE, 23);
	*word = 1000;
	memset(self->dst.p, 0, BUF_SIZE);
	memset(self->cpl.p, 0, CPL_SIZE);
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, BUF_SIZE,
			       PEACH2_EXPORT_READ | PEACH2_EXPORT_ATOMIC, &id,
			       &key));
	ASSERT_EQ(0, write_sysfs(fault, "1")) TH_LOG("%s (needs root)", fault);
	s = rp_read(self->me, id, key, self->src_bus, 64, self->dst.a.handle,
		    0, self->cpl.a.handle, 0);
	ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	stalled = s.tag;
	for (i = 0; i < n; i++) {
		soff[i] = (i * 977 * 16) % (BUF_SIZE - 64 - len);
		tags[i] = 0;
		s = rp_read(self->me, id, key, self->src_bus + soff[i], len,
			    self->dst.a.handle, 1024 + i * len, self->cpl.a.handle,
			    32 * (i + 1));
		ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
		tags[i] = s.tag;
	}
	tail[0] = rp_read(self->me, id, key, self->src_bus + BUF_SIZE - 64, 8,
			  self->dst.a.handle, BUF_SIZE - 64, self->cpl.a.handle,
			  32 * (n + 1));
	tail[1] = rp_atomic(self->me, PEACH2_RP_OP_FAA, id, key,
			    self->src_bus + BUF_SIZE - 64, 1, 0,
			    self->cpl.a.handle, 32 * (n + 2));
	tail[2] = rp_read(self->me, id, key, self->src_bus + BUF_SIZE - 64, 8,
			  self->dst.a.handle, BUF_SIZE - 48, self->cpl.a.handle,
			  32 * (n + 3));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &tail[i]));

	/* The stalled one: aborted and answered. */
	ASSERT_EQ(0, wait_cpl(self->cpl.p, stalled, &c, WAIT_S));
	ASSERT_EQ((uint32_t)PEACH2_ERR_DMA_ABORTED, c.status);
	ASSERT_EQ(0U, c.len);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, wait_cpl(self->cpl.p + 32 * (i + 1), tags[i], &c,
				      WAIT_S)) TH_LOG("READ %u not answered", i);
		ASSERT_EQ(0U, c.status) TH_LOG("READ %u: status %u", i, c.status);
		ASSERT_EQ(len, c.len);
		ASSERT_EQ(0, memcmp(self->dst.p + 1024 + i * len,
				    self->src.p + soff[i], len)) TH_LOG("READ %u", i);
	}
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, wait_cpl(self->cpl.p + 32 * (n + 1 + i), tail[i].tag,
				      &c, WAIT_S));
		ASSERT_EQ(0U, c.status);
		if (i == 1)
			ASSERT_EQ(1000ULL, c.value);
	}
	/* In queue order: the READ before the FAA saw the old value. */
	ASSERT_EQ(1000ULL, *(uint64_t *)(self->dst.p + BUF_SIZE - 64));
	ASSERT_EQ(1001ULL, *(uint64_t *)(self->dst.p + BUF_SIZE - 48));
	ASSERT_EQ(1001ULL, *word);

	/* Each answered once: the stalled one by its error record. */
	ASSERT_EQ(errs + 1, rp_counter("reply_errors"));
	ASSERT_EQ(served + n + 2, rp_counter("served_read"));
	ASSERT_EQ(replies + 1 + n + 3, rp_counter("replies"));
	/*
	 * The stalled run, its error record, then the queue at most
	 * PEACH2_RP_BUDGET (32) at a time: far fewer runs than requests.
	 */
	TH_LOG("%lld requests answered in %lld chain runs (most in one: %lld)",
	       rp_counter("replies") - replies, rp_counter("reply_runs") - runs,
	       rp_counter("replies_max"));
	ASSERT_GE(runs + 8, rp_counter("reply_runs"));
	ASSERT_LE(32, rp_counter("replies_max"));

	write_sysfs(fault, "0");
	write_sysfs(tmo, old_ms);
	ASSERT_EQ(0, do_unexport(self->fd, id));
}

TEST_F(rp, unbind_with_requests_queued)
{
	uint32_t id, key, bid, bkey;
	struct peach2_rp_submit s;
	struct peach2_rp_cpl c;
	uint64_t rlen, bbus;
	struct mbuf big, reply;
	char pci[64];
	double end;
	int fd2, i;

	SKIP_UNLESS_UNBIND_OPTED_IN();
	ASSERT_EQ(0, card_pci_addr(pci, sizeof(pci)));

	/* Big READs first keep the serving thread busy; the ring fills. */
	ASSERT_EQ(0, mbuf_alloc(self->fd, 8 * MIB, &big));
	ASSERT_EQ(0, mbuf_alloc(self->fd, PEACH2_RP_MAX_LEN, &reply));
	ASSERT_EQ(0, bus_of(self->fd, &self->info, reply.a.handle, 0, NULL,
			    &rlen));
	ASSERT_LT(0ULL, rlen);
	ASSERT_EQ(0, do_export(self->fd, big.a.handle, 0, 8 * MIB,
			       PEACH2_EXPORT_READ, &bid, &bkey));
	ASSERT_EQ(0, bus_of(self->fd, &self->info, big.a.handle, 0, &bbus,
			    NULL));
	for (i = 0; i < 8; i++) {
		s = rp_read(self->me, bid, bkey, bbus, (uint32_t)rlen,
			    reply.a.handle, 0, self->cpl.a.handle,
			    CPL_SIZE - 32 * (i + 1));
		ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	}
	fill(self->src.p, BUF_SIZE, 11);
	ASSERT_EQ(0, do_export(self->fd, self->src.a.handle, 0, BUF_SIZE,
			       PEACH2_EXPORT_READ, &id, &key));
	for (i = 0; i < 64; i++) {
		s = rp_read(self->me, id, key, self->src_bus + 16 * (i % 64),
			    BUF_SIZE / 2, self->dst.a.handle, 16 * (i % 64),
			    self->cpl.a.handle, 32 * i);
		ASSERT_EQ(0, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	}
	/* At once: the thread is still busy with the big ones. */
	ASSERT_EQ(0, write_sysfs(SYSFS_DRIVER "/unbind", pci));

	/* Dead card: ENODEV, also for the proxy's ioctls. */
	ASSERT_EQ(ENODEV, xioctl(self->fd, PEACH2_IOC_RP_SUBMIT, &s));
	ASSERT_EQ(ENODEV, do_export(self->fd, self->src.a.handle, 0, 4096,
				    PEACH2_EXPORT_READ, NULL, NULL));
	ASSERT_EQ(ENODEV, do_unexport(self->fd, id));

	ASSERT_EQ(0, write_sysfs(SYSFS_DRIVER "/bind", pci));
	end = now_s() + 10;
	while ((fd2 = open(dev_path(), O_RDWR | O_CLOEXEC)) < 0 &&
	       now_s() < end)
		usleep(50000);
	ASSERT_LE(0, fd2);

	/* Our old file, buffers and exports are gone with the old binding. */
	mbuf_free(self->fd, &big);
	mbuf_free(self->fd, &reply);
	mbuf_free(self->fd, &self->src);
	mbuf_free(self->fd, &self->dst);
	mbuf_free(self->fd, &self->cpl);
	close(self->fd);
	self->fd = fd2;
	ASSERT_EQ(0, xioctl(fd2, PEACH2_IOC_INFO, &self->info));
	ASSERT_EQ(0, rp_counter("exports"));
	ASSERT_EQ(0, rp_counter("reply_errors"));

	/* It serves again (seq keeps increasing across the reload). */
	ASSERT_EQ(0, mbuf_alloc(fd2, BUF_SIZE, &self->src));
	ASSERT_EQ(0, mbuf_alloc(fd2, BUF_SIZE, &self->dst));
	ASSERT_EQ(0, mbuf_alloc(fd2, CPL_SIZE, &self->cpl));
	ASSERT_EQ(0, bus_of(fd2, &self->info, self->src.a.handle, 0,
			    &self->src_bus, NULL));
	fill(self->src.p, BUF_SIZE, 12);
	ASSERT_EQ(0, do_export(fd2, self->src.a.handle, 0, BUF_SIZE,
			       PEACH2_EXPORT_READ | PEACH2_EXPORT_ATOMIC, &id,
			       &key));
	s = rp_read(self->me, id, key, self->src_bus, 4096, self->dst.a.handle,
		    0, self->cpl.a.handle, 0);
	ASSERT_EQ(0, rp_do(fd2, &s, self->cpl.p, &c));
	ASSERT_EQ(0U, c.status);
	ASSERT_EQ(0, memcmp(self->dst.p, self->src.p, 4096));
	ASSERT_EQ(0, do_unexport(fd2, id));
}

/* ---- sysfs ------------------------------------------------------------------ */

TEST_F(rp, sysfs_rproxy)
{
	static const char * const names[] = {
		"ring_entries", "served_read", "served_cas", "served_faa",
		"read_bytes", "refused_bad_request", "refused_not_exported",
		"refused_range", "refused_align", "refused_replay",
		"refused_throttled", "reply_errors", "ring_errors",
		"exports", "submitted", "reply_runs", "replies",
		"replies_max", "polled", "poll_us", "looks_yielded",
		"irq_runs", "served_ms_ago", "int_masked",
		"thread_step", "thread_step_ms", "watch_wakeups",
		"watch_reports", "card_tx_sent",
		"card_rx_queued", "card_rx_refused", "card_rx_dropped",
		"card_ring_pending", "card_int_pending",
	};
	long long ring, sub0, sent0;
	struct peach2_rp_submit s;
	struct peach2_rp_cpl c;

	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ASSERT_LE(0, rp_counter(names[i])) {
			TH_LOG("no `%s` line in sysfs rproxy", names[i]);
		}
	}
	ring = rp_counter("ring_entries");
	ASSERT_LE(1, ring);
	ASSERT_GE(PEACH2_RP_RING_MAX, ring);
	ASSERT_EQ(0, ring & (ring - 1));
	/* reply_errors: stalled_reply_is_aborted_and_answered counts it exactly. */
	ASSERT_EQ(0, rp_counter("ring_errors"));

	sub0 = rp_counter("submitted");
	sent0 = rp_counter("card_tx_sent");
	s = rp_read(self->me, 0, 0, self->src_bus, 64, self->dst.a.handle, 0,
		    self->cpl.a.handle, 0);
	ASSERT_EQ(0, rp_do(self->fd, &s, self->cpl.p, &c));
	ASSERT_EQ(sub0 + 1, rp_counter("submitted"));
	ASSERT_EQ(sent0 + 1, rp_counter("card_tx_sent"));
}

TEST_HARNESS_MAIN
