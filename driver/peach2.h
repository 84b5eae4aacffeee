/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PEACH2 emulated interconnect card: driver-internal definitions.
 *
 * Lifetime rules (see README.md):
 *  - struct peach2_dev is refcounted by its embedded class device. Probe
 *    holds one reference, every open file context holds one (and the cdev
 *    holds one while a file of it is open), so the structure outlives
 *    remove() while files or mappings exist.
 *  - struct peach2_file (one per open file) is refcounted: the open file
 *    holds one reference, every buffer allocated through it holds one.
 *  - struct peach2_buf is refcounted: its handle in the file's table holds
 *    one reference, every vma that maps it holds one. Its memory is freed
 *    when the handle is gone (PEACH2_IOC_FREE or close) and the last vma is
 *    unmapped.
 *  - After remove() the card is "dead": ioctls return -ENODEV, new mmaps
 *    fail, existing mappings are zapped and fault with SIGBUS.
 *  - DMA (dma.c): a run (one start of a chain or of a one-shot list) holds
 *    a reference on its file and, through its descriptors, on every buffer
 *    it touches until the card is done with it; a chain holds its buffers
 *    until it is destroyed. remove() aborts the channels and completes every
 *    run with PEACH2_ERR_DMA_ABORTED before the card goes away.
 *  - Read proxy (rproxy.c): an export holds a reference on its buffer; it
 *    sits in the device-wide table p2->rp.exports and in its file's list
 *    until UNEXPORT, FREE of the buffer or close(). A request being served
 *    holds its own buffer reference until the reply has been sent.
 */
#ifndef PEACH2_DRV_H
#define PEACH2_DRV_H

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/completion.h>
#include <linux/device.h>
#include <linux/hashtable.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/rwsem.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>

struct pci_dev;
struct inode;

#define PEACH2_MAX_DEVICES	64

/*
 * Largest physically contiguous piece of a buffer. Debian's kernel has no
 * CMA, so one coherent allocation comes from the buddy allocator and is at
 * most PAGE_SIZE << (MAX_ORDER - 1) = 4 MiB on x86.
 */
#define PEACH2_MAX_CHUNK	SZ_4M

/*
 * Buffer <handle> of a file is mmap'ed at
 * PEACH2_MMAP_BUF_BASE + (handle << PEACH2_BUF_SLOT_SHIFT); a slot is larger
 * than any buffer can be (buffers live in the node's host memory).
 */
#define PEACH2_BUF_SLOT_SHIFT	32
#define PEACH2_MAX_HANDLE	((1u << 20) - 1)

/*
 * Host descriptor arrays of up to a page (128 descriptors: every Verbs run)
 * are kept for the next run instead of going back to dma_free_coherent():
 * at most this many per card (64 KiB), freed when the card goes.
 */
#define PEACH2_DESC_PAGES_KEPT	16

/* ERR_STATUS bits 0..7 hold the code of the first (latched) error. */
#define PEACH2_ERR_STATUS_CODE	GENMASK(7, 0)

/*
 * MSI-X vectors: 0 for errors/links/mailbox, 1 + ch for DMA channel ch
 * (ch 0..3 user channels, 4 the read proxy's), 6 for read-proxy requests.
 */
#define PEACH2_NR_VECTORS	(PEACH2_INT_VECTOR_RP + 1)
#define PEACH2_INT_MISC		(PEACH2_INT_ERROR | PEACH2_INT_LINK | \
				 PEACH2_INT_MAILBOX)
#define PEACH2_INT_DMA_ALL	(PEACH2_INT_DMA(PEACH2_DMA_CHANNELS) - PEACH2_INT_DMA(0))

struct peach2_run;
struct peach2_pinned;

/* A DMA descriptor as the card reads it (struct peach2_desc, little endian). */
struct peach2_desc_le {
	__le64 src;
	__le64 dst;
	__le32 len;
	__le16 burst;
	__le16 gap;
	__le32 next;
	__le32 flags;
};

/* One DMA channel of the card (dma.c). */
struct peach2_dma_chan {
	struct peach2_dev *p2;
	unsigned int idx;
	int irq;			/* vector 1 + idx; 0 when not requested */
	char irq_name[32];

	/* Protects everything below and the channel's registers. */
	struct mutex lock;
	struct peach2_run *cur;		/* started on the card */
	struct list_head queue;		/* FIFO of runs waiting for the card */
	unsigned int nr_queued;
	bool stopped;			/* remove(): start nothing any more */
	bool wedged;			/* ignored ABORT: never used again */
	struct peach2_run *stuck;	/* the run it ignored ABORT for */
	u64 completed;			/* runs ended, with or without error */
	u64 errors;			/* runs ended with an error */
	u64 wd_bytes;			/* progress the watchdog saw last */
	u32 wd_descs;
	bool wd_armed;			/* the watchdog is (or may be) pending */
	struct delayed_work watchdog;
};

/* Read-proxy counters (sysfs `rproxy`). */
struct peach2_rp_stats {
	atomic64_t served_read;
	atomic64_t served_cas;
	atomic64_t served_faa;
	atomic64_t read_bytes;
	atomic64_t refused_bad_request;
	atomic64_t refused_not_exported;
	atomic64_t refused_range;
	atomic64_t refused_align;
	atomic64_t refused_replay;
	atomic64_t refused_throttled;
	atomic64_t reply_errors;
	atomic64_t ring_errors;
	atomic64_t submitted;
	atomic64_t reply_runs;		/* reply chains the serving thread ran */
	atomic64_t replies;		/* requests those chains answered */
	atomic64_t replies_max;		/* the most one chain answered */
	atomic64_t polled;		/* entries found by looking, not by interrupt */
	atomic64_t looks_yielded;	/* looks ended for another task's sake */
	atomic64_t irq_runs;		/* runs of the request interrupt's thread */
	atomic64_t watch_wakeups;	/* the watch woke an idle thread */
	atomic64_t watch_reports;	/* ... or said where a busy one was */
};

struct peach2_rp_reply;

/* What the serving thread keeps per source node (rproxy.c). */
struct peach2_rp_src {
	u64 last_seq;			/* of the last request served */
	unsigned long fail_start;	/* jiffies: the failure window */
	unsigned long throttle_end;	/* jiffies, while @throttled */
	u32 fails;			/* wrong key / unknown id in the window */
	bool throttled;
};

/*
 * Memory registration and names (pin.c, names.c): TCA Verbs. Pinned pages
 * are registered with the inbound filter by the first buffer that pins
 * them (@owners: pfn -> that buffer); later buffers over the same pages
 * hold a reference on it instead. Buffers remote nodes were told to write
 * (a name with PEACH2_NAME_WRITE) leave the filter when freed but keep
 * their memory on @quarantine for name_quarantine_ms.
 */
struct peach2_names {
	struct xarray qps;		/* QPN -> struct peach2_name */
	struct xarray keys;		/* key >> 8 -> struct peach2_name */
	u32 next_qp, next_key;		/* for xa_alloc_cyclic() */
	atomic64_t serials;		/* files opened (their owner serial) */
	void *answer;			/* LOOKUP answer staging (serving thread) */
	dma_addr_t answer_dma;

	struct mutex pin_lock;		/* @owners and filter range accounting */
	struct xarray owners;		/* pfn -> struct peach2_buf (pinned) */

	spinlock_t q_lock;		/* @quarantine */
	struct list_head quarantine;	/* struct peach2_buf, oldest first */
	struct delayed_work q_work;
	wait_queue_head_t q_freed;	/* woken when q_work freed some */
	bool q_stopped;			/* remove(): free at once */

	atomic_t nr_names;
	atomic64_t lookups, lookup_misses;
	atomic64_t pinned_bufs, pinned_pages;
	atomic64_t quarantined_bufs, quarantined_bytes;
};

/* The read proxy (rproxy.c). */
struct peach2_rp {
	bool present;			/* the card has it; set up at probe */
	bool enabled;			/* the ring was opened (RP_CTRL) */

	/*
	 * Exports: id -> struct peach2_exp. The xarray lock protects the
	 * entries' lifetime for lookups: an export is erased under it before
	 * its buffer reference is dropped.
	 */
	struct xarray exports;
	u32 next_export;		/* for xa_alloc_cyclic() */
	atomic_t nr_exports;

	/*
	 * Sending: RP_TX_REQ/RP_TX_SEND/RP_TX_RESULT, RP_TX_LIST and the
	 * reply list it points to (@tx_list), @last_seq, and what RP_TX_REQ
	 * holds (@tx_req, the words set in @tx_req_known).
	 */
	spinlock_t tx_lock;
	u64 last_seq;
	u64 tx_req[8];
	u8 tx_req_known;
	void *tx_list;			/* PEACH2_RP_MAX_PIECES pieces */
	dma_addr_t tx_list_dma;

	/* Serving: the request ring, owned by the interrupt thread. */
	void *ring;			/* ring_entries x PEACH2_RP_ENTRY_SIZE */
	dma_addr_t ring_dma;
	u32 ring_entries;
	u32 head;			/* entries consumed (free running) */
	bool thread_normal;		/* the thread left SCHED_FIFO (rproxy.c) */
	/* The serving thread's look for the next request (rproxy.c). */
	u32 poll_us;			/* 0: none; at most rp_poll_us */
	ktime_t served_at;		/* its last answer */
	ktime_t share_start;		/* the window looks are counted in */
	s64 share_ns;			/* what looks spun in it */
	/*
	 * The watch over the thread (rproxy.c): the step the thread is in
	 * and since when (jiffies); the ring as the watch saw it last.
	 */
	unsigned int step;
	unsigned long step_since;
	u32 watch_head, watch_tail;
	u64 watch_irq_runs;
	struct delayed_work watch;
	struct peach2_rp_src src[PEACH2_MAX_NODES];
	/*
	 * Protects @stopping and orders the writes of RP_HEAD (thread) and
	 * of RP_CTRL = 0 (remove, wedged): HEAD is written only while the
	 * ring is enabled (else the card counts BAD_COMMAND).
	 */
	spinlock_t ring_lock;
	bool stopping;			/* remove(): serve nothing more */
	bool wedged;			/* the proxy channel ignored ABORT */
	bool broken;			/* TAIL made no sense: ring off */

	/*
	 * Replies: one chain of host descriptors for up to PEACH2_RP_BUDGET
	 * decided requests, then a completion record staging area (32 bytes,
	 * 32-byte aligned) per request of the batch. @replies holds what was
	 * decided (rproxy.c); a reply keeps its buffer reference until it is
	 * answered, or until remove() if the channel wedged.
	 */
	struct peach2_desc_le *descs;
	u32 max_descs;
	void *cpls;
	dma_addr_t descs_dma, cpls_dma;
	size_t reply_mem_size;
	struct peach2_rp_reply *replies;
	struct peach2_rp_piece *reply_pieces;	/* the replies' pieces */
	struct completion dma_done;	/* vector PEACH2_INT_VECTOR_DMA(4) */

	int irq;			/* vector PEACH2_INT_VECTOR_RP, or 0 */
	int dma_irq;			/* vector of the proxy channel, or 0 */
	char irq_name[32];
	char dma_irq_name[32];

	struct peach2_rp_stats stats;
};

struct peach2_dev {
	struct device dev;		/* class device; owns the refcount */
	struct cdev cdev;
	struct pci_dev *pdev;		/* pci_dev_get()'d until release */
	void __iomem *regs;		/* BAR0; valid while !dead */
	void __iomem *cardmem;		/* BAR2: descriptor RAM, mailbox */
	/* INT_MASK as last written (hw.c); frozen once teardown masked all. */
	spinlock_t int_mask_lock;
	u32 int_mask;
	bool int_mask_frozen;
	int minor;
	int irq;			/* vector 0 */

	/*
	 * Protects @dead. Faults, ioctls that touch the hardware or allocate
	 * DMA memory hold it for reading; remove() takes it for writing to
	 * set @dead, then zaps every mapping of @inode. Never held across
	 * copy_{to,from}_user (a fault on one of our own mappings would nest
	 * a read lock under a waiting writer).
	 */
	struct rw_semaphore lock;
	bool dead;

	/* Serialises the IN_BASE/IN_SIZE/IN_CMD register sequence. */
	struct mutex in_lock;
	/* Serialises firmware loads (FW_* registers). */
	struct mutex fw_lock;

	/*
	 * All files of this card use @inode's address_space as f_mapping,
	 * whichever device node they were opened through, so that one
	 * unmap_mapping_range() reaches every mapping.
	 */
	struct inode *inode;

	/* Read once at probe (read-only registers). */
	u32 node_id;
	u32 node_count;
	u32 hw_version;
	u32 caps;
	u64 host_size;			/* 1 << REG_HOST_SHIFT */
	u64 max_alloc;			/* effective, page aligned */
	phys_addr_t window_phys;	/* BAR4: never ioremapped */
	u64 window_size;
	phys_addr_t mbox_phys;		/* BAR2 + PEACH2_MAILBOX_OFF */

	wait_queue_head_t mbox_wq;	/* woken on PEACH2_INT_MAILBOX */
	atomic_t mbox_events;
	u32 link_seen[PEACH2_NR_PORTS];	/* LINK_x last logged (irq only) */

	/* What each user holds (limits.c), under @acct_lock. */
	spinlock_t acct_lock;
	struct list_head accts;		/* struct peach2_acct */

	/* DMA (dma.c). */
	struct peach2_dma_chan dma[PEACH2_DMA_CHANNELS];
	struct mutex desc_lock;		/* protects desc_map, desc_used */
	DECLARE_BITMAP(desc_map, PEACH2_DESC_MAX); /* on-card slots in use */
	unsigned int desc_used;
	/* Page-sized host descriptor arrays kept for reuse (dma.c). */
	spinlock_t desc_pages_lock;
	unsigned int nr_desc_pages;
	struct peach2_desc_page {
		void *cpu;
		dma_addr_t dma;
	} desc_pages[PEACH2_DESC_PAGES_KEPT];

	struct peach2_rp rp;
	struct peach2_names names;
};

static inline struct peach2_dev *to_peach2_dev(struct device *dev)
{
	return container_of(dev, struct peach2_dev, dev);
}

/* Per open file. */
struct peach2_file {
	struct kref ref;
	struct peach2_dev *p2;		/* holds a reference on p2->dev */
	struct xarray bufs;		/* handle -> struct peach2_buf */
	u32 next_handle;		/* for xa_alloc_cyclic() */
	atomic64_t bytes;		/* live buffers allocated through us */

	/*
	 * DMA (dma.c). The lock of @chains protects the chains' busy/orphan
	 * flags; @tickets_lock protects @tickets and the fields up to
	 * @closing. @tickets is a hash table, not an xarray: indexed by the
	 * ever-growing ticket, an xarray holding one run at a time allocated
	 * three nodes at each start and freed them through RCU at each claim.
	 */
	struct xarray chains;		/* chain id -> struct peach2_chain */
	u32 next_chain;
	spinlock_t tickets_lock;
	DECLARE_HASHTABLE(tickets, 8);	/* ticket -> run, entered, not claimed */
	u64 last_ticket;
	struct list_head done;		/* completed, not waited; oldest first */
	unsigned int nr_done;
	unsigned int nr_running;	/* started, not completed */
	bool closing;			/* release() has begun */
	atomic_t dma_descs;		/* descriptors held by chains and runs */
	wait_queue_head_t dma_wq;	/* woken when a run of ours completes */

	/* Read proxy (rproxy.c): this file's exports, under @exp_lock. */
	struct mutex exp_lock;
	struct list_head exports;	/* struct peach2_exp */
	unsigned int nr_exports;

	/* Names (names.c): this file's, under @names_lock. */
	u64 serial;			/* node-wide: the names' owner */
	struct mutex names_lock;
	struct list_head names;		/* struct peach2_name */
	unsigned int nr_names;
};

/* One coherent allocation. */
struct peach2_mem {
	void *cpu;
	dma_addr_t dma;
	u64 offset;			/* inside the buffer */
	size_t len;
	bool registered;		/* with the card's inbound filter */
};

struct peach2_buf {
	struct kref ref;
	struct peach2_file *ctx;	/* holds a reference on ctx */
	u64 size;			/* page aligned */
	u64 mmap_offset;
	u32 handle;
	u32 nr_chunks;
	struct peach2_mem *chunks;	/* sorted by offset, contiguous */

	struct peach2_pinned *pin;		/* PEACH2_IOC_PIN: the caller's pages */
	bool remote_write;		/* named PEACH2_NAME_WRITE: quarantine */
	struct list_head q_node;	/* peach2_names.quarantine */
	unsigned long q_until;		/* jiffies */
	/* Charged to (limits.c), from creation to release: */
	struct peach2_acct *acct;	/* the creating user */
	struct mm_struct *mm;		/* the creating process, mmgrab()ed */
	unsigned long locked;		/* pages counted in mm's pinned_vm */
};

/* A user's buffers and filter ranges on one card (limits.c). */
struct peach2_acct {
	struct list_head node;		/* in p2->accts */
	kuid_t uid;
	refcount_t ref;			/* buffers charged to it */
	atomic64_t bytes;
	atomic64_t q_bytes;		/* of @bytes: in quarantine (pin.c) */
	atomic_t ranges;
};

/* hw.c: register helpers; main.c exports nothing */
u64 peach2_read64(struct peach2_dev *p2, u32 reg);
void peach2_int_mask_set(struct peach2_dev *p2, u32 bits, bool masked);
void peach2_int_mask_all(struct peach2_dev *p2);
int peach2_inbound(struct peach2_dev *p2, u32 cmd, u64 base, u64 size);
char peach2_port_name(u32 port);
int peach2_format_link(u32 link, char *buf, size_t size);

/*
 * A descriptor's len and burst | gap << 16 as one 8-byte word: the layout
 * of both descriptor RAM (len, burst, gap) and the channel's LEN, BLOCK
 * registers, written with one access.
 */
static inline u64 peach2_desc_len_block(const struct peach2_desc *d)
{
	return (u64)(d->burst | (u32)d->gap << 16) << 32 | d->len;
}

/* dmac.c: a DMA channel's registers (channels 0..3 and the proxy's 4) */
void peach2_dmac_start_chain(struct peach2_dev *p2, unsigned int ch, u64 head);
void peach2_dmac_start_reg(struct peach2_dev *p2, unsigned int ch,
			   const struct peach2_desc *d);
u32 peach2_dmac_status(struct peach2_dev *p2, unsigned int ch);
bool peach2_dmac_abort(struct peach2_dev *p2, unsigned int ch);
void peach2_dmac_ack(struct peach2_dev *p2, unsigned int ch);
u64 peach2_dmac_bytes(struct peach2_dev *p2, unsigned int ch);
u32 peach2_dmac_descs(struct peach2_dev *p2, unsigned int ch);

/*
 * The outcome in a channel's STATUS @st once it has ended: 0 (DONE), or the
 * card's peach2_err (ERROR without a code counts as DMA_ABORTED).
 */
static inline u32 peach2_dmac_code(u32 st)
{
	u32 code;

	if (!(st & PEACH2_DMA_ST_ERROR))
		return 0;
	code = (st & PEACH2_DMA_ST_CODE) >> PEACH2_DMA_ST_CODE_SHIFT;
	return code ? code : PEACH2_ERR_DMA_ABORTED;
}

/* chardev.c */
extern const struct file_operations peach2_fops;

/* limits.c */
void peach2_limits_init(void);
void peach2_acct_init(struct peach2_dev *p2);
int peach2_charge_user(struct peach2_buf *buf, bool wait);
int peach2_charge_buf(struct peach2_buf *buf, bool wait);
void peach2_uncharge_buf(struct peach2_buf *buf);
int peach2_charge_range(struct peach2_buf *buf);
void peach2_uncharge_range(struct peach2_buf *buf);
int peach2_users_show(struct peach2_dev *p2, char *buf);

/* buf.c */
extern unsigned long long peach2_max_alloc_per_fd;
struct peach2_buf *peach2_buf_create(struct peach2_file *ctx, u64 size, bool wait);
struct peach2_buf *peach2_buf_lookup(struct peach2_file *ctx, u32 handle);
void peach2_buf_put(struct peach2_buf *buf);
const struct peach2_mem *peach2_buf_chunk(const struct peach2_buf *buf,
					  u64 offset);

/*
 * [off, off + len) inside [0, size)? (overflow-safe; inline: a DMA start
 * asks it twice per transfer)
 */
static inline bool peach2_range_ok(u64 size, u64 off, u64 len)
{
	u64 end;

	return !check_add_overflow(off, len, &end) && end <= size;
}

bool peach2_one_chunk(const struct peach2_buf *buf, u64 off, u64 len);
u64 peach2_buf_global_addr(const struct peach2_buf *buf,
			   const struct peach2_mem *mem);
unsigned long peach2_buf_pfn(const struct peach2_buf *buf, u64 offset);
void peach2_file_put(struct peach2_file *ctx);
void peach2_buf_free_chunks(struct peach2_buf *buf);
void peach2_buf_destroy(struct peach2_buf *buf);

/* pin.c */
extern unsigned int peach2_name_quarantine_ms;
void peach2_pin_init(struct peach2_dev *p2);
void peach2_pin_remove(struct peach2_dev *p2);
long peach2_ioctl_pin(struct peach2_file *ctx, void __user *argp);
void peach2_buf_retire(struct peach2_buf *buf);
void peach2_pin_free(struct peach2_buf *buf);

/* names.c */
extern unsigned int peach2_name_lease_ms;
int peach2_names_probe(struct peach2_dev *p2);
void peach2_names_remove(struct peach2_dev *p2);
void peach2_names_file_init(struct peach2_file *ctx);
void peach2_names_file_release(struct peach2_file *ctx);
void peach2_names_revoke_buf(struct peach2_file *ctx, struct peach2_buf *buf);
long peach2_ioctl_publish(struct peach2_file *ctx, void __user *argp);
long peach2_ioctl_unpublish(struct peach2_file *ctx, void __user *argp);
u32 peach2_names_lookup(struct peach2_dev *p2, u32 kind, u32 name, u64 offset,
			u32 len, bool *known);
int peach2_names_show(struct peach2_dev *p2, char *buf);

/* dma.c */
extern unsigned int peach2_dma_timeout_ms;
void peach2_dma_init(struct peach2_dev *p2);
void peach2_dma_release(struct peach2_dev *p2);
int peach2_dma_setup_irqs(struct peach2_dev *p2);
void peach2_dma_shutdown(struct peach2_dev *p2);
void peach2_dma_file_init(struct peach2_file *ctx);
void peach2_dma_file_release(struct peach2_file *ctx);
long peach2_ioctl_chain_create(struct peach2_file *ctx, void __user *argp);
long peach2_ioctl_chain_destroy(struct peach2_file *ctx, void __user *argp);
long peach2_ioctl_dma_start(struct peach2_file *ctx, void __user *argp);
long peach2_ioctl_dma_wait(struct peach2_file *ctx, void __user *argp);
__poll_t peach2_dma_poll(struct file *filp, struct poll_table_struct *wait);
int peach2_dma_show(struct peach2_dev *p2, char *buf);

/* rproxy.c */
void peach2_rp_init(struct peach2_dev *p2);
void peach2_rp_release(struct peach2_dev *p2);
int peach2_rp_probe(struct peach2_dev *p2);
void peach2_rp_enable(struct peach2_dev *p2);
void peach2_rp_remove(struct peach2_dev *p2);
u32 peach2_rp_int_mask(struct peach2_dev *p2);
void peach2_rp_file_init(struct peach2_file *ctx);
void peach2_rp_file_release(struct peach2_file *ctx);
void peach2_rp_revoke_buf(struct peach2_file *ctx, struct peach2_buf *buf);
long peach2_ioctl_export(struct peach2_file *ctx, void __user *argp);
long peach2_ioctl_unexport(struct peach2_file *ctx, void __user *argp);
long peach2_ioctl_rp_submit(struct peach2_file *ctx, void __user *argp);
int peach2_rp_show(struct peach2_dev *p2, char *buf);
int peach2_rp_export_buf(struct peach2_file *ctx, struct peach2_buf *buf, u64 offset,
			 u64 len, u32 flags, u32 *id, u32 *key);
void peach2_rp_unexport_id(struct peach2_file *ctx, u32 id);

/* firmware.c */
int peach2_fw_load(struct peach2_dev *p2, const char *name);
void peach2_fw_probe(struct peach2_dev *p2);
void peach2_fw_topology(struct peach2_dev *p2, char *out, size_t size);

/* sysfs.c */
extern const struct attribute_group *peach2_groups[];

#endif /* PEACH2_DRV_H */
