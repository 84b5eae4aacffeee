// SPDX-License-Identifier: GPL-2.0
/*
 * PEACH2 emulated interconnect card: PCI probe/remove, interrupts, module.
 */

#include <linux/cdev.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>

#include "peach2.h"

static unsigned long long peach2_max_alloc = SZ_256M;
module_param_named(max_alloc, peach2_max_alloc, ullong, 0444);
MODULE_PARM_DESC(max_alloc,
		 "largest single PEACH2_IOC_ALLOC in bytes (default 256 MiB)");

static dev_t peach2_devt;
static struct class *peach2_class;
static DEFINE_IDA(peach2_ida);

/*
 * A private pseudo filesystem gives each card an inode whose address_space
 * every open file of the card shares (the pattern of drm_fs_inode_new()).
 * No .owner: the internal mount must not pin the module, and it is gone
 * before the module can be unloaded (cards are released first).
 */
#define PEACH2_FS_MAGIC 0x50324653 /* "P2FS" */

static struct vfsmount *peach2_fs_mnt;
static int peach2_fs_cnt;

static int peach2_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, PEACH2_FS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type peach2_fs_type = {
	.name = "peach2fs",
	.init_fs_context = peach2_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

static struct inode *peach2_inode_new(void)
{
	struct inode *inode;
	int ret;

	ret = simple_pin_fs(&peach2_fs_type, &peach2_fs_mnt, &peach2_fs_cnt);
	if (ret)
		return ERR_PTR(ret);

	inode = alloc_anon_inode(peach2_fs_mnt->mnt_sb);
	if (IS_ERR(inode))
		simple_release_fs(&peach2_fs_mnt, &peach2_fs_cnt);
	return inode;
}

static void peach2_inode_free(struct inode *inode)
{
	iput(inode);
	simple_release_fs(&peach2_fs_mnt, &peach2_fs_cnt);
}

static void peach2_irq_error(struct peach2_dev *p2)
{
	struct device *dev = &p2->pdev->dev;
	u32 status, last, count, code;
	u64 addr;

	status = readl(p2->regs + PEACH2_REG_ERR_STATUS);
	last = readl(p2->regs + PEACH2_REG_LAST_ERR);
	count = readl(p2->regs + PEACH2_REG_ERR_COUNT);

	if (!(status & PEACH2_ERR_VALID)) {
		dev_warn_ratelimited(dev,
				     "error interrupt, nothing latched; last error %u (%s), %u errors\n",
				     last, peach2_err_name(last), count);
		return;
	}

	addr = readl(p2->regs + PEACH2_REG_ERR_ADDR_LO);
	addr |= (u64)readl(p2->regs + PEACH2_REG_ERR_ADDR_HI) << 32;
	code = status & PEACH2_ERR_STATUS_CODE;
	dev_warn_ratelimited(dev,
			     "error %u (%s) at address 0x%llx (node %u); last error %u (%s), %u errors\n",
			     code, peach2_err_name(code), addr,
			     PEACH2_ADDR_NODE(addr), last, peach2_err_name(last),
			     count);

	/* Unlatch, so that the next error is recorded with its address. */
	writel(PEACH2_ERR_VALID, p2->regs + PEACH2_REG_ERR_STATUS);
}

static void peach2_irq_link(struct peach2_dev *p2)
{
	char state[40];
	u32 port, link;

	/* A peer can flap its link at will: log changes only, rate-limited. */
	for (port = PEACH2_PORT_E; port <= PEACH2_PORT_S; port++) {
		link = readl(p2->regs + PEACH2_REG_LINK(port - 1));
		if (link == p2->link_seen[port])
			continue;
		p2->link_seen[port] = link;
		peach2_format_link(link, state, sizeof(state));
		dev_info_ratelimited(&p2->pdev->dev, "link %c: %s\n",
				     peach2_port_name(port), state);
	}
}

static irqreturn_t peach2_irq(int irq, void *data)
{
	struct peach2_dev *p2 = data;
	u32 status;

	status = readl(p2->regs + PEACH2_REG_INT_STATUS);
	if (status == U32_MAX)			/* card gone */
		return IRQ_NONE;
	/* The DMA bits belong to the channels' vectors (dma.c). */
	status &= PEACH2_INT_MISC;
	if (!status)
		return IRQ_NONE;
	writel(status, p2->regs + PEACH2_REG_INT_STATUS);

	if (status & PEACH2_INT_ERROR)
		peach2_irq_error(p2);
	if (status & PEACH2_INT_LINK)
		peach2_irq_link(p2);
	if (status & PEACH2_INT_MAILBOX) {
		atomic_inc(&p2->mbox_events);
		wake_up_interruptible_all(&p2->mbox_wq);
	}
	return IRQ_HANDLED;
}

static void peach2_dev_release(struct device *dev)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);

	if (p2->inode)
		peach2_inode_free(p2->inode);
	peach2_rp_release(p2);
	peach2_dma_release(p2);
	pci_dev_put(p2->pdev);
	kfree(p2);
}

/* Sanity-check the read-only registers and cache them. */
static int peach2_check_hw(struct peach2_dev *p2)
{
	struct device *dev = &p2->pdev->dev;
	u32 id, slice_shift, host_shift;

	id = readl(p2->regs + PEACH2_REG_ID);
	if (id != PEACH2_ID_MAGIC) {
		dev_err(dev, "ID register reads 0x%08x, expected 0x%08x: not a PEACH2 card\n",
			id, PEACH2_ID_MAGIC);
		return -ENODEV;
	}

	p2->hw_version = readl(p2->regs + PEACH2_REG_VERSION);
	if (p2->hw_version >> 16 != PEACH2_VERSION_MAJOR) {
		dev_err(dev, "hardware version %u.%u is not supported (driver speaks %u.x)\n",
			p2->hw_version >> 16, p2->hw_version & 0xffff,
			PEACH2_VERSION_MAJOR);
		return -ENODEV;
	}

	p2->node_id = readl(p2->regs + PEACH2_REG_NODE_ID);
	p2->node_count = readl(p2->regs + PEACH2_REG_NODE_COUNT);
	if (!p2->node_count || p2->node_count > PEACH2_MAX_NODES ||
	    p2->node_id >= p2->node_count) {
		dev_err(dev, "bad node id %u / node count %u (at most %u nodes)\n",
			p2->node_id, p2->node_count, PEACH2_MAX_NODES);
		return -ENODEV;
	}

	slice_shift = readl(p2->regs + PEACH2_REG_SLICE_SHIFT);
	host_shift = readl(p2->regs + PEACH2_REG_HOST_SHIFT);
	if (slice_shift != PEACH2_SLICE_SHIFT || host_shift < PAGE_SHIFT ||
	    host_shift >= slice_shift) {
		dev_err(dev, "unsupported address map: slice shift %u (want %u), host shift %u\n",
			slice_shift, PEACH2_SLICE_SHIFT, host_shift);
		return -ENODEV;
	}
	p2->host_size = 1ull << host_shift;
	p2->caps = readl(p2->regs + PEACH2_REG_CAPS);

	/* One buffer never exceeds host memory nor the per-fd limit. */
	p2->max_alloc = min3(peach2_max_alloc, peach2_max_alloc_per_fd,
			     p2->host_size);
	p2->max_alloc = ALIGN_DOWN(p2->max_alloc, PAGE_SIZE);
	return 0;
}

static int peach2_map_bars(struct peach2_dev *p2)
{
	struct pci_dev *pdev = p2->pdev;
	struct device *dev = &pdev->dev;
	int ret;

	if (pci_resource_len(pdev, PEACH2_BAR_REGS) < PEACH2_REGS_SIZE ||
	    pci_resource_len(pdev, PEACH2_BAR_CARDMEM) < PEACH2_CARDMEM_SIZE) {
		dev_err(dev, "BAR0/BAR2 too small\n");
		return -ENODEV;
	}

	/*
	 * The window must be assigned in full: q35's default 64-bit hole is
	 * 32 GiB, which leaves no room for it next to anything else.
	 */
	if (!(pci_resource_flags(pdev, PEACH2_BAR_WINDOW) & IORESOURCE_MEM) ||
	    !pci_resource_start(pdev, PEACH2_BAR_WINDOW) ||
	    pci_resource_len(pdev, PEACH2_BAR_WINDOW) < PEACH2_WINDOW_SIZE) {
		dev_err(dev, "window BAR%d unassigned or smaller than %llu GiB (%pR); grow the 64-bit PCI hole (q35-pcihost.pci-hole64-size)\n",
			PEACH2_BAR_WINDOW, PEACH2_WINDOW_SIZE >> 30,
			&pdev->resource[PEACH2_BAR_WINDOW]);
		return -ENODEV;
	}

	ret = pcim_iomap_regions(pdev, BIT(PEACH2_BAR_REGS) |
				 BIT(PEACH2_BAR_CARDMEM), KBUILD_MODNAME);
	if (ret) {
		dev_err(dev, "cannot map BAR0/BAR2: %d\n", ret);
		return ret;
	}
	p2->regs = pcim_iomap_table(pdev)[PEACH2_BAR_REGS];
	p2->mbox_phys = pci_resource_start(pdev, PEACH2_BAR_CARDMEM) +
			PEACH2_MAILBOX_OFF;

	/* The window is only mmap'ed to user space, never ioremapped. */
	ret = pci_request_region(pdev, PEACH2_BAR_WINDOW, KBUILD_MODNAME);
	if (ret) {
		dev_err(dev, "cannot claim window BAR%d: %d\n",
			PEACH2_BAR_WINDOW, ret);
		return ret;
	}
	p2->window_phys = pci_resource_start(pdev, PEACH2_BAR_WINDOW);
	p2->window_size = PEACH2_WINDOW_SIZE;

	/*
	 * With PAT, vmf_insert_pfn() takes the cache mode from the memtype
	 * recorded for the physical range (UC- when none is): record WC so
	 * that the lazily inserted window pages are write-combining. Without
	 * PAT, fall back to an MTRR. Both are undone when the device is
	 * released, after remove() has zapped all user mappings.
	 */
	ret = devm_arch_io_reserve_memtype_wc(dev, p2->window_phys,
					      p2->window_size);
	if (ret)
		dev_warn(dev, "window will not be write-combining: %d\n", ret);
	ret = devm_arch_phys_wc_add(dev, p2->window_phys, p2->window_size);
	if (ret < 0)
		dev_warn(dev, "no write-combining MTRR for the window: %d\n",
			 ret);
	return 0;
}

/*
 * MSI-X vector 0 (errors, links, mailbox), one per DMA channel
 * (PEACH2_INT_VECTOR_DMA(ch), ch 0..4: 4 is the read proxy's) and one for
 * read-proxy requests (PEACH2_INT_VECTOR_RP). Without all of them there is
 * no DMA completion, so probe fails. The read proxy requests its two
 * itself (peach2_rp_probe()).
 */
static int peach2_setup_irq(struct peach2_dev *p2)
{
	struct pci_dev *pdev = p2->pdev;
	int ret;

	ret = pci_alloc_irq_vectors(pdev, PEACH2_NR_VECTORS, PEACH2_NR_VECTORS,
				    PCI_IRQ_MSIX);
	if (ret < 0) {
		dev_err(&pdev->dev, "cannot get %u MSI-X vectors (misc, DMA channels, read proxy): %d\n",
			PEACH2_NR_VECTORS, ret);
		return ret;
	}

	p2->irq = pci_irq_vector(pdev, PEACH2_INT_VECTOR_MISC);
	ret = request_irq(p2->irq, peach2_irq, 0, dev_name(&p2->dev), p2);
	if (ret) {
		dev_err(&pdev->dev, "cannot request irq %d: %d\n", p2->irq,
			ret);
		goto err_vectors;
	}
	ret = peach2_dma_setup_irqs(p2);
	if (ret)
		goto err_irq;
	return 0;

err_irq:
	free_irq(p2->irq, p2);
err_vectors:
	pci_free_irq_vectors(pdev);
	return ret;
}

/* The DMA and read-proxy vectors are gone already. */
static void peach2_teardown_irq(struct peach2_dev *p2)
{
	peach2_int_mask_all(p2);
	free_irq(p2->irq, p2);
	pci_free_irq_vectors(p2->pdev);
}

/* A new card's software state; from here on put_device(&p2->dev) frees it. */
static struct peach2_dev *peach2_dev_new(struct pci_dev *pdev)
{
	struct peach2_dev *p2;

	p2 = kzalloc(sizeof(*p2), GFP_KERNEL);
	if (!p2)
		return NULL;
	device_initialize(&p2->dev);
	p2->dev.class = peach2_class;
	p2->dev.parent = &pdev->dev;
	p2->dev.groups = peach2_groups;
	p2->dev.release = peach2_dev_release;
	p2->pdev = pci_dev_get(pdev);
	p2->minor = -1;
	init_rwsem(&p2->lock);
	spin_lock_init(&p2->int_mask_lock);
	p2->int_mask = U32_MAX;		/* as the card resets */
	mutex_init(&p2->in_lock);
	mutex_init(&p2->fw_lock);
	peach2_acct_init(p2);
	init_waitqueue_head(&p2->mbox_wq);
	peach2_rp_init(p2);
	peach2_pin_init(p2);
	cdev_init(&p2->cdev, &peach2_fops);
	p2->cdev.owner = THIS_MODULE;
	return p2;
}

/*
 * The card itself: BARs, identity, DMA channels, an empty inbound filter,
 * bus mastering within the host memory the window reaches.
 */
static int peach2_hw_init(struct peach2_dev *p2)
{
	struct device *dev = &p2->pdev->dev;
	int ret;

	ret = peach2_map_bars(p2);
	if (ret)
		return ret;
	ret = peach2_check_hw(p2);
	if (ret)
		return ret;
	if (!(p2->caps & PEACH2_CAP_DMA)) {
		dev_err(dev, "card has no DMA controller (caps %#x)\n", p2->caps);
		return -ENODEV;
	}
	peach2_dma_init(p2);

	/* Ranges a previous driver instance registered are stale now. */
	writel(PEACH2_IN_CMD_CLEAR, p2->regs + PEACH2_REG_IN_CMD);
	writel(PEACH2_IN_ENABLE, p2->regs + PEACH2_REG_IN_CTRL);
	pci_set_master(p2->pdev);
	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(ilog2(p2->host_size)));
	if (ret)
		dev_err(dev, "cannot restrict DMA to the low %llu MiB: %d\n",
			p2->host_size >> 20, ret);
	return ret;
}

/* The mapping inode and the device number and name (not yet visible). */
static int peach2_name(struct peach2_dev *p2)
{
	int ret;

	p2->inode = peach2_inode_new();
	if (IS_ERR(p2->inode)) {
		ret = PTR_ERR(p2->inode);
		p2->inode = NULL;
		dev_err(&p2->pdev->dev, "cannot allocate the mapping inode: %d\n",
			ret);
		return ret;
	}
	ret = ida_alloc_max(&peach2_ida, PEACH2_MAX_DEVICES - 1, GFP_KERNEL);
	if (ret < 0)
		return ret;
	p2->minor = ret;
	p2->dev.devt = MKDEV(MAJOR(peach2_devt), p2->minor);
	ret = dev_set_name(&p2->dev, PEACH2_DEV_PREFIX "%d", p2->minor);
	if (ret) {
		ida_free(&peach2_ida, p2->minor);
		p2->minor = -1;
	}
	return ret;
}

static int peach2_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct peach2_dev *p2;
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret) {
		dev_err(dev, "cannot enable device: %d\n", ret);
		return ret;
	}
	p2 = peach2_dev_new(pdev);
	if (!p2)
		return -ENOMEM;
	ret = peach2_hw_init(p2);
	if (ret)
		goto err_put;
	ret = peach2_name(p2);
	if (ret)
		goto err_put;

	ret = peach2_setup_irq(p2);
	if (ret)
		goto err_ida;
	/* Without it the card still works: EXPORT/RP_SUBMIT say EOPNOTSUPP. */
	ret = peach2_rp_probe(p2);
	if (ret)
		dev_warn(dev, "read proxy unavailable (%d); continuing without it\n",
			 ret);
	ret = peach2_names_probe(p2);
	if (ret)
		goto err_rp;

	pci_set_drvdata(pdev, p2);
	ret = cdev_device_add(&p2->cdev, &p2->dev);
	if (ret) {
		dev_err(dev, "cannot add /dev/%s: %d\n", dev_name(&p2->dev),
			ret);
		goto err_rp;
	}

	/* DMA channels unmask their bit while busy (dma.c). */
	peach2_int_mask_set(p2, PEACH2_INT_MISC | peach2_rp_int_mask(p2),
			    false);
	peach2_rp_enable(p2);

	peach2_fw_probe(p2);

	dev_info(dev, "/dev/%s: node %u of %u, hw %u.%u, window %pa size %llu GiB\n",
		 dev_name(&p2->dev), p2->node_id, p2->node_count,
		 p2->hw_version >> 16, p2->hw_version & 0xffff,
		 &p2->window_phys, p2->window_size >> 30);
	return 0;

err_rp:
	peach2_rp_remove(p2);
	peach2_dma_shutdown(p2);
	peach2_teardown_irq(p2);
	peach2_names_remove(p2);
err_ida:
	ida_free(&peach2_ida, p2->minor);
err_put:
	put_device(&p2->dev);
	return ret;
}

static void peach2_remove(struct pci_dev *pdev)
{
	struct peach2_dev *p2 = pci_get_drvdata(pdev);

	/* No new opens; sysfs readers (which touch registers) are drained. */
	cdev_device_del(&p2->cdev, &p2->dev);

	/*
	 * The read proxy first, while the card is still alive for everyone:
	 * the ring is disabled (requests get RP_OFF from the card), the
	 * reply in flight is aborted (its requester gets an error record),
	 * queued entries are answered RP_OFF. Replies
	 * land only in registered buffers, and a buffer freed meanwhile is
	 * still taken out of the inbound filter (that needs !dead).
	 */
	peach2_rp_remove(p2);

	/*
	 * Faults and hardware-touching ioctls hold the lock for reading:
	 * once we have it, none is in flight and every later one sees dead
	 * (and queues no DMA run). The inbound filter is emptied with it:
	 * buffers freed from now on skip PEACH2_IN_CMD_REMOVE, and no late
	 * remote write may land in their memory once the kernel reuses it
	 * (a run in flight that writes into this node may now end with
	 * NOT_REGISTERED instead of DMA_ABORTED). Then stop the DMA
	 * channels: every run completes with PEACH2_ERR_DMA_ABORTED and its
	 * waiters wake. Then zap every user mapping of the card, so nothing
	 * points at the BARs once pcim releases them after we return.
	 * Buffers stay allocated until their last reference goes.
	 */
	down_write(&p2->lock);
	WRITE_ONCE(p2->dead, true);
	peach2_inbound(p2, PEACH2_IN_CMD_CLEAR, 0, 0);
	up_write(&p2->lock);
	peach2_dma_shutdown(p2);
	peach2_teardown_irq(p2);
	peach2_names_remove(p2);	/* no LOOKUP can be served any more */
	peach2_pin_remove(p2);		/* nothing writes here any more: free the quarantine */
	unmap_mapping_range(p2->inode->i_mapping, 0, 0, 1);
	wake_up_interruptible_all(&p2->mbox_wq);

	ida_free(&peach2_ida, p2->minor);
	dev_info(&pdev->dev, "removed /dev/%s\n", dev_name(&p2->dev));
	put_device(&p2->dev);
}

static const struct pci_device_id peach2_pci_ids[] = {
	{ PCI_DEVICE(PEACH2_PCI_VENDOR_ID, PEACH2_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, peach2_pci_ids);

static struct pci_driver peach2_pci_driver = {
	.name = KBUILD_MODNAME,
	.id_table = peach2_pci_ids,
	.probe = peach2_probe,
	.remove = peach2_remove,
};

static int __init peach2_init(void)
{
	int ret;

	peach2_limits_init();
	ret = alloc_chrdev_region(&peach2_devt, 0, PEACH2_MAX_DEVICES,
				  KBUILD_MODNAME);
	if (ret)
		return ret;

	peach2_class = class_create(THIS_MODULE, "peach2");
	if (IS_ERR(peach2_class)) {
		ret = PTR_ERR(peach2_class);
		goto err_chrdev;
	}

	ret = pci_register_driver(&peach2_pci_driver);
	if (ret)
		goto err_class;
	return 0;

err_class:
	class_destroy(peach2_class);
err_chrdev:
	unregister_chrdev_region(peach2_devt, PEACH2_MAX_DEVICES);
	return ret;
}
module_init(peach2_init);

static void __exit peach2_exit(void)
{
	pci_unregister_driver(&peach2_pci_driver);
	class_destroy(peach2_class);
	unregister_chrdev_region(peach2_devt, PEACH2_MAX_DEVICES);
	ida_destroy(&peach2_ida);
}
module_exit(peach2_exit);

MODULE_DESCRIPTION("PEACH2 emulated PCIe interconnect card");
MODULE_LICENSE("GPL");
