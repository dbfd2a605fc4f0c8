/*
 * tabletrace: a libcuda.so.1 for the GPU machine that forwards every
 * export to the real driver and traces the private export tables.  Its
 * cuGetExportTable hands out a copy of each table the real driver returns,
 * each function slot replaced by a trampoline (tramp.S) that logs the
 * call's arguments, calls the real slot, and logs what it returned and
 * what it wrote.  README says how to use it and what the log holds.
 *
 * Environment: TABLETRACE_REAL (the real driver's path), TABLETRACE_LOG
 * (the log; stderr without it), TABLETRACE_UUIDS (wrap only these UUID
 * prefixes), TABLETRACE_PASS (never wrap these), TABLETRACE_PROC=1 (log
 * every cuGetProcAddress lookup too), TABLETRACE_PEEK=pipe (read memory
 * through a pipe, not process_vm_readv: for the test).
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tabletrace.h"
#include "integrity.h"

#define EXPORT		__attribute__((visibility("default")))
#define SIZELESS_MAX	32	/* words copied of a table with no size word */
#define TT_ABSENT	999	/* CUDA_ERROR_UNKNOWN: no such real function */

_Static_assert(offsetof(struct tt_regs, rax) == R_RAX, "R_RAX");
_Static_assert(offsetof(struct tt_regs, idx) == R_IDX, "R_IDX");
_Static_assert(offsetof(struct tt_regs, fn) == R_FN, "R_FN");
_Static_assert(offsetof(struct tt_regs, retaddr) == R_RETADDR, "R_RETADDR");
_Static_assert(offsetof(struct tt_regs, ret) == R_RET, "R_RET");
_Static_assert(offsetof(struct tt_regs, xmm) == R_XMM, "R_XMM");
_Static_assert(offsetof(struct tt_regs, xret) == R_XRET, "R_XRET");
_Static_assert(offsetof(struct tt_regs, seq) == R_SEQ, "R_SEQ");
_Static_assert(sizeof(struct tt_regs) <= R_SIZE, "R_SIZE");
_Static_assert(TT_FRAME % 16 == 0, "TT_FRAME");

typedef int (*export_fn)(const void **, const void *);
typedef int (*proc1_fn)(const char *, void **, int, uint64_t);
typedef int (*proc2_fn)(const char *, void **, int, uint64_t, int *);
typedef int (*intp_fn)(int *);
typedef int (*dev_fn)(int *, int);
typedef int (*attr_fn)(int *, int, int);
typedef int (*uuid_fn)(uint8_t *, int);

/* A wrapped table: the real one and the copy handed out. */
struct table {
	uint8_t		 uuid[16];
	char		 name[40];	/* xxxxxxxx-xxxxxxxx-xxxxxxxx-xxxxxxxx */
	void		**real;
	void		**copy;
	int		 nwords;
	int		 sized;
	void		*slot[TT_NSLOTS];	/* real functions; NULL: data */
};

struct map {
	uintptr_t	 lo, hi;
	char		 prot[4];	/* "rwx" as /proc/self/maps says */
};

struct line {
	char		 buf[4096];
	size_t		 len;
};

static void		*real_lib;
static export_fn	 real_export;
static proc1_fn		 real_proc1;
static proc2_fn		 real_proc2;
static int		 logfd = 2;
static int		 want_proc;
static char		*only_uuids, *pass_uuids;
static struct timespec	 t0;
static pthread_once_t	 once = PTHREAD_ONCE_INIT;

static pthread_mutex_t	 tables_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct table	 tables[TT_NTABLES];
static int		 ntables;
static uint64_t		 seq;

static pthread_mutex_t	 maps_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct map	*maps;
static size_t		 nmaps;

static pthread_mutex_t	 pipe_mtx = PTHREAD_MUTEX_INITIALIZER;
static int		 peekpipe[2] = { -1, -1 };
static int		 use_pipe;

static int	tt_absent(void);
EXPORT int	cuGetExportTable(const void **, const void *);
EXPORT int	cuGetProcAddress(const char *, void **, int, uint64_t);
EXPORT int	cuGetProcAddress_v2(const char *, void **, int, uint64_t, int *);

static void
line_add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->len >= sizeof l->buf - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, sizeof l->buf - l->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += (size_t)n;
	if (l->len > sizeof l->buf - 2)
		l->len = sizeof l->buf - 2;
}

/* Starts a line: seconds since load, pid, thread, event. */
static void
line_start(struct line *l, const char *event)
{
	struct timespec t;
	double s;

	clock_gettime(CLOCK_MONOTONIC, &t);
	s = (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
	l->len = 0;
	line_add(l, "tt %.6f %d %ld %s", s, (int)getpid(),
	    (long)syscall(SYS_gettid), event);
}

/* One write(2) a line, so that threads' lines never interleave. */
static void
line_end(struct line *l)
{
	ssize_t n;
	size_t off = 0;

	l->buf[l->len++] = '\n';
	while (off < l->len) {
		n = write(logfd, l->buf + off, l->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
}

static void
line_hex(struct line *l, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		line_add(l, "%02x", p[i]);
}

static void
say(const char *fmt, ...)
{
	struct line l;
	va_list ap;
	int n;

	line_start(&l, "note");
	line_add(&l, " ");
	va_start(ap, fmt);
	n = vsnprintf(l.buf + l.len, sizeof l.buf - l.len - 1, fmt, ap);
	va_end(ap);
	if (n > 0)
		l.len += (size_t)n < sizeof l.buf - l.len - 2 ?
		    (size_t)n : sizeof l.buf - l.len - 2;
	line_end(&l);
}

/*
 * Reads up to n bytes at addr without faulting: process_vm_readv on
 * ourselves, or, where that is refused (some sandboxes), write(2) into a
 * pipe, which fails with EFAULT instead of faulting.  Returns the bytes
 * read: fewer where the memory ends.
 */
static size_t
peek(uintptr_t addr, void *buf, size_t n)
{
	struct iovec local, remote;
	ssize_t r;
	size_t got = 0, want;

	if (addr < 4096 || addr + n < addr)
		return 0;
	if (!use_pipe) {
		local.iov_base = buf;
		local.iov_len = n;
		remote.iov_base = (void *)addr;
		remote.iov_len = n;
		r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
		if (r >= 0)
			return (size_t)r;
		if (errno == EFAULT || errno == ESRCH)
			return 0;
		use_pipe = 1;
	}
	pthread_mutex_lock(&pipe_mtx);
	if (peekpipe[0] == -1 && pipe2(peekpipe, O_CLOEXEC | O_NONBLOCK) == -1) {
		pthread_mutex_unlock(&pipe_mtx);
		return 0;
	}
	/* Page by page, so that a readable start is read up to its end. */
	while (got < n) {
		want = n - got;
		if (want > 4096 - ((addr + got) & 4095))
			want = 4096 - ((addr + got) & 4095);
		r = write(peekpipe[1], (const void *)(addr + got), want);
		if (r <= 0)
			break;
		if (read(peekpipe[0], (char *)buf + got, (size_t)r) != r)
			break;
		got += (size_t)r;
	}
	pthread_mutex_unlock(&pipe_mtx);
	return got;
}

static void
maps_load(void)
{
	char *text = NULL, *p, *nl;
	size_t cap = 0, len = 0, n = 0;
	struct map *m = NULL;
	unsigned long lo, hi;
	char prot[5];
	ssize_t r;
	int fd;

	if ((fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)) == -1)
		return;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			if ((p = realloc(text, cap)) == NULL)
				break;
			text = p;
		}
		if ((r = read(fd, text + len, cap - len - 1)) <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (text == NULL)
		return;
	text[len] = '\0';
	for (p = text; *p != '\0'; p = nl + 1)
		if ((nl = strchr(p, '\n')) == NULL)
			break;
		else
			n++;
	if ((m = calloc(n + 1, sizeof *m)) == NULL) {
		free(text);
		return;
	}
	n = 0;
	for (p = text; *p != '\0'; p = nl + 1) {
		if (sscanf(p, "%lx-%lx %4s", &lo, &hi, prot) == 3) {
			m[n].lo = lo;
			m[n].hi = hi;
			memcpy(m[n].prot, prot, 3);
			n++;
		}
		if ((nl = strchr(p, '\n')) == NULL)
			break;
	}
	free(text);
	free(maps);
	maps = m;
	nmaps = n;
}

/*
 * The protection of the mapping holding addr ("r-x", "rw-"...), from a
 * cached copy of /proc/self/maps, read again when addr is readable but in
 * no mapping it knows; NULL for unmapped memory.
 */
static const char *
prot_of(uintptr_t addr, char out[4])
{
	size_t lo, hi, mid;
	uint8_t b;
	int pass;

	if (addr < 4096)
		return NULL;
	pthread_mutex_lock(&maps_mtx);
	for (pass = 0; pass < 2; pass++) {
		lo = 0;
		hi = nmaps;
		while (lo < hi) {
			mid = (lo + hi) / 2;
			if (addr < maps[mid].lo)
				hi = mid;
			else if (addr >= maps[mid].hi)
				lo = mid + 1;
			else {
				memcpy(out, maps[mid].prot, 4);
				pthread_mutex_unlock(&maps_mtx);
				return out;
			}
		}
		if (pass == 0 && peek(addr, &b, 1) == 1)
			maps_load();
		else
			break;
	}
	pthread_mutex_unlock(&maps_mtx);
	return NULL;
}

/* Could v be a pointer? A user-space address above the first 64 KiB. */
static int
pointerish(uint64_t v)
{
	return v >= 0x10000 && v < 0x800000000000ULL;
}

/* "libfoo.so.1+0x1234" for a code address, or its hex value. */
static void
line_where(struct line *l, uintptr_t a)
{
	Dl_info di;
	const char *base;

	if (dladdr((void *)a, &di) != 0 && di.dli_fname != NULL) {
		base = strrchr(di.dli_fname, '/');
		base = base ? base + 1 : di.dli_fname;
		if (*base == '\0')
			base = "main";
		line_add(l, "%s+0x%lx", base,
		    (unsigned long)(a - (uintptr_t)di.dli_fbase));
	} else
		line_add(l, "0x%lx", (unsigned long)a);
}

static void
uuid_name(const uint8_t u[16], char name[40])
{
	static const char hex[] = "0123456789abcdef";
	int i, o = 0;

	for (i = 0; i < 16; i++) {
		if (i > 0 && i % 4 == 0)
			name[o++] = '-';
		name[o++] = hex[u[i] >> 4];
		name[o++] = hex[u[i] & 15];
	}
	name[o] = '\0';
}

/* Is name in list (prefixes, separated by commas or blanks)? */
static int
listed(const char *list, const char *name)
{
	const char *p = list;
	size_t n;

	while (*p != '\0') {
		n = strcspn(p, ", \t");
		if (n > 0 && strncasecmp(p, name, n) == 0)
			return 1;
		p += n;
		p += strspn(p, ", \t");
	}
	return 0;
}

static int
selected1(const char *name)
{
	if (only_uuids != NULL && !listed(only_uuids, name))
		return 0;
	return pass_uuids == NULL || !listed(pass_uuids, name);
}

#define UUID_CUDART	"6bd5fb6c-5bf4e74a-8987d939-12fd9df9"
#define UUID_INTEGRITY	"d4082055-bde6704b-8d34ba12-3c66e1f2"

/*
 * CUDART_INTERFACE and INTEGRITY_CHECK go together: cudart hashes the
 * addresses of both (dark-api.md §3), so either both are copies, and
 * tt_leave redoes the hash over the copies, or neither is.
 */
static int
selected(const char *name)
{
	if (strcmp(name, UUID_CUDART) == 0 || strcmp(name, UUID_INTEGRITY) == 0)
		return selected1(UUID_CUDART) && selected1(UUID_INTEGRITY);
	return selected1(name);
}

static int
same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	    sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Does the loaded object have symbol versions (DT_VERDEF)? */
static int
has_versions(void *h)
{
	struct link_map *lm;
	const ElfW(Dyn) *d;

	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0)
		return -1;
	for (d = lm->l_ld; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_VERDEF)
			return 1;
	return 0;
}

static void
init(void)
{
	static const char *paths[] = {
		"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
		"/usr/lib64/libcuda.so.1",
		"/usr/local/nvidia/lib64/libcuda.so.1",
		"/usr/local/nvidia/lib/libcuda.so.1",
		"/usr/lib/wsl/lib/libcuda.so.1",
	};
	const char *env, *path = NULL;
	Dl_info self;
	size_t i;
	int n, missing = 0, fd;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if ((env = getenv("TABLETRACE_LOG")) != NULL && *env != '\0') {
		fd = open(env, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd != -1)
			logfd = fd;
		else
			fprintf(stderr, "tabletrace: %s: %s\n", env,
			    strerror(errno));
	}
	if ((env = getenv("TABLETRACE_UUIDS")) != NULL && *env != '\0')
		only_uuids = strdup(env);
	if ((env = getenv("TABLETRACE_PASS")) != NULL && *env != '\0')
		pass_uuids = strdup(env);
	want_proc = (env = getenv("TABLETRACE_PROC")) != NULL && *env == '1';
	use_pipe = (env = getenv("TABLETRACE_PEEK")) != NULL &&
	    strcmp(env, "pipe") == 0;
	memset(&self, 0, sizeof self);
	dladdr((void *)init, &self);

	if ((env = getenv("TABLETRACE_REAL")) != NULL && *env != '\0') {
		if (env[0] != '/')
			say("error TABLETRACE_REAL %s: not an absolute path", env);
		else if (self.dli_fname && same_file(env, self.dli_fname))
			say("error TABLETRACE_REAL %s: that is tabletrace", env);
		else
			path = env;
	} else {
		for (i = 0; i < sizeof paths / sizeof paths[0]; i++)
			if (access(paths[i], R_OK) == 0 && !(self.dli_fname &&
			    same_file(paths[i], self.dli_fname))) {
				path = paths[i];
				break;
			}
		if (path == NULL)
			say("error no real libcuda.so.1 found; set TABLETRACE_REAL");
	}
	if (path != NULL && (real_lib = dlopen(path,
	    RTLD_NOW | RTLD_LOCAL)) == NULL)
		say("error dlopen %s: %s", path, dlerror());
	for (n = 0; n < tt_nfwd; n++) {
		tt_fwd[n] = real_lib ? dlsym(real_lib, tt_fwd_names[n]) : NULL;
		if (tt_fwd[n] == NULL) {
			tt_fwd[n] = (void *)tt_absent;
			missing++;
		}
	}
	if (real_lib != NULL) {
		real_export = (export_fn)dlsym(real_lib, "cuGetExportTable");
		real_proc1 = (proc1_fn)dlsym(real_lib, "cuGetProcAddress");
		real_proc2 = (proc2_fn)dlsym(real_lib, "cuGetProcAddress_v2");
		say("real %s versions %s forwarded %d missing %d self %s", path,
		    has_versions(real_lib) == 1 ? "yes" : "no",
		    tt_nfwd - missing, missing,
		    self.dli_fname ? self.dli_fname : "?");
	}
	maps_load();
}

static void __attribute__((constructor))
tt_ctor(void)
{
	pthread_once(&once, init);
}

/* Where the real driver lacks a function (or is absent). */
static int
tt_absent(void)
{
	return TT_ABSENT;
}

/*
 * Copies the real table into tables[t]: the size word (or, for a table
 * without one, the words up to the first NULL), each word that points
 * into executable memory replaced by trampoline t * TT_NSLOTS + word.
 * Called with tables_mtx held.
 */
static struct table *
table_wrap(const uint8_t uuid[16], void **real)
{
	struct table *tb;
	uint64_t w[TT_NSLOTS];
	size_t got;
	char prot[4];
	int j, n, t;

	if (ntables == TT_NTABLES)
		return NULL;
	t = ntables;
	tb = &tables[t];
	memset(tb, 0, sizeof *tb);
	memcpy(tb->uuid, uuid, 16);
	uuid_name(uuid, tb->name);
	got = peek((uintptr_t)real, w, sizeof w) / 8;
	if (got == 0)
		return NULL;
	if (w[0] >= 8 && w[0] % 8 == 0 && w[0] / 8 <= got) {
		tb->sized = 1;
		n = (int)(w[0] / 8);
	} else {
		for (n = 0; n < (int)got && n < SIZELESS_MAX; n++)
			if (w[n] == 0)
				break;
		if (n < (int)got)
			n++;	/* the NULL that ends it */
	}
	if ((tb->copy = calloc((size_t)n + 1, sizeof(void *))) == NULL)
		return NULL;
	tb->real = real;
	tb->nwords = n;
	for (j = 0; j < n; j++) {
		tb->copy[j] = (void *)w[j];
		if ((j == 0 && tb->sized) || w[j] == 0)
			continue;
		if (prot_of(w[j], prot) != NULL && prot[2] == 'x') {
			tb->slot[j] = (void *)w[j];
			tb->copy[j] = tt_tramp_base +
			    16 * ((size_t)t * TT_NSLOTS + (size_t)j);
		}
	}
	ntables++;
	return tb;
}

/* One line with the table's words: functions as library+offset. */
static void
table_log(const struct table *tb)
{
	struct line l;
	int j;

	line_start(&l, "layout");
	line_add(&l, " %s words=%d %s", tb->name, tb->nwords,
	    tb->sized ? "sized" : "sizeless");
	for (j = 0; j < tb->nwords; j++) {
		line_add(&l, " %d=", j);
		if (tb->slot[j] != NULL)
			line_where(&l, (uintptr_t)tb->slot[j]);
		else
			line_add(&l, "0x%lx", (unsigned long)tb->copy[j]);
	}
	line_end(&l);
}

EXPORT int
cuGetExportTable(const void **pp, const void *id)
{
	uintptr_t caller = (uintptr_t)__builtin_return_address(0);
	struct table *tb = NULL;
	const char *served = "real";
	uint8_t uuid[16];
	char name[40];
	struct line l;
	int rc, i, fresh = 0;

	pthread_once(&once, init);
	if (real_export == NULL)
		return TT_ABSENT;
	rc = real_export(pp, id);
	if (id == NULL || peek((uintptr_t)id, uuid, 16) != 16)
		memset(uuid, 0, 16);
	uuid_name(uuid, name);
	if (rc == 0 && pp != NULL && *pp != NULL && selected(name)) {
		pthread_mutex_lock(&tables_mtx);
		for (i = 0; i < ntables; i++)
			if (memcmp(tables[i].uuid, uuid, 16) == 0) {
				tb = &tables[i];
				break;
			}
		if (tb == NULL) {
			tb = table_wrap(uuid, (void **)*pp);
			fresh = tb != NULL;
		}
		pthread_mutex_unlock(&tables_mtx);
		if (tb != NULL && tb->real != *pp)
			say("warning %s: the real driver moved it from %p to %p;"
			    " serving the first", name, (void *)tb->real, *pp);
		if (tb != NULL) {
			served = "copy";
			*pp = tb->copy;
		} else
			served = "real (no room or unreadable)";
	} else if (rc == 0)
		served = "real (not selected)";
	else
		served = "none";
	line_start(&l, "export");
	line_add(&l, " %s rc=%d", name, rc);
	if (tb != NULL)
		line_add(&l, " table=%p size=%s%lu words=%d", (void *)tb->real,
		    tb->sized ? "" : "none:", tb->sized ?
		    (unsigned long)(uintptr_t)tb->copy[0] : 0UL, tb->nwords);
	else if (rc == 0 && pp != NULL)
		line_add(&l, " table=%p", *pp);
	line_add(&l, " caller=");
	line_where(&l, caller);
	line_add(&l, " served=%s", served);
	line_end(&l);
	if (fresh)
		table_log(tb);
	return rc;
}

/* Our own functions where the real lookup gave the real ones. */
static void
proc_swap(void **pfn)
{
	if (pfn == NULL || *pfn == NULL || real_lib == NULL)
		return;
	if (*pfn == (void *)real_export)
		*pfn = (void *)cuGetExportTable;
	else if (*pfn == (void *)real_proc1)
		*pfn = (void *)cuGetProcAddress;
	else if (*pfn == (void *)real_proc2)
		*pfn = (void *)cuGetProcAddress_v2;
}

static void
proc_log(const char *v, const char *sym, int ver, uint64_t flags, int rc,
    void **pfn, int *status, uintptr_t caller)
{
	struct line l;
	char name[128];

	if (!want_proc && !(sym != NULL && rc == 0 && pfn != NULL &&
	    (*pfn == (void *)cuGetExportTable ||
	    *pfn == (void *)cuGetProcAddress ||
	    *pfn == (void *)cuGetProcAddress_v2)))
		return;
	if (sym == NULL || peek((uintptr_t)sym, name, sizeof name - 1) == 0)
		strcpy(name, "(null)");
	name[sizeof name - 1] = '\0';
	line_start(&l, "proc");
	line_add(&l, " %s %s@%d flags=%lu rc=%d", v, name, ver,
	    (unsigned long)flags, rc);
	if (status != NULL)
		line_add(&l, " status=%d", *status);
	if (pfn != NULL && *pfn != NULL) {
		line_add(&l, " fn=");
		line_where(&l, (uintptr_t)*pfn);
	}
	line_add(&l, " caller=");
	line_where(&l, caller);
	line_end(&l);
}

EXPORT int
cuGetProcAddress(const char *sym, void **pfn, int ver, uint64_t flags)
{
	int rc;

	pthread_once(&once, init);
	if (real_proc1 == NULL)
		return TT_ABSENT;
	rc = real_proc1(sym, pfn, ver, flags);
	if (rc == 0)
		proc_swap(pfn);
	proc_log("v1", sym, ver, flags, rc, pfn, NULL,
	    (uintptr_t)__builtin_return_address(0));
	return rc;
}

EXPORT int
cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags,
    int *status)
{
	int rc;

	pthread_once(&once, init);
	if (real_proc2 == NULL)
		return TT_ABSENT;
	rc = real_proc2(sym, pfn, ver, flags, status);
	if (rc == 0)
		proc_swap(pfn);
	proc_log("v2", sym, ver, flags, rc, pfn, status,
	    (uintptr_t)__builtin_return_address(0));
	return rc;
}

/* The trampolines' C half: log the call, name the real slot. */
uint64_t
tt_enter(struct tt_regs *r)
{
	struct table *tb = &tables[r->idx / TT_NSLOTS];
	int s = (int)(r->idx % TT_NSLOTS), i;
	struct line l;
	char prot[4];
	uint64_t x0;

	r->seq = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
	line_start(&l, "call");
	line_add(&l, " %s[%d] #%lu a=", tb->name, s, (unsigned long)r->seq);
	for (i = 0; i < 6; i++)
		line_add(&l, "%s%lx", i ? "," : "", (unsigned long)r->gp[i]);
	memcpy(&x0, r->xmm[0], 8);
	line_add(&l, " x0=%lx caller=", (unsigned long)x0);
	line_where(&l, r->retaddr);
	for (i = 0; i < 6; i++) {
		r->nbefore[i] = 0;
		if (!pointerish(r->gp[i]) || prot_of(r->gp[i], prot) == NULL)
			continue;
		if (prot[2] == 'x') {
			line_add(&l, " f%d=", i);
			line_where(&l, r->gp[i]);
			continue;
		}
		r->nbefore[i] = (uint32_t)peek(r->gp[i], r->before[i], TT_PEEK);
		if (r->nbefore[i] == 0)
			continue;
		line_add(&l, " m%d=%c:", i, prot[1] == 'w' ? 'w' : 'r');
		line_hex(&l, r->before[i], r->nbefore[i]);
	}
	line_end(&l);
	return (uint64_t)tb->slot[s];
}

/* The device list and driver version, as cudart reads them. */
static struct integrity_dev *
integrity_devs(size_t *np, uint32_t *drv)
{
	intp_fn count = (intp_fn)dlsym(real_lib, "cuDeviceGetCount");
	intp_fn version = (intp_fn)dlsym(real_lib, "cuDriverGetVersion");
	dev_fn get = (dev_fn)dlsym(real_lib, "cuDeviceGet");
	attr_fn attr = (attr_fn)dlsym(real_lib, "cuDeviceGetAttribute");
	uuid_fn uuid = (uuid_fn)dlsym(real_lib, "cuDeviceGetUuid_v2");
	struct integrity_dev *d;
	int n = 0, i, dev, v = 0;

	*np = 0;
	if (!count || !version || !get || !attr || !uuid ||
	    version(&v) != 0 || count(&n) != 0 || n < 0 || n > 1024)
		return NULL;
	*drv = (uint32_t)v;
	if ((d = calloc((size_t)n + 1, sizeof *d)) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		if (get(&dev, i) != 0 || uuid(d[i].uuid, dev) != 0 ||
		    attr(&d[i].pci_domain, 50, dev) != 0 ||
		    attr(&d[i].pci_bus, 33, dev) != 0 ||
		    attr(&d[i].pci_device, 34, dev) != 0) {
			free(d);
			return NULL;
		}
	}
	*np = (size_t)n;
	return d;
}

/*
 * INTEGRITY_CHECK [1] answered over the real tables; cudart checks it
 * over the copies it was given.  Checks our hash against the real one,
 * then writes the hash over the copies.
 */
static void
integrity_redo(struct tt_regs *r, struct table *tb, struct line *l)
{
	struct integrity_in in;
	uint64_t out[2], mine[2];
	struct table *cudart = NULL;
	int i;

	if ((uint32_t)r->ret[0] != 0 || r->gp[0] % 10 < 2 ||
	    peek(r->gp[2], out, 16) != 16)
		return;
	for (i = 0; i < ntables; i++)
		if (strcmp(tables[i].name, UUID_CUDART) == 0)
			cudart = &tables[i];
	memset(&in, 0, sizeof in);
	if ((in.devs = integrity_devs(&in.ndevs, &in.driver_version)) == NULL) {
		line_add(l, " integrity=no-devices");
		return;
	}
	in.version = (uint32_t)r->gp[0];
	in.pid = (uint32_t)getpid();
	in.tid = (uint32_t)(uintptr_t)pthread_self();
	in.unix_seconds = r->gp[1];
	in.cudart_table = cudart ? (uintptr_t)cudart->real : 0;
	in.integrity_table = (uintptr_t)tb->real;
	in.slot1 = (uintptr_t)tb->slot[1];
	integrity_hash(&in, mine);
	line_add(l, " integrity-real=%s", memcmp(mine, out, 16) == 0 ?
	    "same" : "DIFFERS");
	in.cudart_table = cudart ? (uintptr_t)cudart->copy : 0;
	in.integrity_table = (uintptr_t)tb->copy;
	in.slot1 = (uintptr_t)tb->copy[1];
	integrity_hash(&in, mine);
	memcpy((void *)r->gp[2], mine, 16);
	line_add(l, " integrity-copy=%016lx%016lx", (unsigned long)mine[0],
	    (unsigned long)mine[1]);
	free((void *)in.devs);
}

/* The trampolines' C half after the call: result and memory written. */
void
tt_leave(struct tt_regs *r)
{
	struct table *tb = &tables[r->idx / TT_NSLOTS];
	int s = (int)(r->idx % TT_NSLOTS), i;
	uint8_t after[TT_PEEK], deref[TT_PEEK];
	uint64_t p, x0;
	size_t n;
	struct line l;
	char prot[4];

	line_start(&l, "ret");
	memcpy(&x0, r->xret[0], 8);
	line_add(&l, " %s[%d] #%lu rc=%d rax=%lx x0=%lx", tb->name, s,
	    (unsigned long)r->seq, (int)(uint32_t)r->ret[0],
	    (unsigned long)r->ret[0], (unsigned long)x0);
	for (i = 0; i < 6; i++) {
		if (r->nbefore[i] == 0)
			continue;
		n = peek(r->gp[i], after, r->nbefore[i]);
		if (n == r->nbefore[i] && memcmp(after, r->before[i], n) == 0)
			continue;
		line_add(&l, " m%d=", i);
		line_hex(&l, after, n);
		/* An out-pointer: what it now points to. */
		if (n >= 8) {
			memcpy(&p, after, 8);
			if (pointerish(p) && prot_of(p, prot) != NULL &&
			    prot[2] != 'x' &&
			    (n = peek(p, deref, sizeof deref)) > 0) {
				line_add(&l, " *m%d=", i);
				line_hex(&l, deref, n);
			}
		}
	}
	if (s == 1 && strcmp(tb->name, UUID_INTEGRITY) == 0)
		integrity_redo(r, tb, &l);
	line_end(&l);
}
