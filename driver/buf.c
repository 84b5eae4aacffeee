// SPDX-License-Identifier: GPL-2.0
/*
 * PEACH2 emulated interconnect card: buffers remote nodes can write into.
 *
 * A buffer is a list of coherent DMA allocations ("chunks") of at most
 * PEACH2_MAX_CHUNK bytes, each with a bus address below the node's host
 * size, so that each is reachable through the global window at
 * (node_id << PEACH2_SLICE_SHIFT) + bus address.
 */

#include <linux/dma-mapping.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/overflow.h>
#include <linux/pci.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "peach2.h"

unsigned long long peach2_max_alloc_per_fd = SZ_512M;
module_param_named(max_alloc_per_fd, peach2_max_alloc_per_fd, ullong, 0644);
MODULE_PARM_DESC(max_alloc_per_fd,
		 "bytes of buffers one open file may hold (default 512 MiB; root may change it at run time, it applies to later allocations)");

static void peach2_file_release(struct kref *ref)
{
	struct peach2_file *ctx = container_of(ref, struct peach2_file, ref);

	WARN_ON(atomic64_read(&ctx->bytes));
	WARN_ON(atomic_read(&ctx->dma_descs));
	xa_destroy(&ctx->bufs);
	xa_destroy(&ctx->chains);
	put_device(&ctx->p2->dev);
	kfree(ctx);
}

void peach2_file_put(struct peach2_file *ctx)
{
	kref_put(&ctx->ref, peach2_file_release);
}

void peach2_buf_free_chunks(struct peach2_buf *buf)
{
	struct peach2_dev *p2 = buf->ctx->p2;
	struct device *dev = &p2->pdev->dev;
	u32 i;

	/*
	 * Close the card's inbound window on each chunk before the memory goes
	 * back to the kernel. remove() emptied the whole filter when it set
	 * dead, so nothing can land there any more.
	 */
	down_read(&p2->lock);
	for (i = 0; i < buf->nr_chunks; i++) {
		if (!buf->chunks[i].registered)
			continue;
		if (!p2->dead)
			peach2_inbound(p2, PEACH2_IN_CMD_REMOVE,
				       buf->chunks[i].dma, 0);
		peach2_uncharge_range(buf);
	}
	up_read(&p2->lock);
	for (i = 0; i < buf->nr_chunks; i++)
		dma_free_coherent(dev, buf->chunks[i].len, buf->chunks[i].cpu,
				  buf->chunks[i].dma);
	kvfree(buf->chunks);
}

/* Frees @buf's memory and @buf itself. */
void peach2_buf_destroy(struct peach2_buf *buf)
{
	struct peach2_file *ctx = buf->ctx;

	/* The pci_dev outlives remove(): p2 holds a reference on it. */
	if (buf->pin)
		peach2_pin_free(buf);
	else
		peach2_buf_free_chunks(buf);
	peach2_uncharge_buf(buf);
	atomic64_sub(buf->size, &ctx->bytes);
	kfree(buf);
	peach2_file_put(ctx);
}

static void peach2_buf_release(struct kref *ref)
{
	struct peach2_buf *buf = container_of(ref, struct peach2_buf, ref);

	/* Pinned pages, or memory other nodes may still write: pin.c. */
	if (buf->pin || buf->remote_write)
		peach2_buf_retire(buf);
	else
		peach2_buf_destroy(buf);
}

void peach2_buf_put(struct peach2_buf *buf)
{
	kref_put(&buf->ref, peach2_buf_release);
}

/* Takes a reference; NULL if @handle names no buffer of this file. */
struct peach2_buf *peach2_buf_lookup(struct peach2_file *ctx, u32 handle)
{
	struct peach2_buf *buf;

	/*
	 * The table's reference is dropped only after the entry is erased
	 * under the same lock, so a buffer found here is still alive.
	 */
	xa_lock(&ctx->bufs);
	buf = xa_load(&ctx->bufs, handle);
	if (buf)
		kref_get(&buf->ref);
	xa_unlock(&ctx->bufs);
	return buf;
}

u64 peach2_buf_global_addr(const struct peach2_buf *buf,
			   const struct peach2_mem *mem)
{
	return PEACH2_NODE_BASE(buf->ctx->p2->node_id) + mem->dma;
}

/* [off, off + len) of @buf inside one chunk? (the range is in the buffer) */
bool peach2_one_chunk(const struct peach2_buf *buf, u64 off, u64 len)
{
	const struct peach2_mem *mem = peach2_buf_chunk(buf, off);

	return off + len <= mem->offset + mem->len;
}

/* The chunk that holds byte @offset of @buf (offset < buf->size). */
const struct peach2_mem *peach2_buf_chunk(const struct peach2_buf *buf,
					  u64 offset)
{
	u32 lo = 0, hi = buf->nr_chunks - 1, mid;

	while (lo < hi) {
		mid = lo + (hi - lo + 1) / 2;
		if (buf->chunks[mid].offset <= offset)
			lo = mid;
		else
			hi = mid - 1;
	}
	return &buf->chunks[lo];
}

/* The pfn of the page at @offset (page aligned, < buf->size). */
unsigned long peach2_buf_pfn(const struct peach2_buf *buf, u64 offset)
{
	const struct peach2_mem *mem = peach2_buf_chunk(buf, offset);
	void *va = mem->cpu + (offset - mem->offset);

	/*
	 * dma_mmap_coherent() would map a whole allocation eagerly, and one
	 * vma spans many allocations here, so we insert pfns ourselves. That
	 * is sound on x86, where coherent DMA memory is ordinary cacheable
	 * RAM: dma-direct (the default guest, no IOMMU) returns pages of the
	 * linear map; iommu-dma returns vmap()ed pages when it may block.
	 * Either way the pages stay allocated until dma_free_coherent(),
	 * which runs only after the last vma of the buffer is gone.
	 */
	if (is_vmalloc_addr(va))
		return vmalloc_to_pfn(va);
	return page_to_pfn(virt_to_page(va));
}

static int peach2_buf_grow(struct peach2_buf *buf, u32 *cap)
{
	struct peach2_mem *chunks;
	u32 new_cap;

	if (check_mul_overflow(*cap, 2u, &new_cap))
		return -ENOMEM;
	chunks = kvrealloc(buf->chunks, array_size(*cap, sizeof(*chunks)),
			   array_size(new_cap, sizeof(*chunks)), GFP_KERNEL);
	if (!chunks)
		return -ENOMEM;
	buf->chunks = chunks;
	*cap = new_cap;
	return 0;
}

/*
 * Allocate the chunks of @buf: pieces of PEACH2_MAX_CHUNK while that works,
 * smaller powers of two when memory is fragmented. Powers of two, because
 * the page allocator behind dma_alloc_coherent() rounds up to one.
 */
static int peach2_buf_alloc_chunks(struct peach2_buf *buf)
{
	struct peach2_dev *p2 = buf->ctx->p2;
	struct device *dev = &p2->pdev->dev;
	size_t max_len = PEACH2_MAX_CHUNK;
	u64 offset = 0, end;
	struct peach2_mem *mem;
	dma_addr_t dma;
	u32 cap;
	size_t len;
	void *cpu;
	gfp_t gfp;
	int ret;

	cap = buf->size / PEACH2_MAX_CHUNK +
	      hweight64((buf->size % PEACH2_MAX_CHUNK) >> PAGE_SHIFT);
	buf->chunks = kvmalloc_array(cap, sizeof(*buf->chunks), GFP_KERNEL);
	if (!buf->chunks)
		return -ENOMEM;

	while (offset < buf->size) {
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();

		len = min_t(u64, max_len, rounddown_pow_of_two(buf->size - offset));
		/* Fail fast on big pieces, try hard (but never OOM) on pages. */
		gfp = GFP_KERNEL | __GFP_NOWARN;
		gfp |= len > PAGE_SIZE ? __GFP_NORETRY : __GFP_RETRY_MAYFAIL;
		cpu = dma_alloc_coherent(dev, len, &dma, gfp);
		if (!cpu) {
			if (len == PAGE_SIZE)
				return -ENOMEM;
			max_len = len / 2;
			continue;
		}

		/* The card reaches only the low host_size bytes of a node. */
		if (check_add_overflow((u64)dma, (u64)len, &end) ||
		    end > p2->host_size) {
			dma_free_coherent(dev, len, cpu, dma);
			dev_warn_ratelimited(dev, "DMA address %pad + %zu beyond host size %llu; refusing\n",
					     &dma, len, p2->host_size);
			return -ENOMEM;
		}

		if (buf->nr_chunks == cap) {
			ret = peach2_buf_grow(buf, &cap);
			if (ret) {
				dma_free_coherent(dev, len, cpu, dma);
				return ret;
			}
		}
		mem = &buf->chunks[buf->nr_chunks++];
		mem->cpu = cpu;
		mem->dma = dma;
		mem->offset = offset;
		mem->len = len;
		mem->registered = false;
		offset += len;

		ret = peach2_charge_range(buf);
		if (ret)
			return ret;
		ret = peach2_inbound(p2, PEACH2_IN_CMD_ADD, dma, len);
		if (ret) {
			peach2_uncharge_range(buf);
			return ret;
		}
		mem->registered = true;
	}
	return 0;
}

/*
 * A new buffer of @size bytes (page aligned, 1 .. max_alloc), zeroed, with
 * one reference for the caller, charged to @ctx; over the user's quota it
 * waits for the user's quarantined buffers if @wait (limits.c).
 */
struct peach2_buf *peach2_buf_create(struct peach2_file *ctx, u64 size, bool wait)
{
	struct peach2_dev *p2 = ctx->p2;
	struct peach2_buf *buf;
	int ret;

	if ((u64)atomic64_add_return(size, &ctx->bytes) >
	    READ_ONCE(peach2_max_alloc_per_fd)) {
		atomic64_sub(size, &ctx->bytes);
		return ERR_PTR(-ENOMEM);
	}

	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf) {
		atomic64_sub(size, &ctx->bytes);
		return ERR_PTR(-ENOMEM);
	}
	kref_init(&buf->ref);
	kref_get(&ctx->ref);
	buf->ctx = ctx;
	buf->size = size;

	/* Charged before a page is allocated (limits.c). */
	ret = peach2_charge_buf(buf, wait);
	if (ret) {
		peach2_buf_put(buf);
		return ERR_PTR(ret);
	}

	/* Hold off remove() while we allocate for its device. */
	down_read(&p2->lock);
	if (p2->dead)
		ret = -ENODEV;
	else
		ret = peach2_buf_alloc_chunks(buf);
	up_read(&p2->lock);
	if (ret) {
		peach2_buf_put(buf);
		return ERR_PTR(ret);
	}
	return buf;
}
