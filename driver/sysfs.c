// SPDX-License-Identifier: GPL-2.0
/*
 * PEACH2 emulated interconnect card: attributes of /sys/class/peach2/peach2-<n>.
 *
 * The attributes vanish in remove() (cdev_device_del()) before the
 * registers are unmapped, and sysfs waits for running readers, so reading
 * registers here is safe.
 */

#include <linux/device.h>
#include <linux/io.h>
#include <linux/sysfs.h>

#include "peach2.h"

static ssize_t node_id_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%u\n", to_peach2_dev(dev)->node_id);
}
static DEVICE_ATTR_RO(node_id);

static ssize_t node_count_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_peach2_dev(dev)->node_count);
}
static DEVICE_ATTR_RO(node_count);

static ssize_t hw_version_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	u32 version = to_peach2_dev(dev)->hw_version;

	return sysfs_emit(buf, "%u.%u\n", version >> 16, version & 0xffff);
}
static DEVICE_ATTR_RO(hw_version);

static ssize_t peach2_link_show(struct device *dev, enum peach2_port port,
				char *buf)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);
	char state[40];

	peach2_format_link(readl(p2->regs + PEACH2_REG_LINK(port - 1)), state,
			   sizeof(state));
	return sysfs_emit(buf, "%s\n", state);
}

static ssize_t link_e_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return peach2_link_show(dev, PEACH2_PORT_E, buf);
}
static DEVICE_ATTR_RO(link_e);

static ssize_t link_w_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return peach2_link_show(dev, PEACH2_PORT_W, buf);
}
static DEVICE_ATTR_RO(link_w);

static ssize_t link_s_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return peach2_link_show(dev, PEACH2_PORT_S, buf);
}
static DEVICE_ATTR_RO(link_s);

/* How each cable's bytes travel (hardware.md §5): shm, socket or none. */
static ssize_t link_transport_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);
	enum peach2_port port;
	int len = 0;

	for (port = PEACH2_PORT_E; port <= PEACH2_PORT_S; port++) {
		u32 link = readl(p2->regs + PEACH2_REG_LINK(port - 1));
		const char *how = !(link & PEACH2_LINK_CONNECTED) ? "none" :
				  (link & PEACH2_LINK_DIRECT) ? "shm direct" :
				  (link & PEACH2_LINK_SHM) ? "shm" : "socket";

		len += sysfs_emit_at(buf, len, "%c %s\n",
				     peach2_port_name(port), how);
	}
	return len;
}
static DEVICE_ATTR_RO(link_transport);

static ssize_t err_count_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);

	return sysfs_emit(buf, "%u\n", readl(p2->regs + PEACH2_REG_ERR_COUNT));
}
static DEVICE_ATTR_RO(err_count);

static ssize_t err_last_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);

	return sysfs_emit(buf, "%u\n", readl(p2->regs + PEACH2_REG_LAST_ERR));
}
static DEVICE_ATTR_RO(err_last);

static ssize_t err_status_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);

	return sysfs_emit(buf, "0x%08x\n",
			  readl(p2->regs + PEACH2_REG_ERR_STATUS));
}
static DEVICE_ATTR_RO(err_status);

static ssize_t counters_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);
	int len = 0;
	u32 port;

	for (port = 0; port < PEACH2_NR_PORTS; port++)
		len += sysfs_emit_at(buf, len,
				     "%c tx_pkts=%llu tx_bytes=%llu rx_pkts=%llu rx_bytes=%llu\n",
				     peach2_port_name(port),
				     peach2_read64(p2, PEACH2_REG_TX_PKTS(port)),
				     peach2_read64(p2, PEACH2_REG_TX_BYTES(port)),
				     peach2_read64(p2, PEACH2_REG_RX_PKTS(port)),
				     peach2_read64(p2, PEACH2_REG_RX_BYTES(port)));
	return len;
}
static DEVICE_ATTR_RO(counters);

static ssize_t errors_by_code_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);
	int len = 0;
	u32 code, count;

	for (code = 0; code < PEACH2_ERR_NR_CODES; code++) {
		count = readl(p2->regs + PEACH2_REG_ERR_BY_CODE(code));
		if (count)
			len += sysfs_emit_at(buf, len, "%u %s %u\n", code,
					     peach2_err_name(code), count);
	}
	return len;
}
static DEVICE_ATTR_RO(errors_by_code);

/* A line per DMA channel: state, queued runs, completed runs, errors. */
static ssize_t dma_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	return peach2_dma_show(to_peach2_dev(dev), buf);
}
static DEVICE_ATTR_RO(dma);

/* On-card descriptor RAM: slots held by chains and runs. */
static ssize_t dma_desc_ram_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);
	unsigned int used;

	mutex_lock(&p2->desc_lock);
	used = p2->desc_used;
	mutex_unlock(&p2->desc_lock);
	return sysfs_emit(buf, "used=%u free=%u\n", used,
			  PEACH2_DESC_MAX - used);
}
static DEVICE_ATTR_RO(dma_desc_ram);

/* Read proxy: "name value" lines (driver and card counters). */
static ssize_t rproxy_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return peach2_rp_show(to_peach2_dev(dev), buf);
}
static DEVICE_ATTR_RO(rproxy);

static ssize_t fw_status_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);

	return sysfs_emit(buf, "%s\n",
			  peach2_fw_status_name(readl(p2->regs + PEACH2_REG_FW_STATUS)));
}
static DEVICE_ATTR_RO(fw_status);

static ssize_t fw_version_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);

	return sysfs_emit(buf, "%u\n", readl(p2->regs + PEACH2_REG_FW_VERSION));
}
static DEVICE_ATTR_RO(fw_version);

static ssize_t fw_routes_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);

	return sysfs_emit(buf, "%u\n", readl(p2->regs + PEACH2_REG_FW_ENTRIES));
}
static DEVICE_ATTR_RO(fw_routes);

static ssize_t fw_topology_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);
	char topology[32];

	peach2_fw_topology(p2, topology, sizeof(topology));
	return sysfs_emit(buf, "%s\n", topology);
}
static DEVICE_ATTR_RO(fw_topology);

/* echo peach2/ring-4.bin > fw_load: load another image (root only). */
static ssize_t fw_load_store(struct device *dev, struct device_attribute *attr,
			     const char *buf, size_t count)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);
	char name[128];
	int ret;

	if (count == 0 || count >= sizeof(name))
		return -EINVAL;
	memcpy(name, buf, count);
	name[count] = '\0';
	strim(name);
	if (!name[0] || strstr(name, ".."))
		return -EINVAL;
	down_read(&p2->lock);
	ret = p2->dead ? -ENODEV : peach2_fw_load(p2, name);
	up_read(&p2->lock);
	return ret ? ret : count;
}
static DEVICE_ATTR_WO(fw_load);

/*
 * Fault injection for tests of the recovery paths (root only): a card
 * register that counts down the faults still to come.
 */
static ssize_t peach2_fault_show(struct device *dev, char *buf, u32 reg)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);
	ssize_t ret;

	down_read(&p2->lock);
	ret = p2->dead ? -ENODEV : sysfs_emit(buf, "%u\n", readl(p2->regs + reg));
	up_read(&p2->lock);
	return ret;
}

static ssize_t peach2_fault_store(struct device *dev, const char *buf,
				  size_t count, u32 reg, const char *what)
{
	struct peach2_dev *p2 = to_peach2_dev(dev);
	u32 n;
	int ret;

	ret = kstrtou32(buf, 0, &n);
	if (ret)
		return ret;
	down_read(&p2->lock);
	if (p2->dead) {
		ret = -ENODEV;
	} else {
		writel(n, p2->regs + reg);
		dev_info(dev, "fault injection: the next %u %s\n", n, what);
	}
	up_read(&p2->lock);
	return ret ? ret : count;
}

/* Read-proxy replies the card stalls until the driver aborts them. */
static ssize_t fault_proxy_stall_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	return peach2_fault_show(dev, buf, PEACH2_REG_FAULT_PROXY_STALL);
}

static ssize_t fault_proxy_stall_store(struct device *dev,
				       struct device_attribute *attr,
				       const char *buf, size_t count)
{
	return peach2_fault_store(dev, buf, count, PEACH2_REG_FAULT_PROXY_STALL,
				  "read-proxy replies stall");
}
static DEVICE_ATTR_ADMIN_RW(fault_proxy_stall);

/* Request interrupts the card withholds: lost wake-ups of the serving thread. */
static ssize_t fault_rp_int_lost_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	return peach2_fault_show(dev, buf, PEACH2_REG_FAULT_RP_INT_LOST);
}

static ssize_t fault_rp_int_lost_store(struct device *dev,
				       struct device_attribute *attr,
				       const char *buf, size_t count)
{
	return peach2_fault_store(dev, buf, count, PEACH2_REG_FAULT_RP_INT_LOST,
				  "read-proxy request interrupts are lost");
}
static DEVICE_ATTR_ADMIN_RW(fault_rp_int_lost);

static ssize_t verbs_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return peach2_names_show(to_peach2_dev(dev), buf);
}
static DEVICE_ATTR_RO(verbs);

/* What each user holds against user_max_bytes / user_max_ranges. */
static ssize_t users_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return peach2_users_show(to_peach2_dev(dev), buf);
}
static DEVICE_ATTR_RO(users);

static struct attribute *peach2_attrs[] = {
	&dev_attr_verbs.attr,
	&dev_attr_users.attr,
	&dev_attr_node_id.attr,
	&dev_attr_fault_proxy_stall.attr,
	&dev_attr_fault_rp_int_lost.attr,
	&dev_attr_node_count.attr,
	&dev_attr_hw_version.attr,
	&dev_attr_link_e.attr,
	&dev_attr_link_w.attr,
	&dev_attr_link_s.attr,
	&dev_attr_link_transport.attr,
	&dev_attr_err_count.attr,
	&dev_attr_err_last.attr,
	&dev_attr_err_status.attr,
	&dev_attr_counters.attr,
	&dev_attr_errors_by_code.attr,
	&dev_attr_dma.attr,
	&dev_attr_dma_desc_ram.attr,
	&dev_attr_rproxy.attr,
	&dev_attr_fw_status.attr,
	&dev_attr_fw_version.attr,
	&dev_attr_fw_routes.attr,
	&dev_attr_fw_topology.attr,
	&dev_attr_fw_load.attr,
	NULL
};

static const struct attribute_group peach2_group = {
	.attrs = peach2_attrs,
};

const struct attribute_group *peach2_groups[] = {
	&peach2_group,
	NULL
};
