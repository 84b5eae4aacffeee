/* SPDX-License-Identifier: MIT */
/*
 * The fake driver's read proxy (EXPORT, UNEXPORT, RP_SUBMIT). Exports live
 * in a shared file per node ($TCA_FAKE_DIR/exports<n>), so another process
 * (node) can serve a request against them: the *requester's* fake answers
 * it, inside the ioctl (or, with a delay set, from a thread), by copying
 * from the target's memory (every node's memory is in the window mapping)
 * to the reply buffer and writing the completion record, its tag last.
 * Checks as the design says: export id, key, the operation allowed, the
 * exporter alive (its pid), the range inside the export, the DMA alignment
 * of each run of the reply (spanning up to PEACH2_RP_MAX_PIECES chunks)
 * and addr, CAS/FAA 8 bytes 8-aligned.
 *
 * Test controls (called through weak symbols by the tests, which run with
 * this library preloaded): fake_rp_control("full", n) answers the next n
 * requests RP_FULL as a full ring would; ("drop", n) never answers the next
 * n; ("delay_us", d) answers after d µs from a thread; ("eagain", n) makes
 * the next n RP_SUBMITs return -EAGAIN (link send queue full: nothing sent,
 * not logged); ("efault", n) makes the next n return -EFAULT after sending
 * (answered and logged, as if copying the tag back failed); ("reset", 0).
 * fake_rp_log() returns the submissions seen (the last FAKE_RP_LOG).
 * What it cannot model: replay checks, timing, the ring, interrupts.
 */
#define _GNU_SOURCE
#include "fake_peach2.h"

#include <peach2/peach2_hw.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FAKE_EXPORTS 64
#define FAKE_RP_LOG  4096

struct fake_export {
	uint32_t id;            /* 0: free; written last */
	uint32_t key;
	uint32_t flags;
	int32_t pid;            /* exporter */
	uint32_t buf;           /* exporter's buffer handle */
	uint32_t nr;            /* chunks of the buffer */
	uint64_t offset, len;   /* exported range of the buffer */
	struct peach2_chunk chunk[MAX_PIECES];
};

struct fake_export_table {
	uint32_t next_id;
	uint32_t pad;
	struct fake_export e[FAKE_EXPORTS];
};

static struct fake_export_table *tables[PEACH2_MAX_NODES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t last_seq;
static long ctl_full, ctl_drop, ctl_delay_us, ctl_eagain, ctl_efault, ctl_unreach;
static struct peach2_rp_submit rp_log[FAKE_RP_LOG];
static unsigned rp_log_n;

static struct fake_export_table *table(uint32_t node)
{
	if (node >= PEACH2_MAX_NODES)
		return NULL;
	if (!tables[node])
		tables[node] = fake_shared_table("exports", node, sizeof(struct fake_export_table));
	return tables[node];
}

int fake_rp_export(uint32_t buf, uint32_t flags, uint64_t offset, uint64_t len, uint32_t *id,
		   uint32_t *key)
{
	struct fake_export_table *t = table(node_id);
	if (!t)
		return -EIO;
	if (!flags || (flags & ~PEACH2_EXPORT_FLAGS_ALL))
		return -EINVAL;
	if (!buf || buf > nr_allocs)
		return -ENOENT;
	const struct fake_alloc *a = &allocs[buf - 1];
	uint64_t end;
	if (!len || __builtin_add_overflow(offset, len, &end) || end > a->size)
		return -EINVAL;
	for (unsigned i = 0; i < FAKE_EXPORTS; ++i) {
		struct fake_export *e = &t->e[i];
		if (e->id && fake_alive(e->pid))
			continue;
		memset(e, 0, sizeof *e);
		e->key = (uint32_t)random() ^ (uint32_t)getpid() << 8;
		e->flags = flags;
		e->pid = getpid();
		e->buf = buf;
		e->nr = a->nr;
		e->offset = offset;
		e->len = len;
		memcpy(e->chunk, a->chunk, a->nr * sizeof a->chunk[0]);
		uint32_t n = __atomic_add_fetch(&t->next_id, 1, __ATOMIC_SEQ_CST);
		if (!n)
			n = __atomic_add_fetch(&t->next_id, 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&e->id, n, __ATOMIC_RELEASE);
		*id = n;
		*key = e->key;
		return 0;
	}
	return -ENOSPC;
}

static int do_export(struct peach2_export *x)
{
	if (x->reserved[0] || x->reserved[1])
		return -EINVAL;
	return fake_rp_export(x->handle, x->flags, x->offset, x->len, &x->export_id, &x->key);
}

static int do_unexport(const struct peach2_unexport *u)
{
	struct fake_export_table *t = table(node_id);
	if (!t || u->flags)
		return -EINVAL;
	for (unsigned i = 0; i < FAKE_EXPORTS; ++i)
		if (u->export_id && t->e[i].id == u->export_id && t->e[i].pid == getpid()) {
			__atomic_store_n(&t->e[i].id, 0, __ATOMIC_RELEASE);
			return 0;
		}
	return -ENOENT;
}

void fake_rp_revoke(uint32_t buf)
{
	struct fake_export_table *t = tables[node_id];
	for (unsigned i = 0; t && i < FAKE_EXPORTS; ++i)
		if (t->e[i].id && t->e[i].pid == getpid() && (!buf || t->e[i].buf == buf))
			__atomic_store_n(&t->e[i].id, 0, __ATOMIC_RELEASE);
}

/* The chunk of @a holding byte @off, or NULL. */
static const struct peach2_chunk *chunk_of(const struct peach2_chunk *c, uint32_t nr, uint64_t off)
{
	for (uint32_t k = 0; k < nr; ++k)
		if (off >= c[k].offset && off < c[k].offset + c[k].len)
			return &c[k];
	return NULL;
}

/* Byte @off of a buffer with chunks @c, in the window mapping. */
unsigned char *fake_byte_at(const struct peach2_chunk *c, uint32_t nr, uint64_t off, uint64_t *room)
{
	const struct peach2_chunk *k = chunk_of(c, nr, off);
	if (!k)
		return NULL;
	if (room)
		*room = k->offset + k->len - off;
	return fake_window + k->global_addr + (off - k->offset);
}

/* The target's answer (status) to request @s from this node; copies READ data. */
static uint32_t serve(const struct peach2_rp_submit *s, uint64_t *value)
{
	struct fake_export_table *t = table(s->node);
	const struct fake_export *e = NULL;
	for (unsigned i = 0; t && i < FAKE_EXPORTS; ++i)
		if (s->export_id && __atomic_load_n(&t->e[i].id, __ATOMIC_ACQUIRE) == s->export_id)
			e = &t->e[i];
	const uint32_t need = s->op == PEACH2_RP_OP_READ ? PEACH2_EXPORT_READ : PEACH2_EXPORT_ATOMIC;
	if (!e || e->key != s->key || !(e->flags & need) || !fake_alive(e->pid))
		return PEACH2_ERR_RP_NOT_EXPORTED;
	/* addr -> buffer offset through the chunk that holds it */
	uint64_t boff = ~0ull;
	for (uint32_t k = 0; k < e->nr; ++k) {
		uint64_t bus = PEACH2_ADDR_OFFSET(e->chunk[k].global_addr);
		if (s->addr >= bus && s->addr < bus + e->chunk[k].len)
			boff = e->chunk[k].offset + (s->addr - bus);
	}
	if (boff == ~0ull || boff < e->offset || boff + s->len > e->offset + e->len)
		return PEACH2_ERR_RP_RANGE;
	if (s->op != PEACH2_RP_OP_READ) {
		if (s->addr % 8)
			return PEACH2_ERR_RP_BAD_REQUEST;
		uint64_t *w = (uint64_t *)fake_byte_at(e->chunk, e->nr, boff, NULL);
		if (s->op == PEACH2_RP_OP_CAS) {
			uint64_t expect = s->operand[0];
			__atomic_compare_exchange_n(w, &expect, s->operand[1], 0, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
			*value = expect;
		} else {
			*value = __atomic_fetch_add(w, s->operand[0], __ATOMIC_SEQ_CST);
		}
		return 0;
	}
	/* Each run of the reply (a piece of its list) is a DMA of its own. */
	const struct fake_alloc *r = &allocs[s->reply_handle - 1];
	for (uint64_t done = 0; done < s->len;) {
		const struct peach2_chunk *rc = chunk_of(r->chunk, r->nr, s->reply_offset + done);
		const uint64_t run = rc->offset + rc->len - (s->reply_offset + done);
		const uint64_t n = s->len - done < run ? s->len - done : run;
		const uint64_t bus = PEACH2_ADDR_OFFSET(rc->global_addr) +
				     (s->reply_offset + done - rc->offset);
		if (peach2_dma_align_rule(s->addr + done, bus, n))
			return PEACH2_ERR_DMA_ALIGN;
		done += n;
	}
	for (uint64_t done = 0; done < s->len;) {
		uint64_t room = 0, dst_room = 0;
		const unsigned char *src = fake_byte_at(e->chunk, e->nr, boff + done, &room);
		unsigned char *dst = fake_byte_at(r->chunk, r->nr, s->reply_offset + done, &dst_room);
		uint64_t n = s->len - done < room ? s->len - done : room;
		n = n < dst_room ? n : dst_room;
		memcpy(dst, src, n);
		done += n;
	}
	return 0;
}

static void complete(const struct peach2_rp_submit *s, uint32_t status, uint64_t value)
{
	const struct fake_alloc *c = &allocs[s->cpl_handle - 1];
	struct peach2_rp_cpl *rec = (struct peach2_rp_cpl *)fake_byte_at(c->chunk, c->nr, s->cpl_offset, NULL);
	struct peach2_rp_cpl head = {0};
	head.value = value;
	head.status = status;
	head.len = status == 0 && (s->op == PEACH2_RP_OP_READ || s->op == PEACH2_RP_OP_LOOKUP) ? s->len : 0;
	memcpy(rec, &head, 24);
	__atomic_store_n(&rec->tag, s->tag, __ATOMIC_RELEASE);
}

static void answer(const struct peach2_rp_submit *s, int full)
{
	uint64_t value = 0;
	uint32_t status = full ? PEACH2_ERR_RP_FULL
			  : s->op == PEACH2_RP_OP_LOOKUP ? fake_names_lookup(s) : serve(s, &value);
	complete(s, status, value);
}

struct delayed {
	struct peach2_rp_submit s;
	long delay_us;
	int full;
};

static void *delayed_answer(void *arg)
{
	struct delayed *d = arg;
	struct timespec ts = {d->delay_us / 1000000, (d->delay_us % 1000000) * 1000};
	nanosleep(&ts, NULL);
	answer(&d->s, d->full);
	free(d);
	return NULL;
}

/*
 * Inside buffer @h, in at most @max_runs of its chunks: 0 or -errno (the
 * driver lists a READ's reply runs, PEACH2_RP_MAX_PIECES at most).
 */
static int in_runs(uint32_t h, uint64_t off, uint64_t len, uint32_t max_runs)
{
	if (!h || h > nr_allocs)
		return -ENOENT;
	const struct fake_alloc *a = &allocs[h - 1];
	uint32_t runs = 0;
	for (uint64_t done = 0; done < len; ++runs) {
		const struct peach2_chunk *c = chunk_of(a->chunk, a->nr, off + done);
		if (!c || runs == max_runs)
			return -EINVAL;
		done += c->offset + c->len - (off + done);
	}
	return 0;
}

/* In one chunk of buffer @h: 0 or -errno. */
static int in_chunk(uint32_t h, uint64_t off, uint64_t len)
{
	return in_runs(h, off, len, 1);
}

static int do_submit(struct peach2_rp_submit *s)
{
	if (s->flags || s->reserved[0] || s->reserved[1])
		return -EINVAL;
	if (s->op == PEACH2_RP_OP_READ) {
		if (s->len < 4 || s->len > PEACH2_RP_MAX_LEN || s->len % 4)
			return -EINVAL;
		int rc = in_runs(s->reply_handle, s->reply_offset, s->len, PEACH2_RP_MAX_PIECES);
		if (rc)
			return rc;
	} else if (s->op == PEACH2_RP_OP_LOOKUP) {
		if (s->len < PEACH2_LOOKUP_MIN || s->len > PEACH2_LOOKUP_MAX || s->len % 16 ||
		    s->reply_offset % 16 || s->operand[0] || s->operand[1])
			return -EINVAL;
		int rc = in_chunk(s->reply_handle, s->reply_offset, s->len);
		if (rc)
			return rc;
	} else if (s->op == PEACH2_RP_OP_CAS || s->op == PEACH2_RP_OP_FAA) {
		if (s->len != 8 || s->reply_handle || s->reply_offset)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (s->cpl_offset % 32)
		return -EINVAL;
	int rc = in_chunk(s->cpl_handle, s->cpl_offset, 32);
	if (rc)
		return rc;
	if (s->node >= node_count)
		return -ENXIO;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	pthread_mutex_lock(&lock);
	if (ctl_eagain > 0) {
		--ctl_eagain;
		pthread_mutex_unlock(&lock);
		return -EAGAIN;
	}
	if (ctl_unreach > 0) { /* the card refused to send it: a link down */
		--ctl_unreach;
		pthread_mutex_unlock(&lock);
		return -EHOSTUNREACH;
	}
	int fault = 0;
	if (ctl_efault > 0) {
		--ctl_efault;
		fault = 1;
	}
	last_seq = now > last_seq ? now : last_seq + 1;
	s->tag = last_seq;
	rp_log[rp_log_n++ % FAKE_RP_LOG] = *s;
	int full = 0, drop = 0;
	long delay = ctl_delay_us;
	if (ctl_drop > 0) {
		--ctl_drop;
		drop = 1;
	} else if (ctl_full > 0) {
		--ctl_full;
		full = 1;
	}
	pthread_mutex_unlock(&lock);
	if (drop)
		return fault ? -EFAULT : 0;
	if (delay <= 0) {
		answer(s, full);
		return fault ? -EFAULT : 0;
	}
	struct delayed *d = malloc(sizeof *d);
	pthread_t th;
	if (!d)
		return -ENOMEM;
	d->s = *s;
	d->delay_us = delay;
	d->full = full;
	if (pthread_create(&th, NULL, delayed_answer, d) != 0) {
		free(d);
		return -EAGAIN;
	}
	pthread_detach(th);
	return fault ? -EFAULT : 0;
}

int fake_is_rp_ioctl(unsigned long req)
{
	return req == PEACH2_IOC_EXPORT || req == PEACH2_IOC_UNEXPORT || req == PEACH2_IOC_RP_SUBMIT;
}

int fake_rp_ioctl(unsigned long req, void *arg)
{
	if (!fake_window)
		return -EIO;
	if (req == PEACH2_IOC_EXPORT)
		return do_export(arg);
	if (req == PEACH2_IOC_UNEXPORT)
		return do_unexport(arg);
	return do_submit(arg);
}

/* ---- test controls ---- */
void fake_rp_control(const char *what, long value)
{
	pthread_mutex_lock(&lock);
	if (!strcmp(what, "full"))
		ctl_full = value;
	else if (!strcmp(what, "drop"))
		ctl_drop = value;
	else if (!strcmp(what, "delay_us"))
		ctl_delay_us = value;
	else if (!strcmp(what, "eagain"))
		ctl_eagain = value;
	else if (!strcmp(what, "efault"))
		ctl_efault = value;
	else if (!strcmp(what, "unreach"))
		ctl_unreach = value;
	else if (!strcmp(what, "reset")) {
		ctl_full = ctl_drop = ctl_delay_us = ctl_eagain = ctl_efault = ctl_unreach = 0;
		rp_log_n = 0;
	}
	pthread_mutex_unlock(&lock);
}

/* Copies up to @max logged submissions (oldest first) to @out; returns how many were logged. */
unsigned fake_rp_log(struct peach2_rp_submit *out, unsigned max)
{
	pthread_mutex_lock(&lock);
	unsigned n = rp_log_n < FAKE_RP_LOG ? rp_log_n : FAKE_RP_LOG;
	for (unsigned i = 0; i < n && i < max; ++i)
		out[i] = rp_log[(rp_log_n - n + i) % FAKE_RP_LOG];
	unsigned total = rp_log_n;
	pthread_mutex_unlock(&lock);
	return total;
}
