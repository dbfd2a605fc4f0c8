/*
 * What both tracers share (tabletrace.h): the real library, opened by
 * path at load time; the forwarders' pointers into it; each table the
 * real library hands out copied once, its function words replaced by
 * trampolines (tramp.S); the trampolines' C half, which logs a call's
 * arguments and what it returned and wrote; and the log itself.  With
 * TABLETRACE_CALLS=1 the forwarders go through trampolines too, so that
 * every public call is logged by name.  README says what the log holds.
 *
 * Environment: the tracer's own variable for the real library
 * (tt_lib.env_real), TABLETRACE_LOG (the log; stderr without it),
 * TABLETRACE_UUIDS (wrap only these UUID prefixes), TABLETRACE_PASS
 * (never wrap these), TABLETRACE_CALLS=1 (log every forwarded call),
 * TABLETRACE_PEEK=pipe (read memory through a pipe, not
 * process_vm_readv: for the test).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tabletrace.h"

#define SIZE_MAX_WORD	0x10000	/* larger word 0: a pointer, not a size */

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

struct map {
	uintptr_t	 lo, hi;
	char		 prot[4];	/* "rwx" as /proc/self/maps says */
};

static void		*real_lib;
static int		 logfd = 2;
static char		*only_uuids, *pass_uuids;
static struct timespec	 t0;
static pthread_once_t	 once = PTHREAD_ONCE_INIT;

static pthread_mutex_t	 tables_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct tt_table	 tables[TT_NTABLES];
static int		 ntables;
static uint64_t		 seq;

/* TABLETRACE_CALLS: the real function behind each logged forwarder. */
static void		*fwd_real[TT_NCALLS];

static pthread_mutex_t	 maps_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct map	*maps;
static size_t		 nmaps;

static pthread_mutex_t	 pipe_mtx = PTHREAD_MUTEX_INITIALIZER;
static int		 peekpipe[2] = { -1, -1 };
static int		 use_pipe;

static int	tt_absent(void);

void
tt_line_add(struct tt_line *l, const char *fmt, ...)
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
void
tt_line_start(struct tt_line *l, const char *event)
{
	struct timespec t;
	double s;

	clock_gettime(CLOCK_MONOTONIC, &t);
	s = (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
	l->len = 0;
	tt_line_add(l, "tt %.6f %d %ld %s", s, (int)getpid(),
	    (long)syscall(SYS_gettid), event);
}

/* One write(2) a line, so that threads' lines never interleave. */
void
tt_line_end(struct tt_line *l)
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

/*
 * Bytes as hex; or, when they start with a C string of four characters
 * or more, as "text" (blanks, quotes and backslashes as \xHH, so that a
 * line splits on blanks into its fields): a name or a bus id reads.
 */
static size_t
text_len(const uint8_t *p, size_t n)
{
	size_t k;

	for (k = 0; k < n && p[k] >= 0x20 && p[k] < 0x7f; k++)
		continue;
	return k >= 4 && (k == n || p[k] == 0) ? k : 0;
}

static void
line_bytes(struct tt_line *l, const uint8_t *p, size_t n)
{
	size_t i, k;

	if ((k = text_len(p, n)) > 0) {
		tt_line_add(l, "\"");
		for (i = 0; i < k; i++)
			if (p[i] == ' ' || p[i] == '"' || p[i] == '\\')
				tt_line_add(l, "\\x%02x", p[i]);
			else
				tt_line_add(l, "%c", p[i]);
		tt_line_add(l, "\"");
		return;
	}
	for (i = 0; i < n; i++)
		tt_line_add(l, "%02x", p[i]);
}

void
tt_say(const char *fmt, ...)
{
	struct tt_line l;
	va_list ap;
	int n;

	tt_line_start(&l, "note");
	tt_line_add(&l, " ");
	va_start(ap, fmt);
	n = vsnprintf(l.buf + l.len, sizeof l.buf - l.len - 1, fmt, ap);
	va_end(ap);
	if (n > 0)
		l.len += (size_t)n < sizeof l.buf - l.len - 2 ?
		    (size_t)n : sizeof l.buf - l.len - 2;
	tt_line_end(&l);
}

/*
 * Reads up to n bytes at addr without faulting: process_vm_readv on
 * ourselves, or, where that is refused (some sandboxes), write(2) into a
 * pipe, which fails with EFAULT instead of faulting.  Returns the bytes
 * read: fewer where the memory ends.
 */
size_t
tt_peek(uintptr_t addr, void *buf, size_t n)
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
		if (pass == 0 && tt_peek(addr, &b, 1) == 1)
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
void
tt_line_where(struct tt_line *l, uintptr_t a)
{
	Dl_info di;
	const char *base;

	if (dladdr((void *)a, &di) != 0 && di.dli_fname != NULL) {
		base = strrchr(di.dli_fname, '/');
		base = base ? base + 1 : di.dli_fname;
		if (*base == '\0')
			base = "main";
		tt_line_add(l, "%s+0x%lx", base,
		    (unsigned long)(a - (uintptr_t)di.dli_fbase));
	} else
		tt_line_add(l, "0x%lx", (unsigned long)a);
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

/* A table and its partner (tt_lib.partner) are wrapped together or not. */
static int
selected(const char *name)
{
	const char *p = tt_lib.partner ? tt_lib.partner(name) : NULL;

	return selected1(name) && (p == NULL || selected1(p));
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

/*
 * The real library: the tracer's variable, or the first of the usual
 * folders that has it and is not this tracer.
 */
static const char *
real_path(const char *self, char *buf, size_t size)
{
	static const char *dirs[] = {
		"/usr/lib/x86_64-linux-gnu",
		"/usr/lib64",
		"/usr/local/nvidia/lib64",
		"/usr/local/nvidia/lib",
		"/usr/lib/wsl/lib",
	};
	const char *env;
	size_t i;

	if ((env = getenv(tt_lib.env_real)) != NULL && *env != '\0') {
		if (env[0] != '/')
			tt_say("error %s %s: not an absolute path",
			    tt_lib.env_real, env);
		else if (self && same_file(env, self))
			tt_say("error %s %s: that is tabletrace",
			    tt_lib.env_real, env);
		else
			return env;
		return NULL;
	}
	for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(buf, size, "%s/%s", dirs[i], tt_lib.soname);
		if (access(buf, R_OK) == 0 && !(self && same_file(buf, self)))
			return buf;
	}
	tt_say("error no real %s found; set %s", tt_lib.soname,
	    tt_lib.env_real);
	return NULL;
}

static void
init(void)
{
	const char *env, *path;
	char buf[256];
	Dl_info self;
	int n, missing = 0, fd, calls;

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
	calls = (env = getenv("TABLETRACE_CALLS")) != NULL &&
	    strcmp(env, "1") == 0;
	use_pipe = (env = getenv("TABLETRACE_PEEK")) != NULL &&
	    strcmp(env, "pipe") == 0;
	memset(&self, 0, sizeof self);
	dladdr((void *)init, &self);

	path = real_path(self.dli_fname, buf, sizeof buf);
	if (path != NULL && (real_lib = dlopen(path,
	    RTLD_NOW | RTLD_LOCAL)) == NULL)
		tt_say("error dlopen %s: %s", path, dlerror());
	for (n = 0; n < tt_nfwd; n++) {
		tt_fwd[n] = real_lib ? dlsym(real_lib, tt_fwd_names[n]) : NULL;
		if (tt_fwd[n] == NULL) {
			tt_fwd[n] = (void *)tt_absent;
			missing++;
		}
		/* Through a trampoline that logs, then to the real one. */
		if (calls && n < TT_NCALLS) {
			fwd_real[n] = tt_fwd[n];
			tt_fwd[n] = tt_tramp_base + 16 *
			    ((size_t)TT_NTABLES * TT_NSLOTS + (size_t)n);
		}
	}
	if (tt_lib.loaded != NULL)
		tt_lib.loaded(real_lib);
	if (real_lib != NULL)
		tt_say("real %s versions %s forwarded %d missing %d self %s"
		    " calls %s", path,
		    has_versions(real_lib) == 1 ? "yes" : "no",
		    tt_nfwd - missing, missing,
		    self.dli_fname ? self.dli_fname : "?",
		    !calls ? "no" : tt_nfwd <= TT_NCALLS ? "all" : "some");
	maps_load();
}

void
tt_init(void)
{
	pthread_once(&once, init);
}

static void __attribute__((constructor))
tt_ctor(void)
{
	tt_init();
}

void *
tt_real(void)
{
	return real_lib;
}

/* Where the real library lacks a function (or is absent). */
static int
tt_absent(void)
{
	return tt_lib.absent;
}

/*
 * Copies the real table into tables[t]: the size word (or, for a table
 * without one, the words up to the first NULL), each word that points
 * into executable memory replaced by trampoline t * TT_NSLOTS + word.
 * NULL, with *why, for a table it cannot copy whole.  Called with
 * tables_mtx held.
 */
static struct tt_table *
table_wrap(const uint8_t uuid[16], void **real, const char **why)
{
	struct tt_table *tb;
	uint64_t w[TT_NSLOTS];
	size_t got;
	char prot[4];
	int j, n, t, sized = 0;

	*why = "no room";
	if (ntables == TT_NTABLES)
		return NULL;
	*why = "unreadable";
	if ((got = tt_peek((uintptr_t)real, w, sizeof w) / 8) == 0)
		return NULL;
	if (w[0] >= 8 && w[0] % 8 == 0 && w[0] < SIZE_MAX_WORD) {
		*why = w[0] / 8 > TT_NSLOTS ? "too long" : "unreadable";
		if (w[0] / 8 > got)
			return NULL;
		n = (int)(w[0] / 8);
		sized = 1;
	} else {
		for (n = 0; n < (int)got && w[n] != 0; n++)
			continue;
		*why = "no NULL ends it";
		if (n == (int)got)
			return NULL;
		n++;	/* the NULL that ends it */
	}
	t = ntables;
	tb = &tables[t];
	memset(tb, 0, sizeof *tb);
	memcpy(tb->uuid, uuid, 16);
	uuid_name(uuid, tb->name);
	tb->sized = sized;
	*why = "out of memory";
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
	*why = NULL;
	return tb;
}

/*
 * The table's words: functions as library+offset, a run of NULL words as
 * one ("4-298=0x0").  A long table takes several lines, each with the
 * same head.
 */
static void
table_log(const struct tt_table *tb)
{
	struct tt_line l;
	int j, k;

	for (j = 0; j < tb->nwords; j = k + 1) {
		if (j == 0 || l.len > sizeof l.buf - 200) {
			if (j > 0)
				tt_line_end(&l);
			tt_line_start(&l, "layout");
			tt_line_add(&l, " %s words=%d %s", tb->name,
			    tb->nwords, tb->sized ? "sized" : "sizeless");
		}
		k = j;
		if (tb->slot[j] != NULL) {
			tt_line_add(&l, " %d=", j);
			tt_line_where(&l, (uintptr_t)tb->slot[j]);
			continue;
		}
		while (tb->copy[j] == NULL && k + 1 < tb->nwords &&
		    tb->slot[k + 1] == NULL && tb->copy[k + 1] == NULL)
			k++;
		if (k > j)
			tt_line_add(&l, " %d-%d=0x0", j, k);
		else
			tt_line_add(&l, " %d=0x%lx", j,
			    (unsigned long)tb->copy[j]);
	}
	tt_line_end(&l);
}

/* The first words of a table served as it is, for the log. */
static void
table_peek_log(const char *name, void *real)
{
	struct tt_line l;
	uint64_t w[16];
	size_t got, j;

	got = tt_peek((uintptr_t)real, w, sizeof w) / 8;
	tt_line_start(&l, "layout");
	tt_line_add(&l, " %s words=%zu unwrapped", name, got);
	for (j = 0; j < got; j++) {
		tt_line_add(&l, " %zu=", j);
		tt_line_where(&l, (uintptr_t)w[j]);
	}
	tt_line_end(&l);
}

/*
 * After the real library answered a request for the table id (rc, *pp):
 * serves the copy of the table in *pp and logs the request.  Returns rc.
 */
int
tt_export(const void **pp, const void *id, int rc, uintptr_t caller)
{
	struct tt_table *tb = NULL;
	const char *served = "real", *why = NULL;
	uint8_t uuid[16];
	char name[40];
	struct tt_line l;
	int i, fresh = 0;

	if (id == NULL || tt_peek((uintptr_t)id, uuid, 16) != 16)
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
			tb = table_wrap(uuid, (void **)*pp, &why);
			fresh = tb != NULL;
		}
		pthread_mutex_unlock(&tables_mtx);
		if (tb != NULL && tb->real != *pp)
			tt_say("warning %s: the real library moved it from %p"
			    " to %p; serving the first", name,
			    (void *)tb->real, *pp);
		if (tb != NULL) {
			served = "copy";
			*pp = tb->copy;
		} else
			served = "real";
	} else if (rc == 0 && pp != NULL && *pp != NULL)
		why = "not selected";
	else
		served = "none";
	tt_line_start(&l, "export");
	tt_line_add(&l, " %s rc=%d", name, rc);
	if (tb != NULL)
		tt_line_add(&l, " table=%p size=%s%lu words=%d",
		    (void *)tb->real, tb->sized ? "" : "none:", tb->sized ?
		    (unsigned long)(uintptr_t)tb->copy[0] : 0UL, tb->nwords);
	else if (rc == 0 && pp != NULL)
		tt_line_add(&l, " table=%p", *pp);
	tt_line_add(&l, " caller=");
	tt_line_where(&l, caller);
	tt_line_add(&l, " served=%s", served);
	if (why != NULL)
		tt_line_add(&l, " (%s)", why);
	tt_line_end(&l);
	if (fresh)
		table_log(tb);
	else if (why != NULL && strcmp(why, "not selected") != 0 &&
	    strcmp(why, "no room") != 0)
		table_peek_log(name, (void *)*pp);
	return rc;
}

struct tt_table *
tt_table_named(const char *name)
{
	int i;

	for (i = 0; i < ntables; i++)
		if (strcmp(tables[i].name, name) == 0)
			return &tables[i];
	return NULL;
}

/*
 * The trampolines' C half: logs the call of a table's slot or of a
 * forwarder and returns the real function.
 */
uint64_t
tt_enter(struct tt_regs *r)
{
	struct tt_table *tb = NULL;
	int s = 0, i, fwd = r->idx >= (uint64_t)TT_NTABLES * TT_NSLOTS;
	struct tt_line l;
	char prot[4];
	uint64_t x0;

	r->seq = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
	if (fwd) {
		s = (int)(r->idx - (uint64_t)TT_NTABLES * TT_NSLOTS);
		tt_line_start(&l, "fcall");
		tt_line_add(&l, " %s", tt_fwd_names[s]);
	} else {
		tb = &tables[r->idx / TT_NSLOTS];
		s = (int)(r->idx % TT_NSLOTS);
		tt_line_start(&l, "call");
		tt_line_add(&l, " %s[%d]", tb->name, s);
	}
	tt_line_add(&l, " #%lu a=", (unsigned long)r->seq);
	for (i = 0; i < 6; i++)
		tt_line_add(&l, "%s%lx", i ? "," : "", (unsigned long)r->gp[i]);
	memcpy(&x0, r->xmm[0], 8);
	tt_line_add(&l, " x0=%lx caller=", (unsigned long)x0);
	tt_line_where(&l, r->retaddr);
	for (i = 0; i < 6; i++) {
		r->nbefore[i] = 0;
		if (!pointerish(r->gp[i]) || prot_of(r->gp[i], prot) == NULL)
			continue;
		if (prot[2] == 'x') {
			tt_line_add(&l, " f%d=", i);
			tt_line_where(&l, r->gp[i]);
			continue;
		}
		r->nbefore[i] = (uint32_t)tt_peek(r->gp[i], r->before[i],
		    TT_PEEK);
		if (r->nbefore[i] == 0)
			continue;
		tt_line_add(&l, " m%d=%c:", i, prot[1] == 'w' ? 'w' : 'r');
		line_bytes(&l, r->before[i], r->nbefore[i]);
	}
	tt_line_end(&l);
	return fwd ? (uint64_t)fwd_real[s] : (uint64_t)tb->slot[s];
}

/* The trampolines' C half after the call: result and memory written. */
void
tt_leave(struct tt_regs *r)
{
	struct tt_table *tb = NULL;
	int s, i, fwd = r->idx >= (uint64_t)TT_NTABLES * TT_NSLOTS;
	uint8_t after[TT_PEEK], deref[TT_PEEK];
	uint64_t p, x0;
	size_t n;
	struct tt_line l;
	char prot[4];

	if (fwd) {
		s = (int)(r->idx - (uint64_t)TT_NTABLES * TT_NSLOTS);
		tt_line_start(&l, "fret");
		tt_line_add(&l, " %s", tt_fwd_names[s]);
	} else {
		tb = &tables[r->idx / TT_NSLOTS];
		s = (int)(r->idx % TT_NSLOTS);
		tt_line_start(&l, "ret");
		tt_line_add(&l, " %s[%d]", tb->name, s);
	}
	memcpy(&x0, r->xret[0], 8);
	tt_line_add(&l, " #%lu rc=%d rax=%lx x0=%lx", (unsigned long)r->seq,
	    (int)(uint32_t)r->ret[0], (unsigned long)r->ret[0],
	    (unsigned long)x0);
	/*
	 * A string result (nvmlErrorString's).  Only a string: a function
	 * that returns none leaves rax as it was, often a pointer.
	 */
	if (pointerish(r->ret[0]) && prot_of(r->ret[0], prot) != NULL &&
	    prot[2] != 'x' && (n = tt_peek(r->ret[0], deref,
	    sizeof deref)) > 0 && text_len(deref, n) > 0) {
		tt_line_add(&l, " *rax=");
		line_bytes(&l, deref, n);
	}
	for (i = 0; i < 6; i++) {
		if (r->nbefore[i] == 0)
			continue;
		n = tt_peek(r->gp[i], after, r->nbefore[i]);
		if (n == r->nbefore[i] && memcmp(after, r->before[i], n) == 0)
			continue;
		tt_line_add(&l, " m%d=", i);
		line_bytes(&l, after, n);
		/* An out-pointer: what it now points to. */
		if (n >= 8) {
			memcpy(&p, after, 8);
			if (pointerish(p) && prot_of(p, prot) != NULL &&
			    prot[2] != 'x' &&
			    (n = tt_peek(p, deref, sizeof deref)) > 0) {
				tt_line_add(&l, " *m%d=", i);
				line_bytes(&l, deref, n);
			}
		}
	}
	if (!fwd && tt_lib.ret != NULL)
		tt_lib.ret(r, tb, &l);
	tt_line_end(&l);
}
