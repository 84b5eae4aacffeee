// SPDX-License-Identifier: GPL-2.0
/*
 * PEACH2 emulated interconnect card: names (TCA Verbs QP numbers and memory
 * keys) and the read proxy's LOOKUP.
 *
 * PEACH2_IOC_PUBLISH gives a range of one of the file's buffers a name,
 * unique on this node within its kind: QP numbers 0x100 .. 0xffffff, keys
 * index << 8 | 8 random bits (cyclic indices, so a key comes back only
 * after 2^24 others). Other nodes look a name up through the read proxy
 * (op PEACH2_RP_OP_LOOKUP, served by rproxy.c's thread, which calls
 * peach2_names_lookup()): the answer (struct peach2_lookup) carries the
 * range's pieces, the publisher's flags, group, info and file serial, and
 * the export created here for PEACH2_NAME_READ/ATOMIC, so that the target
 * driver checks every remote Read and atomic itself. A name holds a
 * reference on its buffer and ends with UNPUBLISH, FREE of the buffer, or
 * the file's release.
 *
 * Remote writes cannot be checked here (the card applies them as they
 * come); a name with PEACH2_NAME_WRITE marks its buffer so that, once
 * freed, its memory is quarantined (pin.c) for longer than the lease a
 * writer may keep a translation (name_lease_ms, in every answer).
 *
 * Locks: ctx->names_lock (a file's list) before the xarray locks of the two
 * tables. The serving thread looks names up under the xarray lock, and a
 * name is erased under it before its buffer reference is dropped, so the
 * chunks it reads stay valid.
 */

#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "peach2.h"

#define PEACH2_QPN_FIRST	0x100u
#define PEACH2_QPN_LAST		0xffffffu
#define PEACH2_KEY_INDEX_LAST	0xffffffu
#define PEACH2_MAX_NAMES_PER_FD	65536u

unsigned int peach2_name_lease_ms = 1000;
module_param_named(name_lease_ms, peach2_name_lease_ms, uint, 0644);
MODULE_PARM_DESC(name_lease_ms,
		 "how long a node may use a looked-up name's translation before looking it up again (default 1000 ms; name_quarantine_ms must stay larger)");

struct peach2_name {
	struct list_head node;		/* ctx->names */
	struct peach2_file *ctx;
	struct peach2_buf *buf;		/* one reference */
	u64 offset, len;
	u32 kind, name, flags, group;
	u32 export_id, key;		/* READ/ATOMIC export, or 0 */
	u8 info[PEACH2_NAME_INFO];
};

static struct xarray *peach2_names_table(struct peach2_dev *p2, u32 kind)
{
	return kind == PEACH2_NAME_QP ? &p2->names.qps : &p2->names.keys;
}

static u32 peach2_name_index(u32 kind, u32 name)
{
	return kind == PEACH2_NAME_QP ? name : name >> 8;
}

int peach2_names_probe(struct peach2_dev *p2)
{
	struct peach2_names *n = &p2->names;

	xa_init_flags(&n->qps, XA_FLAGS_ALLOC);
	xa_init_flags(&n->keys, XA_FLAGS_ALLOC);
	n->next_qp = PEACH2_QPN_FIRST;
	n->next_key = 1;
	n->answer = dma_alloc_coherent(&p2->pdev->dev, PEACH2_LOOKUP_MAX, &n->answer_dma,
				       GFP_KERNEL);
	return n->answer ? 0 : -ENOMEM;
}

void peach2_names_remove(struct peach2_dev *p2)
{
	struct peach2_names *n = &p2->names;

	/* Names of files still open stay until they close; only the staging goes. */
	if (n->answer)
		dma_free_coherent(&p2->pdev->dev, PEACH2_LOOKUP_MAX, n->answer, n->answer_dma);
	n->answer = NULL;
}

void peach2_names_file_init(struct peach2_file *ctx)
{
	mutex_init(&ctx->names_lock);
	INIT_LIST_HEAD(&ctx->names);
	ctx->nr_names = 0;
}

/* A name already out of its table and list. No locks held. */
static void peach2_name_free(struct peach2_file *ctx, struct peach2_name *nm)
{
	if (nm->export_id)
		peach2_rp_unexport_id(ctx, nm->export_id);
	atomic_dec(&ctx->p2->names.nr_names);
	peach2_buf_put(nm->buf);
	kfree(nm);
}

/* Take out the names of @ctx on @buf (all of them with @buf NULL). */
static void peach2_names_revoke(struct peach2_file *ctx, struct peach2_buf *buf)
{
	struct peach2_dev *p2 = ctx->p2;
	struct peach2_name *nm, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&ctx->names_lock);
	list_for_each_entry_safe(nm, tmp, &ctx->names, node) {
		if (buf && nm->buf != buf)
			continue;
		xa_erase(peach2_names_table(p2, nm->kind), peach2_name_index(nm->kind, nm->name));
		list_move_tail(&nm->node, &gone);
		ctx->nr_names--;
	}
	mutex_unlock(&ctx->names_lock);
	list_for_each_entry_safe(nm, tmp, &gone, node) {
		list_del(&nm->node);
		peach2_name_free(ctx, nm);
	}
}

void peach2_names_revoke_buf(struct peach2_file *ctx, struct peach2_buf *buf)
{
	peach2_names_revoke(ctx, buf);
}

void peach2_names_file_release(struct peach2_file *ctx)
{
	peach2_names_revoke(ctx, NULL);
}

long peach2_ioctl_publish(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_dev *p2 = ctx->p2;
	struct peach2_publish req;
	struct peach2_name *nm;
	struct peach2_buf *buf;
	struct xarray *table;
	u32 index, xflags;
	int ret;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (req.pad0 || req.reserved[0] || req.reserved[1] ||
	    req.flags & ~PEACH2_NAME_FLAGS_ALL || !req.len ||
	    (req.kind != PEACH2_NAME_QP && req.kind != PEACH2_NAME_KEY))
		return -EINVAL;

	nm = kzalloc(sizeof(*nm), GFP_KERNEL);
	if (!nm)
		return -ENOMEM;
	/* As for exports: a FREE racing with us finds the name and revokes it. */
	mutex_lock(&ctx->names_lock);
	buf = peach2_buf_lookup(ctx, req.handle);
	if (!buf) {
		ret = -ENOENT;
		goto err;
	}
	if (!peach2_range_ok(buf->size, req.offset, req.len)) {
		ret = -EINVAL;
		goto err;
	}
	if (ctx->nr_names >= PEACH2_MAX_NAMES_PER_FD) {
		ret = -ENOSPC;
		goto err;
	}
	xflags = (req.flags & PEACH2_NAME_READ ? PEACH2_EXPORT_READ : 0) |
		 (req.flags & PEACH2_NAME_ATOMIC ? PEACH2_EXPORT_ATOMIC : 0);
	if (xflags) {
		ret = peach2_rp_export_buf(ctx, buf, req.offset, req.len, xflags,
					   &nm->export_id, &nm->key);
		if (ret)
			goto err;
	}

	table = peach2_names_table(p2, req.kind);
	if (req.kind == PEACH2_NAME_QP)
		ret = xa_alloc_cyclic(table, &index, NULL,
				      XA_LIMIT(PEACH2_QPN_FIRST, PEACH2_QPN_LAST),
				      &p2->names.next_qp, GFP_KERNEL);
	else
		ret = xa_alloc_cyclic(table, &index, NULL, XA_LIMIT(1, PEACH2_KEY_INDEX_LAST),
				      &p2->names.next_key, GFP_KERNEL);
	if (ret < 0) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto err;
	}
	nm->ctx = ctx;
	nm->buf = buf;
	nm->offset = req.offset;
	nm->len = req.len;
	nm->kind = req.kind;
	nm->flags = req.flags;
	nm->group = req.group;
	nm->name = req.kind == PEACH2_NAME_QP ? index : index << 8 | (get_random_u32() & 0xff);
	memcpy(nm->info, req.info, sizeof(nm->info));

	req.name = nm->name;
	req.export_id = nm->export_id;
	req.key = nm->key;
	if (copy_to_user(argp, &req, sizeof(req))) {
		xa_release(table, index);
		ret = -EFAULT;
		goto err;
	}
	if (req.flags & PEACH2_NAME_WRITE)
		WRITE_ONCE(buf->remote_write, true); /* quarantined when freed */
	/* Replaces the reservation: allocates nothing. */
	ret = xa_err(xa_store(table, index, nm, GFP_KERNEL));
	if (WARN_ON_ONCE(ret)) {
		xa_erase(table, index);
		goto err;
	}
	list_add_tail(&nm->node, &ctx->names);
	ctx->nr_names++;
	atomic_inc(&p2->names.nr_names);
	mutex_unlock(&ctx->names_lock);
	return 0;

err:
	mutex_unlock(&ctx->names_lock);
	if (nm->export_id)
		peach2_rp_unexport_id(ctx, nm->export_id);
	if (buf)
		peach2_buf_put(buf);
	kfree(nm);
	return ret;
}

long peach2_ioctl_unpublish(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_dev *p2 = ctx->p2;
	struct peach2_unpublish req;
	struct peach2_name *nm;
	struct xarray *table;
	u32 index;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (req.kind != PEACH2_NAME_QP && req.kind != PEACH2_NAME_KEY)
		return -EINVAL;
	table = peach2_names_table(p2, req.kind);
	index = peach2_name_index(req.kind, req.name);

	mutex_lock(&ctx->names_lock);
	xa_lock(table);
	nm = xa_load(table, index);
	if (nm && nm->ctx == ctx && nm->name == req.name)
		__xa_erase(table, index);
	else
		nm = NULL;		/* unknown, reserved, stale or another file's */
	xa_unlock(table);
	if (nm) {
		list_del(&nm->node);
		ctx->nr_names--;
	}
	mutex_unlock(&ctx->names_lock);
	if (!nm)
		return -ENOENT;
	peach2_name_free(ctx, nm);
	return 0;
}

/*
 * The read proxy's thread: answer a LOOKUP of (kind, name) from byte
 * @offset into the staging memory (@len bytes). Returns 0 or the status to
 * answer with; *guess is set for a key whose index exists with other random
 * bits (counted like a wrong export key: keys are capabilities). An index
 * that does not exist is no guess, as an unknown export id is none: indices
 * are handed out in order, so only the random bits are secret, and an
 * honest node still asks for names that are gone (a datagram to a QP that
 * was destroyed, a key deregistered meanwhile); counting those would lock
 * every process of that node out of this one for a second.
 */
u32 peach2_names_lookup(struct peach2_dev *p2, u32 kind, u32 name, u64 offset, u32 len,
			bool *guess)
{
	struct peach2_lookup *l = p2->names.answer;
	struct peach2_lookup_piece *pc = l->pieces;
	const u32 room = (len - sizeof(*l)) / sizeof(*pc);
	const struct peach2_mem *mem;
	struct peach2_name *nm;
	struct xarray *table;
	u64 pos, end;
	u32 status = 0;

	if (kind != PEACH2_NAME_QP && kind != PEACH2_NAME_KEY)
		return PEACH2_ERR_RP_BAD_REQUEST;
	table = peach2_names_table(p2, kind);
	memset(l, 0, len);
	xa_lock(table);
	nm = xa_load(table, peach2_name_index(kind, name));
	if (!nm || nm->name != name) {
		*guess = !!nm;
		status = PEACH2_ERR_RP_NOT_EXPORTED;
		atomic64_inc(&p2->names.lookup_misses);
		goto out;
	}
	if (offset >= nm->len) {
		status = PEACH2_ERR_RP_RANGE;
		goto out;
	}
	l->kind = kind;
	l->name = name;
	l->flags = nm->flags;
	l->group = nm->group;
	l->owner = nm->ctx->serial;
	l->len = nm->len;
	l->offset = offset;
	l->export_id = nm->export_id;
	l->key = nm->key;
	l->lease_ms = READ_ONCE(peach2_name_lease_ms);
	memcpy(l->info, nm->info, sizeof(l->info));
	/* The pieces of [offset, len) in buffer order, merged where adjacent. */
	pos = nm->offset + offset;
	end = nm->offset + nm->len;
	while (pos < end) {
		u64 ga, n;

		mem = peach2_buf_chunk(nm->buf, pos);
		n = min(end, mem->offset + mem->len) - pos;
		ga = peach2_buf_global_addr(nm->buf, mem) + (pos - mem->offset);
		if (l->nr_pieces && pc[l->nr_pieces - 1].global_addr + pc[l->nr_pieces - 1].len == ga) {
			pc[l->nr_pieces - 1].len += n;
		} else {
			if (l->nr_pieces == room)
				break;
			pc[l->nr_pieces].global_addr = ga;
			pc[l->nr_pieces].len = n;
			l->nr_pieces++;
		}
		pos += n;
	}
out:
	xa_unlock(table);
	return status;
}

int peach2_names_show(struct peach2_dev *p2, char *buf)
{
	struct peach2_names *n = &p2->names;
	u32 ranges = 0;

	down_read(&p2->lock);
	if (!p2->dead)
		ranges = readl(p2->regs + PEACH2_REG_IN_COUNT);
	up_read(&p2->lock);
	return sysfs_emit(buf,
			  "names %d\nlookups %lld\nlookup_misses %lld\npinned_bufs %lld\npinned_pages %lld\n"
			  "quarantined_bufs %lld\nquarantined_bytes %lld\nfilter_ranges %u\n",
			  atomic_read(&n->nr_names), atomic64_read(&n->lookups),
			  atomic64_read(&n->lookup_misses), atomic64_read(&n->pinned_bufs),
			  atomic64_read(&n->pinned_pages), atomic64_read(&n->quarantined_bufs),
			  atomic64_read(&n->quarantined_bytes), ranges);
}
