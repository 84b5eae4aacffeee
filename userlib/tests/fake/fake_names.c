/* SPDX-License-Identifier: MIT */
/*
 * The fake driver's memory registration and names (PIN, PUBLISH,
 * UNPUBLISH, and the read proxy's LOOKUP).
 *
 * PIN: the fake's "host memory" is a shared file per node that every
 * process maps at the node's slice of the window. To make the caller's own
 * pages reachable there, PIN moves them into that file: it copies each
 * page range into fresh pieces of mem<node> and mremap()s those pieces over
 * the caller's addresses, so the program keeps its pointers and contents
 * while remote stores and DMA now land in its memory. Whole pages move, and
 * the rest of a page is often other heap objects that other threads write
 * all the time (the Verbs engine's mutex beside a 64-byte buffer): so the
 * pages are made read-only before the copy, and a thread that writes them
 * meanwhile takes a SIGSEGV that waits for the move and retries the store
 * on the new page (pin_fault). Limits (test-only): the range must be
 * mapped; it must not hold the calling thread's stack (EFAULT: the copy
 * would miss the writes of the call itself) nor another thread's; a system
 * call that writes the range during the move fails with EFAULT; a
 * process-shared futex in it loses its waiters; nothing is ever given back
 * (FREE leaves the pages where they are). A PIN of exactly the pages of an
 * earlier PIN that are still in place (the same range registered twice)
 * shares them, as the driver pins the same physical pages twice; a PIN
 * that only overlaps earlier pinned pages moves them again (the earlier
 * registration no longer sees the process's writes: do not test that).
 * $TCA_FAKE_PIN_DELAY_MS makes every PIN wait that long first, as the
 * driver may for quarantined memory.
 *
 * Names live in a shared file per node ($TCA_FAKE_DIR/names<n>), so that
 * another process (node) can answer a LOOKUP against them: as for the read
 * proxy, the *requester's* fake answers inside its RP_SUBMIT. A name counts
 * while its publisher (pid) is alive; owner is the publisher's pid.
 */
#define _GNU_SOURCE
#include "fake_peach2.h"

#include <peach2/peach2_hw.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FAKE_NAMES 128
#define FAKE_LEASE_MS 1000

struct fake_name {
	uint32_t name;          /* 0: free; written last */
	uint32_t kind;
	uint32_t flags;
	uint32_t group;
	int32_t pid;            /* publisher */
	uint32_t buf;           /* its buffer handle */
	uint64_t offset, len;   /* published range of the buffer */
	uint32_t export_id, key;
	uint32_t nr;            /* chunks of the buffer */
	uint8_t info[PEACH2_NAME_INFO];
	struct peach2_chunk chunk[MAX_PIECES];
};

struct fake_name_table {
	uint32_t next_qp;
	uint32_t next_key;
	struct fake_name e[FAKE_NAMES];
};

static struct fake_name_table *tables[PEACH2_MAX_NODES];

static struct fake_name_table *table(uint32_t node)
{
	if (node >= PEACH2_MAX_NODES)
		return NULL;
	if (!tables[node])
		tables[node] = fake_shared_table("names", node, sizeof(struct fake_name_table));
	return tables[node];
}

/* ---- PIN ---------------------------------------------------------------- */

/* The move under way (one at a time: pin_lock): its pages, and whether it
 * is still copying. A fault there waits until it is done, once per move and
 * thread (a second fault on the moved page is the program's own). */
static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t pin_first, pin_last;
static unsigned pin_moving, pin_seq;
static __thread unsigned pin_waited_seq __attribute__((tls_model("initial-exec")));
static struct sigaction pin_next; /* the handler we stand in front of */

static void pin_fault(int sig, siginfo_t *si, void *uc)
{
	const uintptr_t a = (uintptr_t)si->si_addr;
	const unsigned seq = __atomic_load_n(&pin_seq, __ATOMIC_ACQUIRE);
	if (a >= pin_first && a < pin_last && pin_waited_seq != seq) {
		while (__atomic_load_n(&pin_moving, __ATOMIC_ACQUIRE))
			sched_yield();
		pin_waited_seq = seq;
		return; /* the store runs again, on the moved page */
	}
	if (pin_next.sa_flags & SA_SIGINFO) {
		pin_next.sa_sigaction(sig, si, uc);
	} else if (pin_next.sa_handler != SIG_DFL && pin_next.sa_handler != SIG_IGN) {
		pin_next.sa_handler(sig);
	} else {
		signal(sig, SIG_DFL); /* the fault happens again and ends the process */
	}
}

/* Our handler in front of the program's, from the first PIN on (it stays:
 * a fault may be delivered after the move it belongs to). */
static void pin_catch_faults(void)
{
	struct sigaction now;
	if (sigaction(SIGSEGV, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
	    now.sa_sigaction == pin_fault)
		return;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = pin_fault;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &pin_next);
}

/* Copies [at, at + len) into @fresh and puts @fresh in its place, with no
 * write of another thread lost in between: 0 or -errno. */
static int pin_move(void *fresh, void *at, uint64_t len)
{
	pin_first = (uintptr_t)at;
	pin_last = (uintptr_t)at + len;
	__atomic_store_n(&pin_moving, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&pin_seq, 1, __ATOMIC_RELEASE);
	int rc = 0;
	if (mprotect(at, len, PROT_READ) != 0) {
		rc = -EFAULT;
	} else {
		memcpy(fresh, at, len);
		if (mremap(fresh, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, at) == MAP_FAILED) {
			mprotect(at, len, PROT_READ | PROT_WRITE);
			rc = -EFAULT;
		}
	}
	__atomic_store_n(&pin_moving, 0, __ATOMIC_RELEASE);
	return rc;
}

/* Is [at, at + len) still mapped from this node's mem file @mem at
 * @file_off (moved there by a PIN, not unmapped or replaced since)? The
 * file is known by its device and inode, as /proc/self/maps gives them. */
static int still_in_mem(const struct stat *mem, uint64_t at, uint64_t len, uint64_t file_off)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[4400];
	int found = 0;
	while (maps && fgets(line, sizeof line, maps)) {
		unsigned long lo, hi, off, ino;
		unsigned int maj, min;
		if (sscanf(line, "%lx-%lx %*s %lx %x:%x %lu", &lo, &hi, &off, &maj, &min, &ino) != 6)
			continue;
		if (at < lo || at >= hi)
			continue;
		found = at + len <= hi && ino == mem->st_ino && makedev(maj, min) == mem->st_dev &&
			off + (at - lo) == file_off;
		break;
	}
	if (maps)
		fclose(maps);
	return found;
}

/* A PIN of exactly the pages an earlier PIN moved, still in place: a new
 * buffer on the same pieces of mem<node> (NULL if there is none). */
static struct fake_alloc *pinned_again(uint64_t first, uint64_t size)
{
	struct stat mem;
	const int fd = fake_mem_fd();
	if (fd < 0)
		return NULL;
	const int known = fstat(fd, &mem) == 0;
	close(fd);
	for (uint32_t i = 0; known && i < nr_allocs && nr_allocs < MAX_ALLOCS; ++i) {
		const struct fake_alloc *e = &allocs[i];
		if (!e->pinned || e->pinned_at != first || e->size != size)
			continue;
		int in_place = 1;
		for (uint32_t k = 0; k < e->nr && in_place; ++k)
			in_place = still_in_mem(&mem, first + e->chunk[k].offset, e->chunk[k].len,
						PEACH2_ADDR_OFFSET(e->chunk[k].global_addr));
		if (!in_place)
			continue;
		struct fake_alloc *f = &allocs[nr_allocs];
		*f = *e;
		f->handle = ++nr_allocs;
		return f;
	}
	return NULL;
}

/* A new buffer of fresh pieces of mem<node>, with the pages of [first,
 * first + size) moved into them: 0 or -errno. */
static int pin_pages(uint64_t first, uint64_t size, struct fake_alloc **out)
{
	struct fake_alloc *f;
	int rc = fake_reserve(size, &f);
	if (rc)
		return rc;
	f->pinned = 1;
	f->pinned_at = first;
	int mem = fake_mem_fd();
	if (mem < 0)
		return -EIO;
	pthread_mutex_lock(&pin_lock);
	pin_catch_faults();
	for (uint32_t k = 0; k < f->nr && !rc; ++k) {
		const struct peach2_chunk *c = &f->chunk[k];
		void *fresh = (void *)syscall(SYS_mmap, NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED,
					      mem, (off_t)PEACH2_ADDR_OFFSET(c->global_addr));
		if (fresh == MAP_FAILED)
			rc = -ENOMEM;
		else
			rc = pin_move(fresh, (void *)(uintptr_t)(first + c->offset), c->len);
	}
	pthread_mutex_unlock(&pin_lock);
	close(mem);
	*out = f;
	return rc;
}

static int do_pin(struct peach2_pin *p)
{
	const uint64_t page = 4096;
	if (p->flags || p->pad0 || p->reserved[0] || p->reserved[1] || !p->len)
		return -EINVAL;
	uint64_t end;
	if (__builtin_add_overflow(p->addr, p->len, &end))
		return -EINVAL;
	const uint64_t first = p->addr & ~(page - 1), last = (end + page - 1) & ~(page - 1);
	const uint64_t size = last - first;
	int here;
	const uint64_t sp = (uint64_t)(uintptr_t)&here;
	if (sp + 65536 > first && sp < last + 65536)
		return -EFAULT; /* see the top of this file */
	unsigned char vec;
	for (uint64_t a = first; a < last; a += page)
		if (mincore((void *)(uintptr_t)a, page, &vec) != 0)
			return -EFAULT;
	fake_env_delay("TCA_FAKE_PIN_DELAY_MS");
	struct fake_alloc *f = pinned_again(first, size);
	if (!f) {
		int rc = pin_pages(first, size, &f);
		if (rc)
			return rc;
	}
	p->handle = f->handle;
	p->offset = p->addr - first;
	p->size = size;
	p->nr_chunks = f->nr;
	return 0;
}

/* ---- names -------------------------------------------------------------- */

static int do_publish(struct peach2_publish *r)
{
	struct fake_name_table *t = table(node_id);
	if (!t)
		return -EIO;
	if (r->pad0 || r->reserved[0] || r->reserved[1] || (r->flags & ~PEACH2_NAME_FLAGS_ALL) ||
	    (r->kind != PEACH2_NAME_QP && r->kind != PEACH2_NAME_KEY))
		return -EINVAL;
	if (!r->handle || r->handle > nr_allocs)
		return -ENOENT;
	const struct fake_alloc *a = &allocs[r->handle - 1];
	uint64_t end;
	if (!r->len || __builtin_add_overflow(r->offset, r->len, &end) || end > a->size)
		return -EINVAL;
	uint32_t export_id = 0, key = 0;
	const uint32_t xflags = ((r->flags & PEACH2_NAME_READ) ? PEACH2_EXPORT_READ : 0) |
				((r->flags & PEACH2_NAME_ATOMIC) ? PEACH2_EXPORT_ATOMIC : 0);
	if (xflags) {
		int rc = fake_rp_export(r->handle, xflags, r->offset, r->len, &export_id, &key);
		if (rc)
			return rc;
	}
	for (unsigned i = 0; i < FAKE_NAMES; ++i) {
		struct fake_name *e = &t->e[i];
		if (e->name && fake_alive(e->pid))
			continue;
		memset(e, 0, sizeof *e);
		e->kind = r->kind;
		e->flags = r->flags;
		e->group = r->group;
		e->pid = getpid();
		e->buf = r->handle;
		e->offset = r->offset;
		e->len = r->len;
		e->export_id = export_id;
		e->key = key;
		e->nr = a->nr;
		memcpy(e->info, r->info, sizeof e->info);
		memcpy(e->chunk, a->chunk, a->nr * sizeof a->chunk[0]);
		uint32_t name;
		if (r->kind == PEACH2_NAME_QP)
			name = 0x100 + __atomic_fetch_add(&t->next_qp, 1, __ATOMIC_SEQ_CST) % 0xfffe00;
		else
			name = (1 + __atomic_fetch_add(&t->next_key, 1, __ATOMIC_SEQ_CST) % 0xfffffe) << 8 |
			       ((uint32_t)random() & 0xff);
		__atomic_store_n(&e->name, name, __ATOMIC_RELEASE);
		r->name = name;
		r->export_id = export_id;
		r->key = key;
		return 0;
	}
	return -ENOSPC;
}

static int do_unpublish(const struct peach2_unpublish *u)
{
	struct fake_name_table *t = table(node_id);
	for (unsigned i = 0; t && i < FAKE_NAMES; ++i) {
		struct fake_name *e = &t->e[i];
		if (u->name && e->name == u->name && e->kind == u->kind && e->pid == getpid()) {
			__atomic_store_n(&e->name, 0, __ATOMIC_RELEASE);
			return 0;
		}
	}
	return -ENOENT;
}

void fake_names_revoke(uint32_t buf)
{
	struct fake_name_table *t = tables[node_id];
	for (unsigned i = 0; t && i < FAKE_NAMES; ++i)
		if (t->e[i].name && t->e[i].pid == getpid() && (!buf || t->e[i].buf == buf))
			__atomic_store_n(&t->e[i].name, 0, __ATOMIC_RELEASE);
}

uint32_t fake_names_lookup(const struct peach2_rp_submit *s)
{
	struct fake_name_table *t = table(s->node);
	const struct fake_name *e = NULL;
	for (unsigned i = 0; t && i < FAKE_NAMES; ++i)
		if (s->key && __atomic_load_n(&t->e[i].name, __ATOMIC_ACQUIRE) == s->key &&
		    t->e[i].kind == s->export_id && fake_alive(t->e[i].pid))
			e = &t->e[i];
	if (!e)
		return PEACH2_ERR_RP_NOT_EXPORTED;
	if (s->addr >= e->len)
		return PEACH2_ERR_RP_RANGE;
	unsigned char answer[PEACH2_LOOKUP_MAX];
	memset(answer, 0, sizeof answer);
	struct peach2_lookup *l = (struct peach2_lookup *)answer;
	l->kind = e->kind;
	l->name = e->name;
	l->flags = e->flags;
	l->group = e->group;
	l->owner = (uint64_t)e->pid;
	l->len = e->len;
	l->offset = s->addr;
	l->export_id = e->export_id;
	l->key = e->key;
	l->lease_ms = FAKE_LEASE_MS;
	memcpy(l->info, e->info, sizeof l->info);
	const uint32_t room = (s->len - (uint32_t)sizeof *l) / (uint32_t)sizeof(struct peach2_lookup_piece);
	uint64_t pos = e->offset + s->addr, stop = e->offset + e->len;
	while (pos < stop && l->nr_pieces < room) {
		uint64_t left = 0;
		const unsigned char *b = fake_byte_at(e->chunk, e->nr, pos, &left);
		if (!b)
			break;
		uint64_t n = stop - pos < left ? stop - pos : left;
		l->pieces[l->nr_pieces].global_addr = (uint64_t)(b - fake_window);
		l->pieces[l->nr_pieces].len = n;
		l->nr_pieces++;
		pos += n;
	}
	const struct fake_alloc *r = &allocs[s->reply_handle - 1];
	memcpy(fake_byte_at(r->chunk, r->nr, s->reply_offset, NULL), answer, s->len);
	return 0;
}

int fake_is_names_ioctl(unsigned long req)
{
	return req == PEACH2_IOC_PIN || req == PEACH2_IOC_PUBLISH || req == PEACH2_IOC_UNPUBLISH;
}

int fake_names_ioctl(unsigned long req, void *arg)
{
	if (!fake_window)
		return -EIO;
	if (req == PEACH2_IOC_PIN)
		return do_pin(arg);
	if (req == PEACH2_IOC_PUBLISH)
		return do_publish(arg);
	return do_unpublish(arg);
}
