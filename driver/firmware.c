// SPDX-License-Identifier: GPL-2.0
/*
 * PEACH2 emulated interconnect card: routing tables from a firmware image.
 *
 * The image (docs/hardware.md, "Firmware image") holds the routing entries of
 * every node. The driver only carries it to the card: the card validates it,
 * applies the entries for its own node, and reports a status. A refused image
 * holds the card's links down, so a cluster with the wrong tables cannot
 * deliver to the wrong node.
 */

#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/firmware.h>
#include <linux/module.h>
#include <linux/pci.h>

#include "peach2.h"

static char *peach2_firmware;
module_param_named(firmware, peach2_firmware, charp, 0444);
MODULE_PARM_DESC(firmware,
		 "routing-table image under /lib/firmware, e.g. peach2/ring-4.bin (default: none, the card routes to direct neighbours)");

/* The card reads and checks an image in well under a second. */
#define PEACH2_FW_POLL_MS	2000

/* The topology text the card reports (NUL padded, 32 bytes). */
void peach2_fw_topology(struct peach2_dev *p2, char *out, size_t size)
{
	u32 words[8];
	int i;

	for (i = 0; i < ARRAY_SIZE(words); i++)
		words[i] = readl(p2->regs + PEACH2_REG_FW_TOPOLOGY + 4 * i);
	memcpy(out, words, min(size, sizeof(words)));
	out[min(size, sizeof(words)) - 1] = '\0';
}

/*
 * Load firmware image @name (relative to /lib/firmware) into the card.
 * Caller holds p2->lock for reading and has checked !p2->dead.
 */
int peach2_fw_load(struct peach2_dev *p2, const char *name)
{
	struct device *dev = &p2->pdev->dev;
	const struct firmware *fw;
	char topology[32];
	dma_addr_t dma;
	u32 status = PEACH2_FW_LOADING;
	void *cpu;
	int ret, i;

	/* No user-space helper: a missing file fails at once. */
	ret = request_firmware_direct(&fw, name, dev);
	if (ret) {
		dev_err(dev, "firmware %s: cannot read /lib/firmware/%s: %d\n",
			name, name, ret);
		return ret;
	}
	if (!fw->size || fw->size > PEACH2_FW_MAX_SIZE) {
		dev_err(dev, "firmware %s: %zu bytes, a PEACH2 image has 1..%u\n",
			name, fw->size, PEACH2_FW_MAX_SIZE);
		ret = -EINVAL;
		goto out_release;
	}
	cpu = dma_alloc_coherent(dev, fw->size, &dma, GFP_KERNEL);
	if (!cpu) {
		ret = -ENOMEM;
		goto out_release;
	}
	memcpy(cpu, fw->data, fw->size);

	mutex_lock(&p2->fw_lock);
	writel(lower_32_bits(dma), p2->regs + PEACH2_REG_FW_ADDR_LO);
	writel(upper_32_bits(dma), p2->regs + PEACH2_REG_FW_ADDR_HI);
	writel(fw->size, p2->regs + PEACH2_REG_FW_LEN);
	writel(PEACH2_FW_CMD_LOAD, p2->regs + PEACH2_REG_FW_CMD);
	/* The card reads the image from memory: keep it until it is done. */
	for (i = 0; i < PEACH2_FW_POLL_MS; i++) {
		status = readl(p2->regs + PEACH2_REG_FW_STATUS);
		if (status != PEACH2_FW_LOADING)
			break;
		usleep_range(500, 1000);
	}
	mutex_unlock(&p2->fw_lock);
	if (status == PEACH2_FW_LOADING) {
		/*
		 * The card never answered: it may still read the buffer, so
		 * leak it rather than hand the memory back while in use.
		 */
		dev_err(dev, "firmware %s: the card did not finish loading it within %d ms\n",
			name, PEACH2_FW_POLL_MS);
		ret = -ETIMEDOUT;
		goto out_release;
	}
	dma_free_coherent(dev, fw->size, cpu, dma);

	if (status != PEACH2_FW_OK) {
		dev_err(dev, "firmware %s refused by the card: %s (status %u); links held down until a valid image is loaded\n",
			name, peach2_fw_status_name(status), status);
		ret = -EINVAL;
		goto out_release;
	}
	peach2_fw_topology(p2, topology, sizeof(topology));
	dev_info(dev, "firmware %s: topology '%s', image version %u, %u routes for node %u\n",
		 name, topology, readl(p2->regs + PEACH2_REG_FW_VERSION),
		 readl(p2->regs + PEACH2_REG_FW_ENTRIES), p2->node_id);
	ret = 0;
out_release:
	release_firmware(fw);
	return ret;
}

/* At probe: the image named by the module parameter, if any. */
void peach2_fw_probe(struct peach2_dev *p2)
{
	if (peach2_firmware && *peach2_firmware)
		peach2_fw_load(p2, peach2_firmware);
}
