/* SPDX-License-Identifier: MIT */
/*
 * The fake driver's DMA ioctls (CHAIN_CREATE/DESTROY, DMA_START, DMA_WAIT):
 * the same checks as driver/dma.c (flags, the card's restrictions, buffers
 * of this fd, ranges, one chunk for block-stride and immediates, register
 * mode = one descriptor, 1024 on-card descriptors), then the copy at once,
 * inside the ioctl, through the window mapping (every node's memory at its
 * global address). A ticket is therefore complete as soon as it exists (and
 * a start with PEACH2_DMA_REAP always comes back ENDED).
 * A refused transfer is named in the request's `refusal`, as the driver does.
 * TCA_FAKE_DMA_TEAR_US tears every copy (copy_torn).
 * What it cannot model: timing, concurrency, card errors, poll().
 */
#define _GNU_SOURCE
#include "fake_peach2.h"

#include <peach2/peach2_hw.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE_CHAINS 256
#define FAKE_DONE   1024 /* completed, unwaited tickets kept (as the driver) */

struct fake_chain {
	uint32_t id;            /* 0: free slot */
	uint32_t count, flags, descs;
	struct peach2_xfer *x;
};

static struct fake_chain chains[FAKE_CHAINS];
static uint32_t next_chain, card_descs_used;
static uint64_t last_ticket;
static uint64_t done[FAKE_DONE];
static uint32_t nr_done;

static struct fake_alloc *find_alloc(uint32_t handle)
{
	return handle && handle <= nr_allocs ? &allocs[handle - 1] : NULL;
}

/* The chunk of @a holding byte @off (off < a->size). */
static const struct peach2_chunk *chunk_at(const struct fake_alloc *a, uint64_t off)
{
	for (uint32_t k = 0; k < a->nr; ++k)
		if (off < a->chunk[k].offset + a->chunk[k].len)
			return &a->chunk[k];
	return NULL;
}

static int range_ok(uint64_t size, uint64_t off, uint64_t len)
{
	uint64_t end;
	return !__builtin_add_overflow(off, len, &end) && end <= size;
}

static int one_chunk(const struct fake_alloc *a, uint64_t off, uint64_t len)
{
	const struct peach2_chunk *c = chunk_at(a, off);
	return c && off + len <= c->offset + c->len;
}

/* As peach2_xfer_check in driver/dma.c: PEACH2_DMA_RULE_OK or the rule broken. */
static enum peach2_dma_rule check_xfer(const struct peach2_xfer *x, struct fake_alloc **srcp,
				       struct fake_alloc **dstp)
{
	int imm = x->flags & PEACH2_XFER_IMM;
	__u64 sspan, dspan;
	struct fake_alloc *src = NULL, *dst = NULL;
	enum peach2_dma_rule rule = peach2_xfer_rule(x);

	if (!rule)
		rule = peach2_xfer_spans(x, &sspan, &dspan);
	if (rule)
		return rule;
	if (!imm && !(src = find_alloc(x->src_handle)))
		return PEACH2_DMA_RULE_NO_BUFFER;
	if (x->dst_handle && !(dst = find_alloc(x->dst_handle)))
		return PEACH2_DMA_RULE_NO_BUFFER;
	if (src && !range_ok(src->size, x->src_offset, sspan))
		return PEACH2_DMA_RULE_SRC_RANGE;
	if (dst && !range_ok(dst->size, x->dst, dspan))
		return PEACH2_DMA_RULE_DST_RANGE;
	if (!dst) {
		uint64_t node = x->dst >> PEACH2_SLICE_SHIFT;
		if (node >= node_count || node == node_id ||
		    !range_ok(FAKE_MEM, PEACH2_ADDR_OFFSET(x->dst), dspan))
			return PEACH2_DMA_RULE_REMOTE;
	}
	if ((x->burst || imm) && ((src && !one_chunk(src, x->src_offset, sspan)) ||
				  (dst && !one_chunk(dst, x->dst, dspan))))
		return PEACH2_DMA_RULE_CHUNK;
	*srcp = src;
	*dstp = dst;
	return PEACH2_DMA_RULE_OK;
}

/* Descriptors the driver would build for a checked transfer. */
static uint64_t count_descs(const struct peach2_xfer *x, const struct fake_alloc *src,
			    const struct fake_alloc *dst)
{
	uint64_t n = 0, pos = 0;
	if (x->burst || (x->flags & PEACH2_XFER_IMM))
		return 1;
	while (pos < x->len) {
		const struct peach2_chunk *s = chunk_at(src, x->src_offset + pos);
		uint64_t piece = s->offset + s->len - (x->src_offset + pos);
		if (dst) {
			const struct peach2_chunk *d = chunk_at(dst, x->dst + pos);
			uint64_t room = d->offset + d->len - (x->dst + pos);
			piece = room < piece ? room : piece;
		}
		if (piece > x->len - pos)
			piece = x->len - pos;
		if (piece > PEACH2_DMA_MAX_LEN)
			piece = PEACH2_DMA_MAX_LEN;
		pos += piece;
		++n;
	}
	return n;
}

static unsigned char *local_byte(const struct fake_alloc *a, uint64_t off)
{
	const struct peach2_chunk *c = chunk_at(a, off);
	return fake_window + c->global_addr + (off - c->offset);
}

/*
 * PCIe orders a card's writes, not the bytes within one: TCA_FAKE_DMA_TEAR_US
 * makes every copy store its last 8 bytes first and the rest that many
 * microseconds later, so that a reader polling a copy's last word (a PSN
 * pair sent in the same write as its packet) sees it before the bytes it
 * stands for.
 */
static void copy_torn(unsigned char *d, const unsigned char *s, uint64_t n)
{
	static long tear_us = -1;
	if (tear_us < 0) {
		const char *us = getenv("TCA_FAKE_DMA_TEAR_US");
		tear_us = us ? strtol(us, NULL, 0) : 0;
	}
	if (tear_us <= 0 || n <= 8) {
		memmove(d, s, n);
		return;
	}
	memmove(d + n - 8, s + n - 8, 8);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	usleep((useconds_t)tear_us);
	memmove(d, s, n - 8);
}

static void run_xfer(const struct peach2_xfer *x, const struct fake_alloc *src,
		     const struct fake_alloc *dst)
{
	if (x->flags & PEACH2_XFER_IMM) {
		unsigned char *d = dst ? local_byte(dst, x->dst) : fake_window + x->dst;
		memcpy(d, &x->imm, x->len); /* little endian: the low bytes */
		return;
	}
	if (!x->burst) {
		/* Contiguous: copy runs that stay inside one chunk of each side. */
		for (uint64_t p = 0; p < x->len;) {
			uint64_t n = x->len - p;
			const struct peach2_chunk *sc = chunk_at(src, x->src_offset + p);
			if (sc->offset + sc->len - (x->src_offset + p) < n)
				n = sc->offset + sc->len - (x->src_offset + p);
			if (dst) {
				const struct peach2_chunk *dc = chunk_at(dst, x->dst + p);
				if (dc->offset + dc->len - (x->dst + p) < n)
					n = dc->offset + dc->len - (x->dst + p);
			}
			copy_torn(dst ? local_byte(dst, x->dst + p) : fake_window + x->dst + p,
				  local_byte(src, x->src_offset + p), n);
			p += n;
		}
		return;
	}
	uint64_t step = (uint64_t)x->burst + x->gap;
	for (uint64_t p = 0; p < x->len; ++p) {
		uint64_t s = x->src_offset + p, d = x->dst + p;
		if (x->burst) {
			uint64_t block = p / x->burst, within = p % x->burst;
			uint64_t sstep = (x->flags & PEACH2_XFER_STRIDE_SRC) ? step : x->burst;
			uint64_t dstep = (x->flags & PEACH2_XFER_STRIDE_DST) ? step : x->burst;
			s = x->src_offset + block * sstep + within;
			d = x->dst + block * dstep + within;
		}
		*(dst ? local_byte(dst, d) : fake_window + d) = *local_byte(src, s);
	}
}

/* Check a list and count its descriptors: 0 or -errno; a refused transfer
 * is named in *why, as the driver does. */
static int check_list(const struct peach2_xfer *x, uint32_t count, uint32_t flags, uint64_t *descs,
		      struct peach2_xfer_refusal *why)
{
	enum peach2_dma_rule rule = PEACH2_DMA_RULE_OK;
	struct fake_alloc *s, *d;
	uint32_t i, first_extra = 0;

	*descs = 0;
	if (count == 0 || count > PEACH2_DMA_MAX_XFERS)
		return -EINVAL;
	for (i = 0; i < count; ++i) {
		uint64_t n;
		if ((rule = check_xfer(&x[i], &s, &d)))
			break;
		n = count_descs(&x[i], s, d);
		if (*descs + n > PEACH2_DMA_MAX_CHAIN) {
			rule = PEACH2_DMA_RULE_TOO_MANY;
			break;
		}
		if (*descs <= 1 && *descs + n > 1)
			first_extra = i;
		*descs += n;
	}
	if (!rule && (flags & PEACH2_DMA_REG_MODE) && *descs != 1) {
		rule = PEACH2_DMA_RULE_REG_MODE;
		i = first_extra;
	}
	if (!rule)
		return 0;
	why->bad_xfer = i;
	why->bad_rule = rule;
	return rule == PEACH2_DMA_RULE_NO_BUFFER ? -ENOENT : -EINVAL;
}

static void run_list(const struct peach2_xfer *x, uint32_t count)
{
	struct fake_alloc *s, *d;
	for (uint32_t i = 0; i < count; ++i) {
		check_xfer(&x[i], &s, &d);
		run_xfer(&x[i], s, d);
	}
}

static int card_room(uint32_t flags, uint64_t descs)
{
	return (flags & (PEACH2_DMA_REG_MODE | PEACH2_DMA_HOST_DESC)) ||
	       card_descs_used + descs <= PEACH2_DESC_MAX;
}

/* A list from user space (at @xfers): checked, counted, and room for it in
 * descriptor RAM (ENOSPC), as the driver's prog_create does. */
static int check_placeable(uint64_t xfers, uint32_t count, uint32_t flags, uint64_t *descs,
			   struct peach2_xfer_refusal *why)
{
	int rc = check_list((const struct peach2_xfer *)(uintptr_t)xfers, count, flags, descs, why);
	if (rc)
		return rc;
	return card_room(flags, *descs) ? 0 : -ENOSPC;
}

static int chain_create(struct peach2_chain_create *c)
{
	const uint32_t modes = PEACH2_DMA_HOST_DESC | PEACH2_DMA_REG_MODE;
	uint64_t descs;
	if (c->reserved || c->refusal.bad_xfer || c->refusal.bad_rule || (c->flags & ~modes) || (c->flags & modes) == modes)
		return -EINVAL;
	const struct peach2_xfer *x = (const struct peach2_xfer *)(uintptr_t)c->xfers;
	int rc = check_placeable(c->xfers, c->count, c->flags, &descs, &c->refusal);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < FAKE_CHAINS; ++i) {
		if (chains[i].id)
			continue;
		chains[i].x = malloc(c->count * sizeof *x);
		if (!chains[i].x)
			return -ENOMEM;
		memcpy(chains[i].x, x, c->count * sizeof *x);
		chains[i].id = ++next_chain;
		chains[i].count = c->count;
		chains[i].flags = c->flags;
		chains[i].descs = (uint32_t)descs;
		if (!(c->flags & modes))
			card_descs_used += (uint32_t)descs;
		c->chain = chains[i].id;
		c->nr_desc = (uint32_t)descs;
		return 0;
	}
	return -ENOSPC;
}

static struct fake_chain *find_chain(uint32_t id)
{
	for (uint32_t i = 0; id && i < FAKE_CHAINS; ++i)
		if (chains[i].id == id)
			return &chains[i];
	return NULL;
}

static int chain_destroy(const struct peach2_chain_destroy *d)
{
	struct fake_chain *c = find_chain(d->chain);
	if (d->flags)
		return -EINVAL;
	if (!c)
		return -ENOENT;
	if (!(c->flags & (PEACH2_DMA_REG_MODE | PEACH2_DMA_HOST_DESC)))
		card_descs_used -= c->descs;
	free(c->x);
	memset(c, 0, sizeof *c);
	return 0;
}

static void remember(uint64_t ticket)
{
	if (nr_done == FAKE_DONE) { /* forget the oldest, as the driver does */
		memmove(done, done + 1, (FAKE_DONE - 1) * sizeof *done);
		--nr_done;
	}
	done[nr_done++] = ticket;
}

static int dma_start(struct peach2_dma_start *s)
{
	const uint32_t modes = PEACH2_DMA_HOST_DESC | PEACH2_DMA_REG_MODE;
	uint64_t descs;
	if (s->reserved || s->refusal.bad_xfer || s->refusal.bad_rule || (s->flags & ~PEACH2_DMA_FLAGS_ALL) ||
	    (s->flags & modes) == modes ||
	    ((s->flags & PEACH2_DMA_WAIT) && (s->flags & PEACH2_DMA_REAP)) ||
	    (s->channel >= PEACH2_DMA_CHANNELS && s->channel != PEACH2_DMA_ANY_CHANNEL) ||
	    (!(s->flags & PEACH2_DMA_WAIT) && s->timeout_ms))
		return -EINVAL;
	if (s->chain) {
		struct fake_chain *c = find_chain(s->chain);
		if (s->count || s->xfers || (s->flags & ~(PEACH2_DMA_WAIT | PEACH2_DMA_REAP)))
			return -EINVAL;
		if (!c)
			return -ENOENT;
		run_list(c->x, c->count);
	} else {
		int rc = check_placeable(s->xfers, s->count, s->flags, &descs, &s->refusal);
		if (rc)
			return rc;
		run_list((const struct peach2_xfer *)(uintptr_t)s->xfers, s->count);
	}
	s->ticket = ++last_ticket;
	s->status = 0;
	if (s->flags & PEACH2_DMA_REAP)
		s->flags |= PEACH2_DMA_ENDED; /* every run ends inside the start */
	else if (!(s->flags & PEACH2_DMA_WAIT))
		remember(s->ticket);
	return 0;
}

static int dma_wait(struct peach2_dma_wait *w)
{
	if (w->reserved)
		return -EINVAL;
	for (uint32_t i = 0; i < nr_done; ++i) {
		if (done[i] != w->ticket)
			continue;
		memmove(done + i, done + i + 1, (nr_done - i - 1) * sizeof *done);
		--nr_done;
		w->status = 0;
		w->bytes = 0;
		return 0;
	}
	return -ENOENT;
}

int fake_is_dma_ioctl(unsigned long req)
{
	return req == PEACH2_IOC_CHAIN_CREATE || req == PEACH2_IOC_CHAIN_DESTROY ||
	       req == PEACH2_IOC_DMA_START || req == PEACH2_IOC_DMA_WAIT;
}

int fake_dma_ioctl(unsigned long req, void *arg)
{
	if (!fake_window)
		return -EIO;
	if (req == PEACH2_IOC_CHAIN_CREATE)
		return chain_create(arg);
	if (req == PEACH2_IOC_CHAIN_DESTROY)
		return chain_destroy(arg);
	if (req == PEACH2_IOC_DMA_START)
		return dma_start(arg);
	return dma_wait(arg);
}
