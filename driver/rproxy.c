// SPDX-License-Identifier: GPL-2.0
/*
 * PEACH2 emulated interconnect card: the read proxy (remote get, CAS, FAA).
 *
 * PEACH2 cannot read remote memory. A requester's driver sends a request
 * (struct peach2_rp_req) through its card to the target node's card, which
 * queues it in a ring in the target's host memory and raises MSI-X vector
 * PEACH2_INT_VECTOR_RP. The target's driver (this file, in that interrupt's
 * thread) checks the request against the memory processes on this node have
 * exported, and answers on the proxy DMA channel: for a READ the data to
 * the requester's `reply` address, then in every case a completion record
 * (struct peach2_rp_cpl: 24 bytes, then the tag in a second write) to its
 * `cpl` address. No process on the target takes part.
 *
 * Three parts:
 *  - exports: PEACH2_IOC_EXPORT puts {id, key, buffer reference, range,
 *    flags} into the device-wide table rp->exports (ids cyclic from 1) and
 *    the file's list (at most PEACH2_MAX_EXPORTS_PER_FD); UNEXPORT, FREE of
 *    the buffer and close() take it out again;
 *  - sending: PEACH2_IOC_RP_SUBMIT checks the caller's reply range and
 *    completion record against its own buffers, then writes the request
 *    into RP_TX_REQ and the target into RP_TX_SEND under rp->tx_lock, which
 *    also makes `seq` strictly increasing (and at least the wall clock in
 *    ns, so that it keeps increasing across driver reloads);
 *  - serving: the threaded interrupt on vector PEACH2_INT_VECTOR_RP takes
 *    at most PEACH2_RP_BUDGET entries per run, then writes HEAD (the card
 *    raises the interrupt again if entries remain), and looks for the
 *    next request up to rp_poll_us (adaptive) before it sleeps. It
 *    decides every queued entry first and then answers them all in one chain of host
 *    descriptors on PEACH2_DMA_PROXY_CHANNEL (a reply is a few
 *    descriptors: a 1 MiB READ into a user's malloc'ed buffer is one
 *    request per physically contiguous run, so one start and one
 *    interrupt serve them all); the thread waits for the chain's end
 *    (vector PEACH2_INT_VECTOR_DMA(4)), aborting a run that makes no
 *    progress for rp_timeout_ms, that is not done by rp_timeout_ms +
 *    len / (16 MB/s), or when remove() begins. After a failed run the
 *    card's count of completed descriptors says which requests were
 *    answered; only the rest get error records or a new run.
 *
 * The watch (a delayed work every rp_watch_ms) looks at the ring from
 * outside the thread: entries that stay queued for a whole period while the
 * thread is idle mean a lost wake-up, which it reports and makes up for by
 * waking the thread; a thread that is busy in one step the while is
 * reported with that step. Stalls of seconds were seen in CI and not
 * explained (docs/notes.md, 2026-12-02); this says which one the next is.
 *
 * Per source node the thread keeps the last seq it served (replays are
 * refused; the state lives as long as the driver instance, so a reload
 * forgets it) and counts wrong keys for existing exports: more than
 * PEACH2_RP_FAIL_MAX in PEACH2_RP_FAIL_WINDOW and the node's requests are
 * refused unseen for PEACH2_RP_FAIL_WINDOW. Unknown ids do not count: a
 * guess at an export that does not exist cannot hit, and a requester
 * still asking for an export whose exporter is gone must not be locked
 * out of the next one. LOOKUPs count the same way: a key whose index
 * exists with other random bits (names.c).
 *
 * Locks: ctx->exp_lock (a file's export list) before the xarray lock of
 * rp->exports. A lookup by the serving thread takes a reference on the
 * export's buffer under the xarray lock; an export is erased under that
 * lock before its own reference is dropped, so the buffer (and the memory
 * the card reads for the reply) stays alive until the reply has been sent.
 * Buffer references are never dropped under a lock. rp->tx_lock (spinlock)
 * nests inside p2->lock (read). Everything the serving thread uses
 * (ring, head, src[], the reply memory) is its own.
 */

#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/pci.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/sched/stat.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "peach2.h"

/* Requests (with their reply lists) the serving thread takes per interrupt. */
#define PEACH2_RP_BUDGET	32u
/*
 * Descriptors of one reply: the data, cut where the target's chunks (at
 * least a page) or the requester's reply pieces end; the record, its tag.
 */
#define PEACH2_RP_MAX_DESCS	(PEACH2_RP_MAX_LEN / PAGE_SIZE + 1 + \
				 PEACH2_RP_MAX_PIECES + 2)
/*
 * Reply memory: the descriptors of one chain, then a completion record per
 * request of a batch (PEACH2_RP_BUDGET). A chain holds at least the
 * longest reply; shorter ones share it.
 */
#define PEACH2_RP_REPLY_MEM	SZ_64K
#define PEACH2_RP_CPLS_SIZE	(PEACH2_RP_BUDGET * sizeof(struct peach2_rp_cpl_le))
#define PEACH2_RP_CHAIN_DESCS	((PEACH2_RP_REPLY_MEM - PEACH2_RP_CPLS_SIZE) / \
				 sizeof(struct peach2_desc_le))
/*
 * Status reads of a reply run that moved it on, before the thread sleeps
 * until its interrupt: while its copies are paused the emulated card moves
 * up to 1 MiB per read (~50 us of copying), enough for a full batch of
 * 1 MiB replies.
 */
#define PEACH2_RP_POLLS		(2 * PEACH2_RP_BUDGET)
/* The longest look for the next request (rp_poll_us), and the shortest. */
#define PEACH2_RP_POLL_MAX_US	1000u
#define PEACH2_RP_POLL_MIN_US	10u
/*
 * While another task wants this CPU, looks spin at most half of each
 * window: requesters cannot take the CPU from this node's programs.
 */
#define PEACH2_RP_SHARE_WINDOW_NS	(10 * NSEC_PER_MSEC)
/* A reply must end within rp_timeout_ms + len / this many bytes per ms. */
#define PEACH2_RP_MIN_BYTES_PER_MS	16000u
/* Wrong keys a node may send per window before it is throttled. */
#define PEACH2_RP_FAIL_MAX	64u
#define PEACH2_RP_FAIL_WINDOW	HZ

/* What the serving thread is doing (rp->step), for the watch. */
enum peach2_rp_step {
	PEACH2_RP_IDLE,		/* not running: waits for its interrupt */
	PEACH2_RP_SERVING,	/* deciding and answering requests */
	PEACH2_RP_REPLY_WAIT,	/* asleep until a reply run ends */
	PEACH2_RP_LOOKING,	/* looking for the next request */
};

/* A thread busy in one step this long, with requests waiting, is reported. */
#define PEACH2_RP_WATCH_BUSY_MS	1000u

#define PEACH2_RP_CH		PEACH2_DMA_PROXY_CHANNEL
/*
 * Unmasked for good: the request interrupt. The reply channel's bit is
 * unmasked only while the thread waits for a reply run that outlasted its
 * start (peach2_rp_wait()): most end inside it and need no message.
 */
#define PEACH2_RP_INTS		PEACH2_INT_RP
#define PEACH2_RP_DMA_INT	PEACH2_INT_DMA(PEACH2_RP_CH)

static unsigned int peach2_rp_ring_entries = 256;
/* A READ with a full reply list takes 1 + 16 entries: room for one. */
#define PEACH2_RP_RING_MIN	32u
static_assert(PEACH2_RP_RING_MIN >= 1 + PEACH2_RP_LIST_ENTRIES(PEACH2_RP_MAX_PIECES));

static int peach2_rp_ring_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret)
		return ret;
	if (!is_power_of_2(n) || n < PEACH2_RP_RING_MIN || n > PEACH2_RP_RING_MAX)
		return -EINVAL;
	*(unsigned int *)kp->arg = n;
	return 0;
}

static const struct kernel_param_ops peach2_rp_ring_ops = {
	.set = peach2_rp_ring_set,
	.get = param_get_uint,
};

module_param_cb(rp_ring_entries, &peach2_rp_ring_ops,
		&peach2_rp_ring_entries, 0444);
MODULE_PARM_DESC(rp_ring_entries,
		 "read-proxy request ring entries: a power of 2, 32 .. 4096 (default 256)");

static unsigned int peach2_rp_timeout_ms = 2000;
module_param_named(rp_timeout_ms, peach2_rp_timeout_ms, uint, 0644);
MODULE_PARM_DESC(rp_timeout_ms,
		 "abort a read-proxy reply that makes no progress for this long, or is not done after this long + len / (16 MB/s) (default 2000 ms, at least 10)");

static unsigned int peach2_rp_poll_us;
module_param_named(rp_poll_us, peach2_rp_poll_us, uint, 0644);
MODULE_PARM_DESC(rp_poll_us,
		 "after answering, look for the next read-proxy request up to this long before waiting for its interrupt (adaptive; at most 1000 us; default 0: never; requesters then spend this CPU's time)");

static unsigned int peach2_rp_watch_ms = 250;
module_param_named(rp_watch_ms, peach2_rp_watch_ms, uint, 0644);
MODULE_PARM_DESC(rp_watch_ms,
		 "look this often for read-proxy requests left waiting by the serving thread: report them and wake the thread if it is idle (default 250 ms; 0: off)");

static unsigned int peach2_rp_chain_max = PEACH2_RP_BUDGET;
module_param_named(rp_chain_max, peach2_rp_chain_max, uint, 0644);
MODULE_PARM_DESC(rp_chain_max,
		 "read-proxy requests answered per chain run at most, 1 .. 32 (default 32; 1 answers one at a time, for comparisons)");

/* A request as the card queues it (struct peach2_rp_req, little endian). */
struct peach2_rp_req_le {
	u8 op;
	u8 version;
	__le16 src_node;
	__le32 export_id;
	__le32 key;
	__le32 len;
	__le64 addr;
	__le64 seq;
	__le64 reply;
	__le64 cpl;
	__le64 operand[2];
};

/* The completion record (struct peach2_rp_cpl, little endian). */
struct peach2_rp_cpl_le {
	__le64 value;
	__le32 status;
	__le32 len;
	__le64 reserved;
	__le64 tag;
};

static_assert(sizeof(struct peach2_rp_req_le) == PEACH2_RP_ENTRY_SIZE);
static_assert(sizeof(struct peach2_rp_req) == PEACH2_RP_ENTRY_SIZE);
static_assert(sizeof(struct peach2_rp_cpl_le) == 32);
static_assert(sizeof(struct peach2_rp_cpl) == 32);
static_assert(PEACH2_RP_CHAIN_DESCS >= PEACH2_RP_MAX_DESCS);
/* The first part of the record goes in one DMA write, the tag in a second. */
#define PEACH2_RP_CPL_HEAD	offsetof(struct peach2_rp_cpl_le, tag)

/*
 * A request the serving thread has decided and not yet answered: the
 * answer (data and record, or the record alone) waits for the next chain.
 */
struct peach2_rp_reply {
	struct peach2_rp_req r;
	/*
	 * READ: where the data goes (requester bus addresses), in order;
	 * PEACH2_RP_MAX_PIECES of rp->reply_pieces per reply.
	 */
	struct peach2_rp_piece *pieces;
	u32 npieces;
	struct peach2_buf *buf;		/* a reference, or NULL */
	u64 off;			/* READ: buffer offset of the first byte */
	u64 value;			/* CAS/FAA: the old value */
	u32 status;			/* 0, or the peach2_err to answer with */
	u32 ndescs;			/* the descriptors of its answer */
	u32 last_desc;			/* in the chain built last: its tag's */
};

/* One export (the uapi's struct peach2_export describes the ioctl). */
struct peach2_exp {
	struct list_head node;		/* ctx->exports */
	struct peach2_file *ctx;	/* the owner */
	struct peach2_buf *buf;		/* one reference */
	u64 offset;			/* inside the buffer */
	u64 len;
	u32 id;
	u32 key;
	u32 flags;			/* PEACH2_EXPORT_* */
};

/* ---- exports ------------------------------------------------------------ */

void peach2_rp_file_init(struct peach2_file *ctx)
{
	mutex_init(&ctx->exp_lock);
	INIT_LIST_HEAD(&ctx->exports);
	ctx->nr_exports = 0;
}

/* An export already out of the table and the list. No locks held. */
static void peach2_exp_free(struct peach2_dev *p2, struct peach2_exp *exp)
{
	atomic_dec(&p2->rp.nr_exports);
	peach2_buf_put(exp->buf);
	kfree(exp);
}

/* Take out the exports of @ctx that @match (all with @buf NULL). */
static void peach2_exp_revoke(struct peach2_file *ctx, struct peach2_buf *buf)
{
	struct peach2_dev *p2 = ctx->p2;
	struct peach2_exp *exp, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&ctx->exp_lock);
	list_for_each_entry_safe(exp, tmp, &ctx->exports, node) {
		if (buf && exp->buf != buf)
			continue;
		xa_erase(&p2->rp.exports, exp->id);
		list_move_tail(&exp->node, &gone);
		ctx->nr_exports--;
	}
	mutex_unlock(&ctx->exp_lock);

	list_for_each_entry_safe(exp, tmp, &gone, node) {
		list_del(&exp->node);
		peach2_exp_free(p2, exp);
	}
}

/* PEACH2_IOC_FREE of @buf (still referenced by the caller). */
void peach2_rp_revoke_buf(struct peach2_file *ctx, struct peach2_buf *buf)
{
	peach2_exp_revoke(ctx, buf);
}

/* close(): every export of the file goes. */
void peach2_rp_file_release(struct peach2_file *ctx)
{
	peach2_exp_revoke(ctx, NULL);
}

/*
 * Export [offset, offset + len) of @buf (a reference the export takes over
 * on success) for @flags; *id and *key out. @fill, if set, runs after the
 * id is reserved and before the export can be served or revoked (the
 * ioctl copies the answer to user space there; an error undoes all).
 * The caller holds ctx->exp_lock (so a FREE of the buffer that runs
 * meanwhile finds the export and revokes it).
 */
static int peach2_rp_export_locked(struct peach2_file *ctx, struct peach2_buf *buf,
				   u64 offset, u64 len, u32 flags, u32 *idp, u32 *keyp,
				   int (*fill)(void *arg, u32 id, u32 key), void *arg)
{
	struct peach2_rp *rp = &ctx->p2->rp;
	struct peach2_exp *exp;
	u32 id;
	int ret;

	if (!rp->present)
		return -EOPNOTSUPP;
	if (!flags || flags & ~PEACH2_EXPORT_FLAGS_ALL || !len ||
	    !peach2_range_ok(buf->size, offset, len))
		return -EINVAL;
	if (ctx->nr_exports >= PEACH2_MAX_EXPORTS_PER_FD)
		return -ENOSPC;
	exp = kzalloc(sizeof(*exp), GFP_KERNEL);
	if (!exp)
		return -ENOMEM;

	/* Reserve the id (it loads as NULL: not served yet). */
	ret = xa_alloc_cyclic(&rp->exports, &id, NULL, XA_LIMIT(1, U32_MAX),
			      &rp->next_export, GFP_KERNEL);
	if (ret < 0) {
		kfree(exp);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	exp->ctx = ctx;
	exp->buf = buf;
	exp->offset = offset;
	exp->len = len;
	exp->id = id;
	exp->key = get_random_u32();
	exp->flags = flags;

	if (fill) {
		ret = fill(arg, id, exp->key);
		if (ret) {
			xa_release(&rp->exports, id);
			kfree(exp);
			return ret;
		}
	}
	/* Replaces the reservation: allocates nothing, should not fail. */
	ret = xa_err(xa_store(&rp->exports, id, exp, GFP_KERNEL));
	if (WARN_ON_ONCE(ret)) {
		xa_erase(&rp->exports, id);
		kfree(exp);
		return ret;
	}
	list_add_tail(&exp->node, &ctx->exports);
	ctx->nr_exports++;
	atomic_inc(&rp->nr_exports);
	*idp = id;
	*keyp = exp->key;
	return 0;
}

/* An export for the driver's own use (names.c); takes a new reference on @buf. */
int peach2_rp_export_buf(struct peach2_file *ctx, struct peach2_buf *buf, u64 offset,
			 u64 len, u32 flags, u32 *id, u32 *key)
{
	int ret;

	kref_get(&buf->ref);
	mutex_lock(&ctx->exp_lock);
	ret = peach2_rp_export_locked(ctx, buf, offset, len, flags, id, key, NULL, NULL);
	mutex_unlock(&ctx->exp_lock);
	if (ret)
		peach2_buf_put(buf);
	return ret;
}

struct peach2_export_answer {
	struct peach2_export *req;
	void __user *argp;
};

static int peach2_export_copy_out(void *arg, u32 id, u32 key)
{
	struct peach2_export_answer *a = arg;

	a->req->export_id = id;
	a->req->key = key;
	return copy_to_user(a->argp, a->req, sizeof(*a->req)) ? -EFAULT : 0;
}

long peach2_ioctl_export(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_export_answer answer;
	struct peach2_export req;
	struct peach2_buf *buf;
	u32 id, key;
	int ret;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (!ctx->p2->rp.present)
		return -EOPNOTSUPP;
	if (req.reserved[0] || req.reserved[1] || !req.flags ||
	    req.flags & ~PEACH2_EXPORT_FLAGS_ALL || !req.len)
		return -EINVAL;

	/*
	 * Under exp_lock from the lookup of the handle to the list insertion:
	 * a FREE of the buffer that runs meanwhile erases the handle first
	 * and then takes exp_lock to revoke its exports, so it finds ours.
	 */
	mutex_lock(&ctx->exp_lock);
	buf = peach2_buf_lookup(ctx, req.handle);
	if (!buf) {
		mutex_unlock(&ctx->exp_lock);
		return -ENOENT;
	}
	answer.req = &req;
	answer.argp = argp;
	ret = peach2_rp_export_locked(ctx, buf, req.offset, req.len, req.flags, &id, &key,
				      peach2_export_copy_out, &answer);
	mutex_unlock(&ctx->exp_lock);
	if (ret)
		peach2_buf_put(buf);
	return ret;
}

/* Ends export @id of @ctx: 0 or -ENOENT. */
static int peach2_rp_unexport(struct peach2_file *ctx, u32 id)
{
	struct peach2_dev *p2 = ctx->p2;
	struct peach2_rp *rp = &p2->rp;
	struct peach2_exp *exp;

	mutex_lock(&ctx->exp_lock);
	xa_lock(&rp->exports);
	exp = xa_load(&rp->exports, id);
	if (exp && exp->ctx == ctx)
		__xa_erase(&rp->exports, id);
	else
		exp = NULL;		/* unknown, reserved, or another file's */
	xa_unlock(&rp->exports);
	if (exp) {
		list_del(&exp->node);
		ctx->nr_exports--;
	}
	mutex_unlock(&ctx->exp_lock);

	if (!exp)
		return -ENOENT;
	peach2_exp_free(p2, exp);
	return 0;
}

void peach2_rp_unexport_id(struct peach2_file *ctx, u32 id)
{
	peach2_rp_unexport(ctx, id);
}

long peach2_ioctl_unexport(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_unexport req;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (!ctx->p2->rp.present)
		return -EOPNOTSUPP;
	if (req.flags)
		return -EINVAL;
	return peach2_rp_unexport(ctx, req.export_id);
}

/* ---- sending ------------------------------------------------------------- */

/*
 * The host bus address of [off, off + len) of buffer @handle of @ctx, which
 * must lie inside one chunk. 0 or -errno.
 */
static int peach2_rp_local(struct peach2_file *ctx, u32 handle, u64 off,
			   u64 len, u64 *bus)
{
	const struct peach2_mem *mem;
	struct peach2_buf *buf;
	int ret = -EINVAL;

	if (!handle)
		return -EINVAL;
	buf = peach2_buf_lookup(ctx, handle);
	if (!buf)
		return -ENOENT;
	if (peach2_range_ok(buf->size, off, len) &&
	    peach2_one_chunk(buf, off, len)) {
		mem = peach2_buf_chunk(buf, off);
		*bus = mem->dma + (off - mem->offset);
		ret = 0;
	}
	peach2_buf_put(buf);
	return ret;
}

/* A READ's reply piece as the card reads it (struct peach2_rp_piece). */
struct peach2_rp_piece_le {
	__le64 addr;
	__le32 len;
	__le32 reserved;
};

static_assert(sizeof(struct peach2_rp_piece_le) == sizeof(struct peach2_rp_piece));
#define PEACH2_RP_LIST_SIZE \
	(PEACH2_RP_MAX_PIECES * sizeof(struct peach2_rp_piece_le))

/*
 * The reply pieces of [off, off + len) of buffer @handle of @ctx: its
 * physically contiguous runs, at most @room (PEACH2_RP_MAX_PIECES: -EINVAL
 * past it), into @list (bus addresses). Returns the number of pieces, or
 * -E2BIG when more than a smaller @room, or -errno.
 */
static int peach2_rp_reply_list(struct peach2_file *ctx, u32 handle, u64 off,
				u32 len, struct peach2_rp_piece_le *list,
				int room)
{
	const struct peach2_mem *mem;
	struct peach2_buf *buf;
	u64 done = 0, bus, piece;
	int n = 0;

	if (!handle)
		return -EINVAL;
	buf = peach2_buf_lookup(ctx, handle);
	if (!buf)
		return -ENOENT;
	if (!peach2_range_ok(buf->size, off, len)) {
		peach2_buf_put(buf);
		return -EINVAL;
	}
	while (done < len) {
		mem = peach2_buf_chunk(buf, off + done);
		bus = mem->dma + (off + done - mem->offset);
		piece = min_t(u64, len - done, mem->offset + mem->len - (off + done));
		done += piece;
		if (n && le64_to_cpu(list[n - 1].addr) +
			 le32_to_cpu(list[n - 1].len) == bus) {
			le32_add_cpu(&list[n - 1].len, piece);
			continue;
		}
		if (n == room) {
			n = room < PEACH2_RP_MAX_PIECES ? -E2BIG : -EINVAL;
			break;
		}
		list[n].addr = cpu_to_le64(bus);
		list[n].len = cpu_to_le32(piece);
		list[n].reserved = 0;
		n++;
	}
	peach2_buf_put(buf);
	return n;
}

/* The fields of an RP_SUBMIT request, before anything is looked up. */
static int peach2_rp_submit_valid(const struct peach2_rp_submit *req)
{
	if (req->flags || req->reserved[0] || req->reserved[1])
		return -EINVAL;
	switch (req->op) {
	case PEACH2_RP_OP_READ:
		if (req->len < 4 || req->len > PEACH2_RP_MAX_LEN ||
		    req->len % 4 || req->operand[0] || req->operand[1])
			return -EINVAL;
		break;
	case PEACH2_RP_OP_LOOKUP: /* names.c answers it on the target */
		if (req->len < PEACH2_LOOKUP_MIN || req->len > PEACH2_LOOKUP_MAX ||
		    req->len % 16 || req->operand[0] || req->operand[1])
			return -EINVAL;
		break;
	case PEACH2_RP_OP_CAS:
	case PEACH2_RP_OP_FAA:
		if (req->len != 8 || req->reply_handle || req->reply_offset)
			return -EINVAL;
		if (req->op == PEACH2_RP_OP_FAA && req->operand[1])
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (req->cpl_offset % sizeof(struct peach2_rp_cpl))
		return -EINVAL;
	return 0;
}

/*
 * Write request @w into RP_TX_REQ, skipping the words the register already
 * holds: a register write is a trip to the card (~0.15 us under TCG), and
 * consecutive requests of a process differ mostly in seq. Returns whether a
 * word was skipped. A reset clears the register (version 0): the card then
 * refuses the send with BAD_COMMAND and the caller writes all of it again.
 * Under tx_lock.
 */
static bool peach2_rp_write_req(struct peach2_dev *p2, const u64 w[8])
{
	struct peach2_rp *rp = &p2->rp;
	bool skipped = false;
	int i;

	for (i = 0; i < 8; i++) {
		if ((rp->tx_req_known & BIT(i)) && rp->tx_req[i] == w[i]) {
			skipped = true;
			continue;
		}
		writeq(w[i], p2->regs + PEACH2_REG_RP_TX_REQ + 8 * i);
		rp->tx_req[i] = w[i];
		rp->tx_req_known |= BIT(i);
	}
	return skipped;
}

/*
 * Hand request @w (struct peach2_rp_req, seq still 0) and a READ's reply
 * list (@n pieces at @list, if @n) to the card's request engine for @node,
 * with the next seq of this node (strictly increasing, at least the wall
 * clock in ns). Returns 0 with *seqp, or -errno.
 */
static int peach2_rp_send(struct peach2_dev *p2, u32 node, u64 w[8],
			  const struct peach2_rp_piece_le *list, u32 n, u64 *seqp)
{
	struct peach2_rp *rp = &p2->rp;
	bool skipped;
	u32 result;

	down_read(&p2->lock);
	if (p2->dead) {
		up_read(&p2->lock);
		return -ENODEV;
	}
	spin_lock(&rp->tx_lock);
	if (n && !rp->tx_list) {
		/* remove() has begun: its list memory is gone. */
		spin_unlock(&rp->tx_lock);
		up_read(&p2->lock);
		return -ENODEV;
	}
	*seqp = max(rp->last_seq + 1, ktime_get_real_ns());
	rp->last_seq = *seqp;
	w[3] = *seqp;
	if (n) {
		/* The card reads the list at RP_TX_SEND. */
		memcpy(rp->tx_list, list, n * sizeof(*list));
		lo_hi_writeq(rp->tx_list_dma, p2->regs + PEACH2_REG_RP_TX_LIST_LO);
	}
	skipped = peach2_rp_write_req(p2, w);
	writel(node, p2->regs + PEACH2_REG_RP_TX_SEND);
	result = readl(p2->regs + PEACH2_REG_RP_TX_RESULT);
	if (result == PEACH2_ERR_BAD_COMMAND && skipped) {
		/* A reset cleared RP_TX_REQ behind our back: all of it again. */
		rp->tx_req_known = 0;
		peach2_rp_write_req(p2, w);
		writel(node, p2->regs + PEACH2_REG_RP_TX_SEND);
		result = readl(p2->regs + PEACH2_REG_RP_TX_RESULT);
	}
	spin_unlock(&rp->tx_lock);
	up_read(&p2->lock);

	if (!result)
		return 0;
	dev_dbg(&p2->pdev->dev, "read-proxy request to node %u not sent: %s\n",
		node, peach2_err_name(result));
	/* A full link send queue is transient: the caller retries. */
	if (result == PEACH2_ERR_TX_OVERFLOW)
		return -EAGAIN;
	/* The card could not read the reply list: nothing was sent. */
	if (result == PEACH2_ERR_DMA_READ || result == PEACH2_ERR_BAD_COMMAND)
		return -EIO;
	return -EHOSTUNREACH;
}

long peach2_ioctl_rp_submit(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_dev *p2 = ctx->p2;
	struct peach2_rp_piece_le *list = NULL;
	struct peach2_rp_submit req;
	u64 reply = 0, cpl, w[8];
	int ret, n = 0;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (!p2->rp.present)
		return -EOPNOTSUPP;
	ret = peach2_rp_submit_valid(&req);
	if (ret)
		return ret;
	if (req.node >= p2->node_count)
		return -ENXIO;

	ret = peach2_rp_local(ctx, req.cpl_handle, req.cpl_offset,
			      sizeof(struct peach2_rp_cpl), &cpl);
	if (ret)
		return ret;
	if (req.op == PEACH2_RP_OP_LOOKUP) {
		ret = peach2_rp_local(ctx, req.reply_handle, req.reply_offset,
				      req.len, &reply);
		if (ret)
			return ret;
		/* The answer comes from 16-byte aligned staging memory. */
		if (reply % 16)
			return -EINVAL;
	}
	if (req.op == PEACH2_RP_OP_READ) {
		/*
		 * One piece goes in the request (most replies: no list to
		 * allocate); more in a list after it.
		 */
		struct peach2_rp_piece_le one;

		n = peach2_rp_reply_list(ctx, req.reply_handle, req.reply_offset,
					 req.len, &one, 1);
		if (n == -E2BIG) {
			list = kmalloc(PEACH2_RP_LIST_SIZE, GFP_KERNEL);
			if (!list)
				return -ENOMEM;
			n = peach2_rp_reply_list(ctx, req.reply_handle,
						 req.reply_offset, req.len, list,
						 PEACH2_RP_MAX_PIECES);
		}
		if (n < 0) {
			kfree(list);
			return n;
		}
		if (n == 1) {
			reply = le64_to_cpu((list ? list : &one)->addr);
			n = 0;
		}
	}

	/* struct peach2_rp_req; src_node is the receiving card's to fill. */
	w[0] = req.op | (u64)PEACH2_RP_VERSION << 8 | (u64)req.export_id << 32;
	w[1] = req.key | (u64)req.len << 32;
	w[2] = req.addr;
	w[3] = 0;			/* seq: peach2_rp_send() */
	w[4] = reply;
	w[5] = cpl;
	w[6] = n ? n : req.operand[0];	/* READ: the pieces listed */
	w[7] = req.operand[1];
	ret = peach2_rp_send(p2, req.node, w, list, n, &req.tag);
	kfree(list);
	if (ret)
		return ret;
	atomic64_inc(&p2->rp.stats.submitted);

	if (copy_to_user(argp, &req, sizeof(req)))
		return -EFAULT;		/* the request is on its way */
	return 0;
}

/* ---- serving ------------------------------------------------------------- */

/*
 * The offset in @buf of the byte at bus address @addr, if that byte lies in
 * the exported range [eoff, eoff + elen) of the buffer.
 */
static bool peach2_rp_find(const struct peach2_buf *buf, u64 eoff, u64 elen,
			   u64 addr, u64 *off)
{
	const struct peach2_mem *mem = peach2_buf_chunk(buf, eoff);
	u64 eend = eoff + elen;		/* checked at export time */
	u32 i;

	for (i = mem - buf->chunks;
	     i < buf->nr_chunks && buf->chunks[i].offset < eend; i++) {
		u64 lo, hi, blo;

		mem = &buf->chunks[i];
		lo = max(eoff, mem->offset);
		hi = min_t(u64, eend, mem->offset + mem->len);
		blo = mem->dma + (lo - mem->offset);
		if (addr >= blo && addr - blo < hi - lo) {
			*off = lo + (addr - blo);
			return true;
		}
	}
	return false;
}

static void peach2_rp_count(struct peach2_rp *rp, u32 status)
{
	struct peach2_rp_stats *s = &rp->stats;

	switch (status) {
	case PEACH2_ERR_RP_NOT_EXPORTED:
		atomic64_inc(&s->refused_not_exported);
		break;
	case PEACH2_ERR_RP_RANGE:
		atomic64_inc(&s->refused_range);
		break;
	case PEACH2_ERR_DMA_ALIGN:
		atomic64_inc(&s->refused_align);
		break;
	case PEACH2_ERR_RP_REPLAY:
		atomic64_inc(&s->refused_replay);
		break;
	default:
		atomic64_inc(&s->refused_bad_request);
		break;
	}
}

/*
 * A READ's reply pieces: inside the requester's host memory and together
 * the request's length; a list's pieces also not empty and reserved 0,
 * with `reply` 0. operand[1] is 0. (A piece that breaks the DMA rules,
 * a length not a multiple of 4 among them, is DMA_ALIGN: see the check.)
 */
static bool peach2_rp_pieces_ok(struct peach2_dev *p2,
				const struct peach2_rp_reply *rep)
{
	bool listed = rep->r.operand[0];
	u64 total = 0, end;
	u32 i;

	for (i = 0; i < rep->npieces; i++) {
		const struct peach2_rp_piece *pc = &rep->pieces[i];

		if (listed && (!pc->len || pc->reserved))
			return false;
		if (check_add_overflow(pc->addr, (u64)pc->len, &end) ||
		    end > p2->host_size)
			return false;
		total += pc->len;
	}
	return rep->npieces && total == rep->r.len && !rep->r.operand[1] &&
	       (!listed || !rep->r.reply);
}

/*
 * Check request @rep (from a ring entry, src_node and cpl usable). Returns 0
 * with a buffer reference in *bufp and the buffer offset of the first byte
 * in *offp, or the peach2_err code to answer with (*bufp may still hold a
 * reference then). *idp tells whether the export exists (id) and
 * *keyedp whether its key matched.
 * Changes no state: the caller records the seq of an accepted request.
 */
static u32 peach2_rp_check(struct peach2_dev *p2, const struct peach2_rp_reply *rep,
			   struct peach2_buf **bufp, u64 *offp, bool *idp,
			   bool *keyedp)
{
	const struct peach2_rp_req *r = &rep->r;
	struct peach2_rp *rp = &p2->rp;
	struct peach2_buf *buf = NULL;
	struct peach2_exp *exp;
	u64 eoff = 0, elen = 0, off, end, pos;
	u32 need, i;

	if (r->version != PEACH2_RP_VERSION)
		return PEACH2_ERR_RP_BAD_REQUEST;
	switch (r->op) {
	case PEACH2_RP_OP_READ:
		if (!r->len || r->len > PEACH2_RP_MAX_LEN ||
		    !peach2_rp_pieces_ok(p2, rep))
			return PEACH2_ERR_RP_BAD_REQUEST;
		need = PEACH2_EXPORT_READ;
		break;
	case PEACH2_RP_OP_CAS:
	case PEACH2_RP_OP_FAA:
		if (r->len != 8 || r->addr % 8)
			return PEACH2_ERR_RP_BAD_REQUEST;
		need = PEACH2_EXPORT_ATOMIC;
		break;
	case PEACH2_RP_OP_LOOKUP:
		if (r->len < PEACH2_LOOKUP_MIN || r->len > PEACH2_LOOKUP_MAX || r->len % 16 ||
		    r->reply % 16 || check_add_overflow(r->reply, (u64)r->len, &end) ||
		    end > p2->host_size)
			return PEACH2_ERR_RP_BAD_REQUEST;
		if (r->seq <= rp->src[r->src_node].last_seq)
			return PEACH2_ERR_RP_REPLAY;
		/* The answer goes into the names' staging memory. */
		return peach2_names_lookup(p2, r->export_id, r->key, r->addr, r->len, idp);
	default:
		return PEACH2_ERR_RP_BAD_REQUEST;
	}

	if (r->seq <= rp->src[r->src_node].last_seq)
		return PEACH2_ERR_RP_REPLAY;

	xa_lock(&rp->exports);
	exp = xa_load(&rp->exports, r->export_id);
	*idp = !!exp;
	if (exp && exp->key == r->key) {
		*keyedp = true;
		if (exp->flags & need) {
			buf = exp->buf;
			kref_get(&buf->ref);
			eoff = exp->offset;
			elen = exp->len;
		}
	}
	xa_unlock(&rp->exports);
	if (!buf)
		return PEACH2_ERR_RP_NOT_EXPORTED;
	*bufp = buf;

	/* The first byte by bus address; the rest follows in buffer order. */
	if (!peach2_rp_find(buf, eoff, elen, r->addr, &off) ||
	    check_add_overflow(off, (u64)r->len, &end) || end > eoff + elen)
		return PEACH2_ERR_RP_RANGE;

	/*
	 * Each piece is a DMA from the target's memory: the card's rules.
	 * Chunks begin at page boundaries, so the target address of a
	 * piece's first byte has the low bits of r->addr + its offset.
	 */
	if (r->op == PEACH2_RP_OP_READ) {
		for (i = 0, pos = 0; i < rep->npieces; pos += rep->pieces[i++].len)
			if (peach2_dma_align_rule(r->addr + pos, rep->pieces[i].addr,
						  rep->pieces[i].len))
				return PEACH2_ERR_DMA_ALIGN;
	}
	*offp = off;
	return 0;
}

/* CAS/FAA on the exported 8 bytes at @off of @buf; returns the old value. */
static u64 peach2_rp_atomic(const struct peach2_rp_req *r,
			    const struct peach2_buf *buf, u64 off)
{
	const struct peach2_mem *mem = peach2_buf_chunk(buf, off);
	atomic64_t *v = mem->cpu + (off - mem->offset);

	if (r->op == PEACH2_RP_OP_CAS)
		return atomic64_cmpxchg(v, r->operand[0], r->operand[1]);
	return atomic64_fetch_add(r->operand[0], v);
}

static void peach2_rp_desc(struct peach2_desc_le *d, u64 src, u64 dst, u32 len,
			   u32 flags)
{
	d->src = cpu_to_le64(src);
	d->dst = cpu_to_le64(dst);
	d->len = cpu_to_le32(len);
	d->burst = 0;
	d->gap = 0;
	d->next = 0;
	d->flags = cpu_to_le32(flags);
}

/*
 * The data descriptors of accepted READ @rep, from @d on (only counted if
 * @d is NULL): one per stretch that is physically contiguous on both
 * sides, so cut where a chunk of the exported buffer or a reply piece
 * ends. Returns how many.
 */
static u32 peach2_rp_data(const struct peach2_rp_reply *rep,
			  struct peach2_desc_le *d, u64 base)
{
	const struct peach2_rp_req *r = &rep->r;
	const struct peach2_mem *mem;
	u64 done = 0, in_piece = 0, len;
	u32 n = 0, i = 0;

	while (done < r->len) {
		mem = peach2_buf_chunk(rep->buf, rep->off + done);
		len = min3((u64)r->len - done,
			   mem->offset + mem->len - (rep->off + done),
			   (u64)rep->pieces[i].len - in_piece);
		if (d)
			peach2_rp_desc(&d[n], mem->dma + (rep->off + done - mem->offset),
				       base + rep->pieces[i].addr + in_piece, len, 0);
		n++;
		done += len;
		in_piece += len;
		if (in_piece == rep->pieces[i].len) {
			i++;
			in_piece = 0;
		}
	}
	return n;
}

/*
 * The descriptors the answer of decided request @rep needs: the data (READ,
 * status 0: peach2_rp_data()), the first part of the completion record,
 * the tag.
 */
static u32 peach2_rp_ndescs(const struct peach2_rp_reply *rep)
{
	const struct peach2_rp_req *r = &rep->r;

	if (rep->status)
		return 2;
	if (r->op == PEACH2_RP_OP_LOOKUP)
		return 3;
	if (r->op != PEACH2_RP_OP_READ)
		return 2;
	return peach2_rp_data(rep, NULL, 0) + 2;
}

/*
 * Write the answer of @rep (its ndescs descriptors) into the chain from
 * descriptor @n on, its completion record into staging slot @slot.
 * Returns the index after its last descriptor. The caller links them.
 */
static u32 peach2_rp_build(struct peach2_dev *p2, struct peach2_rp_reply *rep,
			   u32 n, u32 slot)
{
	struct peach2_rp *rp = &p2->rp;
	const struct peach2_rp_req *r = &rep->r;
	struct peach2_rp_cpl_le *cpl = rp->cpls + slot * sizeof(*cpl);
	dma_addr_t cpl_dma = rp->cpls_dma + slot * sizeof(*cpl);
	u64 base = PEACH2_NODE_BASE(r->src_node);
	u64 done = 0;

	if (!rep->status && r->op == PEACH2_RP_OP_READ) {
		n += peach2_rp_data(rep, &rp->descs[n], base);
		done = r->len;
	}

	if (!rep->status && r->op == PEACH2_RP_OP_LOOKUP) {
		peach2_rp_desc(&rp->descs[n++], p2->names.answer_dma, base + r->reply, r->len, 0);
		done = r->len;
	}

	cpl->value = cpu_to_le64(rep->value);
	cpl->status = cpu_to_le32(rep->status);
	cpl->len = cpu_to_le32(rep->status ? 0 : done);
	cpl->reserved = 0;
	cpl->tag = 0;
	peach2_rp_desc(&rp->descs[n++], cpl_dma, base + r->cpl,
		       PEACH2_RP_CPL_HEAD, 0);
	peach2_rp_desc(&rp->descs[n++], r->seq, base + r->cpl +
		       PEACH2_RP_CPL_HEAD, sizeof(cpl->tag), PEACH2_DESC_IMM);
	return n;
}

/* Chain descriptors 0 .. @n - 1 in order; the last one ends the run. */
static void peach2_rp_link(struct peach2_rp *rp, u32 n)
{
	u32 i;

	for (i = 0; i + 1 < n; i++) {
		rp->descs[i].next = cpu_to_le32(rp->descs_dma +
						(i + 1) * sizeof(*rp->descs));
		rp->descs[i].flags |= cpu_to_le32(PEACH2_DESC_NEXT_HOST);
	}
	rp->descs[n - 1].flags |= cpu_to_le32(PEACH2_DESC_LAST);
}

/*
 * Stop the proxy channel. Returns true when the card confirmed it; false
 * leaves the proxy wedged (the card may still read the reply's memory).
 */
static bool peach2_rp_abort(struct peach2_dev *p2)
{
	if (peach2_dmac_abort(p2, PEACH2_RP_CH))
		return true;
	dev_err(&p2->pdev->dev, "read proxy off: its DMA channel does not stop\n");
	return false;
}

static void peach2_rp_set_step(struct peach2_rp *rp, unsigned int step)
{
	WRITE_ONCE(rp->step_since, jiffies);
	WRITE_ONCE(rp->step, step);
}

/*
 * Wait for the reply chain to end. Returns NULL once it has (*st: the
 * channel's STATUS; U32_MAX if the card is gone), or why it must be aborted
 * now: no progress (bytes, descriptors) for @ms, past @deadline, or, if
 * @stoppable, remove() has begun. *bytes: the progress seen last.
 */
static const char *peach2_rp_wait(struct peach2_dev *p2, unsigned int ms,
				  unsigned long deadline, bool stoppable,
				  u32 *st, u64 *bytes)
{
	struct peach2_rp *rp = &p2->rp;
	unsigned long now, progress = jiffies, stall, until;
	u64 last_bytes = 0;
	u32 descs, last_descs = 0, polls = 0;

	for (;;) {
		*st = peach2_dmac_status(p2, PEACH2_RP_CH);
		if (*st == U32_MAX || *st & PEACH2_DMA_ST_ENDED)
			return NULL;
		*bytes = peach2_dmac_bytes(p2, PEACH2_RP_CH);
		if (stoppable && READ_ONCE(rp->stopping))
			return "driver unbinding";
		now = jiffies;
		descs = peach2_dmac_descs(p2, PEACH2_RP_CH);
		if (*bytes != last_bytes || descs != last_descs) {
			last_bytes = *bytes;
			last_descs = descs;
			progress = now;
			/*
			 * The emulated card moves a paused run on while its
			 * STATUS is read (docs/hardware.md §6): poll while the
			 * run progresses, a bounded number of times, then sleep.
			 */
			if (polls++ < PEACH2_RP_POLLS)
				continue;
		}
		stall = progress + msecs_to_jiffies(ms);
		if (time_after_eq(now, deadline))
			return "past its deadline";
		if (time_after_eq(now, stall))
			return "no progress";
		until = time_before(stall, deadline) ? stall : deadline;
		/*
		 * Woken by the channel's interrupt (or remove()), or timed
		 * out. Unmasking sends the message at once if the run has
		 * ended meanwhile; peach2_rp_run() masks the bit again.
		 */
		peach2_int_mask_set(p2, PEACH2_RP_DMA_INT, false);
		peach2_rp_set_step(rp, PEACH2_RP_REPLY_WAIT);
		wait_for_completion_timeout(&rp->dma_done, until - now);
		peach2_rp_set_step(rp, PEACH2_RP_SERVING);
	}
}

/*
 * Run the chain in rp->descs (@len data bytes) and wait for its end. The
 * run is aborted when it makes no progress for rp_timeout_ms, when it is
 * not done rp_timeout_ms + len / (16 MB/s) after its start, or, if
 * @stoppable, as soon as remove() sets rp->stopping. Returns 0 or the
 * peach2_err code it ended with; then *done holds the descriptors the run
 * completed (the card counts one only when all of it has been written; 0
 * if the card is gone).
 */
static u32 peach2_rp_run(struct peach2_dev *p2, u32 len, bool stoppable, u32 *done)
{
	struct peach2_rp *rp = &p2->rp;
	unsigned int ms = max(READ_ONCE(peach2_rp_timeout_ms), 10u);
	unsigned long deadline;
	const char *why;
	u64 bytes = 0;
	u32 st, code;

	*done = 0;
	atomic64_inc(&rp->stats.reply_runs);
	reinit_completion(&rp->dma_done);
	/*
	 * Pairs with the barrier in peach2_rp_remove(): either we see
	 * rp->stopping in peach2_rp_wait(), or its complete() comes after our
	 * reinit.
	 */
	smp_mb();
	peach2_dmac_start_chain(p2, PEACH2_RP_CH,
				rp->descs_dma | PEACH2_DMA_HEAD_HOST);
	deadline = jiffies + msecs_to_jiffies(ms + DIV_ROUND_UP(len,
						PEACH2_RP_MIN_BYTES_PER_MS));
	why = peach2_rp_wait(p2, ms, deadline, stoppable, &st, &bytes);
	if (!why && st == U32_MAX)
		return PEACH2_ERR_DMA_ABORTED;
	if (!why) {
		code = peach2_dmac_code(st);
	} else {
		if (stoppable && READ_ONCE(rp->stopping))
			dev_dbg(&p2->pdev->dev, "read-proxy reply: %s after %llu bytes; aborting it\n",
				why, bytes);
		else
			dev_warn_ratelimited(&p2->pdev->dev, "read-proxy reply: %s after %llu bytes (rp_timeout_ms %u); aborting it\n",
					     why, bytes, ms);
		if (!peach2_rp_abort(p2)) {
			rp->wedged = true;
			return PEACH2_ERR_DMA_ABORTED;
		}
		st = peach2_dmac_status(p2, PEACH2_RP_CH);
		code = st & PEACH2_DMA_ST_ERROR ? peach2_dmac_code(st) :
						  PEACH2_ERR_DMA_ABORTED;
	}
	if (code && st != U32_MAX)
		*done = peach2_dmac_descs(p2, PEACH2_RP_CH);
	peach2_dmac_ack(p2, PEACH2_RP_CH);
	peach2_int_mask_set(p2, PEACH2_RP_DMA_INT, true);
	return code;
}

/*
 * Copy ring entry @entry out (whatever the card does to it later, we check
 * this copy). False if it names nobody to answer: the card checked src_node
 * and cpl, so this does not happen.
 */
static bool peach2_rp_fetch(struct peach2_dev *p2, const void *entry,
			    struct peach2_rp_req *r)
{
	struct peach2_rp_req_le le;

	memcpy(&le, entry, sizeof(le));
	r->op = le.op;
	r->version = le.version;
	r->src_node = le16_to_cpu(le.src_node);
	r->export_id = le32_to_cpu(le.export_id);
	r->key = le32_to_cpu(le.key);
	r->len = le32_to_cpu(le.len);
	r->addr = le64_to_cpu(le.addr);
	r->seq = le64_to_cpu(le.seq);
	r->reply = le64_to_cpu(le.reply);
	r->cpl = le64_to_cpu(le.cpl);
	r->operand[0] = le64_to_cpu(le.operand[0]);
	r->operand[1] = le64_to_cpu(le.operand[1]);

	if (r->src_node >= p2->node_count ||
	    r->cpl % sizeof(struct peach2_rp_cpl_le) ||
	    r->cpl > p2->host_size - sizeof(struct peach2_rp_cpl_le)) {
		dev_warn_ratelimited(&p2->pdev->dev, "read-proxy entry from node %u with completion at %#llx: not answerable, dropped\n",
				     r->src_node, r->cpl);
		atomic64_inc(&p2->rp.stats.refused_bad_request);
		return false;
	}
	return true;
}

/* Ring entry @i (free running). */
static const void *peach2_rp_entry(const struct peach2_rp *rp, u32 i)
{
	return rp->ring + (i & (rp->ring_entries - 1)) * PEACH2_RP_ENTRY_SIZE;
}

/* The ring entries request @r takes: itself, then a READ's reply list. */
static u32 peach2_rp_entries(const struct peach2_rp_req *r)
{
	if (r->op != PEACH2_RP_OP_READ || !r->operand[0] ||
	    r->operand[0] > PEACH2_RP_MAX_PIECES)
		return 1;
	return 1 + PEACH2_RP_LIST_ENTRIES((u32)r->operand[0]);
}

/*
 * The reply pieces of READ @rep, whose request is entry @at: the list in
 * the entries after it, or the one piece at `reply`. None (a bad request)
 * for a count past PEACH2_RP_MAX_PIECES.
 */
static void peach2_rp_fetch_pieces(const struct peach2_rp *rp, u32 at,
				   struct peach2_rp_reply *rep)
{
	const struct peach2_rp_req *r = &rep->r;
	struct peach2_rp_piece_le le;
	u32 i;

	rep->npieces = 0;
	if (r->op != PEACH2_RP_OP_READ || r->operand[0] > PEACH2_RP_MAX_PIECES)
		return;
	if (!r->operand[0]) {
		rep->pieces[0].addr = r->reply;
		rep->pieces[0].len = r->len;
		rep->pieces[0].reserved = 0;
		rep->npieces = 1;
		return;
	}
	for (i = 0; i < r->operand[0]; i++) {
		memcpy(&le, peach2_rp_entry(rp, at + 1 + i / PEACH2_RP_PIECES_PER_ENTRY) +
		       (i % PEACH2_RP_PIECES_PER_ENTRY) * sizeof(le), sizeof(le));
		rep->pieces[i].addr = le64_to_cpu(le.addr);
		rep->pieces[i].len = le32_to_cpu(le.len);
		rep->pieces[i].reserved = le32_to_cpu(le.reserved);
	}
	rep->npieces = r->operand[0];
}

/*
 * True if requests from @node are refused unseen now: it sent more than
 * PEACH2_RP_FAIL_MAX wrong keys within PEACH2_RP_FAIL_WINDOW less than
 * PEACH2_RP_FAIL_WINDOW ago.
 */
static bool peach2_rp_throttled(struct peach2_rp *rp, u32 node)
{
	struct peach2_rp_src *src = &rp->src[node];

	if (!src->throttled)
		return false;
	if (time_before(jiffies, src->throttle_end))
		return true;
	src->throttled = false;
	src->fails = 0;
	return false;
}

/* @node sent a wrong key for an existing export. */
static void peach2_rp_failed(struct peach2_dev *p2, u32 node)
{
	struct peach2_rp_src *src = &p2->rp.src[node];
	unsigned long now = jiffies;

	if (!src->fails ||
	    time_after_eq(now, src->fail_start + PEACH2_RP_FAIL_WINDOW)) {
		src->fail_start = now;
		src->fails = 0;
	}
	if (++src->fails <= PEACH2_RP_FAIL_MAX)
		return;
	src->throttled = true;
	src->throttle_end = now + PEACH2_RP_FAIL_WINDOW;
	dev_warn_ratelimited(&p2->pdev->dev, "read proxy: node %u sent more than %u wrong keys within %u ms: refusing its requests for %u ms\n",
			     node, PEACH2_RP_FAIL_MAX,
			     jiffies_to_msecs(PEACH2_RP_FAIL_WINDOW),
			     jiffies_to_msecs(PEACH2_RP_FAIL_WINDOW));
}

/*
 * Decide request @r: 0 with a buffer reference in *bufp and the operation
 * done (CAS/FAA: the old value in *value), or the status to answer with.
 * Counts refusals and wrong keys.
 */
static u32 peach2_rp_decide(struct peach2_dev *p2, const struct peach2_rp_reply *rep,
			    struct peach2_buf **bufp, u64 *offp, u64 *value)
{
	const struct peach2_rp_req *r = &rep->r;
	struct peach2_rp *rp = &p2->rp;
	bool found = false, keyed = false;
	u32 status;

	if (peach2_rp_throttled(rp, r->src_node)) {
		/* Nothing looked up: a key guesser learns nothing. */
		atomic64_inc(&rp->stats.refused_throttled);
		return PEACH2_ERR_RP_NOT_EXPORTED;
	}
	status = peach2_rp_check(p2, rep, bufp, offp, &found, &keyed);
	if (status) {
		dev_dbg(&p2->pdev->dev, "read-proxy request op %u from node %u (export %u, addr %#llx, len %u) refused: %s\n",
			r->op, r->src_node, r->export_id, r->addr, r->len,
			peach2_err_name(status));
		peach2_rp_count(rp, status);
		if (status == PEACH2_ERR_RP_NOT_EXPORTED && found && !keyed)
			peach2_rp_failed(p2, r->src_node);
		return status;
	}
	/* Accepted: only now does its seq count. */
	rp->src[r->src_node].last_seq = r->seq;
	if (r->op == PEACH2_RP_OP_CAS || r->op == PEACH2_RP_OP_FAA)
		*value = peach2_rp_atomic(r, *bufp, *offp);
	return 0;
}

/* A reply went out: count what was served. */
static void peach2_rp_served(struct peach2_dev *p2, const struct peach2_rp_req *r)
{
	struct peach2_rp *rp = &p2->rp;

	switch (r->op) {
	case PEACH2_RP_OP_READ:
		atomic64_inc(&rp->stats.served_read);
		atomic64_add(r->len, &rp->stats.read_bytes);
		break;
	case PEACH2_RP_OP_LOOKUP:
		atomic64_inc(&p2->names.lookups);
		break;
	case PEACH2_RP_OP_CAS:
		atomic64_inc(&rp->stats.served_cas);
		break;
	default:
		atomic64_inc(&rp->stats.served_faa);
		break;
	}
}

/* The serving thread's chains answered @n requests. */
static void peach2_rp_answered(struct peach2_rp *rp, u32 n)
{
	atomic64_add(n, &rp->stats.replies);
	if (n > atomic64_read(&rp->stats.replies_max))
		atomic64_set(&rp->stats.replies_max, n);
}

/* @rep is answered: the card no longer reads its buffer. */
static void peach2_rp_reply_put(struct peach2_rp_reply *rep)
{
	if (rep->buf)
		peach2_buf_put(rep->buf);
	rep->buf = NULL;
}

/*
 * The answer to @rep failed with @code: tell the requester, so that it does
 * not wait for nothing: once, the record alone (staging slot @slot), with
 * the DMA error as its status. A CAS/FAA has been applied all the same (the
 * record carries the old value); atomics are not idempotent.
 */
static void peach2_rp_reply_failed(struct peach2_dev *p2,
				   const struct peach2_rp_reply *rep, u32 slot,
				   u32 code)
{
	struct peach2_rp *rp = &p2->rp;
	struct peach2_rp_reply rec = {
		.r = rep->r,
		.value = rep->value,
		.status = code,
	};
	u32 done;

	dev_dbg(&p2->pdev->dev, "read-proxy reply to node %u failed: %s\n",
		rep->r.src_node, peach2_err_name(code));
	atomic64_inc(&rp->stats.reply_errors);
	if (rp->wedged)
		return;
	peach2_rp_link(rp, peach2_rp_build(p2, &rec, 0, slot));
	code = peach2_rp_run(p2, 0, false, &done);
	if (code)
		dev_dbg(&p2->pdev->dev, "read-proxy error record to node %u failed: %s\n",
			rep->r.src_node, peach2_err_name(code));
	else
		peach2_rp_answered(rp, 1);
}

static bool peach2_rp_is_atomic(const struct peach2_rp_req *r)
{
	return r->op == PEACH2_RP_OP_CAS || r->op == PEACH2_RP_OP_FAA;
}

/*
 * Decide requests from ring entry rp->head on, of the @avail entries
 * queued at most @max requests, into rp->replies. Stops before a CAS/FAA
 * while a READ decided before it still has its data to send (an atomic
 * must not change memory that an earlier request reads), and after a
 * LOOKUP (its answer waits in the names' one staging area until sent).
 * Returns the entries taken (a READ's reply list included), at least one;
 * *nr: the replies they gave (an entry naming nobody to answer gives none).
 */
static u32 peach2_rp_collect(struct peach2_dev *p2, u32 avail, u32 max, u32 *nr)
{
	struct peach2_rp *rp = &p2->rp;
	struct peach2_rp_reply *rep;
	bool data = false;
	u32 taken = 0, entries;

	*nr = 0;
	while (taken < avail && *nr < max) {
		rep = &rp->replies[*nr];
		if (!peach2_rp_fetch(p2, peach2_rp_entry(rp, rp->head + taken), &rep->r)) {
			/* Its list, if any, is no request either. */
			taken += min(peach2_rp_entries(&rep->r), avail - taken);
			continue;
		}
		if (data && peach2_rp_is_atomic(&rep->r))
			break;
		entries = peach2_rp_entries(&rep->r);
		peach2_rp_fetch_pieces(rp, rp->head + taken, rep);
		if (entries > avail - taken) {
			/*
			 * The card moves TAIL over a request and its list at
			 * once: this ring is not to be trusted past here.
			 */
			dev_warn_ratelimited(&p2->pdev->dev, "read-proxy ring: request from node %u lists %u entries, %u queued: answered as a bad request with the rest of the ring\n",
					     rep->r.src_node, entries, avail - taken);
			atomic64_inc(&rp->stats.ring_errors);
			rep->npieces = 0;
			entries = avail - taken;
		}
		taken += entries;
		(*nr)++;
		rep->buf = NULL;
		rep->off = 0;
		rep->value = 0;
		rep->status = peach2_rp_decide(p2, rep, &rep->buf, &rep->off,
					       &rep->value);
		rep->ndescs = peach2_rp_ndescs(rep);
		/* Cannot happen: chunks are at least a page. */
		if (WARN_ON_ONCE(rep->ndescs > PEACH2_RP_MAX_DESCS)) {
			rep->status = PEACH2_ERR_RP_BAD_REQUEST;
			peach2_rp_count(rp, rep->status);
			rep->ndescs = peach2_rp_ndescs(rep);
		}
		if (!rep->status && rep->r.op == PEACH2_RP_OP_READ)
			data = true;
		if (rep->r.op == PEACH2_RP_OP_LOOKUP)
			break;
	}
	return taken;
}

/*
 * Answer rp->replies[0 .. @nr) in order, as many per chain run as its
 * descriptors hold (all of them unless long READs fill it): one start, one
 * interrupt for the lot. When a run fails, the requests whose tag it wrote
 * are answered; the first one it did not finish gets an error record
 * (peach2_rp_reply_failed()); the ones after it were not started and go
 * into the next run, or, once remove() has begun, get error records as
 * well. Stops if the channel wedges: the requests not answered then keep
 * their buffers until remove().
 */
static void peach2_rp_answer(struct peach2_dev *p2, u32 nr)
{
	struct peach2_rp *rp = &p2->rp;
	struct peach2_rp_reply *rep;
	u32 first = 0, end, n, len, i, done, code;

	while (first < nr) {
		n = 0;
		len = 0;
		for (end = first; end < nr; end++) {
			rep = &rp->replies[end];
			if (end > first && n + rep->ndescs > rp->max_descs)
				break;
			n = peach2_rp_build(p2, rep, n, end);
			rep->last_desc = n - 1;
			/* A LOOKUP answer is small, from the names' staging memory. */
			if (!rep->status && rep->r.op != PEACH2_RP_OP_LOOKUP)
				len += rep->r.len;
		}
		peach2_rp_link(rp, n);
		code = peach2_rp_run(p2, len, true, &done);
		if (code && rp->wedged)
			return;
		for (i = first; i < end && (!code || rp->replies[i].last_desc < done); i++) {
			rep = &rp->replies[i];
			if (!rep->status)
				peach2_rp_served(p2, &rep->r);
			peach2_rp_reply_put(rep);
		}
		peach2_rp_answered(rp, i - first);
		first = i;
		if (!code)
			continue;
		do {
			peach2_rp_reply_failed(p2, &rp->replies[first], first, code);
			if (rp->wedged)
				return;
			peach2_rp_reply_put(&rp->replies[first]);
			first++;
		} while (first < nr && READ_ONCE(rp->stopping));
	}
}

/*
 * Serve what the ring holds: at most PEACH2_RP_BUDGET requests, then HEAD
 * is written (the card raises the interrupt again if entries remain).
 * Returns the entries taken, or -1 when the read proxy is off for good
 * (broken ring, wedged channel).
 */
static int peach2_rp_serve(struct peach2_dev *p2)
{
	struct peach2_rp *rp = &p2->rp;
	u32 tail, avail, batch, n, taken, nr, served;

	if (rp->broken || rp->wedged)
		return -1;
	tail = readl(p2->regs + PEACH2_REG_RP_TAIL);
	avail = tail - rp->head;
	if (avail > rp->ring_entries) {
		/*
		 * The card (or the link to it) is broken: trust nothing it
		 * queued. Requesters get RP_OFF from the card from now on.
		 */
		spin_lock(&rp->ring_lock);
		if (!rp->stopping)
			writel(0, p2->regs + PEACH2_REG_RP_CTRL);
		rp->broken = true;
		spin_unlock(&rp->ring_lock);
		atomic64_inc(&rp->stats.ring_errors);
		dev_warn(&p2->pdev->dev, "read-proxy ring: tail %u, head %u, %u entries: corrupt; read proxy off until the driver is reloaded\n",
			 tail, rp->head, rp->ring_entries);
		return -1;
	}
	/* TAIL is read before the entries it covers. */
	dma_rmb();

	/* At most PEACH2_RP_BUDGET requests (with their lists) per run. */
	batch = clamp(READ_ONCE(peach2_rp_chain_max), 1u, PEACH2_RP_BUDGET);
	for (n = 0, served = 0; n < avail && served < PEACH2_RP_BUDGET;
	     n += taken, served += max(nr, 1u)) {
		if (READ_ONCE(rp->stopping))
			break;
		taken = peach2_rp_collect(p2, avail - n,
					  min(batch, PEACH2_RP_BUDGET - served), &nr);
		peach2_rp_answer(p2, nr);
		rp->head += taken;
		if (rp->wedged) {
			/*
			 * The card may still read the buffers of the replies
			 * not answered: they stay until remove() has switched
			 * off bus mastering. Requests from now on get RP_OFF
			 * from the card itself.
			 */
			spin_lock(&rp->ring_lock);
			writel(0, p2->regs + PEACH2_REG_RP_CTRL);
			spin_unlock(&rp->ring_lock);
			return -1;
		}
	}
	if (!n)
		return 0;
	/* The card raises the interrupt again if entries remain. */
	spin_lock(&rp->ring_lock);
	if (!rp->stopping && !rp->broken)
		writel(rp->head, p2->regs + PEACH2_REG_RP_HEAD);
	spin_unlock(&rp->ring_lock);
	return n;
}

/*
 * A requester usually sends its next request as soon as it has the answer:
 * after answering, the thread looks for it a while rather than sleep and be
 * woken by the interrupt (masked meanwhile). The look adapts, as KVM's halt
 * polling does, at each request that comes by interrupt: back to
 * rp_poll_us when it came within twice that of the last answer (its
 * interrupt's own delay included: a look would have found it), else
 * halved, down to none. While another task is runnable here, looks spin
 * at most half of each PEACH2_RP_SHARE_WINDOW_NS, even before the
 * scheduler asks for the CPU back (KVM's halt polling stops at once then;
 * a node's own program that spins for its MPI messages would end every
 * look, and the requests it waits for would wait for interrupts).
 */
/* peach2_rp_serve() within a look: what it takes counts as found by looking. */
static int peach2_rp_serve_looking(struct peach2_dev *p2)
{
	struct peach2_rp *rp = &p2->rp;
	int taken = peach2_rp_serve(p2);

	if (taken > 0) {
		atomic64_add(taken, &rp->stats.polled);
		rp->served_at = ktime_get();
	}
	return taken;
}

/*
 * May a look that began at @start go on at @now? Not when the scheduler
 * wants the CPU for another task, nor, while another one is runnable, past
 * the look's share. A look that gives way is counted.
 */
static bool peach2_rp_look_shares(struct peach2_rp *rp, ktime_t start, ktime_t now)
{
	s64 spun = ktime_to_ns(ktime_sub(now, start));

	if (ktime_to_ns(ktime_sub(now, rp->share_start)) >= PEACH2_RP_SHARE_WINDOW_NS) {
		rp->share_start = now;
		rp->share_ns = 0;
	}
	if (!need_resched() &&
	    (single_task_running() ||
	     rp->share_ns + spun < PEACH2_RP_SHARE_WINDOW_NS / 2))
		return true;
	atomic64_inc(&rp->stats.looks_yielded);
	return false;
}

static void peach2_rp_look(struct peach2_dev *p2)
{
	struct peach2_rp *rp = &p2->rp;
	ktime_t start = ktime_get(), now = start;
	ktime_t until = ktime_add_us(start, rp->poll_us);
	int taken = 0;

	peach2_int_mask_set(p2, PEACH2_INT_RP, true);
	peach2_rp_set_step(rp, PEACH2_RP_LOOKING);
	while (!READ_ONCE(rp->stopping) &&
	       peach2_rp_look_shares(rp, start, now)) {
		taken = peach2_rp_serve_looking(p2);
		if (taken < 0)
			break;
		now = ktime_get();
		if (taken) {
			until = ktime_add_us(rp->served_at, rp->poll_us);
			/* Its reply wait, if any, left the step SERVING. */
			peach2_rp_set_step(rp, PEACH2_RP_LOOKING);
		} else if (ktime_after(now, until)) {
			break;
		}
		cpu_relax();
	}
	rp->share_ns += ktime_to_ns(ktime_sub(ktime_get(), start));
	/*
	 * Clear, look once more, unmask: an entry queued after that look
	 * sets the status bit, and unmasking sends its message.
	 */
	writel(PEACH2_INT_RP, p2->regs + PEACH2_REG_INT_STATUS);
	peach2_rp_set_step(rp, PEACH2_RP_SERVING);
	if (taken >= 0 && !READ_ONCE(rp->stopping))
		peach2_rp_serve_looking(p2);
	peach2_int_mask_set(p2, PEACH2_INT_RP, false);
}

/*
 * Requests are work other nodes give this one: the thread serving them
 * runs at ordinary priority, once, at its first run. As an interrupt
 * thread it would run at SCHED_FIFO, which no ordinary task preempts: a
 * peer's flood of gets would take this node's CPU from its own tasks (they
 * kept the 5% that RT throttling leaves; a shell took 7 s to answer). Now
 * the scheduler shares the CPU; when the thread gets too little of it the
 * ring fills and the card answers the excess RP_FULL: the requester is the
 * one slowed down. An idle node still wakes the thread at once.
 */
static void peach2_rp_thread_priority(struct peach2_rp *rp)
{
	if (likely(rp->thread_normal))
		return;
	sched_set_normal(current, 0);
	rp->thread_normal = true;
}

static irqreturn_t peach2_rp_irq_thread(int irq, void *data)
{
	struct peach2_dev *p2 = data;
	struct peach2_rp *rp = &p2->rp;
	unsigned int max_us = min(READ_ONCE(peach2_rp_poll_us), PEACH2_RP_POLL_MAX_US);
	ktime_t now = ktime_get();

	peach2_rp_thread_priority(rp);
	atomic64_inc(&rp->stats.irq_runs);
	peach2_rp_set_step(rp, PEACH2_RP_SERVING);
	/* Clear first: entries queued from now on raise it again. */
	writel(PEACH2_INT_RP, p2->regs + PEACH2_REG_INT_STATUS);
	if (ktime_before(now, ktime_add_us(rp->served_at, 2 * max_us)))
		rp->poll_us = max_us;
	else if (rp->poll_us / 2 >= PEACH2_RP_POLL_MIN_US)
		rp->poll_us = min(rp->poll_us / 2, max_us);
	else
		rp->poll_us = 0;
	if (peach2_rp_serve(p2) > 0) {
		rp->served_at = ktime_get();
		if (rp->poll_us)
			peach2_rp_look(p2);
	}
	peach2_rp_set_step(rp, PEACH2_RP_IDLE);
	return IRQ_HANDLED;
}

static const char *peach2_rp_step_name(unsigned int step)
{
	switch (step) {
	case PEACH2_RP_SERVING:
		return "serving";
	case PEACH2_RP_REPLY_WAIT:
		return "waiting for a reply run";
	case PEACH2_RP_LOOKING:
		return "looking for requests";
	default:
		return "idle";
	}
}

/*
 * The watch (see the top of this file). Entries queued at its last look
 * and still there now, the thread's head unmoved: they waited a whole
 * period. The thread idle meanwhile means its wake-up was lost: say what
 * the card shows and wake it (a spurious wake-up only serves an empty
 * ring). A thread busy in one step is left alone (each step has its own
 * bound) and said where it is.
 */
static void peach2_rp_watch(struct work_struct *work)
{
	struct peach2_rp *rp = container_of(to_delayed_work(work),
					    struct peach2_rp, watch);
	struct peach2_dev *p2 = container_of(rp, struct peach2_dev, rp);
	unsigned int ms = READ_ONCE(peach2_rp_watch_ms);
	unsigned int step = READ_ONCE(rp->step);
	unsigned long busy = jiffies - READ_ONCE(rp->step_since);
	u64 runs = atomic64_read(&rp->stats.irq_runs);
	u32 head = READ_ONCE(rp->head), tail, waited;

	if (READ_ONCE(rp->stopping) || READ_ONCE(rp->broken) ||
	    READ_ONCE(rp->wedged))
		return;
	if (!ms) {
		rp->watch_tail = rp->watch_head;	/* nothing seen */
		queue_delayed_work(system_wq, &rp->watch, HZ);
		return;
	}
	tail = readl(p2->regs + PEACH2_REG_RP_TAIL);
	waited = head == rp->watch_head ? rp->watch_tail - head : 0;
	/* The thread took them just now: nothing waited. */
	if (READ_ONCE(rp->head) != head)
		waited = 0;
	/* (More than the ring holds: a TAIL no ring has, not ours to judge.) */
	if (waited && waited <= rp->ring_entries) {
		if (step == PEACH2_RP_IDLE) {
			atomic64_inc(&rp->stats.watch_wakeups);
			dev_warn_ratelimited(&p2->pdev->dev, "read proxy: %u queued request(s) waited %u ms or more with the serving thread idle (%llu runs since; INT_STATUS %#x, INT_MASK %#x, the driver's mask %#x): waking it\n",
					     waited, ms,
					     runs - rp->watch_irq_runs,
					     readl(p2->regs + PEACH2_REG_INT_STATUS),
					     readl(p2->regs + PEACH2_REG_INT_MASK),
					     READ_ONCE(p2->int_mask));
			irq_wake_thread(rp->irq, p2);
		} else if (busy >= msecs_to_jiffies(PEACH2_RP_WATCH_BUSY_MS)) {
			atomic64_inc(&rp->stats.watch_reports);
			dev_warn_ratelimited(&p2->pdev->dev, "read proxy: %u queued request(s) waited %u ms or more; the serving thread has been %s for %u ms\n",
					     waited, ms,
					     peach2_rp_step_name(step),
					     jiffies_to_msecs(busy));
		}
	}
	rp->watch_head = head;
	rp->watch_tail = tail;
	rp->watch_irq_runs = runs;
	queue_delayed_work(system_wq, &rp->watch, msecs_to_jiffies(ms));
}

static irqreturn_t peach2_rp_dma_irq(int irq, void *data)
{
	struct peach2_dev *p2 = data;

	complete(&p2->rp.dma_done);
	return IRQ_HANDLED;
}

/*
 * remove(): answer what is still queued with RP_OFF (the ring is disabled
 * and the thread is gone), so that no requester waits for an answer that
 * will never come. Stops at the first reply that fails.
 */
static void peach2_rp_drain(struct peach2_dev *p2)
{
	struct peach2_rp *rp = &p2->rp;
	struct peach2_rp_reply rec = { .status = PEACH2_ERR_RP_OFF };
	u32 tail, avail, n, done, entries, answered = 0;
	bool ok;

	tail = readl(p2->regs + PEACH2_REG_RP_TAIL);
	avail = tail - rp->head;
	if (avail > rp->ring_entries)
		return;
	dma_rmb();
	for (n = 0; n < avail; n += entries, rp->head += entries) {
		ok = peach2_rp_fetch(p2, peach2_rp_entry(rp, rp->head), &rec.r);
		/* A READ's reply list is no request of its own. */
		entries = min(peach2_rp_entries(&rec.r), avail - n);
		if (!ok)
			continue;
		peach2_rp_link(rp, peach2_rp_build(p2, &rec, 0, 0));
		if (peach2_rp_run(p2, 0, false, &done)) {
			atomic64_inc(&rp->stats.reply_errors);
			break;
		}
		peach2_rp_answered(rp, 1);
		answered++;
	}
	if (answered)
		dev_info(&p2->pdev->dev, "read proxy: %u queued requests answered RP_OFF\n",
			 answered);
}

/* ---- probe / remove ------------------------------------------------------ */

/* Software state only; always (also without the hardware). */
void peach2_rp_init(struct peach2_dev *p2)
{
	struct peach2_rp *rp = &p2->rp;

	xa_init_flags(&rp->exports, XA_FLAGS_ALLOC1);
	atomic_set(&rp->nr_exports, 0);
	spin_lock_init(&rp->tx_lock);
	spin_lock_init(&rp->ring_lock);
	init_completion(&rp->dma_done);
	INIT_DELAYED_WORK(&rp->watch, peach2_rp_watch);
}

/* Called from the device's release: every file is gone. */
void peach2_rp_release(struct peach2_dev *p2)
{
	WARN_ON(!xa_empty(&p2->rp.exports));
	xa_destroy(&p2->rp.exports);
}

static void peach2_rp_free_mem(struct peach2_dev *p2)
{
	struct peach2_rp *rp = &p2->rp;
	struct device *dev = &p2->pdev->dev;
	void *list;
	u32 i;

	/* Replies a wedged channel left unanswered (bus mastering is off). */
	for (i = 0; rp->replies && i < PEACH2_RP_BUDGET; i++)
		peach2_rp_reply_put(&rp->replies[i]);
	kfree(rp->replies);
	rp->replies = NULL;
	kvfree(rp->reply_pieces);
	rp->reply_pieces = NULL;
	/* An RP_SUBMIT may still run (dead is set later): it must see NULL. */
	spin_lock(&rp->tx_lock);
	list = rp->tx_list;
	rp->tx_list = NULL;
	spin_unlock(&rp->tx_lock);
	if (list)
		dma_free_coherent(dev, PEACH2_RP_LIST_SIZE, list, rp->tx_list_dma);
	if (rp->descs)
		dma_free_coherent(dev, rp->reply_mem_size, rp->descs,
				  rp->descs_dma);
	rp->descs = NULL;
	if (rp->ring)
		dma_free_coherent(dev, (size_t)rp->ring_entries *
				  PEACH2_RP_ENTRY_SIZE, rp->ring, rp->ring_dma);
	rp->ring = NULL;
}

static int peach2_rp_alloc_mem(struct peach2_dev *p2)
{
	struct peach2_rp *rp = &p2->rp;
	struct device *dev = &p2->pdev->dev;
	size_t ring_size;
	u32 i;

	rp->ring_entries = READ_ONCE(peach2_rp_ring_entries);
	ring_size = (size_t)rp->ring_entries * PEACH2_RP_ENTRY_SIZE;
	rp->ring = dma_alloc_coherent(dev, ring_size, &rp->ring_dma,
				      GFP_KERNEL);
	if (!rp->ring)
		return -ENOMEM;

	rp->replies = kcalloc(PEACH2_RP_BUDGET, sizeof(*rp->replies), GFP_KERNEL);
	rp->reply_pieces = kvcalloc(PEACH2_RP_BUDGET * PEACH2_RP_MAX_PIECES,
				    sizeof(*rp->reply_pieces), GFP_KERNEL);
	if (!rp->replies || !rp->reply_pieces)
		return -ENOMEM;
	for (i = 0; i < PEACH2_RP_BUDGET; i++)
		rp->replies[i].pieces = rp->reply_pieces + i * PEACH2_RP_MAX_PIECES;
	rp->tx_list = dma_alloc_coherent(dev, PEACH2_RP_LIST_SIZE,
					 &rp->tx_list_dma, GFP_KERNEL);
	if (!rp->tx_list)
		return -ENOMEM;
	rp->tx_req_known = 0;	/* the card was just reset */

	/* A chain's descriptors, then the batch's completion records. */
	rp->max_descs = PEACH2_RP_CHAIN_DESCS;
	rp->reply_mem_size = PEACH2_RP_REPLY_MEM;
	rp->descs = dma_alloc_coherent(dev, rp->reply_mem_size, &rp->descs_dma,
				       GFP_KERNEL);
	if (!rp->descs)
		return -ENOMEM;
	rp->cpls = (void *)rp->descs + PEACH2_RP_REPLY_MEM - PEACH2_RP_CPLS_SIZE;
	rp->cpls_dma = rp->descs_dma + PEACH2_RP_REPLY_MEM - PEACH2_RP_CPLS_SIZE;

	/* Coherent memory is page aligned; `next` is a 32-bit address. */
	if (rp->ring_dma % PEACH2_RP_ENTRY_SIZE ||
	    rp->ring_dma + ring_size > p2->host_size ||
	    rp->tx_list_dma + PEACH2_RP_LIST_SIZE > p2->host_size ||
	    rp->cpls_dma % sizeof(struct peach2_rp_cpl_le) ||
	    rp->descs_dma + rp->reply_mem_size > min_t(u64, p2->host_size,
						       BIT_ULL(32))) {
		dev_err(dev, "read-proxy memory at %pad/%pad not usable by the card\n",
			&rp->ring_dma, &rp->descs_dma);
		return -ENOMEM;
	}
	return 0;
}

/*
 * Set up the ring (disabled) and the proxy channel's and the requests'
 * vectors (allocated by the caller). Without PEACH2_CAP_READ_PROXY there is
 * nothing to do: the ioctls answer -EOPNOTSUPP. Unwinds itself on failure
 * and leaves the proxy absent (the ring disabled: requesters get RP_OFF);
 * the caller carries on without it.
 */
int peach2_rp_probe(struct peach2_dev *p2)
{
	struct peach2_rp *rp = &p2->rp;
	struct pci_dev *pdev = p2->pdev;
	void __iomem *regs = p2->regs;
	u32 st;
	int ret;

	if (!(p2->caps & PEACH2_CAP_READ_PROXY)) {
		dev_info(&pdev->dev, "card has no read proxy (caps %#x)\n",
			 p2->caps);
		return 0;
	}

	writel(0, regs + PEACH2_REG_RP_CTRL);
	ret = peach2_rp_alloc_mem(p2);
	if (ret)
		goto err_mem;

	/* A reply a previous driver instance left running. */
	st = peach2_dmac_status(p2, PEACH2_RP_CH);
	if (st & PEACH2_DMA_ST_BUSY) {
		dev_info(&pdev->dev, "read-proxy DMA channel busy at probe: aborting\n");
		if (!peach2_rp_abort(p2)) {
			ret = -EIO;
			goto err_mem;
		}
	}
	peach2_dmac_ack(p2, PEACH2_RP_CH);

	writel(rp->ring_entries, regs + PEACH2_REG_RP_RING_SIZE);
	writel(lower_32_bits(rp->ring_dma), regs + PEACH2_REG_RP_BASE_LO);
	writel(upper_32_bits(rp->ring_dma), regs + PEACH2_REG_RP_BASE_HI);
	/* HEAD = TAIL = 0 when the ring is enabled (peach2_rp_enable()). */
	rp->head = 0;
	writel(PEACH2_INT_RP, regs + PEACH2_REG_INT_STATUS);

	snprintf(rp->dma_irq_name, sizeof(rp->dma_irq_name), "%s-rpdma",
		 dev_name(&p2->dev));
	rp->dma_irq = pci_irq_vector(pdev, PEACH2_INT_VECTOR_DMA(PEACH2_RP_CH));
	ret = request_irq(rp->dma_irq, peach2_rp_dma_irq, 0, rp->dma_irq_name,
			  p2);
	if (ret) {
		dev_err(&pdev->dev, "cannot request irq %d for the read-proxy DMA channel: %d\n",
			rp->dma_irq, ret);
		rp->dma_irq = 0;
		goto err_mem;
	}

	snprintf(rp->irq_name, sizeof(rp->irq_name), "%s-rp",
		 dev_name(&p2->dev));
	rp->irq = pci_irq_vector(pdev, PEACH2_INT_VECTOR_RP);
	rp->thread_normal = false;	/* a new thread */
	ret = request_threaded_irq(rp->irq, NULL, peach2_rp_irq_thread,
				   IRQF_ONESHOT, rp->irq_name, p2);
	if (ret) {
		dev_err(&pdev->dev, "cannot request irq %d for read-proxy requests: %d\n",
			rp->irq, ret);
		rp->irq = 0;
		goto err_dma_irq;
	}
	rp->present = true;
	return 0;

err_dma_irq:
	free_irq(rp->dma_irq, p2);
	rp->dma_irq = 0;
err_mem:
	peach2_rp_free_mem(p2);
	return ret;
}

/* The INT_MASK bits the read proxy needs unmasked. */
u32 peach2_rp_int_mask(struct peach2_dev *p2)
{
	return p2->rp.present ? PEACH2_RP_INTS : 0;
}

/*
 * Open the ring (after the interrupts are unmasked). Enabling sets the
 * card's HEAD and TAIL to 0; no entry can arrive before that.
 */
void peach2_rp_enable(struct peach2_dev *p2)
{
	if (!p2->rp.present)
		return;
	p2->rp.head = 0;
	p2->rp.watch_head = 0;
	p2->rp.watch_tail = 0;
	p2->rp.enabled = true;
	writel(PEACH2_RP_ENABLE, p2->regs + PEACH2_REG_RP_CTRL);
	queue_delayed_work(system_wq, &p2->rp.watch, HZ);
}

/*
 * remove() (before p2->dead is set), or probe unwinding: close the ring
 * (the card answers RP_OFF from now on), abort the reply in flight (its
 * requester gets an error record), let the serving thread end, answer the
 * entries still queued with RP_OFF, release the
 * vectors and the memory. Until dead is set, RP_SUBMIT still sends (to
 * this node: RP_OFF from the card). Exports stay until their files are
 * released; requests can no longer reach them.
 */
void peach2_rp_remove(struct peach2_dev *p2)
{
	struct peach2_rp *rp = &p2->rp;
	u32 st;

	if (!rp->present)
		return;
	spin_lock(&rp->ring_lock);
	rp->stopping = true;
	writel(0, p2->regs + PEACH2_REG_RP_CTRL);
	spin_unlock(&rp->ring_lock);
	/*
	 * A reply in flight is aborted now (then its requester gets an error
	 * record). Pairs with the barrier in peach2_rp_run().
	 */
	smp_mb();
	complete(&rp->dma_done);
	cancel_delayed_work_sync(&rp->watch);	/* it may wake the thread */
	free_irq(rp->irq, p2);		/* waits for the thread */
	rp->irq = 0;
	if (rp->enabled && !rp->wedged && !rp->broken)
		peach2_rp_drain(p2);
	free_irq(rp->dma_irq, p2);
	rp->dma_irq = 0;

	st = peach2_dmac_status(p2, PEACH2_RP_CH);
	if (!rp->wedged && st != U32_MAX && st & PEACH2_DMA_ST_BUSY &&
	    !peach2_rp_abort(p2))
		rp->wedged = true;
	peach2_dmac_ack(p2, PEACH2_RP_CH);
	if (rp->wedged)
		pci_clear_master(p2->pdev);
	peach2_rp_free_mem(p2);
}

/* sysfs `rproxy`: "name value" lines. */
int peach2_rp_show(struct peach2_dev *p2, char *buf)
{
	struct peach2_rp *rp = &p2->rp;
	struct peach2_rp_stats *s = &rp->stats;
	u32 card[4] = { 0 }, tail = 0, status = 0;
	int len = 0, i;

	if (rp->present) {
		card[0] = readl(p2->regs + PEACH2_REG_RP_TX_SENT);
		card[1] = readl(p2->regs + PEACH2_REG_RP_RX_QUEUED);
		card[2] = readl(p2->regs + PEACH2_REG_RP_RX_REFUSED);
		card[3] = readl(p2->regs + PEACH2_REG_RP_RX_DROPPED);
		tail = readl(p2->regs + PEACH2_REG_RP_TAIL);
		status = readl(p2->regs + PEACH2_REG_INT_STATUS);
	}

#define P2_LINE(name, val) \
	(len += sysfs_emit_at(buf, len, "%s %llu\n", name, (u64)(val)))
	P2_LINE("ring_entries", rp->present ? rp->ring_entries : 0);
	P2_LINE("served_read", atomic64_read(&s->served_read));
	P2_LINE("served_cas", atomic64_read(&s->served_cas));
	P2_LINE("served_faa", atomic64_read(&s->served_faa));
	P2_LINE("read_bytes", atomic64_read(&s->read_bytes));
	P2_LINE("refused_bad_request", atomic64_read(&s->refused_bad_request));
	P2_LINE("refused_not_exported", atomic64_read(&s->refused_not_exported));
	P2_LINE("refused_range", atomic64_read(&s->refused_range));
	P2_LINE("refused_align", atomic64_read(&s->refused_align));
	P2_LINE("refused_replay", atomic64_read(&s->refused_replay));
	P2_LINE("refused_throttled", atomic64_read(&s->refused_throttled));
	P2_LINE("reply_errors", atomic64_read(&s->reply_errors));
	P2_LINE("ring_errors", atomic64_read(&s->ring_errors));
	P2_LINE("exports", atomic_read(&rp->nr_exports));
	P2_LINE("submitted", atomic64_read(&s->submitted));
	P2_LINE("reply_runs", atomic64_read(&s->reply_runs));
	P2_LINE("replies", atomic64_read(&s->replies));
	P2_LINE("replies_max", atomic64_read(&s->replies_max));
	P2_LINE("polled", atomic64_read(&s->polled));
	P2_LINE("poll_us", READ_ONCE(rp->poll_us));
	P2_LINE("looks_yielded", atomic64_read(&s->looks_yielded));
	/*
	 * What the serving thread last did, for a request that waits: how
	 * often it ran, how long ago it last answered, whether its interrupt
	 * is masked now (a look), and below what the card holds for it.
	 */
	P2_LINE("irq_runs", atomic64_read(&s->irq_runs));
	P2_LINE("served_ms_ago",
		ktime_ms_delta(ktime_get(), READ_ONCE(rp->served_at)));
	P2_LINE("int_masked", !!(READ_ONCE(p2->int_mask) & PEACH2_INT_RP));
	P2_LINE("thread_step", READ_ONCE(rp->step));
	P2_LINE("thread_step_ms",
		jiffies_to_msecs(jiffies - READ_ONCE(rp->step_since)));
	P2_LINE("watch_wakeups", atomic64_read(&s->watch_wakeups));
	P2_LINE("watch_reports", atomic64_read(&s->watch_reports));
	for (i = 0; i < ARRAY_SIZE(card); i++) {
		static const char * const names[] = {
			"card_tx_sent", "card_rx_queued", "card_rx_refused",
			"card_rx_dropped",
		};

		P2_LINE(names[i], card[i]);
	}
	P2_LINE("card_ring_pending", rp->present ? tail - READ_ONCE(rp->head) : 0);
	P2_LINE("card_int_pending", !!(status & PEACH2_INT_RP));
#undef P2_LINE
	return len;
}
