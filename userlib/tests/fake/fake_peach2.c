/* SPDX-License-Identifier: MIT */
/*
 * Test-only LD_PRELOAD stand-in for the PEACH2 driver, so the programs can
 * run end to end on a host without the card: one process per node, all
 * memory in shared files under $TCA_FAKE_DIR.
 *
 *   mem<n>   node n's "host memory" (TCA_FAKE_MEM bytes); tcaMalloc memory
 *            comes from here, in pieces of $TCA_FAKE_CHUNK bytes with a gap
 *            page between pieces (so buffers really are multi-chunk)
 *   mbox<n>  node n's 32 KiB mailbox
 *
 * The window mapping is a PROT_NONE reservation in which slice n's host
 * region maps mem<n> and its card region maps mbox<n>, so a store to global
 * address A lands where the card would deliver it. What it cannot model:
 * error counters (a store to a missing node faults), write-only-ness,
 * MMIO access widths and link latency. DMA (fake_dma.c) copies at once,
 * inside the ioctl; the read proxy (fake_rp.c) answers requests inside the
 * ioctl too. Environment: TCA_FAKE_DIR,
 * TCA_FAKE_NODE, TCA_FAKE_NODES, TCA_FAKE_CHUNK (default 65536; read at
 * every allocation),
 * TCA_DEVICE (the path that is faked).
 */
#define _GNU_SOURCE
#include <peach2/peach2_hw.h>
#include <peach2/peach2_uapi.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fake_peach2.h"

static int fake_fd = -1;
uint32_t node_id, node_count;
static uint64_t chunk_size = 65536, next_free = 1ull << 20;
struct fake_alloc allocs[MAX_ALLOCS];
uint32_t nr_allocs;
unsigned char *fake_window;

/* The real mmap, bypassing this file's interposer. MAP_FAILED and errno
 * on failure, like mmap(). */
static void *raw_mmap(void *a, size_t l, int p, int f, int fd, off_t o)
{
	long r = syscall(SYS_mmap, a, l, p, f, fd, o);
	return r == -1 ? MAP_FAILED : (void *)r;
}

static int open_shared(const char *kind, uint32_t n, uint64_t size)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s%u", getenv("TCA_FAKE_DIR"), kind, n);
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0 && ftruncate(fd, (off_t)size) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

void *fake_shared_table(const char *kind, uint32_t node, uint64_t size)
{
	int fd = open_shared(kind, node, size);
	if (fd < 0)
		return NULL;
	void *p = raw_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

int fake_alive(int32_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

static int is_fake_path(const char *path)
{
	const char *dev = getenv("TCA_DEVICE");
	return getenv("TCA_FAKE_DIR") && dev && path && strcmp(path, dev) == 0;
}

static int fake_open(void)
{
	node_id = (uint32_t)atoi(getenv("TCA_FAKE_NODE") ? getenv("TCA_FAKE_NODE") : "0");
	node_count = (uint32_t)atoi(getenv("TCA_FAKE_NODES") ? getenv("TCA_FAKE_NODES") : "2");
	if (getenv("TCA_FAKE_CHUNK"))
		chunk_size = strtoull(getenv("TCA_FAKE_CHUNK"), NULL, 0);
	fake_fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC);
	return fake_fd;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = (mode_t)va_arg(ap, int);
	va_end(ap);
	if (is_fake_path(path))
		return fake_open();
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}
int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int close(int fd)
{
	if (fd == fake_fd && fd >= 0) {
		fake_rp_revoke(0); /* like the driver: exports and names end with the file */
		fake_names_revoke(0);
		fake_fd = -1;
	}
	return (int)syscall(SYS_close, fd);
}

int fake_mem_fd(void)
{
	return open_shared("mem", node_id, FAKE_MEM);
}

int fake_reserve(uint64_t size, struct fake_alloc **out)
{
	if (nr_allocs == MAX_ALLOCS || size == 0)
		return -ENOMEM;
	struct fake_alloc *f = &allocs[nr_allocs];
	memset(f, 0, sizeof *f);
	if (getenv("TCA_FAKE_CHUNK")) /* read per buffer: tests vary it */
		chunk_size = strtoull(getenv("TCA_FAKE_CHUNK"), NULL, 0);
	f->size = (size + 4095) & ~4095ull;
	for (uint64_t off = 0; off < f->size; off += chunk_size) {
		uint64_t len = f->size - off < chunk_size ? f->size - off : chunk_size;
		if (f->nr == MAX_PIECES || next_free + len > FAKE_MEM)
			return -ENOMEM;
		f->chunk[f->nr].offset = off;
		f->chunk[f->nr].len = len;
		f->chunk[f->nr].global_addr = PEACH2_NODE_BASE(node_id) + next_free;
		f->nr++;
		next_free += len + 4096; /* gap: pieces are never adjacent */
	}
	f->handle = ++nr_allocs;
	*out = f;
	return 0;
}

void fake_env_delay(const char *var)
{
	const char *ms = getenv(var);
	if (ms)
		usleep((useconds_t)strtoul(ms, NULL, 0) * 1000);
}

static long nowait_refusals;

/* Test control: how many PEACH2_ALLOC_NOWAIT allocations were refused. */
long fake_nowait_refusals(void)
{
	return __atomic_load_n(&nowait_refusals, __ATOMIC_RELAXED);
}

static int do_alloc(struct peach2_alloc *a)
{
	/* The delay stands for the driver's wait for quarantined memory, which
	 * PEACH2_ALLOC_NOWAIT refuses instead. */
	const char *delay = getenv("TCA_FAKE_ALLOC_DELAY_MS");
	const unsigned long delay_ms = delay ? strtoul(delay, NULL, 0) : 0;
	if ((a->flags & PEACH2_ALLOC_NOWAIT) && delay_ms) {
		__atomic_add_fetch(&nowait_refusals, 1, __ATOMIC_RELAXED);
		return -EDQUOT;
	}
	usleep((useconds_t)delay_ms * 1000);
	struct fake_alloc *f;
	int rc = fake_reserve(a->size, &f);
	if (rc)
		return rc;
	a->handle = f->handle;
	a->size = f->size; /* like the driver: rounded up to pages */
	a->mmap_offset = PEACH2_MMAP_BUF_BASE + ((uint64_t)f->handle << 32);
	a->bus_addr = PEACH2_ADDR_OFFSET(f->chunk[0].global_addr);
	a->global_addr = f->chunk[0].global_addr;
	a->nr_chunks = f->nr;
	return 0;
}

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (fd != fake_fd || fd < 0)
		return (int)syscall(SYS_ioctl, fd, req, arg);
	int rc = 0;
	if (req == PEACH2_IOC_INFO) {
		struct peach2_info *i = arg;
		memset(i, 0, sizeof *i);
		i->abi_version = PEACH2_ABI_VERSION;
		i->node_id = node_id;
		i->node_count = node_count;
		i->hw_version = PEACH2_VERSION_MAJOR << 16;
		i->window_size = PEACH2_WINDOW_SIZE;
		i->slice_size = PEACH2_SLICE_SIZE;
		i->host_size = FAKE_MEM;
		i->max_alloc = 32ull << 20;
		i->max_chunk = chunk_size;
		/* Cabled as a ring (E to the next node): links are up. */
		if (node_count > 1)
			i->link[0] = PEACH2_LINK_UP | PEACH2_LINK_CONNECTED |
				     ((node_id + 1) % node_count) << 16;
	} else if (req == PEACH2_IOC_ALLOC) {
		rc = do_alloc(arg);
	} else if (req == PEACH2_IOC_CHUNKS) {
		struct peach2_chunks *c = arg;
		if (c->handle == 0 || c->handle > nr_allocs)
			rc = -EINVAL;
		else {
			struct fake_alloc *f = &allocs[c->handle - 1];
			for (uint32_t k = 0; k < c->count && c->first + k < f->nr; ++k)
				((struct peach2_chunk *)(uintptr_t)c->chunks)[k] = f->chunk[c->first + k];
			c->nr_chunks = f->nr;
		}
	} else if (req == PEACH2_IOC_FREE) {
		/* memory is not reused: a late write stays harmless */
		fake_rp_revoke(((struct peach2_free *)arg)->handle);
		fake_names_revoke(((struct peach2_free *)arg)->handle);
	} else if (fake_is_names_ioctl(req)) {
		rc = fake_names_ioctl(req, arg);
	} else if (fake_is_rp_ioctl(req)) {
		rc = fake_rp_ioctl(req, arg);
	} else if (fake_is_dma_ioctl(req)) {
		rc = fake_dma_ioctl(req, arg);
	} else {
		rc = -ENOTTY;
	}
	if (rc) {
		errno = -rc;
		return -1;
	}
	return 0;
}

static void *fail(int e)
{
	errno = e;
	return MAP_FAILED;
}

static void *map_window(size_t len)
{
	char *base = raw_mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return MAP_FAILED;
	for (uint32_t n = 0; n < node_count; ++n) {
		int mem = open_shared("mem", n, FAKE_MEM), mbox = open_shared("mbox", n, PEACH2_MAILBOX_SIZE);
		if (mem < 0 || mbox < 0)
			return fail(EIO);
		char *slice = base + PEACH2_NODE_BASE(n);
		raw_mmap(slice, FAKE_MEM, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, mem, 0);
		raw_mmap(slice + PEACH2_CARD_OFF, PEACH2_MAILBOX_SIZE, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, mbox, 0);
		close(mem);
		close(mbox);
	}
	return base;
}

static void *map_buffer(size_t len, off_t off)
{
	uint32_t h = (uint32_t)(((uint64_t)off - PEACH2_MMAP_BUF_BASE) >> 32);
	if (h == 0 || h > nr_allocs || len > allocs[h - 1].size || allocs[h - 1].pinned)
		return fail(EINVAL);
	struct fake_alloc *f = &allocs[h - 1];
	int mem = open_shared("mem", node_id, FAKE_MEM);
	char *base = raw_mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem < 0 || base == MAP_FAILED)
		return fail(EIO);
	for (uint32_t k = 0; k < f->nr && f->chunk[k].offset < len; ++k)
		raw_mmap(base + f->chunk[k].offset, f->chunk[k].len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, mem, (off_t)PEACH2_ADDR_OFFSET(f->chunk[k].global_addr));
	close(mem);
	return base;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (fd != fake_fd || fd < 0)
		return raw_mmap(addr, len, prot, flags, fd, off);
	if (off == 0) {
		if (prot & PROT_READ)
			return fail(EACCES); /* like the driver: window is write-only */
		void *w = map_window(len);
		if (w != MAP_FAILED)
			fake_window = w; /* the fake DMA engine copies through it */
		return w;
	}
	if ((uint64_t)off == PEACH2_MMAP_CARDMEM) {
		int mbox = open_shared("mbox", node_id, PEACH2_MAILBOX_SIZE);
		void *r = raw_mmap(NULL, len, PROT_READ, MAP_SHARED, mbox, 0);
		close(mbox);
		return r;
	}
	return map_buffer(len, off);
}
void *mmap64(void *, size_t, int, int, int, off_t) __attribute__((alias("mmap")));
