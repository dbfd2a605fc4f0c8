/*
 * Host memory: pinned (ordinary memory here), registered, and mapped
 * (mapped.h).
 */
#include <sys/mman.h>
#include <sys/syscall.h>

#include <linux/futex.h>

#include <dlfcn.h>
#include <execinfo.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "clenv.h"
#include "hooks.h"
#include "io.h"
#include "mapped.h"
#include "log.h"
#include "parse.h"

/*
 * Mapped host memory (CU_MEMHOSTALLOC_DEVICEMAP), which kernels read and
 * write in place (cuDNN keeps a status word so), and managed memory: the
 * GPU is on another machine, so the memory is a device allocation on the
 * server with a host copy here, kept coherent at the points where a
 * program may look: before work that may read it (launches, copies,
 * memsets) the host's changes go to the device; after the host waited
 * for the device (a synchronize, a query that found the work done, a
 * blocking copy) the device's writes are what the host reads.  The host
 * copy is mapped at the device allocation's own address where that
 * address is free here, so that, with unified addressing, the host
 * pointer is the device pointer too, as on a GPU; else
 * cuMemHostGetDevicePointer gives the device's.
 *
 * Memory this library maps (cuMemHostAlloc, cuMemAllocManaged) is
 * tracked by page protection, in blocks of 64 KiB (more for buffers of
 * over 2 GiB, so that a buffer has at most BLK_MAX blocks and the kernel
 * at most that many mappings of it).  It is a memfd mapped twice: the
 * program's view, whose protection tells a block's state, and the
 * library's own view (back), always writable, through which blocks are
 * pushed and fetched.  A block is
 *	clean	PROT_READ: the host's bytes are the device's;
 *	dirty	PROT_READ|PROT_WRITE: the host wrote it (a write to a clean
 *		block faulted, and the handler let it go);
 *	stale	PROT_NONE: the device may have written it since; the
 *		host's first access faults and the block is fetched.
 * Before device work that may read it, only dirty blocks go, coalesced,
 * and turn clean.  After the host waited for work that may have written
 * it (a kernel: the whole buffer; a copy or memset into it: its range,
 * wr), clean blocks turn stale: nothing moves until the host looks.  A
 * blocking copy or memset into it makes its range stale at once too (an
 * asynchronous one waits for the wait, as the host may not look before
 * it anyway).  Copies whose host
 * side is in such a buffer become device-to-device copies (mapped_alias),
 * so that the transport never writes or reads a block that may fault.
 *
 * The SIGSEGV handler (map_fault) runs in the thread that faulted and is
 * async-signal-safe: it finds the block in a table that it reads without
 * a lock (tab, kept alive while tab_readers counts a handler in it),
 * takes the buffer's spin lock (which is only ever held around bit
 * operations and mprotect, by code that cannot fault meanwhile), and
 * either makes a clean block writable and dirty, or, for a stale block,
 * asks the fetch thread through a pipe and sleeps on a futex until it
 * answers.  The fetch thread makes an ordinary remote call under
 * map_lock, writes the block through the back view and makes it clean.
 * The threads: pushes, pulls (the marking of stale blocks), fetches and
 * copies from the host into a buffer hold map_lock, so they never cross;
 * each block's state changes under its buffer's spin lock, so the handler
 * never sees one half changed.  A block is never made writable without
 * being marked dirty, so no write is lost from the tracking; a write that
 * races a push (the block turned clean, the bytes being read) makes it
 * dirty again and goes with the next push.  A host write racing a
 * synchronization in another thread to a block a kernel wrote keeps the
 * host's bytes.  Faults in the client's own I/O thread or the fetch thread
 * cannot be served (they would wait for themselves): they are avoided
 * (mapped_alias) and, should one happen, end the program with a message.
 *
 * Registered memory (cuMemHostRegister with DEVICEMAP) is the program's
 * own memory: its ends need not be page-aligned (protecting the pages
 * would fault on the program's other data beside it), and the program
 * passes it to system calls, which return EFAULT instead of faulting on
 * a protected page.  So it keeps a shadow copy: a push sends it whole
 * where it differs from the shadow, a pull copies it back whole.
 *
 * A stream's or context's synchronization that covers every call that
 * may have written a buffer since the last full pull (pw: their streams)
 * prefetches, beside it, the blocks a copy wrote and those the host
 * touched since the previous one (hot), up to GLEAM_MAPPED_PREFETCH
 * bytes: they stay stale but marked pf, and the host's first touch makes
 * them clean with no fetch.  For a stream's synchronization the
 * prefetch's copies go just ahead of it, in that stream (pull_ahead), so
 * that they follow the stream's work on the GPU.  One that covers only
 * some streams leaves the marks (wall, wr) for the next.  Prefetched
 * blocks that a copy wrote land clean, the device's bytes written
 * through the back view: no protection change and no fault for a decode
 * loop's token read each step (with the asynchronous copy's staleness
 * left to the wait, none at all).  Those only a kernel may have written
 * land stale and marked pf, so that the host's touch (hot) tells whether
 * they are still worth bringing.
 *
 * The device side comes back only if device work that could have
 * written it was sent since it last came back (map_gen).  GLEAM_MAPPED_MAX
 * bounds the bytes of all (64 GiB by default).
 */
#define MAPPED_MAX_DEFAULT	(64ull << 30)
#define BLK_SHIFT		16		/* 64 KiB */
#define BLK_MAX			32768		/* blocks a buffer at most */
#define LBITS			(8 * sizeof(unsigned long))

struct track {
	uintptr_t	 lo, hi;	/* the program's view */
	size_t		 own;		/* of it the program's bytes (the rest
					   rounds it to pages): what moves */
	uint8_t		*back;		/* the library's view */
	unsigned	 shift;		/* a block is 1 << shift bytes */
	size_t		 nblk;
	unsigned long	*dirty, *stale, *wr;	/* bitmaps */
	unsigned long	*pf;		/* stale, but the device's bytes came
					   beside a wait (the prefetch) */
	unsigned long	*hot;		/* the host looked since the last
					   prefetch */
	int		 wall;		/* a kernel may have written it all */
	int		 spin;
};

struct mapped {
	uint8_t		*host, *shadow;
	CUdeviceptr	 dev;
	CUdeviceptr	 dbase;		/* the allocation dev lies in (dev is
					   page-aligned in it), for cuMemFree */
	size_t		 dlen;		/* its size */
	unsigned	 flags;		/* cuMemHostAlloc's or cuMemHostRegister's */
	size_t		 size;
	struct gctx	*ctx;
	struct track	*t;		/* page-tracked: no shadow */
	int		 fixed;		/* host == dev: mmap'd there */
	int		 reg;		/* host is the program's, registered */
	int		 managed;	/* cuMemAllocManaged's (host == dev) */
	int		 read_mostly;	/* cuMemAdvise's, for its queries */
	int		 preferred, prefetched;	/* devices, or -2 */
};

/* The tracked buffers, for the handler: replaced whole, never changed. */
struct ttab {
	int		 n;
	struct track	*t[];
};

static pthread_mutex_t	 map_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mapped	*maps;
static int		 nmaps, capmaps;
static uint64_t		 mapped_bytes, mapped_max;
static int		 mapped_on;	/* nmaps > 0, read without the lock */
static __thread int	 in_mapped;	/* our own copies: no hooks */
static uint64_t		 map_gen;	/* device work that may write them */
static uint64_t		 map_pulled;	/* map_gen when last pulled */
/*
 * The streams that device work which may write a mapped buffer went to
 * since the last pull that covered them all (pw, a few; pw_over: more),
 * and the bytes a pull may bring beside its wait (GLEAM_MAPPED_PREFETCH).
 */
#define PW_MAX			8
#define PREFETCH_DEFAULT	(1u << 20)
static struct {
	uint64_t	 ctx, sid;
} pw[PW_MAX];
static int		 pw_n, pw_over;
static uint64_t		 prefetch_max = UINT64_MAX;	/* unset */

static struct ttab	*tab;		/* read by the handler */
static int		 tab_readers;	/* handlers reading it */
static uint64_t		 fault_count;	/* faults served (atomic) */
int			 mapped_fault_on;	/* the handler and fetch thread are up */
static int		 req_pipe[2] = { -1, -1 };
static struct sigaction	 chained;	/* the program's SIGSEGV action */
static pthread_once_t	 fault_once = PTHREAD_ONCE_INIT;
/* The fetch thread: a fault there cannot be served (nor in io_self's). */
static __thread int	 no_fetch __attribute__((tls_model("initial-exec")));

static int (*real_sigaction)(int, const struct sigaction *,
    struct sigaction *);

/* ---- blocks ------------------------------------------------------------ */

static int
bit_get(const unsigned long *m, size_t b)
{
	return (__atomic_load_n(&m[b / LBITS], __ATOMIC_ACQUIRE) >>
	    (b % LBITS)) & 1;
}

static void
bit_set(unsigned long *m, size_t b)
{
	__atomic_or_fetch(&m[b / LBITS], 1ul << (b % LBITS), __ATOMIC_ACQ_REL);
}

static void
bit_clr(unsigned long *m, size_t b)
{
	__atomic_and_fetch(&m[b / LBITS], ~(1ul << (b % LBITS)),
	    __ATOMIC_ACQ_REL);
}

static void
spin_lock(struct track *t)
{
	while (__atomic_exchange_n(&t->spin, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void
spin_unlock(struct track *t)
{
	__atomic_store_n(&t->spin, 0, __ATOMIC_RELEASE);
}

/* Bytes of blocks [b0, b1), and where they start. */
static size_t
blk_off(const struct track *t, size_t b)
{
	return b << t->shift;
}

/* The bytes of blocks [b0, b1) that move: the program's. */
static size_t
blk_len(const struct track *t, size_t b0, size_t b1)
{
	size_t end = blk_off(t, b1), len = t->own;

	return (end < len ? end : len) - blk_off(t, b0);
}

/* A message and the end, from a signal handler. */
static void
fault_die(const char *why)
{
	static const char pre[] = "gleam: mapped memory: ";
	ssize_t n;

	n = write(2, pre, sizeof pre - 1);
	n = write(2, why, strlen(why));
	n = write(2, "\n", 1);
	(void)n;
	abort();
}

/* Blocks [b0, b1) of t to prot; with t's spin lock held. */
static void
blk_protect(struct track *t, size_t b0, size_t b1, int prot)
{
	size_t end = blk_off(t, b1);

	if (end > t->hi - t->lo)
		end = t->hi - t->lo;	/* whole pages, own or not */
	if (mprotect((void *)(t->lo + blk_off(t, b0)), end - blk_off(t, b0),
	    prot) == -1)
		fault_die("mprotect failed (too many mappings? see "
		    "vm.max_map_count)");
}

/* ---- the fault handler -------------------------------------------------- */

struct fetch_req {
	uintptr_t	 addr;
	int		*done;
};

/*
 * A fatal fault outside the memory this library maps, with GLEAM_DEBUG:
 * the address, the thread and its stack on standard error before the
 * kernel ends the program (a crash through gleam-run is otherwise a bare
 * exit status).  backtrace(3) was called once at install time, so that
 * it allocates nothing here.
 */
static int	fault_trace;

static void
fault_backtrace(const siginfo_t *si)
{
	void *pc[48];
	char line[160];
	ssize_t n;
	int k;

	snprintf(line, sizeof line, "gleam: SIGSEGV at %p (code %d) in thread "
	    "%ld, not in memory Gleam maps; its stack:\n", si->si_addr,
	    si->si_code, (long)syscall(SYS_gettid));
	n = write(2, line, strlen(line));
	(void)n;
	k = backtrace(pc, (int)(sizeof pc / sizeof pc[0]));
	backtrace_symbols_fd(pc, k, 2);
}

/* The faults in mapped memory served so far (statistics). */
uint64_t
mapped_faults(void)
{
	return __atomic_load_n(&fault_count, __ATOMIC_RELAXED);
}

/* Passes a fault that is not ours to the program's action for SIGSEGV. */
static void
fault_chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction sa = chained;

	if (sa.sa_flags & SA_SIGINFO) {
		if (sa.sa_sigaction != NULL) {
			sa.sa_sigaction(sig, si, uc);
			return;
		}
	} else if (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN) {
		sa.sa_handler(sig);
		return;
	}
	/* The default: the access runs again and the kernel's action ends
	 * the program as it would have; with GLEAM_DEBUG, where it was. */
	if (fault_trace)
		fault_backtrace(si);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	real_sigaction(SIGSEGV, &sa, NULL);
}

/*
 * 0 if the fault at a was ours and served, 1 if its block is stale and
 * must be fetched, -1 if it is none of ours.
 */
static int
fault_serve(uintptr_t a)
{
	struct ttab *tb;
	struct track *t = NULL;
	size_t b;
	int i, r = 0;

	__atomic_add_fetch(&tab_readers, 1, __ATOMIC_ACQ_REL);
	tb = __atomic_load_n(&tab, __ATOMIC_ACQUIRE);
	for (i = 0; tb != NULL && i < tb->n; i++)
		if (a >= tb->t[i]->lo && a < tb->t[i]->hi) {
			t = tb->t[i];
			break;
		}
	if (t == NULL) {
		__atomic_sub_fetch(&tab_readers, 1, __ATOMIC_ACQ_REL);
		return -1;
	}
	b = (a - t->lo) >> t->shift;
	__atomic_add_fetch(&fault_count, 1, __ATOMIC_RELAXED);
	spin_lock(t);
	if (bit_get(t->stale, b) && bit_get(t->pf, b)) {
		/* Prefetched: the bytes are there; readable, and looked at. */
		bit_clr(t->pf, b);
		bit_clr(t->stale, b);
		bit_set(t->hot, b);
		blk_protect(t, b, b + 1, PROT_READ);
	} else if (bit_get(t->stale, b))
		r = 1;
	else if (!bit_get(t->dirty, b)) {
		/* A write to a clean block: writable first, then dirty. */
		blk_protect(t, b, b + 1, PROT_READ | PROT_WRITE);
		bit_set(t->dirty, b);
	}
	/* Else another thread made it writable meanwhile. */
	spin_unlock(t);
	__atomic_sub_fetch(&tab_readers, 1, __ATOMIC_ACQ_REL);
	return r;
}

static void
map_fault(int sig, siginfo_t *si, void *uc)
{
	struct fetch_req q;
	int e = errno, r, done = 0;
	ssize_t n;

	if (si->si_code != SEGV_ACCERR ||
	    (r = fault_serve((uintptr_t)si->si_addr)) == -1) {
		errno = e;
		fault_chain(sig, si, uc);
		return;
	}
	if (r == 1) {
		if (no_fetch || io_self)
			fault_die("a stale block touched by the client's "
			    "own thread");
		q.addr = (uintptr_t)si->si_addr;
		q.done = &done;
		do
			n = write(req_pipe[1], &q, sizeof q);
		while (n == -1 && errno == EINTR);
		if (n != (ssize_t)sizeof q)
			fault_die("cannot ask for a block");
		while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) == 0)
			syscall(SYS_futex, &done, FUTEX_WAIT_PRIVATE, 0, NULL,
			    NULL, 0);
	}
	errno = e;
}

static void	*fetch_main(void *);

static void
fault_setup(void)
{
	struct sigaction sa;
	pthread_attr_t attr;
	pthread_t tid;

	if (real_sigaction == NULL)
		real_sigaction = (int (*)(int, const struct sigaction *,
		    struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
	if (real_sigaction == NULL || pipe2(req_pipe, O_CLOEXEC) == -1) {
		log_warn("mapped memory: no fault handling: %s",
		    real_sigaction == NULL ? "no sigaction" : strerror(errno));
		return;
	}
	if (log_getlevel() > LL_WARN) {		/* GLEAM_DEBUG set */
		void *pc[2];

		(void)backtrace(pc, 2);	/* libgcc loaded now, not in a fault */
		fault_trace = 1;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&tid, &attr, fetch_main, NULL) != 0) {
		pthread_attr_destroy(&attr);
		log_warn("mapped memory: no fetch thread");
		return;
	}
	pthread_attr_destroy(&attr);
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = map_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	pthread_mutex_lock(&map_lock);
	real_sigaction(SIGSEGV, &sa, &chained);
	__atomic_store_n(&mapped_fault_on, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&map_lock);
}

/*
 * The program's own SIGSEGV action, once ours is installed (sigwrap.c
 * takes the program's sigaction and signal calls, and passes SIGSEGV's
 * here while mapped_fault_on): kept to be chained to (faults outside
 * mapped memory go there), as a program that installs one expects; ours
 * stays first.
 */
int
mapped_sig_chain(const struct sigaction *act, struct sigaction *old)
{
	pthread_mutex_lock(&map_lock);
	if (old != NULL)
		*old = chained;
	if (act != NULL)
		chained = *act;
	pthread_mutex_unlock(&map_lock);
	return 0;
}

/* ---- the table ---------------------------------------------------------- */

/* With map_lock held: the handler's table anew, t added or removed. */
static int
tab_update(struct track *add, struct track *del)
{
	struct ttab *old = tab, *nt;
	int i, n = old != NULL ? old->n : 0;

	if ((nt = malloc(sizeof *nt + (size_t)(n + 1) *
	    sizeof nt->t[0])) == NULL)
		return -1;
	nt->n = 0;
	for (i = 0; i < n; i++)
		if (old->t[i] != del)
			nt->t[nt->n++] = old->t[i];
	if (add != NULL)
		nt->t[nt->n++] = add;
	__atomic_store_n(&tab, nt, __ATOMIC_RELEASE);
	/* No handler still reads the old one (or del). */
	while (__atomic_load_n(&tab_readers, __ATOMIC_ACQUIRE) != 0)
		sched_yield();
	free(old);
	return 0;
}

static void
track_free(struct track *t)
{
	if (t == NULL)
		return;
	free(t->dirty);
	free(t->stale);
	free(t->wr);
	free(t->pf);
	free(t->hot);
	free(t);
}

/* ---- pushes and fetches ------------------------------------------------- */

static void
mapped_limit(void)
{
	if (mapped_max == 0)
		mapped_max = clenv_size("GLEAM_MAPPED_MAX", MAPPED_MAX_DEFAULT,
		    1);
}

/* One way: n bytes at p to the device at dev (in pieces). */
static void
push_bytes(struct mapped *m, CUdeviceptr dev, const uint8_t *p, size_t n)
{
	struct rpc_val in[5];
	size_t max = io_max_payload(), k;

	if (max > (1u << 20))
		max = 1u << 20;
	stats_mapped(n, 0);
	for (; n > 0; n -= k, p += k, dev += k) {
		k = n < max ? n : max;
		in[0].u = gobj_id(m->ctx);
		in[1].u = 0;
		in[2].u = 0;
		in[3].u = dev;
		in[4].p = p;
		in[4].len = (uint32_t)k;
		rpost(R_MEM_HTOD, in, 0);
	}
}

/* A tracked buffer's dirty blocks to the device, clean again. */
static void
track_push(struct mapped *m)
{
	struct track *t = m->t;
	size_t b = 0, e;

	while (b < t->nblk) {
		if (b % LBITS == 0 &&
		    __atomic_load_n(&t->dirty[b / LBITS], __ATOMIC_ACQUIRE) == 0) {
			b += LBITS;
			continue;
		}
		if (!bit_get(t->dirty, b)) {
			b++;
			continue;
		}
		/* The run of dirty blocks from b. */
		spin_lock(t);
		for (e = b; e < t->nblk && bit_get(t->dirty, e); e++)
			bit_clr(t->dirty, e);
		/* Read-only before the bytes are read: a later write
		 * faults and goes with the next push. */
		blk_protect(t, b, e, PROT_READ);
		spin_unlock(t);
		push_bytes(m, m->dev + blk_off(t, b), t->back + blk_off(t, b),
		    blk_len(t, b, e));
		b = e;
	}
}

/*
 * Blocks [b0, b1) of a tracked buffer are stale now, but for those the
 * host wrote since the push (its bytes win); with map_lock held.
 */
static void
track_stale(struct track *t, size_t b0, size_t b1)
{
	size_t b, s;

	spin_lock(t);
	for (b = b0; b < b1; b = s + 1) {
		/* A run of clean blocks: stale. */
		for (s = b; s < b1 && !bit_get(t->stale, s) &&
		    !bit_get(t->dirty, s); s++)
			bit_set(t->stale, s);
		if (s > b)
			blk_protect(t, b, s, PROT_NONE);
		/* A stale one prefetched is not current any more. */
		if (s < b1 && bit_get(t->stale, s))
			bit_clr(t->pf, s);
	}
	spin_unlock(t);
}

/*
 * Block b of a tracked buffer from the device, clean; with map_lock held.
 * On failure it keeps the host's old bytes (the program learns of the
 * lost server at its next call).
 */
static void
track_fetch(struct mapped *m, size_t b)
{
	struct track *t = m->t;
	struct rpc_val in[5], out[1];
	struct rwait w;
	size_t off = blk_off(t, b), n = blk_len(t, b, b + 1), k;
	size_t max = io_max_payload();
	CUresult rc = CUDA_SUCCESS;
	void *keep;
	int save = in_mapped;

	if (!bit_get(t->stale, b))
		return;
	spin_lock(t);
	bit_set(t->hot, b);
	if (bit_get(t->pf, b)) {
		/* Prefetched meanwhile (the handler asked before it came). */
		bit_clr(t->pf, b);
		bit_clr(t->stale, b);
		blk_protect(t, b, b + 1, PROT_READ);
		spin_unlock(t);
		return;
	}
	spin_unlock(t);
	if (max > (4u << 20))
		max = 4u << 20;
	in_mapped = 1;
	for (k = 0; m->ctx->live && rc == CUDA_SUCCESS && n > 0;
	    off += k, n -= k) {
		k = n < max ? n : max;
		in[0].u = gobj_id(m->ctx);
		in[1].u = 0;
		in[2].u = 0;
		in[3].u = m->dev + off;
		in[4].u = k;
		memset(&w, 0, sizeof w);
		w.dst = t->back + off;
		w.dstlen = k;
		/* Not the program's wait, nor stream work. */
		w.beside = 1;
		if ((rc = rsend(R_MEM_DTOH, in, RP_NOWORK, &w)) != CUDA_SUCCESS)
			break;
		keep = NULL;
		if ((rc = rwait(&w, out, &keep)) == CUDA_SUCCESS) {
			if (out[0].len != k)
				rc = CUDA_ERROR_UNKNOWN;
			else if (out[0].p != t->back + off)
				memcpy(t->back + off, out[0].p, k);
		}
		free(keep);
		stats_mapped(0, k);
	}
	in_mapped = save;
	stats_mapped_fetch(0, 0);
	if (rc != CUDA_SUCCESS || !m->ctx->live)
		log_warn("mapped memory: a block at %p could not be fetched: "
		    "the host keeps its old bytes", (void *)(t->lo + off));
	spin_lock(t);
	bit_clr(t->stale, b);
	blk_protect(t, b, b + 1, PROT_READ);
	spin_unlock(t);
}

/* The buffer holding host address a (tracked); with map_lock held. */
static struct mapped *
track_find(uintptr_t a)
{
	int i;

	for (i = 0; i < nmaps; i++)
		if (maps[i].t != NULL && a >= maps[i].t->lo &&
		    a < maps[i].t->hi)
			return &maps[i];
	return NULL;
}

/* The fetch thread: serves the handler's stale blocks. */
static void *
fetch_main(void *arg)
{
	struct fetch_req q;
	struct mapped *m;
	ssize_t n;
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	no_fetch = 1;
	in_mapped = 1;
	for (;;) {
		n = read(req_pipe[0], &q, sizeof q);
		if (n == -1 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof q)
			break;
		pthread_mutex_lock(&map_lock);
		if ((m = track_find(q.addr)) != NULL)
			track_fetch(m, (q.addr - m->t->lo) >> m->t->shift);
		pthread_mutex_unlock(&map_lock);
		__atomic_store_n(q.done, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, q.done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL,
		    0);
	}
	return NULL;
}

/*
 * Is [p, p + n) inside a tracked buffer?  Then *dev is its device side,
 * and a copy with the host side there is a device-to-device copy.
 */
int
mapped_alias(const void *p, size_t n, CUdeviceptr *dev)
{
	uintptr_t a = (uintptr_t)p;
	struct mapped *m;
	int r = 0;

	if (!__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE) || n == 0)
		return 0;
	pthread_mutex_lock(&map_lock);
	if ((m = track_find(a)) != NULL && n <= m->t->hi - a) {
		*dev = m->dev + (a - m->t->lo);
		r = 1;
	}
	pthread_mutex_unlock(&map_lock);
	return r;
}

/*
 * Does [p, p + n) meet a mapped or managed buffer's device side (or its
 * host view, where that sits at the device address)?
 */
int
mapped_overlaps(CUdeviceptr p, size_t n)
{
	int i, r = 0;

	if (!__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&map_lock);
	for (i = 0; i < nmaps && !r; i++) {
		const struct mapped *m = &maps[i];
		uintptr_t h = (uintptr_t)m->host;

		r = (m->dlen > 0 && p < m->dbase + m->dlen &&
		    m->dbase < p + n) || (p < m->dev + m->size &&
		    m->dev < p + n) || (p < h + m->size && h < p + n);
	}
	pthread_mutex_unlock(&map_lock);
	return r;
}

/*
 * Mapped host memory (not managed) holding p, by its host address or its
 * device side: 1 with *a the host allocation (registry kind 1, or 2 for
 * registered memory) and *host and *dev p's two addresses.  Pointer
 * queries and cuMemHostGetFlags answer from it: where the host copy sits
 * at the device address, the registry holds the device allocation.
 */
int
mapped_describe(CUdeviceptr p, struct alloc *a, CUdeviceptr *host,
    CUdeviceptr *dev)
{
	struct mapped *m;
	uintptr_t h;
	int i, r = 0;

	if (!__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&map_lock);
	for (i = 0; i < nmaps && !r; i++) {
		m = &maps[i];
		h = (uintptr_t)m->host;
		if (m->managed)
			continue;
		if (p >= h && p - h < m->size) {
			*host = p;
			*dev = m->dev + (p - h);
		} else if (p >= m->dev && p - m->dev < m->size) {
			*host = h + (p - m->dev);
			*dev = p;
		} else
			continue;
		memset(a, 0, sizeof *a);
		a->base = h;
		a->size = m->size;
		a->ctx = m->ctx;
		a->host = m->reg ? 2 : 1;
		a->flags = m->flags;
		r = 1;
	}
	pthread_mutex_unlock(&map_lock);
	return r;
}

/* ---- the hook ----------------------------------------------------------- */

/*
 * Where a call writes device memory: 1 and [*lo, *lo + *len) if its row
 * says (RPC_F_DST_RANGE) or it is a copy or memset whose fields do; 0 if
 * it may write anywhere.
 */
static int
dst_range(uint16_t type, const struct rpc_desc *d, const struct rpc_val *in,
    uint64_t *lo, uint64_t *len)
{
	if (d->flags & RPC_F_DST_RANGE) {
		*lo = in[3].u;
		*len = d->req[4] == 'B' ? in[4].len : in[4].u;
		return 1;
	}
	/* A copy on the device, or from the host by name (wcache.c). */
	if (type == R_MEM_DTOD || type == R_CACHE_HTOD ||
	    type == R_CACHE_HELD) {
		*lo = in[3].u;
		*len = in[5].u;
		return 1;
	}
	/* A memset: (height - 1) * pitch + width * element. */
	if (type == R_MEMSET && in[6].u > 0 && in[7].u > 0 && in[8].u > 0 &&
	    in[6].u <= 4 && in[7].u <= UINT64_MAX / 4 &&
	    (in[8].u == 1 || (in[4].u >= in[7].u * in[6].u &&
	    in[8].u - 1 <= (UINT64_MAX - in[7].u * in[6].u) / in[4].u))) {
		*lo = in[3].u;
		*len = (in[8].u - 1) * in[4].u + in[7].u * in[6].u;
		return 1;
	}
	return 0;
}

/*
 * Does a call that writes device memory write a mapped buffer?  Where it
 * says where, only if that range meets one; tracked buffers' blocks in
 * it turn stale (and are marked for the next pull); with map_lock held.
 */
static int
mapped_hit(uint16_t type, const struct rpc_desc *d, const struct rpc_val *in)
{
	uint64_t lo, len;
	int i, hit = 0;

	if (!(d->flags & RPC_F_WRITES_DEV))
		return 0;
	if (!dst_range(type, d, in, &lo, &len)) {
		/* A kernel: every tracked buffer, at the next pull. */
		for (i = 0; i < nmaps; i++)
			if (maps[i].t != NULL)
				maps[i].t->wall = 1;
		return 1;
	}
	for (i = 0; i < nmaps; i++) {
		struct mapped *m = &maps[i];
		struct track *t = m->t;
		uint64_t a, e;
		size_t b0, b1, b;

		if (!(lo < m->dev + m->size && m->dev < lo + len))
			continue;
		hit = 1;
		if (t == NULL)
			continue;
		a = lo > m->dev ? lo - m->dev : 0;
		e = lo + len < m->dev + m->size ? lo + len - m->dev : m->size;
		b0 = a >> t->shift;
		b1 = (e + ((size_t)1 << t->shift) - 1) >> t->shift;
		for (b = b0; b < b1; b++)
			bit_set(t->wr, b);
		/* A blocking one is seen when it returns; an asynchronous
		 * one (its third field) at the wait's pull. */
		if (!((type == R_MEM_DTOD || type == R_MEMSET) && in[2].u))
			track_stale(t, b0, b1);
	}
	return hit;
}

/* The stream of a call that writes device memory: its second field but
 * for launches' (the tenth) and graph launches' (the third). */
static uint64_t
writer_stream(uint16_t type, const struct rpc_val *in)
{
	switch (type) {
	case R_LAUNCH:
	case R_LAUNCH_EX:
		return in[9].u;
	case R_GRAPH_LAUNCH:
		return in[2].u;
	default:
		return in[1].u;
	}
}

/* With map_lock held: a call on (ctx, sid) that may write a mapped buffer. */
static void
writer_note(uint64_t ctx, uint64_t sid)
{
	int i;

	for (i = 0; i < pw_n; i++)
		if (pw[i].ctx == ctx && pw[i].sid == sid)
			return;
	if (pw_n == PW_MAX) {
		pw_over = 1;
		return;
	}
	pw[pw_n].ctx = ctx;
	pw[pw_n].sid = sid;
	pw_n++;
}

/* Did the pull's wait (a stream's or a context's synchronization) wait
 * for the work that pw[i] stands for? */
static int
pw_waited(const struct mpull *mp, int i)
{
	return pw[i].ctx == mp->ctx && (mp->type == R_CTX_SYNC ||
	    pw[i].sid == mp->sid);
}

/*
 * With map_lock held: does the pull's wait cover every stream with such
 * work since the last full pull?  The other waits (an event's, a query
 * that found the work done, a copy back: type 0) are taken to cover all,
 * as they were before streams were told apart.
 */
static int
writers_covered(const struct mpull *mp)
{
	int i;

	if (mp->type == 0)
		return 1;
	if (pw_over)
		return 0;
	for (i = 0; i < pw_n; i++)
		if (!pw_waited(mp, i))
			return 0;
	return 1;
}

/* With map_lock held, after a wait that did not cover them all: the
 * streams it waited for are done with. */
static void
writers_forget(const struct mpull *mp)
{
	int i, j;

	for (i = j = 0; i < pw_n; i++)
		if (!pw_waited(mp, i))
			pw[j++] = pw[i];
	pw_n = j;
}

int
mapped_settled(void)
{
	int yes;

	pthread_mutex_lock(&map_lock);
	yes = __atomic_load_n(&map_gen, __ATOMIC_ACQUIRE) == map_pulled;
	pthread_mutex_unlock(&map_lock);
	return yes;
}

/* Device work that may write a mapped buffer: the next pull fetches them. */
static void
mapped_touch(int hit)
{
	if (hit)
		__atomic_add_fetch(&map_gen, 1, __ATOMIC_ACQ_REL);
}

/* With map_lock held: every buffer's host changes to the device. */
static void
mapped_push_locked(void)
{
	int i;

	for (i = 0; i < nmaps; i++) {
		struct mapped *m = &maps[i];

		if (!m->ctx->live)
			continue;
		if (m->t != NULL) {
			track_push(m);
			continue;
		}
		if (memcmp(m->host, m->shadow, m->size) == 0)
			continue;
		memcpy(m->shadow, m->host, m->size);
		push_bytes(m, m->dev, m->shadow, m->size);
	}
}

void
mapped_before_send(uint16_t type, const struct rpc_val *in)
{
	const struct rpc_desc *d;
	int hit, push;

	if (!__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE) || in_mapped ||
	    (d = rpc_lookup(type)) == NULL)
		return;
	if (!(d->flags & (RPC_F_READS_DEV | RPC_F_WRITES_DEV))) {
		/*
		 * The host waits for, or asks after, work that may be
		 * waiting for its writes (a kernel spinning on a flag in
		 * mapped memory, as XLA's timer does): they go first.
		 */
		if (d->flags & (RPC_F_WAITS | RPC_F_POLLS)) {
			in_mapped = 1;
			pthread_mutex_lock(&map_lock);
			mapped_push_locked();
			pthread_mutex_unlock(&map_lock);
			in_mapped = 0;
		}
		return;
	}
	in_mapped = 1;
	pthread_mutex_lock(&map_lock);
	/*
	 * Work that may read mapped host memory sees its host writes; a
	 * copy from the host into a mapped buffer goes after them, or a
	 * later push of the whole buffer would undo it.  Then the blocks
	 * it writes are stale.
	 */
	push = (d->flags & RPC_F_READS_DEV) || (d->flags & RPC_F_WRITES_DEV);
	if ((d->flags & RPC_F_WRITES_DEV) && (d->flags & RPC_F_FROM_HOST) &&
	    !(d->flags & RPC_F_READS_DEV)) {
		uint64_t lo, len;
		int i;

		/* Only if it meets one. */
		push = 0;
		if (dst_range(type, d, in, &lo, &len)) {
			for (i = 0; i < nmaps && !push; i++)
				push = lo < maps[i].dev + maps[i].size &&
				    maps[i].dev < lo + len;
		} else
			push = 1;
	}
	if (push)
		mapped_push_locked();
	hit = mapped_hit(type, d, in);
	/* Such a call's first field is its context. */
	if (hit)
		writer_note(in[0].u, writer_stream(type, in));
	pthread_mutex_unlock(&map_lock);
	in_mapped = 0;
	mapped_touch(hit);
}

void
mapped_host_write(CUdeviceptr dst, const void *src, size_t n)
{
	int i;

	if (!__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&map_lock);
	for (i = 0; i < nmaps; i++) {
		struct mapped *m = &maps[i];
		uint64_t lo, hi;

		/* A tracked buffer's blocks turn stale as the copy goes. */
		if (m->t != NULL || dst >= m->dev + m->size ||
		    m->dev >= dst + n)
			continue;
		lo = dst > m->dev ? dst : m->dev;
		hi = dst + n < m->dev + m->size ? dst + n : m->dev + m->size;
		/*
		 * Into both sides: a push of the host's other changes
		 * (before the copy is sent) then carries these bytes too.
		 */
		memmove(m->host + (lo - m->dev), (const uint8_t *)src +
		    (lo - dst), hi - lo);
		memcpy(m->shadow + (lo - m->dev), m->host + (lo - m->dev),
		    hi - lo);
	}
	pthread_mutex_unlock(&map_lock);
}

/*
 * GLEAM_MAPPED_PREFETCH: the bytes of tracked blocks a synchronization
 * brings beside it (1 MiB by default; 0: none, every block on demand).
 */
static void
prefetch_limit(void)
{
	if (prefetch_max == UINT64_MAX)
		prefetch_max = clenv_size("GLEAM_MAPPED_PREFETCH",
		    PREFETCH_DEFAULT, 0);
}

/*
 * May the pull beside this call prefetch?  Where the call waits for
 * every call since the last pull that may have written a mapped buffer:
 * a stream's synchronization where they all went to that stream, the
 * context's where they all went to that context.  Their bytes are then
 * final when the server reads them, right after the wait.  beside (the
 * prefetch sent after the call, not ahead of it): a stream's
 * synchronization that does not cover every writer prefetches all the
 * same, since its reply may name the others idle
 * (client_mapped_pull_idle) and the bytes are then final; else they are
 * dropped.
 */
static int
prefetch_ok(const struct mpull *mp, int beside)
{
	prefetch_limit();
	return prefetch_max > 0 && pw_n > 0 && mp->type != 0 && (mp->cover ||
	    (beside && mp->type == R_STREAM_SYNC));
}

/* Is block b of t one to prefetch: not the host's, and a copy wrote it or
 * a kernel may have and the host looked at it last time? */
static int
prefetch_want(const struct track *t, size_t b)
{
	return !bit_get(t->dirty, b) && (bit_get(t->wr, b) ||
	    (t->wall && bit_get(t->hot, b)));
}

/* With map_lock held: the prefetch's requests, beside the call. */
static void
prefetch_send(struct mpull *mp)
{
	uint64_t budget = prefetch_max;
	size_t max = io_max_payload(), b, e, len;
	struct rpc_val in[5];
	struct mpf *pf;
	int i, k, cap = 0;

	if (max > (4u << 20))
		max = 4u << 20;
	for (i = 0; i < nmaps && budget > 0; i++) {
		struct mapped *m = &maps[i];
		struct track *t = m->t;

		/* Ahead, a copy in the stream: the stream's context's
		 * buffers only (another's are fetched when touched). */
		if (t == NULL || !m->ctx->live ||
		    (mp->ahead && gobj_id(m->ctx) != mp->ctx))
			continue;
		for (b = 0; b < t->nblk && budget > 0; b = e) {
			/* hot changes in the fault handler, under t's lock
			 * alone. */
			unsigned long wd = t->wr[b / LBITS] | (t->wall ?
			    __atomic_load_n(&t->hot[b / LBITS],
			    __ATOMIC_ACQUIRE) : 0);

			if (b % LBITS == 0 && wd == 0) {
				e = b + LBITS;
				continue;
			}
			e = b;
			while (e < t->nblk && prefetch_want(t, e) &&
			    blk_len(t, b, e + 1) <= max)
				e++;
			if (e == b) {
				e = b + 1;
				continue;
			}
			if ((len = blk_len(t, b, e)) > budget) {
				budget = 0;
				break;
			}
			if (mp->npf == cap) {
				cap = cap ? 2 * cap : 4;
				if ((pf = realloc(mp->pf, (size_t)cap *
				    sizeof *pf)) == NULL) {
					budget = 0;
					break;
				}
				mp->pf = pf;
			}
			pf = &mp->pf[mp->npf++];
			memset(pf, 0, sizeof *pf);
			pf->map = i;
			pf->b0 = b;
			pf->b1 = e;
			budget -= len;
		}
	}
	/* Then sent: a waiter is linked while it waits, so the array no
	 * longer moves. */
	for (k = 0; k < mp->npf; k++) {
		struct mapped *m;

		pf = &mp->pf[k];
		m = &maps[pf->map];
		pf->w.beside = 1;
		in[0].u = gobj_id(m->ctx);
		/* Ahead of a stream's synchronization: in that stream. */
		in[1].u = mp->ahead ? mp->sid : 0;
		in[2].u = mp->ahead;
		in[3].u = m->dev + blk_off(m->t, pf->b0);
		in[4].u = blk_len(m->t, pf->b0, pf->b1);
		if (rsend(R_MEM_DTOH, in, 0, &pf->w) != CUDA_SUCCESS)
			break;
	}
	mp->npf = k;
}

/*
 * With map_lock held, after the call came back: the prefetched blocks get
 * the device's bytes but those the host wrote meanwhile.  A copy's (wr)
 * turn clean; the others, stale, are marked so, and the host's first
 * look makes them readable, no round trip.
 */
static void
prefetch_take(struct mpf *pf, int ok, uint64_t *at)
{
	struct mapped *m = &maps[pf->map];
	struct track *t = m->t;
	struct rpc_val out[1];
	size_t len = blk_len(t, pf->b0, pf->b1), b, r0;
	void *keep = NULL;
	CUresult rc = rwait(&pf->w, out, &keep);

	if (rc == CUDA_SUCCESS && ok && m->ctx->live && out[0].len == len) {
		spin_lock(t);
		for (b = r0 = pf->b0; b < pf->b1; b++) {
			int land = bit_get(t->wr, b), run = 0;

			/* The host's bytes win over a block it wrote. */
			if (!bit_get(t->dirty, b) &&
			    (land || bit_get(t->stale, b))) {
				memcpy(t->back + blk_off(t, b),
				    (const uint8_t *)out[0].p +
				    (blk_off(t, b) - blk_off(t, pf->b0)),
				    blk_len(t, b, b + 1));
				/* A copy's bytes are the host's to read:
				 * taken as looked at (hot). */
				if (!land) {
					bit_set(t->pf, b);
					bit_clr(t->hot, b);
				} else
					bit_set(t->hot, b);
				if (land && bit_get(t->stale, b)) {
					/* Readable again: runs of them,
					 * an mprotect each. */
					bit_clr(t->stale, b);
					bit_clr(t->pf, b);
					run = 1;
				}
			}
			if (!run) {
				if (b > r0)
					blk_protect(t, r0, b, PROT_READ);
				r0 = b + 1;
			}
		}
		if (b > r0)
			blk_protect(t, r0, b, PROT_READ);
		spin_unlock(t);
		stats_mapped(0, len);
		stats_mapped_fetch(1, len);
	} else if (ok && m->ctx->live)
		/* Not brought after all: a copy's blocks, which pull_stale
		 * left, are fetched when the host looks (the others are
		 * stale already). */
		track_stale(t, pf->b0, pf->b1);
	free(keep);
	*at = pf->w.qstart == *at ? pf->w.qend : 0;
}

/* Does the pull bring block b of maps[i], and land it clean (a copy's)? */
static int
pf_lands(const struct mpull *mp, int i, size_t b)
{
	int k;

	if (!bit_get(maps[i].t->wr, b))
		return 0;
	for (k = 0; k < mp->npf; k++)
		if (mp->pf[k].map == i && b >= mp->pf[k].b0 &&
		    b < mp->pf[k].b1)
			return 1;
	return 0;
}

/*
 * Blocks [b0, b1) of maps[i], which the device may have written, stale
 * but for those the pull brings and lands clean; map_lock held.
 */
static void
pull_stale(const struct mpull *mp, int i, size_t b0, size_t b1)
{
	size_t b, s;

	/* Nothing lands where the pull did not cover every writer. */
	if (mp->npf == 0 || !mp->cover) {
		track_stale(maps[i].t, b0, b1);
		return;
	}
	for (b = b0; b < b1; b = s) {
		for (s = b; s < b1 && !pf_lands(mp, i, s); s++)
			;
		if (s > b)
			track_stale(maps[i].t, b, s);
		while (s < b1 && pf_lands(mp, i, s))
			s++;
	}
}

/*
 * The pull's start: map_lock taken and the host's writes pushed.  0 (and
 * nothing held) where nothing is to pull: no device work since the last.
 */
static int
pull_start(struct mpull *mp)
{
	memset(mp, 0, sizeof *mp);
	if (!__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE) || in_mapped)
		return 0;
	in_mapped = 1;
	pthread_mutex_lock(&map_lock);
	/* Host writes since the last push first, or they would be lost. */
	mapped_push_locked();
	mp->gen = __atomic_load_n(&map_gen, __ATOMIC_ACQUIRE);
	if (mp->gen == map_pulled) {
		pthread_mutex_unlock(&map_lock);
		in_mapped = 0;
		return 0;
	}
	return 1;
}

/* The wait, where it is a stream's synchronization (two fields) or a
 * context's (one); whether it covers every writer. */
static void
pull_wait(struct mpull *mp, uint16_t type, const struct rpc_val *cin)
{
	if (cin != NULL && (type == R_STREAM_SYNC || type == R_CTX_SYNC)) {
		mp->type = type;
		mp->ctx = cin[0].u;
		if (type == R_STREAM_SYNC)
			mp->sid = cin[1].u;
	}
	mp->cover = writers_covered(mp);
}

int
client_mapped_pull_ahead(struct mpull *mp, uint16_t type,
    const struct rpc_val *cin)
{
	memset(mp, 0, sizeof *mp);
	/* Cheap tests first: this runs at every stream synchronization. */
	if (type != R_STREAM_SYNC || cin == NULL ||
	    !__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE) || in_mapped ||
	    capture_any())
		return 0;
	/* (prefetch_ok reads GLEAM_MAPPED_PREFETCH under map_lock.) */
	if (!pull_start(mp))
		return 0;
	pull_wait(mp, type, cin);
	if (!prefetch_ok(mp, 0)) {
		/* Nothing to send ahead: the pull goes beside the call. */
		pthread_mutex_unlock(&map_lock);
		in_mapped = 0;
		memset(mp, 0, sizeof *mp);
		return 0;
	}
	mp->begun = mp->ahead = 1;
	prefetch_send(mp);
	return 1;
}

/* With the pull started: the registered buffers, then the wait's
 * prefetch unless it went ahead.  0: not begun after all. */
static int
pull_rest(struct mpull *mp, uint16_t type, const struct rpc_val *cin)
{
	struct rpc_val in[5];
	int i, n;

	for (i = n = 0; i < nmaps; i++)
		n += maps[i].t == NULL;
	if (n > 0 && ((mp->w = calloc((size_t)n, sizeof *mp->w)) == NULL ||
	    (mp->idx = calloc((size_t)n, sizeof *mp->idx)) == NULL)) {
		free(mp->w);
		mp->w = NULL;
		if (mp->begun) {
			/* Begun: ended by pull_end, these left for later. */
			mp->noreg = 1;
			return 1;
		}
		pthread_mutex_unlock(&map_lock);
		in_mapped = 0;
		return 0;
	}
	/* Registered buffers come back whole, beside the call. */
	for (i = 0; i < nmaps; i++) {
		struct mapped *m = &maps[i];
		struct rwait *w = &mp->w[mp->n];

		if (m->t != NULL || !m->ctx->live)
			continue;
		in[0].u = gobj_id(m->ctx);
		in[1].u = 0;
		in[2].u = 0;
		in[3].u = m->dev;
		in[4].u = m->size;
		memset(w, 0, sizeof *w);
		w->beside = 1;
		if (rsend(R_MEM_DTOH, in, 0, w) != CUDA_SUCCESS)
			break;
		mp->idx[mp->n++] = i;
	}
	if (!mp->begun) {
		pull_wait(mp, type, cin);
		if (prefetch_ok(mp, 1))
			prefetch_send(mp);
	}
	mp->begun = 1;
	/* map_lock stays held until the end: the buffers stay put. */
	return 1;
}

int
client_mapped_pull_begin(struct mpull *mp, uint16_t type,
    const struct rpc_val *cin)
{
	return pull_start(mp) && pull_rest(mp, type, cin);
}

void
client_mapped_pull_beside(struct mpull *mp)
{
	(void)pull_rest(mp, mp->type, NULL);
}

void
client_mapped_pull_idle(struct mpull *mp, const struct idle_pairs *ip)
{
	uint32_t k;
	int i;

	/* An ahead prefetch already went, and only with the cover. */
	if (!mp->begun || mp->cover || pw_over || mp->type == 0)
		return;
	for (i = 0; i < pw_n; i++) {
		if (pw_waited(mp, i))
			continue;
		for (k = 0; k < ip->n && (ip->ctx[k] != pw[i].ctx ||
		    ip->sid[k] != pw[i].sid); k++)
			;
		if (k == ip->n)
			return;
	}
	mp->cover = 1;
}

void
client_mapped_pull_end(struct mpull *mp, int ok, uint64_t qstart,
    uint64_t *qend)
{
	struct rpc_val out[1];
	uint64_t at = qstart, before = 0;
	void *keep;
	int i, all = !mp->noreg;

	for (i = 0; i < mp->n; i++) {
		struct mapped *m = &maps[mp->idx[i]];
		CUresult rc = rwait(&mp->w[i], out, &keep);

		if (rc == CUDA_SUCCESS && ok && out[0].len == m->size) {
			memcpy(m->host, out[0].p, m->size);
			memcpy(m->shadow, out[0].p, m->size);
			stats_mapped(0, m->size);
		} else
			all = 0;
		free(keep);
		/* Contiguous with the call it went beside? */
		if (mp->w[i].qstart != at)
			at = 0;
		else
			at = mp->w[i].qend;
	}
	/* Tracked buffers: what the device may have written turns stale. */
	for (i = 0; ok && i < nmaps; i++) {
		struct track *t = maps[i].t;
		size_t b, s;

		if (t == NULL || !maps[i].ctx->live)
			continue;
		if (t->wall)
			pull_stale(mp, i, 0, t->nblk);
		else
			for (b = 0; b < t->nblk; b = s) {
				if (t->wr[b / LBITS] == 0) {
					s = (b / LBITS + 1) * LBITS;
					continue;
				}
				for (s = b; s < t->nblk && bit_get(t->wr, s);
				    s++)
					;
				if (s > b)
					pull_stale(mp, i, b, s);
				else
					s = b + 1;
			}
	}
	/* Sent after the registered buffers' requests, in this order, or
	 * before the call (ahead: not in the run of replies after it). */
	for (i = 0; i < mp->npf; i++)
		prefetch_take(&mp->pf[i], ok && mp->cover,
		    mp->ahead ? &before : &at);
	/* Where the wait covered only some streams, the next one marks
	 * them again (the others' work may still write). */
	for (i = 0; ok && mp->cover && i < nmaps; i++) {
		struct track *t = maps[i].t;

		if (t == NULL || !maps[i].ctx->live)
			continue;
		t->wall = 0;
		memset(t->wr, 0, (t->nblk + LBITS - 1) / LBITS *
		    sizeof(unsigned long));
	}
	if (all && ok && mp->cover) {
		map_pulled = mp->gen;
		pw_n = pw_over = 0;
	} else if (all && ok)
		writers_forget(mp);
	*qend = at;
	pthread_mutex_unlock(&map_lock);
	in_mapped = 0;
	free(mp->w);
	free(mp->idx);
	free(mp->pf);
	mp->w = NULL;
	mp->idx = NULL;
	mp->pf = NULL;
	mp->npf = 0;
	mp->begun = mp->ahead = mp->noreg = 0;
}

/* With map_lock held: room for one more buffer within the limits. */
static int
maps_room(size_t len, const char *fn)
{
	struct mapped *nm;

	mapped_limit();
	if (mapped_bytes + len > mapped_max) {
		log_warn("%s: mapped and managed memory is emulated for %llu "
		    "MiB in all (GLEAM_MAPPED_MAX): refused", fn,
		    (unsigned long long)(mapped_max >> 20));
		return -1;
	}
	if (nmaps == capmaps) {
		int cap = capmaps ? 2 * capmaps : 16;

		if ((nm = realloc(maps, (size_t)cap * sizeof *nm)) == NULL)
			return -1;
		maps = nm;
		capmaps = cap;
	}
	return 0;
}

/*
 * The host side of a buffer the library maps: a memfd mapped read-only
 * at want (if not 0, and free) or anywhere, and writable at *back.
 */
static void *
track_map(uintptr_t want, size_t len, uint8_t **back, int *fixed)
{
	void *p = MAP_FAILED, *b;
	int fd;

	if ((fd = memfd_create("gleam-mapped", MFD_CLOEXEC)) == -1)
		return NULL;
	if (ftruncate(fd, (off_t)len) == -1) {
		close(fd);
		return NULL;
	}
	*fixed = 0;
	if (want != 0) {
		p = mmap((void *)want, len, PROT_READ, MAP_SHARED |
		    MAP_NORESERVE | MAP_FIXED_NOREPLACE, fd, 0);
		if (p != MAP_FAILED && p != (void *)want) {
			munmap(p, len);	/* an old kernel's hint, not ours */
			p = MAP_FAILED;
		}
		*fixed = p != MAP_FAILED;
	}
	if (p == MAP_FAILED && want == 0)
		p = mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_NORESERVE, fd,
		    0);
	if (p == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED |
	    MAP_NORESERVE, fd, 0);
	close(fd);
	if (b == MAP_FAILED) {
		munmap(p, len);
		return NULL;
	}
	/* A forked child does not write the library's view. */
	madvise(b, len, MADV_DONTFORK);
	*back = b;
	return p;
}

static struct track *
track_new(uintptr_t lo, size_t len, size_t own, uint8_t *back)
{
	struct track *t;
	size_t words;

	if ((t = calloc(1, sizeof *t)) == NULL)
		return NULL;
	t->lo = lo;
	t->hi = lo + len;
	t->own = own > 0 && own < len ? own : len;
	t->back = back;
	t->shift = BLK_SHIFT;
	while (((len + ((size_t)1 << t->shift) - 1) >> t->shift) > BLK_MAX)
		t->shift++;
	t->nblk = (len + ((size_t)1 << t->shift) - 1) >> t->shift;
	words = (t->nblk + LBITS - 1) / LBITS;
	if ((t->dirty = calloc(words, sizeof(unsigned long))) == NULL ||
	    (t->stale = calloc(words, sizeof(unsigned long))) == NULL ||
	    (t->wr = calloc(words, sizeof(unsigned long))) == NULL ||
	    (t->pf = calloc(words, sizeof(unsigned long))) == NULL ||
	    (t->hot = calloc(words, sizeof(unsigned long))) == NULL) {
		track_free(t);
		return NULL;
	}
	return t;
}

/*
 * With unified addressing every page-locked buffer is the device's to
 * read and write, DEVICEMAP or not, and some programs count on it: XLA's
 * timer passes a 4-byte cuMemHostAlloc(PORTABLE) buffer straight to a
 * kernel that spins on it until the host writes it.  Small buffers (up to
 * GLEAM_PINNED_MAPPED bytes, a page by default; 0 for none) are mapped
 * memory therefore; larger ones stay ordinary memory here, as kernels
 * that read big host buffers in place are rare and would cross the
 * network for every touch.
 */
#define PINNED_MAPPED_DEFAULT	4096

static pthread_once_t	 pinned_once = PTHREAD_ONCE_INIT;
static uint64_t		 pinned_mapped = PINNED_MAPPED_DEFAULT;

static void
pinned_mapped_init(void)
{
	pinned_mapped = clenv_size("GLEAM_PINNED_MAPPED",
	    PINNED_MAPPED_DEFAULT, 0);
}

/*
 * The device side of a buffer of len bytes, at a page boundary so that
 * the host copy can be mapped at its address (small allocations come
 * from slabs at 512 bytes): an allocation a page larger where the first
 * is not on one.  A small page-locked buffer's (hostmem) is page-locked
 * memory of the server's where it has some to give (R_MEM_ALLOC_HOST),
 * as a local one is the GPU's host's: a copy from the device into it is
 * one copy on the GPU, and the synchronization's prefetch reads it in
 * place, where device memory took a second copy behind the first.
 */
static CUresult
mapped_dev_alloc(struct mapped *m, size_t len, int hostmem)
{
	struct rpc_val in[2], out[1];
	void *keep = NULL;
	CUresult rc;

	if (hostmem) {
		in[0].u = gobj_id(m->ctx);
		in[1].u = len;
		rc = remote_call(R_MEM_ALLOC_HOST, in, out, &keep);
		free(keep);
		if (rc == CUDA_SUCCESS && (out[0].u & 4095) == 0 &&
		    mem_add(out[0].u, len, m->ctx, 0, 0) == 0) {
			m->dbase = m->dev = out[0].u;
			m->dlen = len;
			return CUDA_SUCCESS;
		}
		if (rc == CUDA_SUCCESS) {
			in[1].u = out[0].u;
			rpost(R_MEM_FREE, in, 0);
		}
		/* Else device memory, as before. */
	}
	if ((rc = cuMemAlloc_v2(&m->dbase, len)) != CUDA_SUCCESS)
		return rc;
	m->dlen = len;
	if ((m->dbase & 4095) != 0) {
		cuMemFree_v2(m->dbase);
		if (len > SIZE_MAX - 4096)
			return CUDA_ERROR_OUT_OF_MEMORY;
		m->dlen = len + 4096;
		if ((rc = cuMemAlloc_v2(&m->dbase, m->dlen)) != CUDA_SUCCESS)
			return rc;
	}
	m->dev = (m->dbase + 4095) & ~(CUdeviceptr)4095;
	return CUDA_SUCCESS;
}

static CUresult
mapped_alloc(void **pp, size_t size, unsigned flags, int managed)
{
	const char *fn = managed ? "cuMemAllocManaged" : "cuMemHostAlloc";
	size_t len = (size + 4095) & ~(size_t)4095;
	struct rpc_val in[9];
	struct mapped m;
	uint8_t *back;
	CUresult rc;
	void *p;

	memset(&m, 0, sizeof m);
	if (len < size)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((rc = ctx_need(&m.ctx)) != CUDA_SUCCESS)
		return rc;
	pthread_once(&fault_once, fault_setup);
	if (!__atomic_load_n(&mapped_fault_on, __ATOMIC_ACQUIRE)) {
		log_warn("%s: mapped memory needs its fault handler: refused",
		    fn);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	pthread_mutex_lock(&map_lock);
	if (maps_room(len, fn) == -1) {
		pthread_mutex_unlock(&map_lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&map_lock);
	pthread_once(&pinned_once, pinned_mapped_init);
	if ((rc = mapped_dev_alloc(&m, len, !managed && size <=
	    pinned_mapped)) != CUDA_SUCCESS)
		return rc;
	m.size = size;
	p = track_map(m.dev, len, &back, &m.fixed);
	if (p == NULL && !managed)
		p = track_map(0, len, &back, &m.fixed);
	if (p == NULL) {
		/* Managed memory is one pointer for both sides, or none. */
		log_warn("%s: %s: refused", fn, managed ?
		    "the device's address is taken here" :
		    "no host memory for it");
		cuMemFree_v2(m.dbase);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m.host = p;
	m.managed = managed;
	m.preferred = m.prefetched = -2;
	m.flags = flags;
	if ((m.t = track_new((uintptr_t)p, len, size, back)) == NULL ||
	    (!m.fixed && mem_add((uintptr_t)p, size, m.ctx, 1, flags) == -1)) {
		track_free(m.t);
		munmap(p, len);
		munmap(back, len);
		cuMemFree_v2(m.dbase);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (managed) {
		/* Its registry entry says so (pointer queries, cuMemFree). */
		mem_del(m.dbase, 0);
		mem_add(m.dev, size, m.ctx, 0, MEM_F_MANAGED);
	}
	pthread_mutex_lock(&map_lock);
	if (maps_room(len, fn) == -1 || tab_update(m.t, NULL) == -1) {
		pthread_mutex_unlock(&map_lock);
		if (!m.fixed)
			mem_del((uintptr_t)p, 1);
		track_free(m.t);
		munmap(p, len);
		munmap(back, len);
		if (managed) {
			mem_del(m.dev, 0);
			mem_add(m.dbase, m.dlen, m.ctx, 0, 0);
		}
		cuMemFree_v2(m.dbase);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	maps[nmaps++] = m;
	mapped_bytes += len;
	__atomic_store_n(&mapped_on, 1, __ATOMIC_RELEASE);
	/* Both sides start as zeros (all clean): the device's by a memset. */
	in_mapped = 1;
	in[0].u = gobj_id(m.ctx);
	in[1].u = 0;
	in[2].u = 0;
	in[3].u = m.dev;
	in[4].u = len;
	in[5].u = 0;
	in[6].u = 1;
	in[7].u = len;
	in[8].u = 1;
	rpost(R_MEMSET, in, 0);
	in_mapped = 0;
	pthread_mutex_unlock(&map_lock);
	*pp = p;
	return CUDA_SUCCESS;
}

/* The mapped buffer holding p, removed; 0 if there was one. */
static int
mapped_free(void *p)
{
	struct mapped m;
	size_t len;
	int i;

	pthread_mutex_lock(&map_lock);
	for (i = 0; i < nmaps; i++)
		if (maps[i].host == p)
			break;
	if (i == nmaps) {
		pthread_mutex_unlock(&map_lock);
		return -1;
	}
	m = maps[i];
	maps[i] = maps[--nmaps];
	len = (m.size + 4095) & ~(size_t)4095;
	mapped_bytes -= len;
	if (m.t != NULL)
		tab_update(NULL, m.t);	/* no handler looks at it after */
	if (nmaps == 0)
		__atomic_store_n(&mapped_on, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&map_lock);
	if (m.managed) {
		/* cuMemFree would come back here. */
		mem_del(m.dev, 0);
		if (m.ctx->live)
			mem_add(m.dbase, m.dlen, m.ctx, 0, 0);
	}
	if (m.ctx->live)
		cuMemFree_v2(m.dbase);
	else if (!m.managed)
		mem_del(m.dbase, 0);
	if (m.reg)
		mem_del((uintptr_t)m.host, 2);
	else {
		if (!m.fixed)
			mem_del((uintptr_t)m.host, 1);
		munmap(m.host, len);
		munmap(m.t->back, len);
		track_free(m.t);
	}
	free(m.shadow);
	return 0;
}

/*
 * Registered host memory mapped for the device (cuMemHostRegister with
 * CU_MEMHOSTREGISTER_DEVICEMAP): as mapped memory of cuMemHostAlloc, but
 * the host side is the program's own memory, whose bytes go to the
 * device buffer first; the device pointer differs from the host one.
 * It keeps a shadow (see above: no page protection on the program's own
 * memory).
 */
static CUresult
mapped_register(void *p, size_t size, unsigned flags)
{
	size_t len = (size + 4095) & ~(size_t)4095;
	struct mapped m;
	CUresult rc;

	memset(&m, 0, sizeof m);
	if ((rc = ctx_need(&m.ctx)) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&map_lock);
	if (maps_room(len, "cuMemHostRegister") == -1) {
		pthread_mutex_unlock(&map_lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&map_lock);
	if ((rc = cuMemAlloc_v2(&m.dev, len)) != CUDA_SUCCESS)
		return rc;
	m.dbase = m.dev;
	m.dlen = len;
	m.size = size;
	m.host = p;
	m.reg = 1;
	m.preferred = m.prefetched = -2;
	m.flags = flags;
	if ((m.shadow = malloc(len)) == NULL ||
	    mem_add((uintptr_t)p, size, m.ctx, 2, flags) == -1) {
		free(m.shadow);
		cuMemFree_v2(m.dev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(m.shadow, p, size);
	pthread_mutex_lock(&map_lock);
	if (maps_room(len, "cuMemHostRegister") == -1) {
		pthread_mutex_unlock(&map_lock);
		mem_del((uintptr_t)p, 2);
		free(m.shadow);
		cuMemFree_v2(m.dev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	maps[nmaps++] = m;
	mapped_bytes += len;
	__atomic_store_n(&mapped_on, 1, __ATOMIC_RELEASE);
	in_mapped = 1;
	push_bytes(&m, m.dev, m.shadow, m.size);
	in_mapped = 0;
	pthread_mutex_unlock(&map_lock);
	return CUDA_SUCCESS;
}

/* Is p the start of registered memory mapped for the device? */
static int
mapped_is_reg(void *p)
{
	int i, r = 0;

	pthread_mutex_lock(&map_lock);
	for (i = 0; i < nmaps && !r; i++)
		r = maps[i].reg && maps[i].host == p;
	pthread_mutex_unlock(&map_lock);
	return r;
}

CUresult
cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int flags)
{
	uint8_t *b = p;
	struct alloc a;
	int i, tries;

	if (d == NULL || p == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	for (tries = 0; tries < 2; tries++) {
		pthread_mutex_lock(&map_lock);
		for (i = 0; i < nmaps; i++)
			if (b >= maps[i].host &&
			    b < maps[i].host + maps[i].size) {
				*d = maps[i].dev +
				    (CUdeviceptr)(b - maps[i].host);
				pthread_mutex_unlock(&map_lock);
				return CUDA_SUCCESS;
			}
		pthread_mutex_unlock(&map_lock);
		/*
		 * On a GPU with unified addressing every registration is
		 * mapped, DEVICEMAP or not (the H200's driver gives the
		 * pointer): one registered without it becomes mapped
		 * memory when its device pointer is first asked for, so
		 * registrations for copies alone stay cheap.
		 */
		if (tries > 0 || mem_lookup((uintptr_t)p, &a) == -1 ||
		    a.host != 2 || mem_del(a.base, 2) == -1)
			break;
		if (mapped_register((void *)(uintptr_t)a.base, a.size,
		    a.flags | CU_MEMHOSTREGISTER_DEVICEMAP) != CUDA_SUCCESS) {
			/* Too large to mirror: registered as before. */
			mem_add(a.base, a.size, a.ctx, 2, a.flags);
			break;
		}
	}
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult
cuMemHostGetDevicePointer(CUdeviceptr_v1 *d, void *p, unsigned int flags)
{
	CUdeviceptr v;
	CUresult rc;

	if (d == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = cuMemHostGetDevicePointer_v2(&v, p, flags)) ==
	    CUDA_SUCCESS)
		*d = (CUdeviceptr_v1)v;
	return rc;
}

/* Host memory: ordinary memory, remembered so it can be recognised. */
CUresult
cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
	struct gctx *c;
	CUresult rc;
	void *p;

	/* Page-locked memory is a context's, in the driver. */
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if (pp == NULL || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & CU_MEMHOSTALLOC_DEVICEMAP)
		return mapped_alloc(pp, size, flags, 0);
	pthread_once(&pinned_once, pinned_mapped_init);
	/* Refused as mapped memory (no fault handler, GLEAM_MAPPED_MAX
	 * reached): ordinary memory, as before. */
	if (size <= pinned_mapped && mapped_alloc(pp, size, flags, 0) ==
	    CUDA_SUCCESS)
		return CUDA_SUCCESS;
	if (posix_memalign(&p, 4096, size) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (mem_add((uintptr_t)p, size, ctx_current(), 1, flags) == -1) {
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pp = p;
	return CUDA_SUCCESS;
}

CUresult
cuMemAllocHost_v2(void **pp, size_t size)
{
	return cuMemHostAlloc(pp, size, 0);
}

CUresult
cuMemAllocHost(void **pp, unsigned int size)
{
	return cuMemHostAlloc(pp, size, 0);
}

CUresult
cuMemFreeHost(void *p)
{
	CUresult rc;

	/* NULL is freed as free(3) frees it, once the driver is up. */
	if ((rc = client_initialized()) != CUDA_SUCCESS || p == NULL)
		return rc;
	/* Copies on their way into it land first. */
	rdrain_detached();
	if (!mapped_is_reg(p) && mapped_free(p) == 0)
		return CUDA_SUCCESS;
	if (mem_del((uintptr_t)p, 1) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	free(p);
	return CUDA_SUCCESS;
}

CUresult
cuMemHostGetFlags(unsigned int *flags, void *p)
{
	struct alloc a;
	CUdeviceptr hp, dp;

	if (flags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (!mapped_describe((uintptr_t)p, &a, &hp, &dp) &&
	    (mem_lookup((uintptr_t)p, &a) == -1 || !a.host))
		return CUDA_ERROR_INVALID_VALUE;
	*flags = a.flags;
	/* With unified addressing cuMemHostAlloc's memory is mapped, and
	 * the driver says so (the H100's: 2 for cudaMallocHost's). */
	if (a.host == 1)
		*flags |= CU_MEMHOSTALLOC_DEVICEMAP;
	return CUDA_SUCCESS;
}

CUresult
cuMemHostRegister_v2(void *p, size_t size, unsigned int flags)
{
	struct alloc a;

	if (p == NULL || size == 0 || (flags & ~(unsigned)(
	    CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
	    CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & CU_MEMHOSTREGISTER_IOMEMORY) {
		log_warn("cuMemHostRegister: I/O memory cannot be mapped for "
		    "a GPU on another machine");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (mem_lookup((uintptr_t)p, &a) == 0 ||
	    mem_lookup((uintptr_t)p + size - 1, &a) == 0)
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	if (flags & CU_MEMHOSTREGISTER_DEVICEMAP)
		return mapped_register(p, size, flags);
	if (mem_add((uintptr_t)p, size, ctx_current(), 2, flags) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

CUresult
cuMemHostRegister(void *p, size_t size, unsigned int flags)
{
	return cuMemHostRegister_v2(p, size, flags);
}

CUresult
cuMemHostUnregister(void *p)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	rdrain_detached();
	/* Device writes were brought back at the last synchronization. */
	if (mapped_is_reg(p) && mapped_free(p) == 0)
		return CUDA_SUCCESS;
	if (mem_del((uintptr_t)p, 2) == -1)
		return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	return CUDA_SUCCESS;
}

/* ---- managed memory ---------------------------------------------------- */

/*
 * cuMemAllocManaged: mapped memory whose host side sits at its device
 * address, so that one pointer serves the host and kernels, coherent at
 * the same points (gleam-client(7)): the host's writes go to the device
 * before work that may read them, the device's come back after the host
 * waited for it.  Advice and prefetches are kept for their queries and
 * change nothing else.
 */
CUresult
mapped_managed_alloc(CUdeviceptr *dptr, size_t size, unsigned flags)
{
	void *p;
	CUresult rc;

	if ((rc = mapped_alloc(&p, size, flags, 1)) == CUDA_SUCCESS)
		*dptr = (uintptr_t)p;
	return rc;
}

int
mapped_managed_free(CUdeviceptr p)
{
	return mapped_free((void *)(uintptr_t)p);
}

CUresult
cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (dptr == NULL || size == 0 || (flags != CU_MEM_ATTACH_GLOBAL &&
	    flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	return mapped_managed_alloc(dptr, size, flags);
}

/* The managed buffer holding [p, p + n), or NULL; with map_lock held. */
static struct mapped *
managed_find(CUdeviceptr p, size_t n)
{
	int i;

	for (i = 0; i < nmaps; i++)
		if (maps[i].managed && p >= maps[i].dev &&
		    p - maps[i].dev < maps[i].size &&
		    n <= maps[i].size - (p - maps[i].dev))
			return &maps[i];
	return NULL;
}

/* A location as a device number: -1 the host, -2 none; -3 if invalid. */
static int
managed_loc(CUmemLocation l)
{
	switch (l.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		return client_device(l.id) != NULL ? l.id : -3;
	case CU_MEM_LOCATION_TYPE_HOST:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
		return -1;
	default:
		return -3;
	}
}

CUresult
cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise advice,
    CUmemLocation loc)
{
	struct mapped *m;
	CUresult rc;
	int dev = -2;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION ||
	    advice == CU_MEM_ADVISE_SET_ACCESSED_BY ||
	    advice == CU_MEM_ADVISE_UNSET_ACCESSED_BY)
		if ((dev = managed_loc(loc)) == -3)
			return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&map_lock);
	if ((m = managed_find(p, n)) == NULL) {
		pthread_mutex_unlock(&map_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	switch (advice) {
	case CU_MEM_ADVISE_SET_READ_MOSTLY:
	case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
		m->read_mostly = advice == CU_MEM_ADVISE_SET_READ_MOSTLY;
		break;
	case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
		m->preferred = dev;
		break;
	case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
		m->preferred = -2;
		break;
	case CU_MEM_ADVISE_SET_ACCESSED_BY:
	case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
		break;
	default:
		pthread_mutex_unlock(&map_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&map_lock);
	return CUDA_SUCCESS;
}

CUresult
cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice dev)
{
	CUmemLocation l;

	l.type = dev == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST :
	    CU_MEM_LOCATION_TYPE_DEVICE;
	l.id = dev == CU_DEVICE_CPU ? 0 : dev;
	return cuMemAdvise_v2(p, n, advice, l);
}

/* Prefetching changes nothing here: both sides are kept whole. */
static CUresult
prefetch(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags,
    CUstream s, int ptsz)
{
	struct mapped *m;
	uint64_t sid;
	CUresult rc;
	int dev;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (n == 0 || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((dev = managed_loc(loc)) == -3)
		return CUDA_ERROR_INVALID_DEVICE;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&map_lock);
	if ((m = managed_find(p, n)) == NULL) {
		pthread_mutex_unlock(&map_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	m->prefetched = dev;
	pthread_mutex_unlock(&map_lock);
	return CUDA_SUCCESS;
}

static CUmemLocation
dev_loc(CUdevice dev)
{
	CUmemLocation l;

	l.type = dev == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST :
	    CU_MEM_LOCATION_TYPE_DEVICE;
	l.id = dev == CU_DEVICE_CPU ? 0 : dev;
	return l;
}

CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUdevice dev, CUstream s) { return prefetch(p, n, dev_loc(dev), 0, s, 0); }
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t n, CUdevice dev, CUstream s) { return prefetch(p, n, dev_loc(dev), 0, s, 1); }
CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation l, unsigned int f, CUstream s) { return prefetch(p, n, l, f, s, 0); }
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t n, CUmemLocation l, unsigned int f, CUstream s) { return prefetch(p, n, l, f, s, 1); }

CUresult
cuMemRangeGetAttribute(void *data, size_t len, CUmem_range_attribute a,
    CUdeviceptr p, size_t n)
{
	struct mapped *m;
	CUresult rc;
	size_t i;
	int v;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (data == NULL || n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&map_lock);
	if ((m = managed_find(p, n)) == NULL) {
		pthread_mutex_unlock(&map_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	switch (a) {
	case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
		v = m->read_mostly;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
		v = m->preferred;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
		v = m->prefetched;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY:
		/* No device has been told: every entry is none. */
		pthread_mutex_unlock(&map_lock);
		if (len == 0 || len % 4 != 0)
			return CUDA_ERROR_INVALID_VALUE;
		for (i = 0; i < len / 4; i++)
			((int *)data)[i] = CU_DEVICE_INVALID;
		return CUDA_SUCCESS;
	default:
		pthread_mutex_unlock(&map_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&map_lock);
	if (len != 4)
		return CUDA_ERROR_INVALID_VALUE;
	*(int *)data = v;
	return CUDA_SUCCESS;
}

CUresult
cuMemRangeGetAttributes(void **data, size_t *lens,
    CUmem_range_attribute *attrs, size_t na, CUdeviceptr p, size_t n)
{
	size_t i;
	CUresult rc;

	if (data == NULL || lens == NULL || attrs == NULL || na == 0)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < na; i++)
		if ((rc = cuMemRangeGetAttribute(data[i], lens[i], attrs[i], p,
		    n)) != CUDA_SUCCESS)
			return rc;
	return CUDA_SUCCESS;
}

CUresult
cuStreamAttachMemAsync(CUstream s, CUdeviceptr p, size_t n,
    unsigned int flags)
{
	struct mapped *m;
	uint64_t sid;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, 0, &sid)) != CUDA_SUCCESS)
		return rc;
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
	    flags != CU_MEM_ATTACH_SINGLE)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&map_lock);
	m = managed_find(p, n ? n : 1);
	pthread_mutex_unlock(&map_lock);
	return m != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult
cuStreamAttachMemAsync_ptsz(CUstream s, CUdeviceptr p, size_t n,
    unsigned int flags)
{
	return cuStreamAttachMemAsync(s, p, n, flags);
}
