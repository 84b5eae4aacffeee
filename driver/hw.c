// SPDX-License-Identifier: GPL-2.0
/*
 * PEACH2 emulated interconnect card: hardware helpers every part of the
 * driver uses (register pairs, the inbound filter, port and link names).
 * They need nothing but struct peach2_dev's registers, so dma.c, rproxy.c,
 * buf.c and sysfs.c depend on this file and never on main.c.
 */

#include <linux/io.h>
#include <linux/kernel.h>
#include <linux/mutex.h>
#include <linux/pci.h>

#include "peach2.h"

/*
 * A 64-bit counter as a LO/HI pair of 32-bit registers: one 8-byte read,
 * which the card answers with both halves at once (docs/hardware.md §4), so
 * it cannot tear; one access instead of the three a hi/lo/hi loop costs.
 */
u64 peach2_read64(struct peach2_dev *p2, u32 reg)
{
	return readq(p2->regs + reg);
}

/*
 * Mask (or unmask) the INT_MASK @bits. The register is written only when
 * it changes: the DMA channels mask their bit while idle, so that a short
 * run, which ends inside its start and is reaped there, costs no message
 * and no interrupt (dma.c). Unmasking a bit that is set sends its message
 * (docs/hardware.md §4), so nothing is lost in between.
 */
void peach2_int_mask_set(struct peach2_dev *p2, u32 bits, bool masked)
{
	unsigned long flags;
	u32 mask;

	spin_lock_irqsave(&p2->int_mask_lock, flags);
	mask = masked ? p2->int_mask | bits : p2->int_mask & ~bits;
	if (mask != p2->int_mask && !p2->int_mask_frozen) {
		p2->int_mask = mask;
		writel(mask, p2->regs + PEACH2_REG_INT_MASK);
	}
	spin_unlock_irqrestore(&p2->int_mask_lock, flags);
}

/* Teardown: every source masked, for good. */
void peach2_int_mask_all(struct peach2_dev *p2)
{
	unsigned long flags;

	spin_lock_irqsave(&p2->int_mask_lock, flags);
	p2->int_mask = U32_MAX;
	p2->int_mask_frozen = true;
	writel(U32_MAX, p2->regs + PEACH2_REG_INT_MASK);
	spin_unlock_irqrestore(&p2->int_mask_lock, flags);
}

/*
 * Tell the card's inbound filter about a range of our memory (PEACH2_IN_CMD_*).
 * The card applies remote and loopback writes only inside registered
 * ranges, so nothing but our buffers can be written through the window.
 * Caller holds p2->lock for reading and has checked !p2->dead.
 */
int peach2_inbound(struct peach2_dev *p2, u32 cmd, u64 base, u64 size)
{
	u32 result, count = 0;

	mutex_lock(&p2->in_lock);
	/* LO/HI pairs in one 8-byte write each (docs/hardware.md §4). */
	writeq(base, p2->regs + PEACH2_REG_IN_BASE_LO);
	writeq(size, p2->regs + PEACH2_REG_IN_SIZE_LO);
	writel(cmd, p2->regs + PEACH2_REG_IN_CMD);
	result = readl(p2->regs + PEACH2_REG_IN_RESULT);
	if (result)
		count = readl(p2->regs + PEACH2_REG_IN_COUNT);
	mutex_unlock(&p2->in_lock);

	if (result) {
		dev_err_ratelimited(&p2->pdev->dev,
				    "inbound filter refused command %u for %#llx+%#llx: %s\n",
				    cmd, base, size, peach2_err_name(result));
		/* The node-wide table is full: every user waits for space. */
		if (cmd == PEACH2_IN_CMD_ADD && count >= PEACH2_IN_MAX_RANGES)
			return -ENOSPC;
		return -EIO;
	}
	return 0;
}

char peach2_port_name(u32 port)
{
	return port < PEACH2_NR_PORTS ? "NEWS"[port] : '?';
}

/* "up peer=<node> port=<E|W|S>", "connected" or "down", no newline. */
int peach2_format_link(u32 link, char *buf, size_t size)
{
	u32 port, node;

	if (link & PEACH2_LINK_UP) {
		port = (link >> PEACH2_LINK_PEER_PORT_SHIFT) & 0xf;
		node = link >> PEACH2_LINK_PEER_NODE_SHIFT;
		return scnprintf(buf, size, "up peer=%u port=%c", node,
				 peach2_port_name(port));
	}
	if (link & PEACH2_LINK_CONNECTED)
		return scnprintf(buf, size, "connected");
	return scnprintf(buf, size, "down");
}
