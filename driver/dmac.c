// SPDX-License-Identifier: GPL-2.0
/*
 * PEACH2 emulated interconnect card: the DMA channels at register level.
 *
 * The one place that knows how a channel is started, stopped and read:
 * dma.c runs user space's transfers on channels 0..3 through it, rproxy.c
 * the read proxy's replies on channel 4 (PEACH2_DMA_PROXY_CHANNEL). Callers
 * serialise access to a channel (dma.c: the channel mutex; rproxy.c: the
 * serving thread owns channel 4).
 */

#include <linux/io.h>
#include <linux/iopoll.h>
#include <linux/kernel.h>
#include <linux/pci.h>

#include "peach2.h"

/* How long a channel may take to stop after CTRL.ABORT. */
#define PEACH2_DMAC_ABORT_US	100000

static void __iomem *peach2_dmac_reg(struct peach2_dev *p2, unsigned int ch,
				     u32 r)
{
	return p2->regs + PEACH2_REG_DMA(ch, r);
}

/* Run the chain at @head: an on-card index, or a host address | HEAD_HOST. */
void peach2_dmac_start_chain(struct peach2_dev *p2, unsigned int ch, u64 head)
{
	/* HEAD_LO and HEAD_HI in one 8-byte write (docs/hardware.md §4). */
	writeq(head, peach2_dmac_reg(p2, ch, PEACH2_DMA_HEAD_LO));
	writel(PEACH2_DMA_CTRL_START_CHAIN, peach2_dmac_reg(p2, ch, PEACH2_DMA_CTRL));
}

/* Register mode: @d (no chain bits) in the channel's registers, then start. */
void peach2_dmac_start_reg(struct peach2_dev *p2, unsigned int ch,
			   const struct peach2_desc *d)
{
	/* Register pairs in 8-byte writes: an MMIO access each, not two. */
	writeq(d->src, peach2_dmac_reg(p2, ch, PEACH2_DMA_SRC_LO));
	writeq(d->dst, peach2_dmac_reg(p2, ch, PEACH2_DMA_DST_LO));
	writeq(peach2_desc_len_block(d), peach2_dmac_reg(p2, ch, PEACH2_DMA_LEN));
	writel(d->flags, peach2_dmac_reg(p2, ch, PEACH2_DMA_FLAGS));
	writel(PEACH2_DMA_CTRL_START_REG, peach2_dmac_reg(p2, ch, PEACH2_DMA_CTRL));
}

u32 peach2_dmac_status(struct peach2_dev *p2, unsigned int ch)
{
	return readl(peach2_dmac_reg(p2, ch, PEACH2_DMA_STATUS));
}

/*
 * Stop the channel's run (CTRL.ABORT) and wait until it is no longer busy.
 * Returns true when the card confirmed (or is gone); false, with a message,
 * when the channel is still busy: the card may still touch the run's memory.
 */
bool peach2_dmac_abort(struct peach2_dev *p2, unsigned int ch)
{
	u32 st;

	writel(PEACH2_DMA_CTRL_ABORT, peach2_dmac_reg(p2, ch, PEACH2_DMA_CTRL));
	if (!readl_poll_timeout(peach2_dmac_reg(p2, ch, PEACH2_DMA_STATUS), st,
				st == U32_MAX || !(st & PEACH2_DMA_ST_BUSY),
				100, PEACH2_DMAC_ABORT_US))
		return true;
	dev_err(&p2->pdev->dev, "DMA channel %u does not stop after ABORT (status %#x)\n",
		ch, st);
	return false;
}

/*
 * Clear the channel's DONE/ERROR, then its interrupt bit (in that order, so
 * that the next run's end raises a new one).
 */
void peach2_dmac_ack(struct peach2_dev *p2, unsigned int ch)
{
	writel(PEACH2_DMA_ST_ENDED, peach2_dmac_reg(p2, ch, PEACH2_DMA_STATUS));
	writel(PEACH2_INT_DMA(ch), p2->regs + PEACH2_REG_INT_STATUS);
}

/* Payload bytes the current (or last) run has moved. */
u64 peach2_dmac_bytes(struct peach2_dev *p2, unsigned int ch)
{
	return peach2_read64(p2, PEACH2_REG_DMA(ch, PEACH2_DMA_BYTES_LO));
}

/* Descriptors the current (or last) run has completed. */
u32 peach2_dmac_descs(struct peach2_dev *p2, unsigned int ch)
{
	return readl(peach2_dmac_reg(p2, ch, PEACH2_DMA_DONE_DESCS));
}
