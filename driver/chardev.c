// SPDX-License-Identifier: GPL-2.0
/*
 * PEACH2 emulated interconnect card: /dev/peach2-<n> (ioctl and mmap).
 *
 * mmap layout (offsets from peach2_uapi.h):
 *   [0, window_size)              global window, write-only, write-combining
 *   PEACH2_MMAP_CARDMEM           mailbox (32 KiB), read-only, uncached
 *   buffer's mmap_offset          a buffer from PEACH2_IOC_ALLOC
 * Every mapping is populated lazily, one page per fault: the window alone is
 * 32 GiB, whose page tables would take 64 MiB if mapped eagerly.
 */

#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "peach2.h"

#define PEACH2_WINDOW_PGOFF	0UL
#define PEACH2_CARDMEM_PGOFF	((unsigned long)(PEACH2_MMAP_CARDMEM >> PAGE_SHIFT))
#define PEACH2_MAILBOX_PAGES	(PEACH2_MAILBOX_SIZE >> PAGE_SHIFT)
#define PEACH2_BUF_PGOFF	((unsigned long)(PEACH2_MMAP_BUF_BASE >> PAGE_SHIFT))
#define PEACH2_SLOT_PAGES_SHIFT	(PEACH2_BUF_SLOT_SHIFT - PAGE_SHIFT)

static u64 peach2_buf_mmap_offset(u32 handle)
{
	return PEACH2_MMAP_BUF_BASE + ((u64)handle << PEACH2_BUF_SLOT_SHIFT);
}

static int peach2_open(struct inode *inode, struct file *filp)
{
	struct peach2_dev *p2 = container_of(inode->i_cdev, struct peach2_dev,
					     cdev);
	struct peach2_file *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	kref_init(&ctx->ref);
	xa_init_flags(&ctx->bufs, XA_FLAGS_ALLOC1);
	atomic64_set(&ctx->bytes, 0);
	peach2_dma_file_init(ctx);
	peach2_rp_file_init(ctx);
	peach2_names_file_init(ctx);

	down_read(&p2->lock);
	if (p2->dead) {
		up_read(&p2->lock);
		kfree(ctx);
		return -ENODEV;
	}
	get_device(&p2->dev);
	ctx->p2 = p2;
	ctx->serial = atomic64_inc_return(&p2->names.serials);
	up_read(&p2->lock);

	filp->private_data = ctx;
	/* One address_space per card, whatever node the file came from. */
	filp->f_mapping = p2->inode->i_mapping;
	return nonseekable_open(inode, filp);
}

static int peach2_release(struct inode *inode, struct file *filp)
{
	struct peach2_file *ctx = filp->private_data;
	struct peach2_buf *buf;
	unsigned long handle;

	/*
	 * Forget tickets and chains, drop the handles. Buffers still mapped,
	 * or used by a DMA run still in flight, live on until munmap or the
	 * end of the run.
	 */
	peach2_names_file_release(ctx);
	peach2_rp_file_release(ctx);
	peach2_dma_file_release(ctx);
	xa_for_each(&ctx->bufs, handle, buf) {
		xa_erase(&ctx->bufs, handle);
		peach2_buf_put(buf);
	}
	peach2_file_put(ctx);
	return 0;
}

static int peach2_ioctl_info(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_dev *p2 = ctx->p2;
	struct peach2_info info;
	int i;

	memset(&info, 0, sizeof(info));
	info.abi_version = PEACH2_ABI_VERSION;
	info.node_id = p2->node_id;
	info.node_count = p2->node_count;
	info.hw_version = p2->hw_version;
	info.window_size = p2->window_size;
	info.slice_size = PEACH2_SLICE_SIZE;
	info.host_size = p2->host_size;
	info.max_alloc = p2->max_alloc;
	info.max_chunk = PEACH2_MAX_CHUNK;

	down_read(&p2->lock);
	if (p2->dead) {
		up_read(&p2->lock);
		return -ENODEV;
	}
	for (i = 0; i < PEACH2_NR_LINKS; i++)
		info.link[i] = readl(p2->regs + PEACH2_REG_LINK(i));
	up_read(&p2->lock);

	if (copy_to_user(argp, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static int peach2_ioctl_alloc(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_alloc req;
	struct peach2_buf *buf;
	u32 handle;
	u64 size;
	int ret;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (req.flags & ~PEACH2_ALLOC_FLAGS_ALL || req.pad0 ||
	    req.reserved[0] || req.reserved[1])
		return -EINVAL;
	if (!req.size || req.size > ctx->p2->max_alloc)
		return -EINVAL;
	if (check_add_overflow(req.size, (u64)PAGE_SIZE - 1, &size))
		return -EINVAL;
	size &= PAGE_MASK;

	buf = peach2_buf_create(ctx, size, !(req.flags & PEACH2_ALLOC_NOWAIT));
	if (IS_ERR(buf))
		return PTR_ERR(buf);

	/*
	 * Reserve the handle (an entry nobody can look up yet), tell user
	 * space, and only then publish the buffer: no other thread can use
	 * or free it before it is complete, and a failed copy leaves
	 * nothing behind.
	 */
	ret = xa_alloc_cyclic(&ctx->bufs, &handle, NULL,
			      XA_LIMIT(1, PEACH2_MAX_HANDLE),
			      &ctx->next_handle, GFP_KERNEL);
	if (ret < 0) {
		peach2_buf_put(buf);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	buf->handle = handle;
	buf->mmap_offset = peach2_buf_mmap_offset(handle);

	req.size = size;
	req.handle = handle;
	req.mmap_offset = buf->mmap_offset;
	req.bus_addr = buf->chunks[0].dma;
	req.global_addr = peach2_buf_global_addr(buf, &buf->chunks[0]);
	req.nr_chunks = buf->nr_chunks;
	if (copy_to_user(argp, &req, sizeof(req))) {
		xa_release(&ctx->bufs, handle);
		peach2_buf_put(buf);
		return -EFAULT;
	}

	/*
	 * Replaces the reservation, which FREE leaves alone: no memory is
	 * allocated, so this cannot fail.
	 */
	xa_store(&ctx->bufs, handle, buf, GFP_KERNEL);
	return 0;
}

static int peach2_ioctl_free(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_free req;
	struct peach2_buf *buf;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (req.flags)
		return -EINVAL;

	/* Reserved handles (an ALLOC in progress) load as NULL: keep them. */
	xa_lock(&ctx->bufs);
	buf = xa_load(&ctx->bufs, req.handle);
	if (buf)
		__xa_erase(&ctx->bufs, req.handle);
	xa_unlock(&ctx->bufs);
	if (!buf)
		return -ENOENT;
	/* Exports and names of the buffer end with its handle (also while mapped). */
	peach2_names_revoke_buf(ctx, buf);
	peach2_rp_revoke_buf(ctx, buf);
	peach2_buf_put(buf);
	return 0;
}

static int peach2_ioctl_chunks(struct peach2_file *ctx, void __user *argp)
{
	struct peach2_chunks req;
	struct peach2_chunk __user *out;
	struct peach2_chunk chunk;
	struct peach2_buf *buf;
	u32 i, n;
	int ret = 0;

	if (copy_from_user(&req, argp, sizeof(req)))
		return -EFAULT;
	if (req.reserved)
		return -EINVAL;

	buf = peach2_buf_lookup(ctx, req.handle);
	if (!buf)
		return -ENOENT;

	if (req.first > buf->nr_chunks) {
		ret = -EINVAL;
		goto out;
	}
	n = min(req.count, buf->nr_chunks - req.first);
	out = u64_to_user_ptr(req.chunks);
	for (i = 0; i < n; i++) {
		const struct peach2_mem *mem = &buf->chunks[req.first + i];

		memset(&chunk, 0, sizeof(chunk));
		chunk.offset = mem->offset;
		chunk.len = mem->len;
		chunk.global_addr = peach2_buf_global_addr(buf, mem);
		if (copy_to_user(&out[i], &chunk, sizeof(chunk))) {
			ret = -EFAULT;
			goto out;
		}
	}

	req.nr_chunks = buf->nr_chunks;
	if (copy_to_user(argp, &req, sizeof(req)))
		ret = -EFAULT;
out:
	peach2_buf_put(buf);
	return ret;
}

static long peach2_ioctl(struct file *filp, unsigned int cmd,
			 unsigned long arg)
{
	struct peach2_file *ctx = filp->private_data;
	void __user *argp = (void __user *)arg;

	if (READ_ONCE(ctx->p2->dead))
		return -ENODEV;

	switch (cmd) {
	case PEACH2_IOC_INFO:
		return peach2_ioctl_info(ctx, argp);
	case PEACH2_IOC_ALLOC:
		return peach2_ioctl_alloc(ctx, argp);
	case PEACH2_IOC_FREE:
		return peach2_ioctl_free(ctx, argp);
	case PEACH2_IOC_CHUNKS:
		return peach2_ioctl_chunks(ctx, argp);
	case PEACH2_IOC_CHAIN_CREATE:
		return peach2_ioctl_chain_create(ctx, argp);
	case PEACH2_IOC_CHAIN_DESTROY:
		return peach2_ioctl_chain_destroy(ctx, argp);
	case PEACH2_IOC_DMA_START:
		return peach2_ioctl_dma_start(ctx, argp);
	case PEACH2_IOC_DMA_WAIT:
		return peach2_ioctl_dma_wait(ctx, argp);
	case PEACH2_IOC_EXPORT:
		return peach2_ioctl_export(ctx, argp);
	case PEACH2_IOC_UNEXPORT:
		return peach2_ioctl_unexport(ctx, argp);
	case PEACH2_IOC_RP_SUBMIT:
		return peach2_ioctl_rp_submit(ctx, argp);
	case PEACH2_IOC_PIN:
		return peach2_ioctl_pin(ctx, argp);
	case PEACH2_IOC_PUBLISH:
		return peach2_ioctl_publish(ctx, argp);
	case PEACH2_IOC_UNPUBLISH:
		return peach2_ioctl_unpublish(ctx, argp);
	default:
		return -ENOTTY;
	}
}

/*
 * Insert one pfn unless the card is gone. remove() sets dead under the
 * write lock and zaps afterwards, so no pfn inserted here survives it.
 */
static vm_fault_t peach2_insert_pfn(struct peach2_dev *p2,
				    struct vm_fault *vmf, unsigned long pfn)
{
	vm_fault_t ret = VM_FAULT_SIGBUS;

	down_read(&p2->lock);
	if (!p2->dead)
		ret = vmf_insert_pfn(vmf->vma, vmf->address, pfn);
	up_read(&p2->lock);
	return ret;
}

static vm_fault_t peach2_window_fault(struct vm_fault *vmf)
{
	struct peach2_dev *p2 = vmf->vma->vm_private_data;
	unsigned long page = vmf->pgoff - PEACH2_WINDOW_PGOFF;

	if (page >= p2->window_size >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	return peach2_insert_pfn(p2, vmf, PHYS_PFN(p2->window_phys) + page);
}

static const struct vm_operations_struct peach2_window_vm_ops = {
	.fault = peach2_window_fault,
};

static vm_fault_t peach2_cardmem_fault(struct vm_fault *vmf)
{
	struct peach2_dev *p2 = vmf->vma->vm_private_data;
	unsigned long page = vmf->pgoff - PEACH2_CARDMEM_PGOFF;

	if (page >= PEACH2_MAILBOX_PAGES)
		return VM_FAULT_SIGBUS;
	return peach2_insert_pfn(p2, vmf, PHYS_PFN(p2->mbox_phys) + page);
}

static const struct vm_operations_struct peach2_cardmem_vm_ops = {
	.fault = peach2_cardmem_fault,
};

/* Each vma of a buffer (also after fork or split) holds a reference. */
static void peach2_buf_vm_open(struct vm_area_struct *vma)
{
	struct peach2_buf *buf = vma->vm_private_data;

	kref_get(&buf->ref);
}

static void peach2_buf_vm_close(struct vm_area_struct *vma)
{
	peach2_buf_put(vma->vm_private_data);
}

static vm_fault_t peach2_buf_fault(struct vm_fault *vmf)
{
	struct peach2_buf *buf = vmf->vma->vm_private_data;
	unsigned long page = vmf->pgoff - (buf->mmap_offset >> PAGE_SHIFT);

	if (page >= buf->size >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	return peach2_insert_pfn(buf->ctx->p2, vmf,
				 peach2_buf_pfn(buf, (u64)page << PAGE_SHIFT));
}

static const struct vm_operations_struct peach2_buf_vm_ops = {
	.open = peach2_buf_vm_open,
	.close = peach2_buf_vm_close,
	.fault = peach2_buf_fault,
};

static int peach2_mmap_window(struct peach2_file *ctx,
			      struct vm_area_struct *vma, unsigned long end)
{
	if (end > ctx->p2->window_size >> PAGE_SHIFT)
		return -EINVAL;
	/*
	 * Loads from the window are unsupported by the card (they return ~0
	 * and count an error). x86 page tables cannot express write-only, so
	 * a PROT_WRITE mapping is readable by the CPU anyway; we refuse
	 * PROT_READ and never allow mprotect() to add it.
	 */
	if (vma->vm_flags & VM_READ)
		return -EPERM;
	vma->vm_flags &= ~VM_MAYREAD;
	vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
	vma->vm_ops = &peach2_window_vm_ops;
	vma->vm_private_data = ctx->p2;
	return 0;
}

static int peach2_mmap_cardmem(struct peach2_file *ctx,
			       struct vm_area_struct *vma, unsigned long end)
{
	if (end > PEACH2_CARDMEM_PGOFF + PEACH2_MAILBOX_PAGES)
		return -EINVAL;
	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	vma->vm_flags &= ~VM_MAYWRITE;
	vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	vma->vm_ops = &peach2_cardmem_vm_ops;
	vma->vm_private_data = ctx->p2;
	return 0;
}

static int peach2_mmap_buf(struct peach2_file *ctx, struct vm_area_struct *vma)
{
	unsigned long slot = vma->vm_pgoff - PEACH2_BUF_PGOFF;
	struct peach2_buf *buf;

	/* A buffer is mapped from its first byte. */
	if (slot & (BIT(PEACH2_SLOT_PAGES_SHIFT) - 1))
		return -EINVAL;
	slot >>= PEACH2_SLOT_PAGES_SHIFT;
	if (!slot || slot > PEACH2_MAX_HANDLE)
		return -EINVAL;

	buf = peach2_buf_lookup(ctx, slot);
	if (!buf)
		return -EINVAL;
	/* A PIN is the caller's own memory, mapped already. */
	if (buf->pin || vma_pages(vma) > buf->size >> PAGE_SHIFT) {
		peach2_buf_put(buf);
		return -EINVAL;
	}
	/* The reference taken by the lookup belongs to this vma now. */
	vma->vm_ops = &peach2_buf_vm_ops;
	vma->vm_private_data = buf;
	return 0;
}

static int peach2_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct peach2_file *ctx = filp->private_data;
	unsigned long pgoff = vma->vm_pgoff, end;
	int ret;

	/*
	 * MAP_SHARED sets VM_MAYSHARE; VM_SHARED only when the file is open
	 * for writing. Private (copy-on-write) mappings of device memory make
	 * no sense and break vmf_insert_pfn().
	 */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	if (check_add_overflow(pgoff, vma_pages(vma), &end))
		return -EINVAL;
	if (READ_ONCE(ctx->p2->dead))
		return -ENODEV;

	if (pgoff < PEACH2_CARDMEM_PGOFF)
		ret = peach2_mmap_window(ctx, vma, end);
	else if (pgoff < PEACH2_CARDMEM_PGOFF + PEACH2_MAILBOX_PAGES)
		ret = peach2_mmap_cardmem(ctx, vma, end);
	else if (pgoff >= PEACH2_BUF_PGOFF)
		ret = peach2_mmap_buf(ctx, vma);
	else
		ret = -EINVAL;
	if (ret)
		return ret;

	vma->vm_flags &= ~VM_MAYEXEC;
	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
	return 0;
}

const struct file_operations peach2_fops = {
	.owner = THIS_MODULE,
	.open = peach2_open,
	.release = peach2_release,
	.unlocked_ioctl = peach2_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = peach2_mmap,
	.poll = peach2_dma_poll,
	.llseek = no_llseek,
};
