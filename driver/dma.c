// SPDX-License-Identifier: GPL-2.0
/*
 * PEACH2 emulated interconnect card: the DMA API.
 *
 * User space describes transfers (struct peach2_xfer) between its own
 * buffers, or from its buffers to another node's memory. We check every one
 * of them against the caller's buffers, split them at chunk boundaries into
 * card descriptors, and run them on one of the card's four channels:
 *
 *  - a "prog" is a list of built descriptors plus a reference on every
 *    buffer they touch: descriptors live in on-card descriptor RAM (slots
 *    from a bitmap), in one coherent host array, or (register mode) in the
 *    channel's registers when started;
 *  - a "chain" (PEACH2_IOC_CHAIN_CREATE) keeps its prog until it is
 *    destroyed and can be started again and again for the price of HEAD and
 *    CTRL writes;
 *  - a "run" is one start of a chain or of a one-shot list. It sits in a
 *    channel's FIFO, then on the card, then (completed) in its file's table
 *    of tickets until DMA_WAIT collects it.
 *
 * Locks, outermost first: p2->lock (read; held while descriptors are
 * written to the card and runs are queued, so remove() sees every run),
 * chan->lock (mutex: a channel's queue and registers), then the leaf locks
 * p2->desc_lock, the xarray lock of ctx->chains, ctx->tickets_lock. Buffer
 * references are never dropped under p2->lock or chan->lock: the last put
 * of a buffer takes p2->lock itself.
 *
 * Completion: vector 1 + ch is a threaded interrupt. Its thread reads the
 * channel's STATUS and BYTES, clears STATUS and INT_STATUS.DMA(ch), starts
 * the next queued run and then, outside the channel lock, releases the
 * finished run's descriptors and buffers and reports it to its file. A
 * run that has already ended when its start returns (short runs do on the
 * emulated card) is reaped by the start itself, the same way: an idle
 * channel keeps its INT_MASK bit set, so that run sends no message and
 * costs no interrupt; the start unmasks the bit only for a run still going,
 * and the channel masks it again when it falls idle. A per-channel
 * watchdog watches a run that outlasts its start and aborts it after
 * dma_timeout_ms without progress, so nothing waits forever on a wedged
 * card.
 */

#include <linux/bitmap.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/jiffies.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/pci.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "peach2.h"

unsigned int peach2_dma_timeout_ms = 10000;
module_param_named(dma_timeout_ms, peach2_dma_timeout_ms, uint, 0644);
MODULE_PARM_DESC(dma_timeout_ms,
		 "abort a DMA run that makes no progress for this long (default 10000 ms)");

/* Runs started and not completed, per file. */
#define PEACH2_DMA_MAX_RUNNING	1024u
/* Completed runs nobody waited for, per file: the oldest is forgotten. */
#define PEACH2_DMA_MAX_DONE	1024u
/* Descriptors held by one file's chains and running one-shot lists. */
#define PEACH2_DMA_FD_DESCS	(4 * PEACH2_DMA_MAX_CHAIN)
/* Chains of one file. */
#define PEACH2_DMA_MAX_CHAINS	4096u
static_assert(sizeof(struct peach2_desc_le) == PEACH2_DESC_SIZE);
static_assert(sizeof(struct peach2_desc) == PEACH2_DESC_SIZE);
/* A descriptor per transfer always fits a run (peach2_prog_build). */
static_assert(PEACH2_DMA_MAX_XFERS <= PEACH2_DMA_MAX_CHAIN);

enum peach2_prog_mode {
	PEACH2_PROG_CARD,		/* on-card descriptor RAM */
	PEACH2_PROG_HOST,		/* coherent host memory */
	PEACH2_PROG_REG,		/* the channel's registers */
};

/*
 * Most runs are one or two transfers of a few descriptors (a Verbs packet,
 * a put and its completion word): their arrays live inside the prog, so a
 * run costs no allocation beyond the prog itself.
 */
#define PEACH2_PROG_SMALL 4		/* descriptors, and transfers */

/* Built descriptors and the buffers they touch. */
struct peach2_prog {
	struct peach2_file *ctx;	/* charged for nr_desc */
	enum peach2_prog_mode mode;
	u32 nr_desc;
	struct peach2_desc *descs;	/* cpu order; REG keeps its one */
	u16 *slots;			/* CARD: descriptor RAM indices */
	struct peach2_desc_le *host;	/* HOST: the array */
	dma_addr_t host_dma;
	u32 nr_bufs, bufs_cap;
	bool bufs_nomem;		/* @bufs could not grow */
	struct peach2_buf **bufs;	/* one reference each */
	struct peach2_desc small_descs[PEACH2_PROG_SMALL];
	struct peach2_buf *small_bufs[2 * PEACH2_PROG_SMALL];
	u16 small_slots[PEACH2_PROG_SMALL];
};

/* @n elements of @size for @prog: its own @small array when they fit. */
static void *peach2_prog_array(void *small, size_t small_n, size_t n,
			       size_t size)
{
	return n <= small_n ? small : kvmalloc_array(n, size, GFP_KERNEL);
}

static void peach2_prog_array_free(void *array, const void *small)
{
	if (array != small)
		kvfree(array);
}

/*
 * @array (@small, or allocated) with room for @n elements of @size, @used
 * of them copied over; the old array is freed. NULL (and @array kept) when
 * there is no memory.
 */
static void *peach2_prog_array_grow(void *array, const void *small,
				    size_t used, size_t n, size_t size)
{
	void *bigger = kvmalloc_array(n, size, GFP_KERNEL);

	if (!bigger)
		return NULL;
	memcpy(bigger, array, used * size);
	peach2_prog_array_free(array, small);
	return bigger;
}

struct peach2_chain {
	struct peach2_prog *prog;
	bool busy;			/* a run of it is queued or running */
	bool orphan;			/* destroyed while busy: run frees it */
};

struct peach2_run {
	struct kref ref;
	struct list_head node;		/* channel queue, or a local list */
	struct list_head done_node;	/* ctx->done */
	struct peach2_file *ctx;	/* holds a reference */
	struct hlist_node ticket_node;	/* ctx->tickets, until claimed */
	struct peach2_chain *chain;	/* or NULL: @prog belongs to the run */
	struct peach2_prog *prog;
	u64 ticket;
	u32 status;			/* valid once @done */
	u64 bytes;
	bool done;
};

/* ---- host descriptor arrays ---------------------------------------------- */

/*
 * A coherent array of @size bytes for host descriptors, where the card can
 * read them (16-byte aligned, below 4 GiB: `next` is 32 bits). Up to a page
 * comes from the card's kept pages when there is one (allocating is most of
 * a short run's cost in a TCG guest), else a page is allocated; a fresh
 * array the card cannot address is freed at once, never kept.
 */
static void *peach2_desc_array_alloc(struct peach2_dev *p2, size_t size,
				     dma_addr_t *dma)
{
	struct peach2_desc_page page = { NULL };
	struct device *dev = &p2->pdev->dev;
	size_t bytes = max_t(size_t, size, PAGE_SIZE);
	void *cpu;

	if (size <= PAGE_SIZE) {
		spin_lock(&p2->desc_pages_lock);
		if (p2->nr_desc_pages)
			page = p2->desc_pages[--p2->nr_desc_pages];
		spin_unlock(&p2->desc_pages_lock);
		if (page.cpu) {
			*dma = page.dma;
			return page.cpu;
		}
	}
	cpu = dma_alloc_coherent(dev, bytes, dma, GFP_KERNEL | __GFP_NOWARN);
	if (cpu && (*dma % 16 || (u64)*dma + bytes > BIT_ULL(32))) {
		dev_warn_ratelimited(dev, "descriptor array at %pad is not addressable by the card\n",
				     dma);
		dma_free_coherent(dev, bytes, cpu, *dma);
		return NULL;
	}
	return cpu;
}

static void peach2_desc_array_free(struct peach2_dev *p2, void *cpu,
				   dma_addr_t dma, size_t size)
{
	bool kept = false;

	if (size > PAGE_SIZE) {
		dma_free_coherent(&p2->pdev->dev, size, cpu, dma);
		return;
	}
	spin_lock(&p2->desc_pages_lock);
	if (p2->nr_desc_pages < PEACH2_DESC_PAGES_KEPT) {
		p2->desc_pages[p2->nr_desc_pages++] =
			(struct peach2_desc_page){ cpu, dma };
		kept = true;
	}
	spin_unlock(&p2->desc_pages_lock);
	if (!kept)
		dma_free_coherent(&p2->pdev->dev, PAGE_SIZE, cpu, dma);
}

/* The card's struct device goes: free the kept pages. */
void peach2_dma_release(struct peach2_dev *p2)
{
	while (p2->nr_desc_pages) {
		struct peach2_desc_page *page =
			&p2->desc_pages[--p2->nr_desc_pages];

		dma_free_coherent(&p2->pdev->dev, PAGE_SIZE, page->cpu,
				  page->dma);
	}
}

/* ---- prog: checking and building ---------------------------------------- */

static void peach2_prog_free(struct peach2_prog *prog)
{
	struct peach2_dev *p2;
	u32 i;

	if (!prog)
		return;
	p2 = prog->ctx->p2;
	if (prog->slots) {
		mutex_lock(&p2->desc_lock);
		for (i = 0; i < prog->nr_desc; i++)
			__clear_bit(prog->slots[i], p2->desc_map);
		p2->desc_used -= prog->nr_desc;
		mutex_unlock(&p2->desc_lock);
		peach2_prog_array_free(prog->slots, prog->small_slots);
	}
	if (prog->host)
		peach2_desc_array_free(p2, prog->host, prog->host_dma,
				       prog->nr_desc * sizeof(*prog->host));
	atomic_sub(prog->nr_desc, &prog->ctx->dma_descs);
	for (i = 0; i < prog->nr_bufs; i++)
		peach2_buf_put(prog->bufs[i]);
	peach2_prog_array_free(prog->bufs, prog->small_bufs);
	peach2_prog_array_free(prog->descs, prog->small_descs);
	kfree(prog);
}

/*
 * One side (source or destination) of the transfers being built: the
 * buffer the last transfer on it used and the chunk of that buffer its
 * last piece came from. The transfers of a fragmented buffer are a
 * transfer per physically contiguous piece, in order: one lookup and one
 * reference serve them all, and each piece's chunk is the last one or the
 * next (found without a search).
 */
struct peach2_side {
	struct peach2_buf *buf;
	u32 chunk;
};

/*
 * The buffer @handle names, for a transfer being checked: @side's when it
 * has the same handle, else looked up, its reference kept in @prog->bufs
 * (grown when full: a run's transfers use one or two buffers, seldom more).
 * NULL: this file has no such buffer, or no memory to keep it
 * (@prog->bufs_nomem).
 */
static struct peach2_buf *peach2_prog_lookup(struct peach2_prog *prog,
					     u32 handle,
					     struct peach2_side *side)
{
	struct peach2_buf *buf = side->buf, **bufs;

	if (buf && buf->handle == handle)
		return buf;
	if (prog->nr_bufs == prog->bufs_cap) {
		bufs = peach2_prog_array_grow(prog->bufs, prog->small_bufs,
					      prog->nr_bufs,
					      2 * prog->bufs_cap,
					      sizeof(*bufs));
		if (!bufs) {
			prog->bufs_nomem = true;
			return NULL;
		}
		prog->bufs = bufs;
		prog->bufs_cap *= 2;
	}
	buf = peach2_buf_lookup(prog->ctx, handle);
	if (buf) {
		prog->bufs[prog->nr_bufs++] = buf;
		side->buf = buf;
		side->chunk = 0;
	}
	return buf;
}

/* The chunk of @side's buffer that holds byte @off (inside the buffer). */
static const struct peach2_mem *peach2_side_chunk(struct peach2_side *side,
						  u64 off)
{
	const struct peach2_buf *buf = side->buf;
	const struct peach2_mem *mem = &buf->chunks[side->chunk];
	u32 i;

	for (i = 0; i < 2 && side->chunk + i < buf->nr_chunks; i++, mem++)
		if (off >= mem->offset && off - mem->offset < mem->len)
			goto found;
	mem = peach2_buf_chunk(buf, off);
found:
	side->chunk = mem - buf->chunks;
	return mem;
}

/*
 * Check one transfer of @prog and find its buffers (@side: source and
 * destination; a side's buffer is left alone for an immediate source or a
 * remote destination). Returns PEACH2_DMA_RULE_OK or the rule it breaks
 * (peach2_dma_rules.h).
 */
static enum peach2_dma_rule peach2_xfer_check(struct peach2_prog *prog,
					      const struct peach2_xfer *x,
					      struct peach2_side side[2])
{
	struct peach2_dev *p2 = prog->ctx->p2;
	bool imm = x->flags & PEACH2_XFER_IMM;
	struct peach2_buf *src = NULL, *dst = NULL;
	u64 sspan, dspan, node, off;
	enum peach2_dma_rule rule;

	rule = peach2_xfer_rule(x);
	if (!rule)
		rule = peach2_xfer_spans(x, &sspan, &dspan);
	if (rule)
		return rule;

	if (!imm) {
		src = peach2_prog_lookup(prog, x->src_handle, &side[0]);
		if (!src)
			return PEACH2_DMA_RULE_NO_BUFFER;
	}
	if (x->dst_handle) {
		dst = peach2_prog_lookup(prog, x->dst_handle, &side[1]);
		if (!dst)
			return PEACH2_DMA_RULE_NO_BUFFER;
	}

	if (src && !peach2_range_ok(src->size, x->src_offset, sspan))
		return PEACH2_DMA_RULE_SRC_RANGE;
	if (dst) {
		if (!peach2_range_ok(dst->size, x->dst, dspan))
			return PEACH2_DMA_RULE_DST_RANGE;
	} else {
		/* Another node's host memory, inside its slice. */
		node = x->dst >> PEACH2_SLICE_SHIFT;
		off = PEACH2_ADDR_OFFSET(x->dst);
		if (node >= p2->node_count || node == p2->node_id ||
		    !peach2_range_ok(p2->host_size, off, dspan))
			return PEACH2_DMA_RULE_REMOTE;
	}

	/* Block-stride and immediates are never split. */
	if ((x->burst || imm) &&
	    ((src && !peach2_one_chunk(src, x->src_offset, sspan)) ||
	     (dst && !peach2_one_chunk(dst, x->dst, dspan))))
		return PEACH2_DMA_RULE_CHUNK;
	return PEACH2_DMA_RULE_OK;
}

static u32 peach2_xfer_desc_flags(u32 xflags)
{
	u32 flags = 0;

	if (xflags & PEACH2_XFER_STRIDE_SRC)
		flags |= PEACH2_DESC_STRIDE_SRC;
	if (xflags & PEACH2_XFER_STRIDE_DST)
		flags |= PEACH2_DESC_STRIDE_DST;
	if (xflags & PEACH2_XFER_IMM)
		flags |= PEACH2_DESC_IMM;
	return flags;
}

/*
 * The descriptors of one checked transfer, into @out, at most @room of
 * them: returns their number, or @room + 1 when they do not fit (@out is
 * then partly written). @src is NULL for an immediate, @dst for a remote
 * destination. Each piece is contiguous on both sides and in one chunk of
 * each local buffer; pieces keep the transfer's order.
 */
static u32 peach2_xfer_split(const struct peach2_xfer *x,
			     struct peach2_side *src, struct peach2_side *dst,
			     struct peach2_desc *out, u32 room)
{
	const struct peach2_mem *smem, *dmem;
	u64 soff = x->src_offset, doff = x->dst, left = x->len, piece;
	u64 saddr, daddr;
	u32 n = 0;

	if (x->flags & PEACH2_XFER_IMM || x->burst) {
		if (!room)
			return 1;
		memset(out, 0, sizeof(*out));
		out->src = x->imm;
		if (src) {
			smem = peach2_buf_chunk(src->buf, soff);
			out->src = smem->dma + (soff - smem->offset);
		}
		out->dst = doff;
		if (dst) {
			dmem = peach2_buf_chunk(dst->buf, doff);
			out->dst = peach2_buf_global_addr(dst->buf, dmem) +
				   (doff - dmem->offset);
		}
		out->len = x->len;
		out->burst = x->burst;
		out->gap = x->gap;
		out->flags = peach2_xfer_desc_flags(x->flags);
		return 1;
	}

	for (; left; n++) {
		if (n == room)
			return room + 1;
		smem = peach2_side_chunk(src, soff);
		piece = min(left, smem->offset + smem->len - soff);
		saddr = smem->dma + (soff - smem->offset);
		daddr = doff;
		if (dst) {
			dmem = peach2_side_chunk(dst, doff);
			piece = min(piece, dmem->offset + dmem->len - doff);
			daddr = peach2_buf_global_addr(dst->buf, dmem) +
				(doff - dmem->offset);
		}
		piece = min_t(u64, piece, PEACH2_DMA_MAX_LEN);
		out[n] = (struct peach2_desc){
			.src = saddr, .dst = daddr, .len = piece,
		};
		soff += piece;
		doff += piece;
		left -= piece;
	}
	return n;
}

/*
 * Room for more descriptors in @prog->descs, @used of *@cap taken: twice
 * as many, up to a run's limit (-E2BIG past it).
 */
static int peach2_prog_grow(struct peach2_prog *prog, u32 used, u32 *cap)
{
	u32 want = min(2 * *cap, PEACH2_DMA_MAX_CHAIN);
	struct peach2_desc *descs;

	if (want <= *cap)
		return -E2BIG;
	descs = peach2_prog_array_grow(prog->descs, prog->small_descs, used,
				       want, sizeof(*descs));
	if (!descs)
		return -ENOMEM;
	prog->descs = descs;
	*cap = want;
	return 0;
}

/*
 * Check every transfer, take references on the buffers and write the
 * descriptors into @prog->descs (room for @cap), in one pass. On a
 * refusal, @why names the transfer and the rule.
 */
static int peach2_prog_fill(struct peach2_prog *prog,
			    const struct peach2_xfer *xfers, u32 count,
			    u32 cap, struct peach2_xfer_refusal *why,
			    u32 *total)
{
	struct device *dev = &prog->ctx->p2->pdev->dev;
	enum peach2_dma_rule rule = PEACH2_DMA_RULE_OK;
	struct peach2_side side[2] = { };
	struct peach2_side *src, *dst;
	u32 i, n, first_extra = 0;
	int ret;

	*total = 0;
	for (i = 0; i < count; i++) {
		const struct peach2_xfer *x = &xfers[i];

		rule = peach2_xfer_check(prog, x, side);
		if (rule)
			break;
		src = x->flags & PEACH2_XFER_IMM ? NULL : &side[0];
		dst = x->dst_handle ? &side[1] : NULL;
		for (;;) {
			n = peach2_xfer_split(x, src, dst, prog->descs + *total,
					      cap - *total);
			if (n <= cap - *total)
				break;
			ret = peach2_prog_grow(prog, *total, &cap);
			if (ret == -ENOMEM)
				return ret;
			if (ret) {
				rule = PEACH2_DMA_RULE_TOO_MANY;
				break;
			}
		}
		if (rule)
			break;
		if (*total <= 1 && *total + n > 1)
			first_extra = i;
		*total += n;
	}
	if (!rule && prog->mode == PEACH2_PROG_REG && *total != 1) {
		rule = PEACH2_DMA_RULE_REG_MODE;
		i = first_extra;
	}
	if (!rule)
		return 0;
	if (prog->bufs_nomem)
		return -ENOMEM;
	dev_dbg(dev, "xfer %u refused: %s\n", i, peach2_dma_rule_text(rule));
	why->bad_xfer = i;
	why->bad_rule = rule;
	return rule == PEACH2_DMA_RULE_NO_BUFFER ? -ENOENT : -EINVAL;
}

/*
 * Check @count transfers and build their descriptors (not yet placed
 * anywhere). Takes a reference on every buffer they touch.
 */
static struct peach2_prog *peach2_prog_build(struct peach2_file *ctx,
					     const struct peach2_xfer *xfers,
					     u32 count, u32 flags,
					     struct peach2_xfer_refusal *why)
{
	struct peach2_prog *prog;
	u32 total, cap;
	int ret;

	prog = kzalloc(sizeof(*prog), GFP_KERNEL);
	if (!prog)
		return ERR_PTR(-ENOMEM);
	prog->ctx = ctx;
	if (flags & PEACH2_DMA_REG_MODE)
		prog->mode = PEACH2_PROG_REG;
	else if (flags & PEACH2_DMA_HOST_DESC)
		prog->mode = PEACH2_PROG_HOST;
	else
		prog->mode = PEACH2_PROG_CARD;

	prog->bufs = prog->small_bufs;
	prog->bufs_cap = ARRAY_SIZE(prog->small_bufs);
	/* A descriptor per transfer, as a list cut at its pieces has. */
	cap = max_t(u32, count, PEACH2_PROG_SMALL);
	prog->descs = peach2_prog_array(prog->small_descs,
					ARRAY_SIZE(prog->small_descs), cap,
					sizeof(*prog->descs));
	if (!prog->descs) {
		ret = -ENOMEM;
		goto err;
	}
	ret = peach2_prog_fill(prog, xfers, count, cap, why, &total);
	if (ret)
		goto err;

	if (atomic_add_return(total, &ctx->dma_descs) > PEACH2_DMA_FD_DESCS) {
		atomic_sub(total, &ctx->dma_descs);
		ret = -ENOSPC;
		goto err;
	}
	prog->nr_desc = total;
	return prog;

err:
	peach2_prog_free(prog);
	return ERR_PTR(ret);
}

static void peach2_desc_to_le(const struct peach2_desc *d, u32 next,
			      u32 flags, struct peach2_desc_le *le)
{
	le->src = cpu_to_le64(d->src);
	le->dst = cpu_to_le64(d->dst);
	le->len = cpu_to_le32(d->len);
	le->burst = cpu_to_le16(d->burst);
	le->gap = cpu_to_le16(d->gap);
	le->next = cpu_to_le32(next);
	le->flags = cpu_to_le32(d->flags | flags);
}

/* On-card: take slots, write the descriptors, link them by index. */
static int peach2_prog_place_card(struct peach2_prog *prog)
{
	struct peach2_dev *p2 = prog->ctx->p2;
	void __iomem *slot;
	u32 i, bit = 0, next, flags;
	const struct peach2_desc *d;

	if (prog->nr_desc > PEACH2_DESC_MAX) {
		dev_dbg(&p2->pdev->dev, "%u descriptors do not fit in descriptor RAM\n",
			prog->nr_desc);
		return -ENOSPC;
	}
	prog->slots = peach2_prog_array(prog->small_slots,
					ARRAY_SIZE(prog->small_slots),
					prog->nr_desc, sizeof(*prog->slots));
	if (!prog->slots)
		return -ENOMEM;

	mutex_lock(&p2->desc_lock);
	if (PEACH2_DESC_MAX - p2->desc_used < prog->nr_desc) {
		mutex_unlock(&p2->desc_lock);
		peach2_prog_array_free(prog->slots, prog->small_slots);
		prog->slots = NULL;
		dev_dbg(&p2->pdev->dev, "%u descriptors wanted, %u slots free\n",
			prog->nr_desc, PEACH2_DESC_MAX - p2->desc_used);
		return -ENOSPC;
	}
	for (i = 0; i < prog->nr_desc; i++) {
		bit = find_next_zero_bit(p2->desc_map, PEACH2_DESC_MAX, bit);
		__set_bit(bit, p2->desc_map);
		prog->slots[i] = bit;
	}
	p2->desc_used += prog->nr_desc;
	mutex_unlock(&p2->desc_lock);

	for (i = 0; i < prog->nr_desc; i++) {
		d = &prog->descs[i];
		slot = p2->cardmem + PEACH2_DESC_RAM_OFF +
		       prog->slots[i] * PEACH2_DESC_SIZE;
		if (i + 1 < prog->nr_desc) {
			next = prog->slots[i + 1];
			flags = 0;
		} else {
			next = 0;
			flags = PEACH2_DESC_LAST;
		}
		/* Four 8-byte writes: {len, burst | gap} and {next, flags}
		 * are adjacent pairs (each MMIO write is a VM exit).
		 */
		writeq(d->src, slot + offsetof(struct peach2_desc, src));
		writeq(d->dst, slot + offsetof(struct peach2_desc, dst));
		writeq(peach2_desc_len_block(d),
		       slot + offsetof(struct peach2_desc, len));
		writeq((u64)(d->flags | flags) << 32 | next,
		       slot + offsetof(struct peach2_desc, next));
	}
	return 0;
}

/* Host: one coherent array the card can address, linked. */
static int peach2_prog_place_host(struct peach2_prog *prog)
{
	struct peach2_dev *p2 = prog->ctx->p2;
	size_t size = prog->nr_desc * sizeof(*prog->host);
	u32 i, next, flags;

	prog->host = peach2_desc_array_alloc(p2, size, &prog->host_dma);
	if (!prog->host)
		return -ENOMEM;
	for (i = 0; i < prog->nr_desc; i++) {
		if (i + 1 < prog->nr_desc) {
			next = prog->host_dma + (i + 1) * sizeof(*prog->host);
			flags = PEACH2_DESC_NEXT_HOST;
		} else {
			next = 0;
			flags = PEACH2_DESC_LAST;
		}
		peach2_desc_to_le(&prog->descs[i], next, flags,
				  &prog->host[i]);
	}
	return 0;
}

/*
 * Put the descriptors where the card reads them. Caller holds p2->lock for
 * reading and has checked !p2->dead (on-card descriptors are MMIO writes).
 */
static int peach2_prog_place(struct peach2_prog *prog)
{
	int ret = 0;

	switch (prog->mode) {
	case PEACH2_PROG_CARD:
		ret = peach2_prog_place_card(prog);
		break;
	case PEACH2_PROG_HOST:
		ret = peach2_prog_place_host(prog);
		break;
	case PEACH2_PROG_REG:
		return 0;		/* keeps its one descriptor */
	}
	if (!ret) {
		peach2_prog_array_free(prog->descs, prog->small_descs);
		prog->descs = NULL;
	}
	return ret;
}

/* ---- runs and channels ------------------------------------------------- */

static void peach2_run_release(struct kref *ref)
{
	struct peach2_run *run = container_of(ref, struct peach2_run, ref);

	WARN_ON(run->prog);
	peach2_file_put(run->ctx);
	kfree(run);
}

static void peach2_run_put(struct peach2_run *run)
{
	kref_put(&run->ref, peach2_run_release);
}

static void peach2_chain_free(struct peach2_chain *chain)
{
	peach2_prog_free(chain->prog);
	kfree(chain);
}

/* A chain's run has ended: it may start again, or go if it was orphaned. */
static void peach2_chain_idle(struct peach2_file *ctx,
			      struct peach2_chain *chain)
{
	bool orphan;

	xa_lock(&ctx->chains);
	chain->busy = false;
	orphan = chain->orphan;
	xa_unlock(&ctx->chains);
	if (orphan)
		peach2_chain_free(chain);
}

/* Give back what the run used: a one-shot list's descriptors and buffers. */
static void peach2_run_release_res(struct peach2_run *run)
{
	if (run->chain) {
		peach2_chain_idle(run->ctx, run->chain);
		run->chain = NULL;
	} else {
		peach2_prog_free(run->prog);
	}
	run->prog = NULL;
}

/* Tell the run's file: it is done, with @status and @bytes. */
static void peach2_run_report(struct peach2_run *run, u32 status, u64 bytes)
{
	struct peach2_file *ctx = run->ctx;
	struct peach2_run *evict = NULL;

	spin_lock(&ctx->tickets_lock);
	run->status = status;
	run->bytes = bytes;
	WRITE_ONCE(run->done, true);
	ctx->nr_running--;
	if (!ctx->closing) {
		list_add_tail(&run->done_node, &ctx->done);
		if (++ctx->nr_done > PEACH2_DMA_MAX_DONE) {
			/* Forget the oldest unwaited ticket. */
			evict = list_first_entry(&ctx->done, struct peach2_run,
						 done_node);
			list_del(&evict->done_node);
			ctx->nr_done--;
			hash_del(&evict->ticket_node);
		}
	}
	spin_unlock(&ctx->tickets_lock);
	wake_up_interruptible_all(&ctx->dma_wq);
	if (evict)
		peach2_run_put(evict);		/* the table's reference */
}

/* Release, report, and drop the channel's reference. No locks held. */
static void peach2_run_finish(struct peach2_run *run, u32 status, u64 bytes)
{
	peach2_run_release_res(run);
	peach2_run_report(run, status, bytes);
	peach2_run_put(run);
}

/* Watch the current run. Channel lock held. */
static void peach2_chan_wd_arm(struct peach2_dma_chan *c)
{
	unsigned int ms = max(READ_ONCE(peach2_dma_timeout_ms), 100u);

	c->wd_armed = true;
	mod_delayed_work(system_wq, &c->watchdog, msecs_to_jiffies(ms));
}

/* Nothing left to watch. Channel lock held. */
static void peach2_chan_wd_disarm(struct peach2_dma_chan *c)
{
	if (!c->wd_armed)
		return;		/* a timer operation less per short run */
	c->wd_armed = false;
	cancel_delayed_work(&c->watchdog);
}

/*
 * Program the channel and start @run. Channel lock held, channel idle. The
 * caller arms the watchdog, unless the run ended inside its start.
 */
static void peach2_chan_start(struct peach2_dma_chan *c,
			      struct peach2_run *run)
{
	const struct peach2_prog *prog = run->prog;

	switch (prog->mode) {
	case PEACH2_PROG_REG:
		peach2_dmac_start_reg(c->p2, c->idx, &prog->descs[0]);
		break;
	case PEACH2_PROG_CARD:
		peach2_dmac_start_chain(c->p2, c->idx, prog->slots[0]);
		break;
	case PEACH2_PROG_HOST:
		peach2_dmac_start_chain(c->p2, c->idx,
					prog->host_dma | PEACH2_DMA_HEAD_HOST);
		break;
	}
	c->cur = run;
	c->wd_bytes = 0;
	c->wd_descs = 0;
}

/*
 * The current run has ended with @status: count it, start the next one.
 * Returns the ended run (the channel's reference goes to the caller).
 */
static struct peach2_run *peach2_chan_retire(struct peach2_dma_chan *c,
					     u32 status)
{
	struct peach2_run *run = c->cur, *next;

	c->cur = NULL;
	c->completed++;
	if (status)
		c->errors++;
	next = list_first_entry_or_null(&c->queue, struct peach2_run, node);
	if (next && !c->stopped && !c->wedged) {
		list_del(&next->node);
		c->nr_queued--;
		peach2_chan_start(c, next);
		peach2_chan_wd_arm(c);
	} else {
		peach2_chan_wd_disarm(c);
		/* Idle: masked until a run outlasts its start. */
		peach2_int_mask_set(c->p2, PEACH2_INT_DMA(c->idx), true);
	}
	return run;
}

/* STATUS @st says the run has ended (all ones: the card is gone). */
static bool peach2_chan_ended(u32 st)
{
	return st != U32_MAX && st & PEACH2_DMA_ST_ENDED;
}

/*
 * The channel ended with STATUS @st: collect its bytes, clear STATUS and the
 * interrupt (in that order, so that the next run's end raises a new one),
 * retire the run. Channel lock held.
 */
static struct peach2_run *peach2_chan_reap_ended(struct peach2_dma_chan *c,
						 u32 st, u32 *status, u64 *bytes)
{
	struct peach2_dev *p2 = c->p2;
	unsigned int ch = c->idx;

	*bytes = peach2_dmac_bytes(p2, ch);
	*status = peach2_dmac_code(st);
	peach2_dmac_ack(p2, ch);
	if (!c->cur)
		return NULL;	/* left over from before us */
	if (*status)
		dev_dbg(&p2->pdev->dev, "DMA channel %u: run ended with error %u (%s) after %llu bytes\n",
			ch, *status, peach2_err_name(*status), *bytes);
	return peach2_chan_retire(c, *status);
}

/*
 * If the card says the channel has ended, reap it (above); if not, clear a
 * stale interrupt. Channel lock held.
 */
static struct peach2_run *peach2_chan_reap(struct peach2_dma_chan *c,
					   u32 *status, u64 *bytes)
{
	struct peach2_dev *p2 = c->p2;
	u32 st;

	st = peach2_dmac_status(p2, c->idx);
	if (!peach2_chan_ended(st)) {
		writel(PEACH2_INT_DMA(c->idx), p2->regs + PEACH2_REG_INT_STATUS);
		return NULL;
	}
	return peach2_chan_reap_ended(c, st, status, bytes);
}

/*
 * The interrupt itself: wake the thread only if the channel's bit is still
 * set. A message whose run was reaped meanwhile (by a start, or by the
 * watchdog) finds nothing to do: no thread wake-up, no context switches.
 */
static irqreturn_t peach2_dma_irq(int irq, void *data)
{
	struct peach2_dma_chan *c = data;
	u32 st = readl(c->p2->regs + PEACH2_REG_INT_STATUS);

	if (st != U32_MAX && !(st & PEACH2_INT_DMA(c->idx)))
		return IRQ_HANDLED;
	return IRQ_WAKE_THREAD;
}

static irqreturn_t peach2_dma_irq_thread(int irq, void *data)
{
	struct peach2_dma_chan *c = data;
	struct peach2_run *run;
	u32 status = 0;
	u64 bytes = 0;

	mutex_lock(&c->lock);
	run = peach2_chan_reap(c, &status, &bytes);
	mutex_unlock(&c->lock);
	if (run)
		peach2_run_finish(run, status, bytes);
	return IRQ_HANDLED;
}

/*
 * Stop the channel's current run. Returns true when the card confirmed it;
 * false leaves the channel wedged. Channel lock held.
 */
static bool peach2_chan_abort(struct peach2_dma_chan *c)
{
	if (peach2_dmac_abort(c->p2, c->idx))
		return true;
	dev_err(&c->p2->pdev->dev, "DMA channel %u: not using it any more\n",
		c->idx);
	c->wedged = true;
	return false;
}

/*
 * The watchdog: a run that has made no progress (bytes, descriptors) for a
 * whole period is aborted and completes with PEACH2_ERR_DMA_ABORTED.
 */
static void peach2_dma_watchdog(struct work_struct *work)
{
	struct peach2_dma_chan *c = container_of(to_delayed_work(work),
						 struct peach2_dma_chan,
						 watchdog);
	struct peach2_dev *p2 = c->p2;
	struct peach2_run *run = NULL, *stuck = NULL, *tmp;
	LIST_HEAD(dropped);
	u32 status = 0, descs;
	u64 bytes = 0;

	mutex_lock(&c->lock);
	c->wd_armed = false;	/* it ran; re-armed below while progressing */
	if (!c->cur || c->stopped)
		goto out;
	/* An end whose interrupt we have not seen (yet): take it now. */
	run = peach2_chan_reap(c, &status, &bytes);
	if (run)
		goto out;

	bytes = peach2_dmac_bytes(p2, c->idx);
	descs = peach2_dmac_descs(p2, c->idx);
	if (bytes != c->wd_bytes || descs != c->wd_descs) {
		c->wd_bytes = bytes;
		c->wd_descs = descs;
		peach2_chan_wd_arm(c);
		goto out;
	}

	dev_warn(&p2->pdev->dev, "DMA channel %u: no progress for %u ms after %llu bytes; aborting the run\n",
		 c->idx, peach2_dma_timeout_ms, bytes);
	if (peach2_chan_abort(c)) {
		/* Normally ERROR + DMA_ABORTED; DONE if it just made it. */
		run = peach2_chan_reap(c, &status, &bytes);
		if (!run) {
			status = PEACH2_ERR_DMA_ABORTED;
			run = peach2_chan_retire(c, status);
		}
	} else {
		/*
		 * The card may still touch the run's memory: keep it (until
		 * remove() stops bus mastering), but tell the waiter. The
		 * queued runs never started; they end here too.
		 */
		stuck = c->cur;
		c->stuck = stuck;
		c->cur = NULL;
		c->completed++;
		c->errors++;
		list_splice_init(&c->queue, &dropped);
		c->nr_queued = 0;
	}
out:
	mutex_unlock(&c->lock);
	if (run)
		peach2_run_finish(run, status, bytes);
	if (stuck)
		peach2_run_report(stuck, PEACH2_ERR_DMA_ABORTED, bytes);
	list_for_each_entry_safe(run, tmp, &dropped, node) {
		list_del(&run->node);
		peach2_run_finish(run, PEACH2_ERR_DMA_ABORTED, 0);
	}
}

/* The channel for a new run: @want, or the least loaded usable one. */
static int peach2_chan_pick(struct peach2_dev *p2, u32 want)
{
	unsigned int ch, load, best_load = UINT_MAX;
	int best = -EIO;

	if (want != PEACH2_DMA_ANY_CHANNEL)
		return want;
	for (ch = 0; ch < PEACH2_DMA_CHANNELS; ch++) {
		struct peach2_dma_chan *c = &p2->dma[ch];

		if (READ_ONCE(c->wedged))
			continue;
		load = !!READ_ONCE(c->cur) + READ_ONCE(c->nr_queued);
		if (load < best_load) {
			best = ch;
			best_load = load;
		}
	}
	return best;
}

/*
 * Start @run on channel @ch now, or queue it. Caller holds p2->lock. A run
 * started on an idle channel may have ended by the time the start returns
 * (the emulated card moves a short run inside the CTRL write): then it is
 * reaped here, and *@ended is the run for the caller to finish (with
 * *@status and *@bytes) once it holds no lock. An idle channel's interrupt
 * is masked, so such a run sends no message at all; one still running is
 * unmasked (a message comes at once if it ended in between) and watched.
 */
static int peach2_chan_submit(struct peach2_dev *p2, unsigned int ch,
			      struct peach2_run *run, struct peach2_run **ended,
			      u32 *status, u64 *bytes)
{
	struct peach2_dma_chan *c = &p2->dma[ch];
	int ret = 0;
	u32 st;

	*ended = NULL;
	mutex_lock(&c->lock);
	if (c->stopped) {
		ret = -ENODEV;
	} else if (c->wedged) {
		ret = -EIO;
	} else if (!c->cur) {
		peach2_chan_start(c, run);
		st = peach2_dmac_status(p2, ch);
		if (peach2_chan_ended(st))
			*ended = peach2_chan_reap_ended(c, st, status, bytes);
		if (c->cur == run) {
			peach2_int_mask_set(p2, PEACH2_INT_DMA(ch), false);
			peach2_chan_wd_arm(c);
		}
	} else {
		list_add_tail(&run->node, &c->queue);
		c->nr_queued++;
	}
	mutex_unlock(&c->lock);
	return ret;
}

/* ---- probe / remove ------------------------------------------------------ */

void peach2_dma_init(struct peach2_dev *p2)
{
	unsigned int ch;
	u32 st;

	mutex_init(&p2->desc_lock);
	bitmap_zero(p2->desc_map, PEACH2_DESC_MAX);
	p2->desc_used = 0;
	spin_lock_init(&p2->desc_pages_lock);
	p2->nr_desc_pages = 0;
	p2->cardmem = pcim_iomap_table(p2->pdev)[PEACH2_BAR_CARDMEM];

	for (ch = 0; ch < PEACH2_DMA_CHANNELS; ch++) {
		struct peach2_dma_chan *c = &p2->dma[ch];

		c->p2 = p2;
		c->idx = ch;
		mutex_init(&c->lock);
		INIT_LIST_HEAD(&c->queue);
		INIT_DELAYED_WORK(&c->watchdog, peach2_dma_watchdog);

		/* A run a previous driver instance left behind. */
		st = peach2_dmac_status(p2, ch);
		if (st & PEACH2_DMA_ST_BUSY) {
			dev_info(&p2->pdev->dev, "DMA channel %u busy at probe: aborting\n",
				 ch);
			mutex_lock(&c->lock);
			peach2_chan_abort(c);
			mutex_unlock(&c->lock);
		}
		peach2_dmac_ack(p2, ch);
	}
}

/* Vectors 1..4 (allocated by the caller). Unwinds itself on failure. */
int peach2_dma_setup_irqs(struct peach2_dev *p2)
{
	struct pci_dev *pdev = p2->pdev;
	unsigned int ch;
	int ret;

	for (ch = 0; ch < PEACH2_DMA_CHANNELS; ch++) {
		struct peach2_dma_chan *c = &p2->dma[ch];

		snprintf(c->irq_name, sizeof(c->irq_name), "%s-dma%u",
			 dev_name(&p2->dev), ch);
		c->irq = pci_irq_vector(pdev, PEACH2_INT_VECTOR_DMA(ch));
		ret = request_threaded_irq(c->irq, peach2_dma_irq, peach2_dma_irq_thread,
					   IRQF_ONESHOT, c->irq_name, c);
		if (ret) {
			dev_err(&pdev->dev, "cannot request irq %d for DMA channel %u: %d\n",
				c->irq, ch, ret);
			c->irq = 0;
			while (ch--) {
				free_irq(p2->dma[ch].irq, &p2->dma[ch]);
				p2->dma[ch].irq = 0;
			}
			return ret;
		}
	}
	return 0;
}

/*
 * remove(): called after p2->dead is set (no new runs can be queued). Abort
 * the channels, complete every run with PEACH2_ERR_DMA_ABORTED (waking its
 * waiters), release the interrupts. The registers are still mapped.
 */
void peach2_dma_shutdown(struct peach2_dev *p2)
{
	struct peach2_run *run, *tmp;
	unsigned int ch;
	bool quiet = true;
	LIST_HEAD(ended);

	peach2_int_mask_all(p2);
	for (ch = 0; ch < PEACH2_DMA_CHANNELS; ch++) {
		struct peach2_dma_chan *c = &p2->dma[ch];

		mutex_lock(&c->lock);
		c->stopped = true;
		mutex_unlock(&c->lock);
		if (c->irq) {
			free_irq(c->irq, c);	/* waits for the thread */
			c->irq = 0;
		}
		cancel_delayed_work_sync(&c->watchdog);
	}

	for (ch = 0; ch < PEACH2_DMA_CHANNELS; ch++) {
		struct peach2_dma_chan *c = &p2->dma[ch];
		u32 status = PEACH2_ERR_DMA_ABORTED;
		u64 bytes = 0;

		mutex_lock(&c->lock);
		if (c->cur) {
			if (!peach2_chan_abort(c))
				quiet = false;
			/* As the card saw it: aborted, or done just now. */
			run = peach2_chan_reap(c, &status, &bytes);
			if (!run) {
				bytes = peach2_dmac_bytes(p2, ch);
				status = PEACH2_ERR_DMA_ABORTED;
				run = peach2_chan_retire(c, status);
			}
			run->status = status;
			run->bytes = bytes;
			list_add_tail(&run->node, &ended);
		}
		peach2_dmac_ack(p2, ch);
		list_for_each_entry(run, &c->queue, node)
			run->status = PEACH2_ERR_DMA_ABORTED;
		c->completed += c->nr_queued;
		c->errors += c->nr_queued;
		c->nr_queued = 0;
		list_splice_tail_init(&c->queue, &ended);
		if (c->stuck) {
			quiet = false;
			list_add_tail(&c->stuck->node, &ended);
		}
		mutex_unlock(&c->lock);
	}

	/* A channel ignored ABORT: stop all bus mastering before freeing. */
	if (!quiet)
		pci_clear_master(p2->pdev);

	list_for_each_entry_safe(run, tmp, &ended, node) {
		list_del(&run->node);
		if (run->done) {		/* a stuck one: already reported */
			peach2_run_release_res(run);
			peach2_run_put(run);
		} else {
			peach2_run_finish(run, run->status, run->bytes);
		}
	}
	for (ch = 0; ch < PEACH2_DMA_CHANNELS; ch++)
		p2->dma[ch].stuck = NULL;
}

/* ---- per file ----------------------------------------------------------- */

void peach2_dma_file_init(struct peach2_file *ctx)
{
	xa_init_flags(&ctx->chains, XA_FLAGS_ALLOC1);
	spin_lock_init(&ctx->tickets_lock);
	hash_init(ctx->tickets);
	INIT_LIST_HEAD(&ctx->done);
	atomic_set(&ctx->dma_descs, 0);
	init_waitqueue_head(&ctx->dma_wq);
}

/*
 * close(): forget the tickets, destroy the chains (those with a run still
 * queued or running go when it ends). Runs keep their buffers until the
 * card is done with them.
 */
void peach2_dma_file_release(struct peach2_file *ctx)
{
	struct peach2_chain *chain;
	struct peach2_run *run, *next;
	struct hlist_node *tmp;
	unsigned long index;
	LIST_HEAD(dropped);
	int bkt;
	bool busy;

	/*
	 * Once closing, completions leave done_node alone: it carries the
	 * table's runs to their put, outside the lock (a put may sleep).
	 */
	spin_lock(&ctx->tickets_lock);
	ctx->closing = true;
	while (!list_empty(&ctx->done))
		list_del_init(ctx->done.next);
	ctx->nr_done = 0;
	hash_for_each_safe(ctx->tickets, bkt, tmp, run, ticket_node) {
		hash_del(&run->ticket_node);
		list_add_tail(&run->done_node, &dropped);
	}
	spin_unlock(&ctx->tickets_lock);
	list_for_each_entry_safe(run, next, &dropped, done_node)
		peach2_run_put(run);	/* the table's */

	xa_for_each(&ctx->chains, index, chain) {
		xa_lock(&ctx->chains);
		__xa_erase(&ctx->chains, index);
		busy = chain->busy;
		chain->orphan = busy;
		xa_unlock(&ctx->chains);
		if (!busy)
			peach2_chain_free(chain);
	}
}

/* ---- ioctls ---------------------------------------------------------------- */

/* The user's @count transfers in *@xfers: @small when they fit, else allocated. */
static int peach2_copy_xfers(u64 uptr, u32 count, struct peach2_xfer *small,
			     struct peach2_xfer **xfers)
{
	size_t len = array_size(count, sizeof(struct peach2_xfer));

	if (!count || count > PEACH2_DMA_MAX_XFERS)
		return -EINVAL;
	if (count <= PEACH2_PROG_SMALL) {
		*xfers = small;
		return copy_from_user(small, u64_to_user_ptr(uptr), len) ?
		       -EFAULT : 0;
	}
	*xfers = vmemdup_user(u64_to_user_ptr(uptr), len);
	return PTR_ERR_OR_ZERO(*xfers);
}

/*
 * A refused transfer: tell user space which one and why, in the request's
 * `refusal` field at @field (peach2_uapi.h). Returns @ret, or -EFAULT.
 */
static int peach2_report_refusal(void __user *field,
				 const struct peach2_xfer_refusal *why, int ret)
{
	if (why->bad_rule && copy_to_user(field, why, sizeof(*why)))
		return -EFAULT;
	return ret;
}

/*
 * Check, build and place a prog for @count transfers at user @uptr. A
 * refused transfer is named in @why.
 */
static struct peach2_prog *peach2_prog_create(struct peach2_file *ctx,
					      u64 uptr, u32 count, u32 flags,
					      struct peach2_xfer_refusal *why)
{
	struct peach2_xfer small[PEACH2_PROG_SMALL], *xfers;
	struct peach2_dev *p2 = ctx->p2;
	struct peach2_prog *prog;
	int ret;

	ret = peach2_copy_xfers(uptr, count, small, &xfers);
	if (ret)
		return ERR_PTR(ret);
	prog = peach2_prog_build(ctx, xfers, count, flags, why);
	if (xfers != small)
		kvfree(xfers);
	if (IS_ERR(prog))
		return prog;

	down_read(&p2->lock);
	ret = p2->dead ? -ENODEV : peach2_prog_place(prog);
	up_read(&p2->lock);
	if (ret) {
		peach2_prog_free(prog);		/* outside p2->lock */
		return ERR_PTR(ret);
	}
	return prog;
}

long peach2_ioctl_chain_create(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_xfer_refusal why = { 0 };
	struct peach2_chain_create req;
	struct peach2_chain *chain;
	struct peach2_prog *prog;
	u32 id;
	int ret;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (req.reserved || req.refusal.bad_xfer || req.refusal.bad_rule ||
	    req.flags & ~(PEACH2_DMA_HOST_DESC | PEACH2_DMA_REG_MODE) ||
	    (req.flags & PEACH2_DMA_HOST_DESC &&
	     req.flags & PEACH2_DMA_REG_MODE))
		return -EINVAL;

	chain = kzalloc(sizeof(*chain), GFP_KERNEL);
	if (!chain)
		return -ENOMEM;
	prog = peach2_prog_create(ctx, req.xfers, req.count, req.flags, &why);
	if (IS_ERR(prog)) {
		kfree(chain);
		return peach2_report_refusal(argp + offsetof(typeof(req), refusal),
					     &why, PTR_ERR(prog));
	}
	chain->prog = prog;

	/* Reserve the id, tell user space, then publish (as ALLOC does). */
	ret = xa_alloc_cyclic(&ctx->chains, &id, NULL,
			      XA_LIMIT(1, PEACH2_DMA_MAX_CHAINS),
			      &ctx->next_chain, GFP_KERNEL);
	if (ret < 0) {
		peach2_chain_free(chain);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	req.chain = id;
	req.nr_desc = prog->nr_desc;
	if (copy_to_user(argp, &req, sizeof(req))) {
		xa_release(&ctx->chains, id);
		peach2_chain_free(chain);
		return -EFAULT;
	}
	xa_store(&ctx->chains, id, chain, GFP_KERNEL);
	return 0;
}

long peach2_ioctl_chain_destroy(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_chain_destroy req;
	struct peach2_chain *chain;
	int ret = 0;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (req.flags)
		return -EINVAL;

	xa_lock(&ctx->chains);
	chain = xa_load(&ctx->chains, req.chain);
	if (!chain)
		ret = -ENOENT;
	else if (chain->busy)
		ret = -EBUSY;
	else
		__xa_erase(&ctx->chains, req.chain);
	xa_unlock(&ctx->chains);
	if (!ret)
		peach2_chain_free(chain);
	return ret;
}

/* Wait (interruptibly) until @run is done; 0, -ETIMEDOUT or -ERESTARTSYS. */
static int peach2_run_wait(struct peach2_file *ctx, struct peach2_run *run,
			   u32 timeout_ms, bool forever)
{
	long left;

	if (forever)
		return wait_event_interruptible(ctx->dma_wq,
						READ_ONCE(run->done));
	if (!timeout_ms)
		return READ_ONCE(run->done) ? 0 : -ETIMEDOUT;
	left = wait_event_interruptible_timeout(ctx->dma_wq,
						READ_ONCE(run->done),
						msecs_to_jiffies(timeout_ms));
	if (left < 0)
		return left;
	return left ? 0 : -ETIMEDOUT;
}

/*
 * Take a done run's result out of the table (a ticket is waited once).
 * Returns false when someone else took it first (or it was forgotten).
 */
static bool peach2_run_claim(struct peach2_file *ctx, struct peach2_run *run,
			     u32 *status, u64 *bytes)
{
	bool claimed = false;

	spin_lock(&ctx->tickets_lock);
	*status = run->status;
	*bytes = run->bytes;
	if (hash_hashed(&run->ticket_node)) {
		hash_del(&run->ticket_node);
		list_del(&run->done_node);
		ctx->nr_done--;
		claimed = true;
	}
	spin_unlock(&ctx->tickets_lock);
	if (claimed)
		peach2_run_put(run);		/* the table's reference */
	return claimed;
}

/* The fields of a DMA_START request, before anything is looked up. */
static int peach2_dma_start_valid(const struct peach2_dma_start *req)
{
	if (req->reserved || req->refusal.bad_xfer || req->refusal.bad_rule ||
	    req->flags & ~PEACH2_DMA_FLAGS_ALL ||
	    (req->flags & PEACH2_DMA_HOST_DESC &&
	     req->flags & PEACH2_DMA_REG_MODE) ||
	    (req->flags & PEACH2_DMA_WAIT && req->flags & PEACH2_DMA_REAP) ||
	    (req->channel >= PEACH2_DMA_CHANNELS &&
	     req->channel != PEACH2_DMA_ANY_CHANNEL))
		return -EINVAL;
	if (!(req->flags & PEACH2_DMA_WAIT) && req->timeout_ms)
		return -EINVAL;
	/* A chain's descriptor mode was chosen at CHAIN_CREATE. */
	if (req->chain && (req->count || req->xfers ||
			   req->flags & ~(PEACH2_DMA_WAIT | PEACH2_DMA_REAP)))
		return -EINVAL;
	return 0;
}

/* Mark chain @id busy for a run of it: it runs at most once at a time. */
static struct peach2_chain *peach2_chain_take(struct peach2_file *ctx, u32 id)
{
	struct peach2_chain *chain;

	xa_lock(&ctx->chains);
	chain = xa_load(&ctx->chains, id);
	if (!chain)
		chain = ERR_PTR(-ENOENT);
	else if (chain->busy)
		chain = ERR_PTR(-EBUSY);
	else
		chain->busy = true;
	xa_unlock(&ctx->chains);
	return chain;
}

/*
 * A run of @req: of its chain, or of a prog built from its transfers (a
 * refused transfer is named in @why). The run holds a reference on @ctx;
 * its own reference goes to the caller (later: to the channel).
 */
static struct peach2_run *peach2_run_new(struct peach2_file *ctx,
					 const struct peach2_dma_start *req,
					 struct peach2_xfer_refusal *why)
{
	struct peach2_chain *chain;
	struct peach2_prog *prog;
	struct peach2_run *run;

	run = kzalloc(sizeof(*run), GFP_KERNEL);
	if (!run)
		return ERR_PTR(-ENOMEM);
	kref_init(&run->ref);
	INIT_LIST_HEAD(&run->node);
	INIT_LIST_HEAD(&run->done_node);
	INIT_HLIST_NODE(&run->ticket_node);
	if (req->chain) {
		chain = peach2_chain_take(ctx, req->chain);
		if (IS_ERR(chain)) {
			kfree(run);
			return ERR_CAST(chain);
		}
		run->chain = chain;
		run->prog = chain->prog;
	} else {
		prog = peach2_prog_create(ctx, req->xfers, req->count,
					  req->flags, why);
		if (IS_ERR(prog)) {
			kfree(run);
			return ERR_CAST(prog);
		}
		run->prog = prog;
	}
	kref_get(&ctx->ref);
	run->ctx = ctx;
	return run;
}

/*
 * Give @run a ticket and a place (with a reference) in its file's table; at
 * most PEACH2_DMA_MAX_RUNNING runs of a file are in flight. Undoes itself
 * on failure.
 */
static int peach2_run_enter(struct peach2_file *ctx, struct peach2_run *run)
{
	spin_lock(&ctx->tickets_lock);
	if (ctx->nr_running >= PEACH2_DMA_MAX_RUNNING) {
		spin_unlock(&ctx->tickets_lock);
		return -EAGAIN;
	}
	ctx->nr_running++;
	run->ticket = ++ctx->last_ticket;
	kref_get(&run->ref);		/* the table's */
	hash_add(ctx->tickets, &run->ticket_node, run->ticket);
	spin_unlock(&ctx->tickets_lock);
	return 0;
}

/* Undo peach2_run_enter() for a run that was never queued. */
static void peach2_run_leave(struct peach2_file *ctx, struct peach2_run *run)
{
	spin_lock(&ctx->tickets_lock);
	hash_del(&run->ticket_node);
	ctx->nr_running--;
	spin_unlock(&ctx->tickets_lock);
	peach2_run_put(run);		/* the table's; cannot be last */
}

/* The run with @ticket in @ctx's table, or NULL. Tickets lock held. */
static struct peach2_run *peach2_ticket_find(struct peach2_file *ctx,
					     u64 ticket)
{
	struct peach2_run *run;

	hash_for_each_possible(ctx->tickets, run, ticket_node, ticket)
		if (run->ticket == ticket)
			return run;
	return NULL;
}

/* Queue @run on channel *@ch (or any: *@ch says which one took it). */
static int peach2_run_queue(struct peach2_dev *p2, struct peach2_run *run,
			    u32 *ch)
{
	struct peach2_run *ended = NULL;
	u32 status = 0;
	u64 bytes = 0;
	int ret;

	down_read(&p2->lock);
	ret = p2->dead ? -ENODEV : peach2_chan_pick(p2, *ch);
	if (ret >= 0) {
		*ch = ret;
		ret = peach2_chan_submit(p2, *ch, run, &ended, &status, &bytes);
	}
	up_read(&p2->lock);
	if (ended)
		peach2_run_finish(ended, status, bytes);
	return ret;
}

/* PEACH2_DMA_WAIT: wait for @run and put its status into @req. */
static int peach2_dma_start_wait(struct peach2_file *ctx,
				 struct peach2_run *run,
				 struct peach2_dma_start *req)
{
	u64 bytes;
	int ret;

	ret = peach2_run_wait(ctx, run, req->timeout_ms, !req->timeout_ms);
	if (ret) {
		/*
		 * The DMA goes on; the ticket (already copied) is valid. No
		 * restart: it would start the DMA again.
		 */
		return ret == -ERESTARTSYS ? -EINTR : ret;
	}
	peach2_run_claim(ctx, run, &req->status, &bytes);
	return 0;
}

long peach2_ioctl_dma_start(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_xfer_refusal why = { 0 };
	struct peach2_dma_start req;
	struct peach2_run *run;
	bool wait, reap;
	u64 bytes;
	int ret;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	ret = peach2_dma_start_valid(&req);
	if (ret)
		return ret;
	wait = req.flags & PEACH2_DMA_WAIT;
	reap = req.flags & PEACH2_DMA_REAP;

	run = peach2_run_new(ctx, &req, &why);
	if (IS_ERR(run))
		return peach2_report_refusal(argp + offsetof(typeof(req), refusal),
					     &why, PTR_ERR(run));
	ret = peach2_run_enter(ctx, run);
	if (ret)
		goto err_run;
	req.ticket = run->ticket;
	req.status = 0;
	kref_get(&run->ref);	/* ours, until we return */
	ret = peach2_run_queue(ctx->p2, run, &req.channel);
	if (ret) {
		peach2_run_put(run);
		peach2_run_leave(ctx, run);
		goto err_run;
	}
	/* From here on the run completes on its own. */

	/* Ended in the start (peach2_chan_submit() reaped it): collect it. */
	if (reap && READ_ONCE(run->done) &&
	    peach2_run_claim(ctx, run, &req.status, &bytes))
		req.flags |= PEACH2_DMA_ENDED;
	if (copy_to_user(argp, &req, sizeof(req)))
		ret = -EFAULT;
	else if (wait)
		ret = peach2_dma_start_wait(ctx, run, &req);
	if (wait && !ret && copy_to_user(argp, &req, sizeof(req)))
		ret = -EFAULT;
	peach2_run_put(run);
	return ret;

err_run:
	peach2_run_release_res(run);
	peach2_run_put(run);
	return ret;
}

long peach2_ioctl_dma_wait(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_dma_wait req;
	struct peach2_run *run;
	int ret;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (req.reserved)
		return -EINVAL;

	spin_lock(&ctx->tickets_lock);
	run = peach2_ticket_find(ctx, req.ticket);
	if (run)
		kref_get(&run->ref);
	spin_unlock(&ctx->tickets_lock);
	if (!run)
		return -ENOENT;

	ret = peach2_run_wait(ctx, run, req.timeout_ms, false);
	if (!ret && !peach2_run_claim(ctx, run, &req.status, &req.bytes))
		ret = -ENOENT;		/* another thread waited for it */
	peach2_run_put(run);
	if (ret)
		return ret;
	if (copy_to_user(argp, &req, sizeof(req)))
		return -EFAULT;
	return 0;
}

__poll_t peach2_dma_poll(struct file *filp, struct poll_table_struct *wait)
{
	struct peach2_file *ctx = filp->private_data;

	poll_wait(filp, &ctx->dma_wq, wait);
	return READ_ONCE(ctx->nr_done) ? EPOLLIN | EPOLLRDNORM : 0;
}

/* sysfs `dma`: a line per channel. */
int peach2_dma_show(struct peach2_dev *p2, char *buf)
{
	unsigned int ch;
	int len = 0;

	for (ch = 0; ch < PEACH2_DMA_CHANNELS; ch++) {
		struct peach2_dma_chan *c = &p2->dma[ch];
		const char *state;

		mutex_lock(&c->lock);
		state = c->wedged ? "wedged" : c->cur ? "busy" : "idle";
		len += sysfs_emit_at(buf, len,
				     "ch%u %s queued=%u completed=%llu errors=%llu\n",
				     ch, state, c->nr_queued, c->completed,
				     c->errors);
		mutex_unlock(&c->lock);
	}
	return len;
}
