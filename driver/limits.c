// SPDX-License-Identifier: GPL-2.0
/*
 * PEACH2 emulated interconnect card: what users and processes may hold.
 *
 * Buffers are kernel memory (coherent DMA chunks) that a process can keep
 * after it closed the device (an mmap holds the buffer), and each chunk
 * takes one of the card's inbound-filter ranges, which the whole node
 * shares (PEACH2_IN_MAX_RANGES). So that one user cannot take the node's
 * memory or filter from everybody else, each buffer is charged, from its
 * creation to its release (not to its file), to
 *
 *  - the creating process: its pages count in the mm's pinned_vm against
 *    RLIMIT_MEMLOCK, as the RDMA core's umem does (CAP_IPC_LOCK lifts it);
 *    refused with ENOMEM. pinned_vm, not locked_vm: a buffer is often
 *    released from munmap() with the mmap lock held, and pinned_vm is an
 *    atomic that needs no lock;
 *  - the creating user (uid), node-wide: bytes against user_max_bytes and
 *    filter ranges against user_max_ranges; refused with EDQUOT.
 *
 * Neither is reset by closing and reopening the device. The limits are
 * module parameters root can change at run time (they apply to later
 * allocations); sysfs `users` shows what each user holds.
 */

#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>
#include <linux/refcount.h>
#include <linux/capability.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "peach2.h"

static unsigned long long peach2_user_max_bytes;
module_param_named(user_max_bytes, peach2_user_max_bytes, ullong, 0644);
MODULE_PARM_DESC(user_max_bytes,
		 "bytes of buffers one user may hold on a node (default 0: half of RAM, set at load)");

static unsigned int peach2_user_max_ranges = PEACH2_IN_MAX_RANGES / 4;
module_param_named(user_max_ranges, peach2_user_max_ranges, uint, 0644);
MODULE_PARM_DESC(user_max_ranges,
		 "inbound-filter ranges (one per buffer chunk) one user may hold on a node (default a quarter of the card's 65536)");

/* At module load: the default byte limit, half of this node's RAM. */
void peach2_limits_init(void)
{
	if (!peach2_user_max_bytes)
		peach2_user_max_bytes = ((u64)totalram_pages() << PAGE_SHIFT) / 2;
}

void peach2_acct_init(struct peach2_dev *p2)
{
	spin_lock_init(&p2->acct_lock);
	INIT_LIST_HEAD(&p2->accts);
}

/* Current's user's account on @p2, with a reference; NULL if out of memory. */
static struct peach2_acct *peach2_acct_get(struct peach2_dev *p2)
{
	kuid_t uid = current_uid();
	struct peach2_acct *a, *fresh;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	spin_lock(&p2->acct_lock);
	list_for_each_entry(a, &p2->accts, node) {
		if (uid_eq(a->uid, uid)) {
			refcount_inc(&a->ref);
			spin_unlock(&p2->acct_lock);
			kfree(fresh);
			return a;
		}
	}
	if (fresh) {
		fresh->uid = uid;
		refcount_set(&fresh->ref, 1);
		list_add(&fresh->node, &p2->accts);
	}
	spin_unlock(&p2->acct_lock);
	return fresh;
}

static void peach2_acct_put(struct peach2_dev *p2, struct peach2_acct *a)
{
	bool last;

	/* Under the lock, so that peach2_acct_get() never finds a dying one. */
	spin_lock(&p2->acct_lock);
	last = refcount_dec_and_test(&a->ref);
	if (last)
		list_del(&a->node);
	spin_unlock(&p2->acct_lock);
	if (!last)
		return;
	WARN_ON(atomic64_read(&a->bytes) || atomic_read(&a->ranges));
	kfree(a);
}

/*
 * Charge a new buffer of @buf->size bytes to the current user (PIN: its
 * pages are charged to the process by pin.c, in locked_vm). Over the limit,
 * wait for the user's quarantined buffers if @wait. Undone by
 * peach2_uncharge_buf().
 */
int peach2_charge_user(struct peach2_buf *buf, bool wait)
{
	struct peach2_dev *p2 = buf->ctx->p2;
	u64 limit = READ_ONCE(peach2_user_max_bytes);
	unsigned long deadline, start = jiffies;
	struct peach2_acct *a;
	u64 held;
	s64 q;
	long left;

	a = peach2_acct_get(p2);
	if (!a)
		return -ENOMEM;
	/* A little longer than any quarantine started before us can last. */
	deadline = jiffies + msecs_to_jiffies(READ_ONCE(peach2_name_quarantine_ms) + 1000);
	for (;;) {
		held = atomic64_add_return(buf->size, &a->bytes);
		if (held <= limit)
			break;
		atomic64_sub(buf->size, &a->bytes);
		/*
		 * Part of the quota may be the user's own freed buffers that
		 * peers were told to write, held for name_quarantine_ms: an
		 * MPI job started right after the last one ended would fail
		 * on its predecessor's memory. Wait for those, not for others.
		 */
		q = atomic64_read(&a->q_bytes);
		left = (long)(deadline - jiffies);
		if (!wait || q <= 0 || (u64)q < held - limit || left <= 0)
			break;
		left = wait_event_killable_timeout(p2->names.q_freed,
						   atomic64_read(&a->q_bytes) < q, left);
		if (left < 0) {
			peach2_acct_put(p2, a);
			return -EINTR;
		}
	}
	if (held > limit) {
		dev_info_ratelimited(&p2->pdev->dev,
				     "uid %u: %llu bytes of buffers would pass user_max_bytes %llu: refused (EDQUOT)\n",
				     from_kuid(&init_user_ns, a->uid), held, limit);
		peach2_acct_put(p2, a);
		return -EDQUOT;
	}
	/* Said, because the caller's peers may have given up on it meanwhile. */
	if (time_after(jiffies, start + HZ / 10))
		dev_info_ratelimited(&p2->pdev->dev,
				     "uid %u: a new buffer waited %u ms for quarantined memory to fit user_max_bytes\n",
				     from_kuid(&init_user_ns, a->uid),
				     jiffies_to_msecs(jiffies - start));
	buf->acct = a;
	return 0;
}

/*
 * Charge a new ALLOC'd buffer to the current user and process. Undone by
 * peach2_uncharge_buf(), whatever part of it was done.
 */
int peach2_charge_buf(struct peach2_buf *buf, bool wait)
{
	struct peach2_dev *p2 = buf->ctx->p2;
	unsigned long pages = buf->size >> PAGE_SHIFT;
	u64 pinned;
	int ret;

	ret = peach2_charge_user(buf, wait);
	if (ret)
		return ret;
	buf->mm = current->mm;
	mmgrab(buf->mm);
	pinned = atomic64_add_return(pages, &buf->mm->pinned_vm);
	buf->locked = pages;
	if (pinned > rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT && !capable(CAP_IPC_LOCK)) {
		dev_info_ratelimited(&p2->pdev->dev,
				     "pid %d: %llu pinned pages would pass RLIMIT_MEMLOCK: refused (ENOMEM)\n",
				     task_pid_nr(current), (unsigned long long)pinned);
		return -ENOMEM;	/* peach2_uncharge_buf() undoes the rest */
	}
	return 0;
}

/* Undo peach2_charge_buf(), whatever part of it was done. */
void peach2_uncharge_buf(struct peach2_buf *buf)
{
	struct peach2_dev *p2 = buf->ctx->p2;

	/* mmgrab() keeps the mm_struct (and its pinned_vm) until mmdrop(). */
	if (buf->locked)
		atomic64_sub(buf->locked, &buf->mm->pinned_vm);
	buf->locked = 0;
	if (buf->mm)
		mmdrop(buf->mm);
	buf->mm = NULL;
	if (buf->acct) {
		atomic64_sub(buf->size, &buf->acct->bytes);
		peach2_acct_put(p2, buf->acct);
		buf->acct = NULL;
	}
}

/* One more inbound-filter range for @buf's user (its next chunk). */
int peach2_charge_range(struct peach2_buf *buf)
{
	struct peach2_acct *a = buf->acct;
	unsigned int limit = READ_ONCE(peach2_user_max_ranges);
	unsigned int held = atomic_inc_return(&a->ranges);

	if (held > limit) {
		atomic_dec(&a->ranges);
		dev_info_ratelimited(&buf->ctx->p2->pdev->dev,
				     "uid %u: %u inbound-filter ranges would pass user_max_ranges %u: refused (EDQUOT)\n",
				     from_kuid(&init_user_ns, a->uid), held, limit);
		return -EDQUOT;
	}
	return 0;
}

void peach2_uncharge_range(struct peach2_buf *buf)
{
	if (buf->acct)
		atomic_dec(&buf->acct->ranges);
}

/* sysfs `users`: one line per user holding buffers. */
int peach2_users_show(struct peach2_dev *p2, char *buf)
{
	struct peach2_acct *a;
	int len = 0;

	len += sysfs_emit_at(buf, len, "limits bytes=%llu ranges=%u\n",
			     READ_ONCE(peach2_user_max_bytes),
			     READ_ONCE(peach2_user_max_ranges));
	spin_lock(&p2->acct_lock);
	list_for_each_entry(a, &p2->accts, node)
		len += sysfs_emit_at(buf, len, "uid %u bytes=%lld ranges=%d\n",
				     from_kuid(&init_user_ns, a->uid),
				     (long long)atomic64_read(&a->bytes),
				     atomic_read(&a->ranges));
	spin_unlock(&p2->acct_lock);
	return len;
}
