/*
 * The weight cache's content store: a RAM tier and a disk tier, one index.
 *
 * Contract (eviction): an entry's RAM bytes stay while a ref to it is
 * live; eviction takes the least recently used entries without refs until
 * the new bytes fit.  The disk tier is the same by file; entries pinned by
 * a live client (the pins file) are never evicted by anyone.  One mutex
 * guards the index; disk reads, writes and compression run outside it,
 * with the entry's ref count keeping it in place meanwhile.
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <zstd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cbuf.h"
#include "cfgtab.h"
#include "cname.h"
#include "cstore.h"
#include "log.h"
#include "parse.h"
#include "util.h"
#include "yamlio.h"

#define NBUCKET		(1u << 16)
#define HDR_MAGIC	"GLMCACHE"
#define HDR_VERSION	3	/* 3: a naming and 32 bytes of name */
#define HDR_VERSION2	2	/* 2: weak names, 16 bytes; 1: not tree names */
#define CODEC_RAW	0
#define CODEC_ZSTD	1

struct centry {
	char		 tenant[CSTORE_TENANT_MAX];
	uint8_t		 hash[CSTORE_HASH_LEN];
	uint64_t	 len;
	uint64_t	 disk;		/* bytes of its file; 0: not on disk */
	void		*ram;		/* its bytes in RAM, or NULL */
	int		 refs;
	double		 used;
	struct centry	*hnext;
	struct centry	*prev, *next;	/* LRU: head is the most recent */
};

/* An entry waiting for the writer thread (its RAM bytes held by a ref). */
struct wjob {
	struct centry	*e;
	struct wjob	*next;
};

#define WQ_MAX		(1ull << 30)	/* bytes waiting to be written */

struct pin {
	const void	*owner;
	char		 tenant[CSTORE_TENANT_MAX];
	uint8_t		 hash[CSTORE_HASH_LEN];
};

struct cstore {
	pthread_mutex_t		 mu;
	pthread_rwlock_t	 gate;		/* disk reads and writes, for fork */
	struct cstore		*snext;		/* all stores, for fork */
	struct cstore_conf	 conf;
	int			 disk_ok;
	int			 lockfd;
	struct centry		**bucket;
	struct centry		*head, *tail;
	uint64_t		 ram_bytes, ram_entries;
	uint64_t		 disk_bytes, disk_entries;
	struct cstore_counters	 c;
	double			 flushed;
	struct pin		*pins;
	size_t			 npins, pcap;
	struct stat		 gen;		/* the gen file when last read */
	unsigned		 tmpseq;
	/* The writer: new entries reach the disk behind the client. */
	pthread_t		 wt;
	int			 wt_on, wt_stop;
	pthread_cond_t		 wcv, wdone;
	struct wjob		*wq, *wq_tail;
	uint64_t		 wq_bytes;
};

/* ---- names ------------------------------------------------------------- */

int
cstore_naming(const char *tenant)
{
	return strncmp(tenant, "g+", 2) == 0 ? CN_STRONG : CN_WEAK;
}

size_t
cstore_name_len(int naming)
{
	return naming == CN_STRONG ? CSTORE_HASH_LEN : CSTORE_WEAK_LEN;
}

void
cstore_hash(int naming, const void *p, size_t len,
    uint8_t out[CSTORE_HASH_LEN])
{
	if (naming == CN_STRONG)
		cname_strong(p, len, out);
	else {
		cname(p, len, out);
		memset(out + CSTORE_WEAK_LEN, 0, CSTORE_HASH_LEN -
		    CSTORE_WEAK_LEN);
	}
}

void
cstore_hex(const uint8_t h[CSTORE_HASH_LEN], size_t len,
    char out[CSTORE_HEX_LEN + 1])
{
	static const char hx[] = "0123456789abcdef";
	size_t i;

	if (len > CSTORE_HASH_LEN)
		len = CSTORE_HASH_LEN;
	for (i = 0; i < len; i++) {
		out[2 * i] = hx[h[i] >> 4];
		out[2 * i + 1] = hx[h[i] & 15];
	}
	out[2 * len] = '\0';
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int
cstore_unhex(const char *s, uint8_t out[CSTORE_HASH_LEN])
{
	size_t i, n = strlen(s) / 2;
	int a, b;

	if (strlen(s) != 2 * CSTORE_HASH_LEN && strlen(s) !=
	    2 * CSTORE_WEAK_LEN)
		return -1;
	memset(out, 0, CSTORE_HASH_LEN);
	for (i = 0; i < n; i++) {
		if ((a = hexval(s[2 * i])) < 0 || (b = hexval(s[2 * i + 1])) < 0)
			return -1;
		out[i] = (uint8_t)(a << 4 | b);
	}
	return (int)n;
}

void
cstore_tenant(const void *key, size_t len, char out[CSTORE_TENANT_MAX])
{
	static const char ctx[] = "gleam weight cache tenant v1";
	uint8_t h[8];
	char hex[CSTORE_HEX_LEN + 1];
	uint8_t full[CSTORE_HASH_LEN];

	if (key == NULL) {
		snprintf(out, CSTORE_TENANT_MAX, "nokey");
		return;
	}
	/* A keyed hash: the tenant's name says nothing usable of the key. */
	crypto_generichash(h, sizeof h, key, len, (const uint8_t *)ctx,
	    sizeof ctx - 1);
	memset(full, 0, sizeof full);
	memcpy(full, h, sizeof h);
	cstore_hex(full, sizeof h, hex);
	snprintf(out, CSTORE_TENANT_MAX, "k%.16s", hex);
}

void
cstore_tenant_ident(const char *name, const void *key, size_t len,
    char out[CSTORE_TENANT_MAX])
{
	char k[CSTORE_TENANT_MAX];

	cstore_tenant(key, len, k);
	snprintf(out, CSTORE_TENANT_MAX, "i+%.63s+%.16s", name, k + 1);
}

void
cstore_tenant_group(const char *group, char out[CSTORE_TENANT_MAX])
{
	snprintf(out, CSTORE_TENANT_MAX, "g+%.63s", group);
}

/* Letters, digits, "._-@": an identity's or group's name (auth.h). */
static int
tenant_name(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > 63)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' &&
		    s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		    strchr("._-@", s[i]) != NULL) || s[i] == '\0')
			return 0;
	return 1;
}

static int
tenant_hex(const char *t)
{
	size_t i;

	if (strlen(t) != 16)
		return 0;
	for (i = 0; i < 16; i++)
		if (hexval(t[i]) < 0)
			return 0;
	return 1;
}

int
cstore_tenant_valid(const char *t)
{
	const char *p;

	if (strcmp(t, "nokey") == 0)
		return 1;
	if (t[0] == 'k')
		return tenant_hex(t + 1);
	if (strncmp(t, "g+", 2) == 0)
		return tenant_name(t + 2, strlen(t + 2));
	if (strncmp(t, "i+", 2) == 0 && (p = strrchr(t + 2, '+')) != NULL)
		return tenant_name(t + 2, (size_t)(p - t - 2)) &&
		    tenant_hex(p + 1);
	return 0;
}

int
cstore_tenant_sel(const char *sel)
{
	return cstore_tenant_valid(sel) || tenant_name(sel, strlen(sel));
}

int
cstore_tenant_match(const char *t, const char *sel)
{
	size_t n = strlen(sel);

	if (strcmp(t, sel) == 0)
		return 1;
	return tenant_name(sel, n) && strncmp(t, "i+", 2) == 0 &&
	    strncmp(t + 2, sel, n) == 0 && t[2 + n] == '+' &&
	    strchr(t + 3 + n, '+') == NULL;
}

/* ---- entry files ------------------------------------------------------- */

static void
put64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

int
cstore_encode(const void *p, size_t len, int naming,
    const uint8_t hash[CSTORE_HASH_LEN], int level, void **out,
    size_t *outlen)
{
	uint8_t *b;
	size_t bound = ZSTD_compressBound(len), n;
	uint32_t codec = CODEC_RAW;

	*out = NULL;
	if ((b = malloc(CSTORE_HDR_LEN + (level > 0 ? bound : len))) == NULL)
		return -1;
	n = len;
	/* A sample first: weights seldom shrink, and trying costs a core. */
	if (level > 0 && len > (256u << 10)) {
		size_t sn = ZSTD_compress(b + CSTORE_HDR_LEN, bound,
		    (const char *)p + len / 2 - (32u << 10), 64u << 10, level);

		if (ZSTD_isError(sn) || sn > (64u << 10) / 100 * 97)
			level = 0;
	}
	if (level > 0) {
		n = ZSTD_compress(b + CSTORE_HDR_LEN, bound, p, len, level);
		if (ZSTD_isError(n) || n >= len)
			n = len;	/* incompressible: keep it raw */
		else
			codec = CODEC_ZSTD;
	}
	if (codec == CODEC_RAW)
		memcpy(b + CSTORE_HDR_LEN, p, len);
	/* Version 3: magic, version, codec, bytes, stored bytes, naming, 4
	 * zero bytes, time; zeros to 64; the name, zero-filled to 96. */
	memset(b, 0, CSTORE_HDR_LEN);
	memcpy(b, HDR_MAGIC, 8);
	put32(b + 8, HDR_VERSION);
	put32(b + 12, codec);
	put64(b + 16, len);
	put64(b + 24, n);
	put32(b + 32, naming == CN_STRONG ? CN_STRONG : CN_WEAK);
	put64(b + 40, (uint64_t)time(NULL));
	memcpy(b + 64, hash, cstore_name_len(naming));
	*out = b;
	*outlen = CSTORE_HDR_LEN + n;
	return 0;
}

/* A header's fields, of version 3 or 2. */
struct hdr {
	uint64_t	 raw;		/* bytes of the entry */
	uint32_t	 codec;
	int		 naming;
	size_t		 len;		/* the header's bytes */
	uint8_t		 name[CSTORE_HASH_LEN];	/* zero-filled */
};

/*
 * The header of a file of len bytes, of which b holds at least the
 * first min(len, CSTORE_HDR_LEN); -1 with a reason if it is not one of
 * ours.  With naming non-zero, the header's must be it.
 */
static int
hdr_check(const uint8_t *b, size_t len, int naming, struct hdr *h,
    char *why, size_t whylen)
{
	uint64_t plen;
	uint32_t v, nm;

	memset(h, 0, sizeof *h);
	if (len < CSTORE_HDR2_LEN || memcmp(b, HDR_MAGIC, 8) != 0) {
		snprintf(why, whylen, "not a cache entry");
		return -1;
	}
	v = get32(b + 8);
	if (v == HDR_VERSION2) {
		/* Version 2: the weak name at 32, 64 bytes in all. */
		h->len = CSTORE_HDR2_LEN;
		h->naming = CN_WEAK;
		memcpy(h->name, b + 32, CSTORE_WEAK_LEN);
	} else if (v == HDR_VERSION) {
		if (len < CSTORE_HDR_LEN) {
			snprintf(why, whylen, "truncated or bad lengths");
			return -1;
		}
		nm = get32(b + 32);
		if (nm != CN_WEAK && nm != CN_STRONG) {
			snprintf(why, whylen, "unknown naming %u", nm);
			return -1;
		}
		h->len = CSTORE_HDR_LEN;
		h->naming = (int)nm;
		memcpy(h->name, b + 64, cstore_name_len(h->naming));
	} else {
		snprintf(why, whylen, "entry version %u", v);
		return -1;
	}
	if (naming != 0 && h->naming != naming) {
		snprintf(why, whylen, "%s name in a tenant %s", h->naming ==
		    CN_WEAK ? "an XXH3-128" : "a BLAKE2b-256", naming ==
		    CN_STRONG ? "of a group (BLAKE2b-256 names)" :
		    "of XXH3-128 names");
		return -1;
	}
	h->codec = get32(b + 12);
	h->raw = get64(b + 16);
	plen = get64(b + 24);
	if (h->codec != CODEC_RAW && h->codec != CODEC_ZSTD) {
		snprintf(why, whylen, "unknown codec %u", h->codec);
		return -1;
	}
	if (h->raw > CSTORE_ENTRY_MAX || plen != len - h->len ||
	    (h->codec == CODEC_RAW && plen != h->raw)) {
		snprintf(why, whylen, "truncated or bad lengths");
		return -1;
	}
	return 0;
}

int
cstore_decode(const void *p, size_t len, int naming, const uint8_t *want,
    void **out, size_t *outlen, char *why, size_t whylen)
{
	const uint8_t *b = p;
	uint8_t h[CSTORE_HASH_LEN];
	struct hdr hd;
	uint64_t raw;
	unsigned long long fsz;
	void *o;
	size_t n;

	*out = NULL;
	if (hdr_check(b, len, naming, &hd, why, whylen) == -1)
		return -1;
	raw = hd.raw;
	if (want != NULL && memcmp(hd.name, want, CSTORE_HASH_LEN) != 0) {
		snprintf(why, whylen, "holds another entry");
		return -1;
	}
	if (hd.codec == CODEC_ZSTD) {
		fsz = ZSTD_getFrameContentSize(b + hd.len, len - hd.len);
		/* zstd's best is an RLE block of 4 bytes per 128 KiB: a
		 * larger claim is a lie, not worth the allocation. */
		if (fsz != raw || raw / 32768 > len - hd.len + 4) {
			snprintf(why, whylen, "compressed frame damaged");
			return -1;
		}
	}
	if ((o = malloc(raw ? raw : 1)) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (hd.codec == CODEC_ZSTD) {
		n = ZSTD_decompress(o, raw, b + hd.len, len - hd.len);
		if (ZSTD_isError(n) || n != raw) {
			snprintf(why, whylen, "compressed frame damaged");
			free(o);
			return -1;
		}
	} else
		memcpy(o, b + hd.len, raw);
	cstore_hash(hd.naming, o, raw, h);
	if (memcmp(h, hd.name, CSTORE_HASH_LEN) != 0) {
		snprintf(why, whylen, "bytes do not match the hash");
		free(o);
		return -1;
	}
	*out = o;
	*outlen = raw;
	return 0;
}

/* Reads a whole file; *out malloc'd.  -1 with errno set. */
static int
read_file(const char *path, uint64_t max, void **out, size_t *len)
{
	struct stat st;
	uint8_t *b;
	size_t off = 0;
	ssize_t n;
	int fd, e;

	*out = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || (uint64_t)st.st_size > max) {
		e = errno ? errno : EFBIG;
		close(fd);
		errno = (uint64_t)st.st_size > max ? EFBIG : e;
		return -1;
	}
	if ((b = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	while (off < (size_t)st.st_size) {
		n = read(fd, b + off, (size_t)st.st_size - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	*out = b;
	*len = off;
	return 0;
}

int
cstore_verify_file(const char *path, int naming,
    const uint8_t hash[CSTORE_HASH_LEN], char *why, size_t whylen)
{
	void *b, *o;
	size_t len, olen;
	int rc;

	if (read_file(path, CSTORE_ENTRY_MAX + CSTORE_HDR_LEN + (1 << 20),
	    &b, &len) == -1) {
		snprintf(why, whylen, "%s", strerror(errno));
		return -1;
	}
	rc = cstore_decode(b, len, naming, hash, &o, &olen, why, whylen);
	free(b);
	free(o);
	return rc;
}

/* ---- the directory ----------------------------------------------------- */

static int
entry_path(char *buf, size_t len, const char *dir, const char *tenant,
    const uint8_t hash[CSTORE_HASH_LEN])
{
	char hex[CSTORE_HEX_LEN + 1];

	cstore_hex(hash, cstore_name_len(cstore_naming(tenant)), hex);
	return (size_t)snprintf(buf, len, "%s/data/%s/%.2s/%s", dir, tenant,
	    hex, hex) >= len ? -1 : 0;
}

int
cstore_lock(const char *dir, double timeout, char *err, size_t errlen)
{
	char path[1200];
	double end = now_s() + timeout;
	int fd;

	snprintf(path, sizeof path, "%s/lock", dir);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno != EWOULDBLOCK || now_s() > end) {
			snprintf(err, errlen, "%s: %s", path, errno ==
			    EWOULDBLOCK ? "held by another process" :
			    strerror(errno));
			close(fd);
			return -1;
		}
		usleep(10000);
	}
	return fd;
}

void
cstore_unlock(int fd)
{
	if (fd >= 0) {
		flock(fd, LOCK_UN);
		close(fd);
	}
}

/* Bumps the gen file, which tells a running gleam-serve to recount. */
static void
gen_bump(const char *dir)
{
	char path[1200], buf[32], err[256];
	unsigned long long g = 0;
	void *b;
	size_t len;

	snprintf(path, sizeof path, "%s/gen", dir);
	if (read_file(path, 64, &b, &len) == 0) {
		((char *)b)[len] = '\0';
		g = strtoull(b, NULL, 10);
		free(b);
	}
	len = (size_t)snprintf(buf, sizeof buf, "%llu\n", g + 1);
	file_write_atomic(path, buf, len, err, sizeof err);
}

int
cstore_remove(const char *dir, const struct cstore_file *f)
{
	if (unlink(f->path) == -1 && errno != ENOENT)
		return -1;
	gen_bump(dir);
	return 0;
}

struct pinset {
	struct cstore_file	*f;
	size_t			 n;
};

static int
file_cmp_id(const struct cstore_file *a, const char *tenant,
    const uint8_t *hash)
{
	int c = strcmp(a->tenant, tenant);

	return c != 0 ? c : memcmp(a->hash, hash, CSTORE_HASH_LEN);
}

static void
pin_mark(void *arg, const char *tenant, const uint8_t *hash)
{
	struct pinset *ps = arg;
	size_t i;

	for (i = 0; i < ps->n; i++)
		if (file_cmp_id(&ps->f[i], tenant, hash) == 0)
			ps->f[i].pinned = 1;
}

int
cstore_parse_pins(const char *text, size_t len,
    void (*fn)(void *, const char *, const uint8_t *), void *arg,
    int check_pid)
{
	char line[256], tenant[CSTORE_TENANT_MAX], hex[CSTORE_HEX_LEN + 2];
	int k;
	uint8_t h[CSTORE_HASH_LEN];
	const char *p = text, *end = text + len, *nl;
	long pid;
	int n = 0;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		if ((size_t)(nl - p) < sizeof line) {
			memcpy(line, p, (size_t)(nl - p));
			line[nl - p] = '\0';
			if (sscanf(line, "%ld %95s %65s", &pid, tenant, hex) == 3 &&
			    pid > 0 && cstore_tenant_valid(tenant) &&
			    (k = cstore_unhex(hex, h)) > 0 && (size_t)k ==
			    cstore_name_len(cstore_naming(tenant)) && (!check_pid ||
			    kill((pid_t)pid, 0) == 0 || errno == EPERM)) {
				fn(arg, tenant, h);
				n++;
			}
		}
		p = nl + 1;
	}
	return n;
}

static int
file_cmp_used(const void *a, const void *b)
{
	const struct cstore_file *x = a, *y = b;

	if (x->used != y->used)
		return x->used < y->used ? -1 : 1;
	return strcmp(x->path, y->path);
}

/*
 * Reads an entry file's header into f; marks it bad if unreadable, if
 * it names another entry, or if its naming is not its tenant's.
 */
static void
scan_one(struct cstore_file *f)
{
	uint8_t b[CSTORE_HDR_LEN];
	char why[128];
	struct hdr hd;
	ssize_t n;
	int fd;

	f->bad = 1;
	if ((fd = open(f->path, O_RDONLY | O_CLOEXEC)) == -1)
		return;
	n = read(fd, b, sizeof b);
	close(fd);
	if (n < CSTORE_HDR2_LEN || (uint64_t)n > f->disk)
		return;
	/* Only the header: the lengths are checked against the file's size. */
	if (hdr_check(b, (size_t)f->disk, cstore_naming(f->tenant), &hd, why,
	    sizeof why) == -1 || (size_t)n < hd.len ||
	    memcmp(hd.name, f->hash, CSTORE_HASH_LEN) != 0)
		return;
	f->len = hd.raw;
	f->bad = 0;
}

int
cstore_scan(const char *dir, const char *tenant, struct cstore_file **out,
    size_t *np, char *err, size_t errlen)
{
	struct cstore_file *f = NULL, *nf;
	struct pinset ps;
	struct stat st;
	struct dirent *td, *xd, *ed;
	DIR *dt, *dx, *de;
	char path[1200];
	size_t n = 0, cap = 0;
	void *pins;
	size_t plen;

	*out = NULL;
	*np = 0;
	snprintf(path, sizeof path, "%s/data", dir);
	if ((dt = opendir(path)) == NULL) {
		if (errno == ENOENT && stat(dir, &st) == 0)
			return 0;	/* an empty cache */
		snprintf(err, errlen, "%s: %s", errno == ENOENT ? dir : path,
		    strerror(errno));
		return -1;
	}
	while ((td = readdir(dt)) != NULL) {
		if (!cstore_tenant_valid(td->d_name) || (tenant != NULL &&
		    !cstore_tenant_match(td->d_name, tenant)))
			continue;
		snprintf(path, sizeof path, "%s/data/%s", dir, td->d_name);
		if ((dx = opendir(path)) == NULL)
			continue;
		while ((xd = readdir(dx)) != NULL) {
			if (strlen(xd->d_name) != 2 || xd->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "%s/data/%s/%s", dir,
			    td->d_name, xd->d_name);
			if ((de = opendir(path)) == NULL)
				continue;
			while ((ed = readdir(de)) != NULL) {
				uint8_t h[CSTORE_HASH_LEN];
				int hl;

				/* Either naming's length: a name of the other
				 * is listed, and damaged (scan_one). */
				if ((hl = cstore_unhex(ed->d_name, h)) == -1 ||
				    strncmp(ed->d_name, xd->d_name, 2) != 0)
					continue;
				if (n == cap) {
					cap = cap ? cap * 2 : 256;
					if ((nf = realloc(f, cap * sizeof *f)) ==
					    NULL) {
						closedir(de);
						closedir(dx);
						closedir(dt);
						free(f);
						snprintf(err, errlen,
						    "out of memory");
						return -1;
					}
					f = nf;
				}
				memset(&f[n], 0, sizeof f[n]);
				snprintf(f[n].tenant, sizeof f[n].tenant,
				    "%.95s", td->d_name);
				memcpy(f[n].hash, h, sizeof h);
				f[n].hlen = (size_t)hl;
				if ((size_t)snprintf(f[n].path,
				    sizeof f[n].path, "%.1100s/%.64s", path,
				    ed->d_name) >= sizeof f[n].path ||
				    stat(f[n].path, &st) == -1 ||
				    !S_ISREG(st.st_mode))
					continue;
				f[n].disk = (uint64_t)st.st_size;
				f[n].used = (double)st.st_mtim.tv_sec +
				    (double)st.st_mtim.tv_nsec / 1e9;
				scan_one(&f[n]);
				n++;
			}
			closedir(de);
		}
		closedir(dx);
	}
	closedir(dt);
	if (n > 0)
		qsort(f, n, sizeof *f, file_cmp_used);
	snprintf(path, sizeof path, "%s/pins", dir);
	if (n > 0 && read_file(path, 1u << 30, &pins, &plen) == 0) {
		ps.f = f;
		ps.n = n;
		cstore_parse_pins(pins, plen, pin_mark, &ps, 1);
		free(pins);
	}
	*out = f;
	*np = n;
	return 0;
}

/* ---- counters ---------------------------------------------------------- */

#define COUNTER_KEYS(X)							\
	X(ram_hits) X(disk_hits) X(gpu_hits) X(misses) X(hit_bytes)	\
	X(miss_bytes) X(stored) X(stored_bytes) X(evicted) X(corrupt)	\
	X(write_errors) X(ram_bytes) X(ram_entries) X(gpu_bytes)	\
	X(gpu_entries) X(disk_bytes) X(disk_entries)

#define X(k)	{ #k, CFG_SIZE, CFG_FIELD(struct cstore_counters, k) },
static const struct cfg_key cstore_counter_keys[] = {
	COUNTER_KEYS(X)
	{ "updated", CFG_DBL, CFG_FIELD(struct cstore_counters, updated),
	    .lo = 0, .hi = 1e12 },
	{ NULL }
};
#undef X

/*
 * Leniently: another writer's counters are advice, so a key that does not
 * read (a newer or broken writer) is skipped rather than failing the rest.
 */
int
cstore_parse_counters(const void *p, size_t len, struct cstore_counters *c)
{
	const struct cfg_key *k;
	struct ydoc d;
	struct yerr err;
	yaml_node_t *root;

	memset(c, 0, sizeof *c);
	if (ydoc_load_mem(&d, "counters", p, len, &err) == -1)
		return -1;
	if ((root = ydoc_root(&d)) == NULL || root->type !=
	    YAML_MAPPING_NODE) {
		ydoc_free(&d);
		return -1;
	}
	for (k = cstore_counter_keys; k->name != NULL; k++)
		(void)cfg_get(&d, root, k, c, &err);
	ydoc_free(&d);
	return 0;
}

int
cstore_read_counters(const char *dir, struct cstore_counters *c)
{
	char path[1200];
	void *b;
	size_t len;
	int rc;

	memset(c, 0, sizeof *c);
	snprintf(path, sizeof path, "%s/counters", dir);
	if (read_file(path, 1 << 20, &b, &len) == -1)
		return -1;
	rc = cstore_parse_counters(b, len, c);
	free(b);
	return rc;
}

static void
counters_write(struct cstore *s, const struct cstore_counters *c)
{
	struct yw *w;
	const char *t;
	char path[1200], err[512];
	size_t len;

	if (!s->disk_ok)
		return;
	if ((w = yw_new()) == NULL)
		return;
	yw_map(w);
#define X(k)	yw_key(w, #k); yw_uint(w, c->k);
	COUNTER_KEYS(X)
#undef X
	yw_kdbl(w, "updated", c->updated, 3);
	yw_end(w);
	snprintf(path, sizeof path, "%s/counters", s->conf.dir);
	if ((t = yw_finish(w, &len)) != NULL &&
	    file_write_atomic(path, t, len, err, sizeof err) == -1)
		log_warn("cache: %s", err);
	yw_free(w);
}

/* ---- the index --------------------------------------------------------- */

static size_t
bucket_of(const char *tenant, const uint8_t *hash)
{
	uint64_t v;

	memcpy(&v, hash, sizeof v);
	return (size_t)((v ^ XXH3_64bits(tenant, strlen(tenant))) &
	    (NBUCKET - 1));
}

static struct centry *
idx_find(struct cstore *s, const char *tenant, const uint8_t *hash)
{
	struct centry *e;

	for (e = s->bucket[bucket_of(tenant, hash)]; e != NULL; e = e->hnext)
		if (memcmp(e->hash, hash, CSTORE_HASH_LEN) == 0 &&
		    strcmp(e->tenant, tenant) == 0)
			return e;
	return NULL;
}

static void
lru_unlink(struct cstore *s, struct centry *e)
{
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		s->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	else
		s->tail = e->prev;
	e->prev = e->next = NULL;
}

static void
lru_front(struct cstore *s, struct centry *e)
{
	e->next = s->head;
	e->prev = NULL;
	if (s->head != NULL)
		s->head->prev = e;
	s->head = e;
	if (s->tail == NULL)
		s->tail = e;
}

static void
lru_touch(struct cstore *s, struct centry *e)
{
	lru_unlink(s, e);
	lru_front(s, e);
	e->used = wall_s();
}

static struct centry *
idx_add(struct cstore *s, const char *tenant, const uint8_t *hash,
    uint64_t len)
{
	struct centry *e;
	size_t b = bucket_of(tenant, hash);

	if ((e = calloc(1, sizeof *e)) == NULL)
		return NULL;
	snprintf(e->tenant, sizeof e->tenant, "%s", tenant);
	memcpy(e->hash, hash, CSTORE_HASH_LEN);
	e->len = len;
	e->hnext = s->bucket[b];
	s->bucket[b] = e;
	lru_front(s, e);
	return e;
}

/* Frees the entry if nothing holds it any more. */
static void
idx_gc(struct cstore *s, struct centry *e)
{
	struct centry **pp;

	if (e->refs > 0 || e->ram != NULL || e->disk != 0)
		return;
	for (pp = &s->bucket[bucket_of(e->tenant, e->hash)]; *pp != e;
	    pp = &(*pp)->hnext)
		;
	*pp = e->hnext;
	lru_unlink(s, e);
	free(e);
}

static int
pinned(const struct cstore *s, const struct centry *e)
{
	size_t i;

	for (i = 0; i < s->npins; i++)
		if (memcmp(s->pins[i].hash, e->hash, CSTORE_HASH_LEN) == 0 &&
		    strcmp(s->pins[i].tenant, e->tenant) == 0)
			return 1;
	return 0;
}

/* Makes room for len bytes in RAM; 0 if it now fits. */
static int
ram_room(struct cstore *s, uint64_t len)
{
	struct centry *e, *prev;

	if (len > s->conf.ram_budget)
		return -1;
	for (e = s->tail; e != NULL && s->ram_bytes + len >
	    s->conf.ram_budget; e = prev) {
		prev = e->prev;
		if (e->ram == NULL || e->refs > 0)
			continue;
		cbuf_free(e->ram);
		e->ram = NULL;
		s->ram_bytes -= e->len;
		s->ram_entries--;
		if (e->disk == 0)
			s->c.evicted++;
		idx_gc(s, e);
	}
	return s->ram_bytes + len <= s->conf.ram_budget ? 0 : -1;
}

static void
disk_drop(struct cstore *s, struct centry *e)
{
	s->disk_bytes -= e->disk;
	s->disk_entries--;
	e->disk = 0;
}

/* Makes room for len bytes on disk; 0 if it now fits. */
static int
disk_room(struct cstore *s, uint64_t len)
{
	struct centry *e, *prev;
	char path[1200];

	if (len > s->conf.disk_budget)
		return -1;
	for (e = s->tail; e != NULL && s->disk_bytes + len >
	    s->conf.disk_budget; e = prev) {
		prev = e->prev;
		if (e->disk == 0 || e->refs > 0 || pinned(s, e))
			continue;
		if (entry_path(path, sizeof path, s->conf.dir, e->tenant,
		    e->hash) == 0 && unlink(path) == -1 && errno != ENOENT)
			continue;
		disk_drop(s, e);
		if (e->ram == NULL)
			s->c.evicted++;
		idx_gc(s, e);
	}
	return s->disk_bytes + len <= s->conf.disk_budget ? 0 : -1;
}

/* gleam-cache removed files: forget those that are gone. */
static void
disk_recount(struct cstore *s)
{
	char path[1200];
	struct stat st;
	struct centry *e, *next;

	if (stat(s->conf.dir, &st) == -1)
		return;
	snprintf(path, sizeof path, "%s/gen", s->conf.dir);
	if (stat(path, &st) == -1)
		return;
	if (st.st_ino == s->gen.st_ino && st.st_mtim.tv_sec ==
	    s->gen.st_mtim.tv_sec && st.st_mtim.tv_nsec ==
	    s->gen.st_mtim.tv_nsec)
		return;
	s->gen = st;
	for (e = s->head; e != NULL; e = next) {
		next = e->next;
		if (e->disk == 0 || entry_path(path, sizeof path, s->conf.dir,
		    e->tenant, e->hash) == -1 || access(path, F_OK) == 0)
			continue;
		disk_drop(s, e);
		idx_gc(s, e);
	}
}

/* Shared hold of the directory's lock; 0 if held, -1 if removals run. */
static int
dir_hold(struct cstore *s)
{
	if (s->lockfd < 0)
		return -1;
	return flock(s->lockfd, LOCK_SH | LOCK_NB);
}

static void
dir_release(struct cstore *s)
{
	flock(s->lockfd, LOCK_UN);
}

static void
disk_off(struct cstore *s, const char *what, int err)
{
	log_error("cache: %s: %s: going on without the disk tier", what,
	    strerror(err));
	s->disk_ok = 0;
}

/* Indexes the entries already on disk, oldest first. */
static void
disk_load(struct cstore *s)
{
	struct cstore_file *f;
	struct centry *e;
	char err[1300];
	size_t n, i;

	if (cstore_scan(s->conf.dir, NULL, &f, &n, err, sizeof err) == -1) {
		log_warn("cache: %s", err);
		return;
	}
	for (i = 0; i < n; i++) {
		if (f[i].bad) {
			log_warn("cache: %s: %s: removed", f[i].path,
			    f[i].hlen != cstore_name_len(cstore_naming(
			    f[i].tenant)) ? "named in another naming than its "
			    "tenant's (an XXH3-128 name of a group, from before "
			    "strong names?)" : "damaged header");
			unlink(f[i].path);
			s->c.corrupt++;
			continue;
		}
		if ((e = idx_add(s, f[i].tenant, f[i].hash, f[i].len)) == NULL)
			break;
		e->disk = f[i].disk;
		e->used = f[i].used;
		s->disk_bytes += e->disk;
		s->disk_entries++;
	}
	free(f);
	/* Over a budget that shrank since the last run: trim now. */
	disk_room(s, 0);
}

static int disk_write(struct cstore *, const char *, const uint8_t *,
    const void *, size_t, uint64_t *);

/* Records a finished write of e (held by a ref, which it drops). */
static void
disk_done(struct cstore *s, struct centry *e, int ok, uint64_t disk)
{
	if (ok && e->disk == 0) {
		e->disk = disk;
		s->disk_bytes += disk;
		s->disk_entries++;
	}
	e->refs--;
	idx_gc(s, e);
}

/* The writer thread: compresses and writes queued entries in order. */
static void *
writer_main(void *arg)
{
	struct cstore *s = arg;
	struct wjob *j;
	uint64_t disk = 0;
	int ok;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (s->wq == NULL && !s->wt_stop)
			pthread_cond_wait(&s->wcv, &s->mu);
		if ((j = s->wq) == NULL)
			break;		/* stopping, and nothing left */
		pthread_mutex_unlock(&s->mu);
		ok = disk_write(s, j->e->tenant, j->e->hash, j->e->ram,
		    j->e->len, &disk) == 0;
		pthread_mutex_lock(&s->mu);
		s->wq = j->next;
		if (s->wq == NULL)
			s->wq_tail = NULL;
		s->wq_bytes -= j->e->len;
		disk_done(s, j->e, ok, disk);
		free(j);
		pthread_cond_broadcast(&s->wdone);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

void
cstore_drain(struct cstore *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	while (s->wq != NULL)
		pthread_cond_wait(&s->wdone, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

/*
 * A fork (gleam-serve starts a worker per client) takes every store's lock
 * first, so that no other thread is half-way through one: a child would
 * otherwise inherit a lock held by a thread it lacks, and the heap that
 * thread had in hand (LeakSanitizer in the worker saw pins_rewrite's
 * buffer) with no one to free it.
 */
static pthread_mutex_t	 stores_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t	 stores_once = PTHREAD_ONCE_INIT;
static struct cstore	*stores;

static void
stores_prepare(void)
{
	struct cstore *s;

	pthread_mutex_lock(&stores_mu);
	for (s = stores; s != NULL; s = s->snext) {
		pthread_rwlock_wrlock(&s->gate);
		pthread_mutex_lock(&s->mu);
	}
}

static void
stores_done(void)
{
	struct cstore *s;

	for (s = stores; s != NULL; s = s->snext) {
		pthread_mutex_unlock(&s->mu);
		pthread_rwlock_unlock(&s->gate);
	}
	pthread_mutex_unlock(&stores_mu);
}

static void
stores_atfork(void)
{
	cbuf_atfork_init();	/* its lock after ours: see cbuf.h */
	pthread_atfork(stores_prepare, stores_done, stores_done);
}

static void
stores_add(struct cstore *s)
{
	pthread_once(&stores_once, stores_atfork);
	pthread_mutex_lock(&stores_mu);
	s->snext = stores;
	stores = s;
	pthread_mutex_unlock(&stores_mu);
}

static void
stores_del(struct cstore *s)
{
	struct cstore **pp;

	pthread_mutex_lock(&stores_mu);
	for (pp = &stores; *pp != NULL; pp = &(*pp)->snext)
		if (*pp == s) {
			*pp = s->snext;
			break;
		}
	pthread_mutex_unlock(&stores_mu);
}

struct cstore *
cstore_open(const struct cstore_conf *conf)
{
	struct cstore *s;
	struct cstore_counters old;
	char path[1200], err[512];

	if ((s = calloc(1, sizeof *s)) == NULL ||
	    (s->bucket = calloc(NBUCKET, sizeof *s->bucket)) == NULL) {
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	{
		pthread_rwlockattr_t ra;

		/* A fork waiting for the gate stops new readers. */
		pthread_rwlockattr_init(&ra);
		pthread_rwlockattr_setkind_np(&ra,
		    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&s->gate, &ra);
		pthread_rwlockattr_destroy(&ra);
	}
	pthread_cond_init(&s->wcv, NULL);
	pthread_cond_init(&s->wdone, NULL);
	stores_add(s);
	s->conf = *conf;
	s->lockfd = -1;
	if (s->conf.dir[0] == '\0' || s->conf.disk_budget == 0)
		return s;
	s->disk_ok = 1;
	snprintf(path, sizeof path, "%s/tmp", s->conf.dir);
	if (mkdirs(path, 0750) == -1) {
		disk_off(s, path, errno);
		return s;
	}
	snprintf(path, sizeof path, "%s/data", s->conf.dir);
	if (mkdirs(path, 0750) == -1 || access(path, W_OK) == -1) {
		disk_off(s, path, errno);
		return s;
	}
	snprintf(path, sizeof path, "%s/lock", s->conf.dir);
	if ((s->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640)) ==
	    -1) {
		disk_off(s, path, errno);
		return s;
	}
	/* Our pins from an earlier run died with it. */
	snprintf(path, sizeof path, "%s/pins", s->conf.dir);
	if (file_write_atomic(path, "", 0, err, sizeof err) == -1)
		log_warn("cache: %s", err);
	snprintf(path, sizeof path, "%s/gen", s->conf.dir);
	stat(path, &s->gen);
	if (cstore_read_counters(s->conf.dir, &old) == 0) {
		s->c = old;
		s->c.ram_bytes = s->c.ram_entries = s->c.gpu_bytes = 0;
		s->c.gpu_entries = 0;
	}
	disk_load(s);
	/* Without the thread, writes happen in the caller: slower, as sound. */
	s->wt_on = pthread_create(&s->wt, NULL, writer_main, s) == 0;
	log_info("cache: %s: %llu entries, %llu bytes on disk", s->conf.dir,
	    (unsigned long long)s->disk_entries,
	    (unsigned long long)s->disk_bytes);
	return s;
}

uint64_t
cstore_ram_budget(const struct cstore *s)
{
	return s != NULL ? s->conf.ram_budget : 0;
}

int
cstore_active(const struct cstore *s)
{
	return s != NULL && (s->conf.ram_budget > 0 || s->disk_ok);
}

void
cstore_close(struct cstore *s)
{
	struct centry *e, *next;

	if (s == NULL)
		return;
	stores_del(s);
	if (s->wt_on) {
		pthread_mutex_lock(&s->mu);
		s->wt_stop = 1;
		pthread_cond_signal(&s->wcv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->wt, NULL);
	}
	cstore_flush(s, 1);
	for (e = s->head; e != NULL; e = next) {
		next = e->next;
		cbuf_free(e->ram);
		free(e);
	}
	if (s->lockfd >= 0)
		close(s->lockfd);
	free(s->pins);
	free(s->bucket);
	pthread_cond_destroy(&s->wcv);
	pthread_cond_destroy(&s->wdone);
	pthread_mutex_destroy(&s->mu);
	pthread_rwlock_destroy(&s->gate);
	free(s);
}

static struct cstore_ref *
ref_new(struct centry *e, const void *data, size_t len, int tier, void *own)
{
	struct cstore_ref *r;

	if ((r = calloc(1, sizeof *r)) == NULL)
		return NULL;
	r->e = e;
	r->data = data;
	r->len = len;
	r->tier = tier;
	r->own = own;
	if (e != NULL)
		e->refs++;
	return r;
}

/* Reads e's file (e is held by a ref); the bytes or NULL. */
static void *
disk_read(struct cstore *s, struct centry *e, int *corrupt)
{
	char path[1200], why[256];
	void *b, *o = NULL;
	size_t len, olen;

	*corrupt = 0;
	if (entry_path(path, sizeof path, s->conf.dir, e->tenant, e->hash) ==
	    -1 || dir_hold(s) == -1)
		return NULL;
	if (read_file(path, e->disk + 1, &b, &len) == -1) {
		if (errno == ENOENT)
			*corrupt = 2;	/* gleam-cache removed it */
		else
			log_warn("cache: %s: %s", path, strerror(errno));
		dir_release(s);
		return NULL;
	}
	if (cstore_decode(b, len, cstore_naming(e->tenant), e->hash, &o, &olen,
	    why, sizeof why) == -1 ||
	    olen != e->len) {
		/* Never served: dropped, and the client sends it again. */
		log_warn("cache: %s: %s: removed", path, olen != e->len && o ?
		    "length differs from the index" : why);
		unlink(path);
		free(o);
		o = NULL;
		*corrupt = 1;
	} else {
		/* The file's mtime is the last use gleam-cache sees. */
		utimensat(AT_FDCWD, path, NULL, 0);
	}
	dir_release(s);
	free(b);
	return o;
}

struct cstore_ref *
cstore_get(struct cstore *s, const char *tenant,
    const uint8_t hash[CSTORE_HASH_LEN], uint64_t len)
{
	struct cstore_ref *r = NULL;
	struct centry *e;
	void *b;
	int corrupt, gated = 0;

	pthread_mutex_lock(&s->mu);
	if ((e = idx_find(s, tenant, hash)) == NULL || e->len != len ||
	    (e->ram == NULL && (e->disk == 0 || !s->disk_ok)))
		goto miss;
	if (e->ram != NULL) {
		if ((r = ref_new(e, e->ram, e->len, CT_RAM, NULL)) == NULL)
			goto miss;
		lru_touch(s, e);
		s->c.ram_hits++;
		s->c.hit_bytes += len;
		pthread_mutex_unlock(&s->mu);
		return r;
	}
	e->refs++;
	pthread_mutex_unlock(&s->mu);
	/* Through the gate until b is the entry's or the ref's (see
	 * disk_write). */
	pthread_rwlock_rdlock(&s->gate);
	gated = 1;
	b = disk_read(s, e, &corrupt);
	pthread_mutex_lock(&s->mu);
	e->refs--;
	if (b == NULL) {
		if (corrupt == 1)
			s->c.corrupt++;
		if (corrupt && e->disk != 0)
			disk_drop(s, e);
		idx_gc(s, e);
		goto miss;
	}
	if (e->ram != NULL) {
		/* Another thread read it meanwhile. */
		free(b);
		r = ref_new(e, e->ram, e->len, CT_DISK, NULL);
	} else if (ram_room(s, len) == 0) {
		e->ram = b;
		s->ram_bytes += len;
		s->ram_entries++;
		r = ref_new(e, e->ram, e->len, CT_DISK, NULL);
	} else if ((r = ref_new(NULL, b, len, CT_DISK, b)) == NULL)
		free(b);
	if (r == NULL)
		goto miss;
	lru_touch(s, e);
	s->c.disk_hits++;
	s->c.hit_bytes += len;
	pthread_mutex_unlock(&s->mu);
	pthread_rwlock_unlock(&s->gate);
	return r;
miss:
	s->c.misses++;
	s->c.miss_bytes += len;
	pthread_mutex_unlock(&s->mu);
	if (gated)
		pthread_rwlock_unlock(&s->gate);
	return NULL;
}

/* Writes an entry's file through tmp/ and rename; 0 or -1 (logged). */
static int
disk_write1(struct cstore *s, const char *tenant, const uint8_t *hash,
    const void *p, size_t len, uint64_t *disk)
{
	char tmp[1200], path[1200], dir[1200];
	void *enc;
	size_t elen, off = 0;
	ssize_t n;
	unsigned seq;
	int fd, e = 0;

	if (cstore_encode(p, len, cstore_naming(tenant), hash, s->conf.level,
	    &enc, &elen) == -1)
		return -1;
	pthread_mutex_lock(&s->mu);
	seq = s->tmpseq++;
	disk_recount(s);
	if (disk_room(s, elen) == -1) {
		pthread_mutex_unlock(&s->mu);
		free(enc);
		return -1;
	}
	/* Counted now, so that concurrent writers leave room for it. */
	s->disk_bytes += elen;
	pthread_mutex_unlock(&s->mu);
	entry_path(path, sizeof path, s->conf.dir, tenant, hash);
	snprintf(dir, sizeof dir, "%s", path);
	*strrchr(dir, '/') = '\0';
	snprintf(tmp, sizeof tmp, "%s/tmp/%ld.%u", s->conf.dir, (long)getpid(),
	    seq);
	if (dir_hold(s) == -1) {
		e = -1;
		goto out;
	}
	if (mkdirs(dir, 0750) == -1 || (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0640)) == -1) {
		e = errno;
		goto unlock;
	}
	while (off < elen) {
		n = write(fd, (char *)enc + off, elen - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			e = n == 0 ? ENOSPC : errno;
			break;
		}
		off += (size_t)n;
	}
	if (close(fd) == -1 && e == 0)
		e = errno;
	if (e == 0 && rename(tmp, path) == -1)
		e = errno;
	if (e != 0)
		unlink(tmp);
unlock:
	dir_release(s);
out:
	free(enc);
	pthread_mutex_lock(&s->mu);
	s->disk_bytes -= elen;
	if (e > 0) {
		s->c.write_errors++;
		/* A full disk passes; the next write tries again.  Anything
		 * else (permissions, a vanished directory) ends the tier. */
		if (e == ENOSPC || e == EDQUOT)
			log_warn("cache: %s: %s: entry not kept on disk",
			    s->conf.dir, strerror(e));
		else
			disk_off(s, path, e);
	}
	pthread_mutex_unlock(&s->mu);
	if (e != 0)
		return -1;
	*disk = elen;
	return 0;
}

/*
 * One entry compressed and written inside the store's gate: a fork waits
 * for it (stores_prepare), so that no worker inherits the compressor's
 * or the encoded entry's heap without the thread that would free it.
 * Reads and writes pass the gate together.
 */
static int
disk_write(struct cstore *s, const char *tenant, const uint8_t *hash,
    const void *p, size_t len, uint64_t *disk)
{
	int rc;

	pthread_rwlock_rdlock(&s->gate);
	rc = disk_write1(s, tenant, hash, p, len, disk);
	pthread_rwlock_unlock(&s->gate);
	return rc;
}

struct cstore_ref *
cstore_put(struct cstore *s, const char *tenant,
    const uint8_t hash[CSTORE_HASH_LEN], void *buf, size_t len)
{
	struct cstore_ref *r = NULL;
	struct centry *e;
	struct wjob *j;
	uint64_t disk = 0;
	int write, ok;

	pthread_mutex_lock(&s->mu);
	if ((e = idx_find(s, tenant, hash)) != NULL && e->len != len)
		e = NULL;	/* a collision of lengths: keep it apart */
	else if (e == NULL && (s->conf.ram_budget > 0 || s->disk_ok))
		e = idx_add(s, tenant, hash, len);
	if (e == NULL) {
		pthread_mutex_unlock(&s->mu);
		if ((r = ref_new(NULL, buf, len, CT_UPLOAD, buf)) == NULL)
			cbuf_free(buf);
		return r;
	}
	lru_touch(s, e);
	if (e->ram == NULL && ram_room(s, len) == 0) {
		e->ram = buf;
		s->ram_bytes += len;
		s->ram_entries++;
		buf = NULL;
	}
	if (e->ram != NULL)
		r = ref_new(e, e->ram, len, CT_UPLOAD, NULL);
	else
		r = ref_new(NULL, buf, len, CT_UPLOAD, buf), buf = NULL;
	write = s->disk_ok && e->disk == 0 && r != NULL;
	if (write)
		e->refs++;
	s->c.stored++;
	s->c.stored_bytes += len;
	/* Behind the client when its bytes stay in RAM meanwhile. */
	if (write && s->wt_on && e->ram != NULL &&
	    s->wq_bytes + len <= WQ_MAX && (j = calloc(1, sizeof *j)) != NULL) {
		j->e = e;
		if (s->wq_tail != NULL)
			s->wq_tail->next = j;
		else
			s->wq = j;
		s->wq_tail = j;
		s->wq_bytes += len;
		pthread_cond_signal(&s->wcv);
		write = 0;
	}
	pthread_mutex_unlock(&s->mu);
	cbuf_free(buf);
	if (!write)
		return r;
	ok = disk_write(s, tenant, hash, r->data, len, &disk) == 0;
	pthread_mutex_lock(&s->mu);
	disk_done(s, e, ok, disk);
	pthread_mutex_unlock(&s->mu);
	return r;
}

int
cstore_has(struct cstore *s, const char *tenant,
    const uint8_t hash[CSTORE_HASH_LEN])
{
	struct centry *e;
	int yes;

	if (s == NULL)
		return 0;
	pthread_mutex_lock(&s->mu);
	disk_recount(s);
	e = idx_find(s, tenant, hash);
	yes = e != NULL && (e->ram != NULL || e->disk != 0);
	pthread_mutex_unlock(&s->mu);
	return yes;
}

void
cstore_release(struct cstore *s, struct cstore_ref *r)
{
	if (r == NULL)
		return;
	if (r->e != NULL) {
		pthread_mutex_lock(&s->mu);
		r->e->refs--;
		/* A RAM entry over budget (while refs held it) goes now. */
		if (s->ram_bytes > s->conf.ram_budget)
			ram_room(s, 0);
		idx_gc(s, r->e);
		pthread_mutex_unlock(&s->mu);
	}
	cbuf_free(r->own);
	free(r);
}

/* ---- pins -------------------------------------------------------------- */

static void
pins_rewrite(struct cstore *s)
{
	char path[1200], err[512], hex[CSTORE_HEX_LEN + 1], *t = NULL;
	size_t i, len = 0;
	FILE *f;

	if (!s->disk_ok)
		return;
	if ((f = open_memstream(&t, &len)) == NULL)
		return;
	for (i = 0; i < s->npins; i++) {
		cstore_hex(s->pins[i].hash, cstore_name_len(cstore_naming(
		    s->pins[i].tenant)), hex);
		fprintf(f, "%ld %s %s\n", (long)getpid(), s->pins[i].tenant,
		    hex);
	}
	fclose(f);
	snprintf(path, sizeof path, "%s/pins", s->conf.dir);
	if (file_write_atomic(path, t, len, err, sizeof err) == -1)
		log_warn("cache: %s", err);
	free(t);
}

void
cstore_pin(struct cstore *s, const void *owner, const char *tenant,
    const uint8_t hash[CSTORE_HASH_LEN])
{
	char path[1200], line[256], hex[CSTORE_HEX_LEN + 1];
	struct pin *np;
	size_t i;
	int fd, n;

	pthread_mutex_lock(&s->mu);
	for (i = 0; i < s->npins; i++)
		if (s->pins[i].owner == owner && memcmp(s->pins[i].hash, hash,
		    CSTORE_HASH_LEN) == 0 && strcmp(s->pins[i].tenant,
		    tenant) == 0)
			goto out;
	if (s->npins == s->pcap) {
		size_t cap = s->pcap ? s->pcap * 2 : 64;
		if ((np = realloc(s->pins, cap * sizeof *np)) == NULL)
			goto out;
		s->pins = np;
		s->pcap = cap;
	}
	np = &s->pins[s->npins++];
	np->owner = owner;
	snprintf(np->tenant, sizeof np->tenant, "%s", tenant);
	memcpy(np->hash, hash, CSTORE_HASH_LEN);
	if (!s->disk_ok)
		goto out;
	/* Appended: a prune (which holds the lock) sees it or has finished. */
	cstore_hex(hash, cstore_name_len(cstore_naming(tenant)), hex);
	n = snprintf(line, sizeof line, "%ld %s %s\n", (long)getpid(), tenant,
	    hex);
	snprintf(path, sizeof path, "%s/pins", s->conf.dir);
	if (dir_hold(s) == 0) {
		if ((fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
		    0640)) != -1) {
			if (write(fd, line, (size_t)n) != n)
				log_warn("cache: %s: %s", path,
				    strerror(errno));
			close(fd);
		}
		dir_release(s);
	}
out:
	pthread_mutex_unlock(&s->mu);
}

void
cstore_unpin_all(struct cstore *s, const void *owner)
{
	size_t i, j;

	pthread_mutex_lock(&s->mu);
	for (i = j = 0; i < s->npins; i++)
		if (s->pins[i].owner != owner)
			s->pins[j++] = s->pins[i];
	if (j != s->npins) {
		s->npins = j;
		pins_rewrite(s);
	}
	pthread_mutex_unlock(&s->mu);
}

/* ---- counters ---------------------------------------------------------- */

static void
counters_now(struct cstore *s, struct cstore_counters *c)
{
	struct centry *e;

	*c = s->c;
	c->entries = 0;
	for (e = s->head; e != NULL; e = e->next)
		if (e->ram != NULL || e->disk != 0)
			c->entries++;
	c->ram_bytes = s->ram_bytes;
	c->ram_entries = s->ram_entries;
	c->disk_bytes = s->disk_bytes;
	c->disk_entries = s->disk_entries;
	c->updated = wall_s();
}

void
cstore_counters(struct cstore *s, struct cstore_counters *c)
{
	pthread_mutex_lock(&s->mu);
	counters_now(s, c);
	pthread_mutex_unlock(&s->mu);
}

void
cstore_flush(struct cstore *s, int force)
{
	struct cstore_counters c;
	double t = now_s();

	pthread_mutex_lock(&s->mu);
	if (!force && t - s->flushed < 1.0) {
		pthread_mutex_unlock(&s->mu);
		return;
	}
	s->flushed = t;
	counters_now(s, &c);
	/* Written under the lock, so that a fork (stores_prepare) never
	 * comes half-way through: the child would keep the writer's heap. */
	counters_write(s, &c);
	pthread_mutex_unlock(&s->mu);
}

void
cstore_count_gpu(struct cstore *s, int hit, uint64_t bytes,
    uint64_t resident_bytes, uint64_t resident_entries)
{
	pthread_mutex_lock(&s->mu);
	if (hit == 1) {
		s->c.gpu_hits++;
		s->c.hit_bytes += bytes;
	} else if (hit == 2) {
		s->c.gpu_hits++;
		if (s->c.ram_hits > 0)
			s->c.ram_hits--;
	}
	s->c.gpu_bytes = resident_bytes;
	s->c.gpu_entries = resident_entries;
	pthread_mutex_unlock(&s->mu);
}
