// SPDX-License-Identifier: GPL-2.0
/*
 * PEACH2 emulated interconnect card: registered memory (PEACH2_IOC_PIN) and
 * the quarantine of freed memory that remote nodes were told to write.
 *
 * PIN pins a range of the caller's pages (pin_user_pages_fast with
 * FOLL_LONGTERM, so they cannot move while the card writes them), maps
 * them for DMA, and describes them as a struct peach2_buf: physically
 * contiguous runs become its chunks, so DMA, exports, names and the read
 * proxy treat it like an ALLOC'd buffer. The pages count against the
 * caller's RLIMIT_MEMLOCK (account_locked_vm; CAP_IPC_LOCK lifts it) and
 * its max_alloc_per_fd.
 *
 * The inbound filter. Its ranges must not overlap, but two registrations
 * may share pages (the same buffer registered twice, overlapping Verbs
 * MRs, one shared mapping in two processes). So a page is registered by
 * the first buffer that pins it: the node-wide table names->owners maps
 * its pfn to that buffer, which adds the filter ranges of its own pages
 * only. A later buffer over some of those pages takes a reference on their
 * owner instead, which keeps the owner's ranges (and pins) alive as long
 * as the later buffer lives.
 *
 * Quarantine. A buffer that was named with PEACH2_NAME_WRITE (names.c) may
 * still be written by a node that looked it up before it was freed and
 * has not yet looked again (up to name_lease_ms). When such a buffer is
 * released its filter ranges go at once (a late write is then refused by
 * the card, NOT_REGISTERED), but its memory (pinned pages or coherent
 * chunks) stays allocated for name_quarantine_ms, so that no late write can
 * land in memory the kernel gave to someone else. remove() frees the
 * quarantine at once (the card is dead by then).
 *
 * Locks: names->pin_lock (owners, a buffer's filter ranges) nests inside
 * p2->lock (read) for the inbound filter commands; names->q_lock (a
 * spinlock) guards the quarantine list only.
 */

#include <linux/dma-mapping.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/pci.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "peach2.h"

unsigned int peach2_name_quarantine_ms = 5000;
module_param_named(name_quarantine_ms, peach2_name_quarantine_ms, uint, 0644);
MODULE_PARM_DESC(name_quarantine_ms,
		 "memory remote nodes were told to write stays allocated this long after it is freed (default 5000 ms; 0 frees at once)");

/* The pages of a PIN and what they hold on to. */
struct peach2_pinned {
	struct page **pages;
	unsigned long nr_pages;
	dma_addr_t *dma;		/* per page */
	struct mm_struct *mm;		/* mmgrab()ed: for RLIMIT_MEMLOCK */
	unsigned long locked;		/* pages counted in mm's locked_vm */
	bool counted;			/* in pinned_pages/pinned_bufs */
	bool *owned;			/* per page: registered by us */
	struct peach2_buf **shared;	/* owners of the pages we did not register */
	unsigned int nr_shared;
};

static void peach2_q_work(struct work_struct *work);

void peach2_pin_init(struct peach2_dev *p2)
{
	struct peach2_names *n = &p2->names;

	mutex_init(&n->pin_lock);
	xa_init(&n->owners);
	spin_lock_init(&n->q_lock);
	INIT_LIST_HEAD(&n->quarantine);
	INIT_DELAYED_WORK(&n->q_work, peach2_q_work);
	init_waitqueue_head(&n->q_freed);
}

/* ---- releasing ------------------------------------------------------------ */

/*
 * The filter ranges and owner entries of @buf go (pin_lock held, p2->lock
 * read). Pinned: the runs of pages it owns; coherent: its chunks.
 */
static void peach2_pin_unregister(struct peach2_buf *buf)
{
	struct peach2_dev *p2 = buf->ctx->p2;
	struct peach2_pinned *pin = buf->pin;
	u32 i;

	for (i = 0; i < buf->nr_chunks; i++) {
		struct peach2_mem *mem = &buf->chunks[i];

		if (mem->registered && !p2->dead)
			peach2_inbound(p2, PEACH2_IN_CMD_REMOVE, mem->dma, 0);
		if (mem->registered)
			peach2_uncharge_range(buf);
		mem->registered = false;
	}
	if (!pin)
		return;
	for (i = 0; i < pin->nr_pages; i++)
		if (pin->owned[i])
			xa_erase(&p2->names.owners, page_to_pfn(pin->pages[i]));
}

/* The memory of a pinned buffer (its ranges are gone already). */
void peach2_pin_free(struct peach2_buf *buf)
{
	struct peach2_dev *p2 = buf->ctx->p2;
	struct device *dev = &p2->pdev->dev;
	struct peach2_pinned *pin = buf->pin;
	unsigned long i;

	if (!pin)
		return;
	for (i = 0; pin->dma && i < pin->nr_pages; i++)
		if (pin->dma[i] != DMA_MAPPING_ERROR)
			dma_unmap_page(dev, pin->dma[i], PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (pin->nr_pages)
		unpin_user_pages_dirty_lock(pin->pages, pin->nr_pages, true);
	if (pin->counted) {
		atomic64_sub(pin->nr_pages, &p2->names.pinned_pages);
		atomic64_dec(&p2->names.pinned_bufs);
	}
	/* The process may have exited: then nothing is counted any more. */
	if (pin->locked && mmget_not_zero(pin->mm)) {
		account_locked_vm(pin->mm, pin->locked, false);
		mmput(pin->mm);
	}
	if (pin->mm)
		mmdrop(pin->mm);
	for (i = 0; i < pin->nr_shared; i++)
		peach2_buf_put(pin->shared[i]);
	kvfree(pin->shared);
	kvfree(pin->owned);
	kvfree(pin->dma);
	kvfree(pin->pages);
	kfree(pin);
	buf->pin = NULL;
	kvfree(buf->chunks);
	buf->chunks = NULL;
	buf->nr_chunks = 0;
}

static void peach2_q_schedule(struct peach2_dev *p2)
{
	struct peach2_names *n = &p2->names;
	struct peach2_buf *first;
	unsigned long delay = 0;

	spin_lock(&n->q_lock);
	first = list_first_entry_or_null(&n->quarantine, struct peach2_buf, q_node);
	if (first && time_before(jiffies, first->q_until))
		delay = first->q_until - jiffies;
	spin_unlock(&n->q_lock);
	if (first)
		mod_delayed_work(system_wq, &n->q_work, delay);
}

/* Frees quarantined buffers whose time is up (all of them once stopped). */
static void peach2_q_work(struct work_struct *work)
{
	struct peach2_names *n = container_of(to_delayed_work(work), struct peach2_names, q_work);
	struct peach2_dev *p2 = container_of(n, struct peach2_dev, names);
	struct peach2_buf *buf, *tmp;
	LIST_HEAD(due);

	spin_lock(&n->q_lock);
	list_for_each_entry_safe(buf, tmp, &n->quarantine, q_node) {
		if (!n->q_stopped && time_before(jiffies, buf->q_until))
			break;
		list_move_tail(&buf->q_node, &due);
	}
	spin_unlock(&n->q_lock);
	list_for_each_entry_safe(buf, tmp, &due, q_node) {
		list_del(&buf->q_node);
		atomic64_dec(&n->quarantined_bufs);
		atomic64_sub(buf->size, &n->quarantined_bytes);
		if (buf->acct)
			atomic64_sub(buf->size, &buf->acct->q_bytes);
		peach2_buf_destroy(buf);
	}
	wake_up_all(&n->q_freed);	/* users waiting for their quota (limits.c) */
	if (!n->q_stopped)
		peach2_q_schedule(p2);
}

/*
 * The last reference to a pinned or remotely written buffer is gone: out
 * of the filter now, memory freed now or after the quarantine.
 */
void peach2_buf_retire(struct peach2_buf *buf)
{
	struct peach2_dev *p2 = buf->ctx->p2;
	struct peach2_names *n = &p2->names;
	unsigned int ms = READ_ONCE(peach2_name_quarantine_ms);
	bool quarantine;

	down_read(&p2->lock);
	mutex_lock(&n->pin_lock);
	peach2_pin_unregister(buf);
	mutex_unlock(&n->pin_lock);
	quarantine = buf->remote_write && ms && !p2->dead;
	up_read(&p2->lock);

	if (quarantine) {
		buf->q_until = jiffies + msecs_to_jiffies(ms);
		spin_lock(&n->q_lock);
		if (!n->q_stopped) {
			list_add_tail(&buf->q_node, &n->quarantine);
			atomic64_inc(&n->quarantined_bufs);
			atomic64_add(buf->size, &n->quarantined_bytes);
			if (buf->acct)
				atomic64_add(buf->size, &buf->acct->q_bytes);
		} else {
			quarantine = false;
		}
		spin_unlock(&n->q_lock);
	}
	if (quarantine)
		peach2_q_schedule(p2);
	else
		peach2_buf_destroy(buf);
}

/* remove(): the card is dead, nothing can write any more: free it all. */
void peach2_pin_remove(struct peach2_dev *p2)
{
	struct peach2_names *n = &p2->names;

	spin_lock(&n->q_lock);
	n->q_stopped = true;
	spin_unlock(&n->q_lock);
	cancel_delayed_work_sync(&n->q_work);
	peach2_q_work(&n->q_work.work);
}

/* ---- pinning --------------------------------------------------------------- */

/* Takes a reference on @owner for @pin (once per owner). */
static int peach2_pin_share(struct peach2_pinned *pin, struct peach2_buf *owner)
{
	unsigned int i;

	for (i = 0; i < pin->nr_shared; i++)
		if (pin->shared[i] == owner)
			return 0;
	if (!pin->shared) {
		pin->shared = kvmalloc_array(pin->nr_pages, sizeof(*pin->shared), GFP_KERNEL);
		if (!pin->shared)
			return -ENOMEM;
	}
	kref_get(&owner->ref);
	pin->shared[pin->nr_shared++] = owner;
	return 0;
}

/*
 * Chunks from the DMA addresses (physically contiguous runs), then the
 * filter: under pin_lock, claim every page nobody registered and add one
 * range per run of claimed pages; share the others' owners.
 */
static int peach2_pin_register(struct peach2_buf *buf)
{
	struct peach2_dev *p2 = buf->ctx->p2;
	struct peach2_names *n = &p2->names;
	struct peach2_pinned *pin = buf->pin;
	unsigned long i, run, nr_runs = 0;
	u32 ranges, need = 0;
	int ret = 0;

	buf->chunks = kvmalloc_array(pin->nr_pages, sizeof(*buf->chunks), GFP_KERNEL);
	if (!buf->chunks)
		return -ENOMEM;
	for (i = 0; i < pin->nr_pages; i++) {
		struct peach2_mem *last = buf->nr_chunks ? &buf->chunks[buf->nr_chunks - 1] : NULL;

		if (last && last->dma + last->len == pin->dma[i] &&
		    last->cpu + last->len == page_address(pin->pages[i])) {
			last->len += PAGE_SIZE;
			continue;
		}
		buf->chunks[buf->nr_chunks++] = (struct peach2_mem){
			.cpu = page_address(pin->pages[i]),
			.dma = pin->dma[i],
			.offset = (u64)i << PAGE_SHIFT,
			.len = PAGE_SIZE,
		};
	}

	mutex_lock(&n->pin_lock);
	for (i = 0; i < pin->nr_pages; i++) {
		struct peach2_buf *owner = xa_load(&n->owners, page_to_pfn(pin->pages[i]));

		if (owner) {
			ret = peach2_pin_share(pin, owner);
			if (ret)
				goto out;
			continue;
		}
		ret = xa_err(xa_store(&n->owners, page_to_pfn(pin->pages[i]), buf, GFP_KERNEL));
		if (ret)
			goto out;
		pin->owned[i] = true;
		if (i == 0 || !pin->owned[i - 1] || pin->dma[i] != pin->dma[i - 1] + PAGE_SIZE)
			nr_runs++;
	}
	/* Room in the card's table for our runs? */
	ranges = readl(p2->regs + PEACH2_REG_IN_COUNT);
	need = nr_runs;
	if (ranges + need > PEACH2_IN_MAX_RANGES) {
		dev_dbg(&p2->pdev->dev, "pin: %u filter ranges needed, %u of %u in use\n", need,
			ranges, PEACH2_IN_MAX_RANGES);
		ret = -ENOSPC;
		goto out;
	}
	/*
	 * One range per run of pages we own: a chunk may mix owned and shared
	 * pages, so runs are cut there. The range is remembered in the chunk
	 * that starts it (registered, base = its dma) only when the run covers
	 * the whole chunk; otherwise in a chunk of its own (split below).
	 */
	for (i = 0; i < pin->nr_pages; i = run) {
		if (!pin->owned[i]) {
			run = i + 1;
			continue;
		}
		for (run = i + 1; run < pin->nr_pages && pin->owned[run] &&
				  pin->dma[run] == pin->dma[run - 1] + PAGE_SIZE;
		     run++)
			;
		ret = peach2_charge_range(buf);
		if (ret)
			goto out;
		ret = peach2_inbound(p2, PEACH2_IN_CMD_ADD, pin->dma[i], (run - i) << PAGE_SHIFT);
		if (ret) {
			peach2_uncharge_range(buf);
			goto out;
		}
		/* Mark the chunk holding page i: REMOVE needs the run's base. */
		{
			struct peach2_mem *mem = (struct peach2_mem *)peach2_buf_chunk(buf,
										 (u64)i << PAGE_SHIFT);

			if (mem->dma == pin->dma[i] && !mem->registered) {
				mem->registered = true;
			} else {
				/* A run starting inside a chunk: split the chunk there. */
				u32 at = mem - buf->chunks;
				u64 cut = ((u64)i << PAGE_SHIFT) - mem->offset;

				memmove(&buf->chunks[at + 2], &buf->chunks[at + 1],
					(buf->nr_chunks - at - 1) * sizeof(*mem));
				buf->nr_chunks++;
				buf->chunks[at + 1] = (struct peach2_mem){
					.cpu = mem->cpu + cut,
					.dma = mem->dma + cut,
					.offset = mem->offset + cut,
					.len = mem->len - cut,
					.registered = true,
				};
				mem->len = cut;
			}
		}
	}
out:
	if (ret)
		peach2_pin_unregister(buf);
	mutex_unlock(&n->pin_lock);
	return ret;
}

/* Pins @want pages from @start into pin->pages (pin->nr_pages: how many got pinned). */
static int peach2_pin_pages(struct peach2_dev *p2, struct peach2_pinned *pin, unsigned long start,
			    unsigned long want)
{
	struct device *dev = &p2->pdev->dev;
	unsigned long i;
	int got;

	while (pin->nr_pages < want) {
		if (fatal_signal_pending(current))
			return -EINTR;
		got = pin_user_pages_fast(start + (pin->nr_pages << PAGE_SHIFT),
					  min_t(unsigned long, want - pin->nr_pages, 512),
					  FOLL_WRITE | FOLL_LONGTERM, pin->pages + pin->nr_pages);
		if (got <= 0)
			return got ? got : -EFAULT;
		pin->nr_pages += got;
		cond_resched();
	}
	for (i = 0; i < pin->nr_pages; i++) {
		pin->dma[i] = dma_map_page(dev, pin->pages[i], 0, PAGE_SIZE, DMA_BIDIRECTIONAL);
		if (dma_mapping_error(dev, pin->dma[i])) {
			pin->dma[i] = DMA_MAPPING_ERROR;
			return -ENOMEM;
		}
		/* The card reaches the low host_size bytes only, and no bounce buffer. */
		if (pin->dma[i] + PAGE_SIZE > p2->host_size || dma_need_sync(dev, pin->dma[i])) {
			dev_warn_ratelimited(dev, "pin: page at bus address %pad is out of the card's reach (host size %llu)\n",
					     &pin->dma[i], p2->host_size);
			return -EFAULT;
		}
	}
	return 0;
}

long peach2_ioctl_pin(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_dev *p2 = ctx->p2;
	unsigned long i, pages;
	struct peach2_pin req;
	struct peach2_pinned *pin;
	struct peach2_buf *buf;
	u64 start, end, size;
	u32 handle;
	int ret;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (req.flags & ~PEACH2_PIN_FLAGS_ALL || req.pad0 || req.reserved[0] ||
	    req.reserved[1] || !req.len)
		return -EINVAL;
	if (check_add_overflow(req.addr, req.len, &end) || end > TASK_SIZE)
		return -EFAULT;
	start = req.addr & PAGE_MASK;
	end = PAGE_ALIGN(end);
	size = end - start;
	if (size > p2->max_alloc)
		return -EINVAL;
	if ((u64)atomic64_add_return(size, &ctx->bytes) > READ_ONCE(peach2_max_alloc_per_fd)) {
		atomic64_sub(size, &ctx->bytes);
		return -ENOMEM;
	}
	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	pin = kzalloc(sizeof(*pin), GFP_KERNEL);
	if (!buf || !pin) {
		kfree(buf);
		kfree(pin);
		atomic64_sub(size, &ctx->bytes);
		return -ENOMEM;
	}
	/* From here on, peach2_buf_put() undoes whatever was done. */
	kref_init(&buf->ref);
	kref_get(&ctx->ref);
	buf->ctx = ctx;
	buf->size = size;
	buf->pin = pin;
	pages = size >> PAGE_SHIFT;

	pin->pages = kvcalloc(pages, sizeof(*pin->pages), GFP_KERNEL);
	pin->dma = kvmalloc_array(pages, sizeof(*pin->dma), GFP_KERNEL);
	pin->owned = kvcalloc(pages, sizeof(*pin->owned), GFP_KERNEL);
	if (!pin->pages || !pin->dma || !pin->owned) {
		ret = -ENOMEM;
		goto err;
	}
	for (i = 0; i < pages; i++)
		pin->dma[i] = DMA_MAPPING_ERROR;
	ret = peach2_charge_user(buf, true);	/* limits.c */
	if (ret)
		goto err;
	pin->mm = current->mm;
	mmgrab(pin->mm);
	ret = account_locked_vm(pin->mm, pages, true);
	if (ret)
		goto err;
	pin->locked = pages;
	ret = peach2_pin_pages(p2, pin, start, pages);
	if (ret)
		goto err;
	pin->counted = true;
	atomic64_add(pin->nr_pages, &p2->names.pinned_pages);
	atomic64_inc(&p2->names.pinned_bufs);

	down_read(&p2->lock);
	ret = p2->dead ? -ENODEV : peach2_pin_register(buf);
	up_read(&p2->lock);
	if (ret)
		goto err;

	ret = xa_alloc_cyclic(&ctx->bufs, &handle, NULL, XA_LIMIT(1, PEACH2_MAX_HANDLE),
			      &ctx->next_handle, GFP_KERNEL);
	if (ret < 0) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto err;
	}
	buf->handle = handle;
	req.handle = handle;
	req.offset = req.addr - start;
	req.size = size;
	req.nr_chunks = buf->nr_chunks;
	if (copy_to_user(argp, &req, sizeof(req))) {
		xa_release(&ctx->bufs, handle);
		ret = -EFAULT;
		goto err;
	}
	/* Published last, as ALLOC does; chardev.c refuses to mmap it. */
	xa_store(&ctx->bufs, handle, buf, GFP_KERNEL);
	return 0;

err:
	peach2_buf_put(buf);
	return ret;
}
