/* The commands: ls, du (stat), prune, verify, rm. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "cstore.h"
#include "exitcode.h"
#include "log.h"
#include "meter.h"
#include "parse.h"
#include "util.h"
#include "yamlio.h"

#define LOCK_WAIT	30.0	/* seconds to wait for another gleam-cache */

/* GLEAM_CACHE_WAIT, or LOCK_WAIT; a bad value is ignored with a warning. */
static double
lock_wait(void)
{
	const char *s = getenv("GLEAM_CACHE_WAIT"), *why;
	double v = 0;

	if (s == NULL || *s == '\0')
		return LOCK_WAIT;
	if (parse_duration(s, &v, &why) == -1 || v < 0) {
		log_warn("GLEAM_CACHE_WAIT=%s: %s: ignored", s, v < 0 ?
		    "negative" : why);
		return LOCK_WAIT;
	}
	return v;
}

/* The entries, oldest first; exits on an unreadable directory. */
static struct cstore_file *
scan(const struct opts *o, size_t *n)
{
	struct cstore_file *f;
	char err[1300];

	if (cstore_scan(o->dir, o->tenant, &f, n, err, sizeof err) == -1)
		fatalx(EXIT_IO, "%s", err);
	return f;
}

static void
emit(struct yw *w)
{
	const char *t;
	size_t len;

	if ((t = yw_finish(w, &len)) == NULL)
		fatalx(EXIT_SOFTWARE, "cannot write YAML");
	fwrite(t, 1, len, stdout);
	yw_free(w);
}

static void
out_done(void)
{
	if (fflush(stdout) == EOF || ferror(stdout))
		fatal(EXIT_IO, "stdout");
}

/* "45s", "12m", "3h", "9d": how long ago. */
static const char *
ago(double t, char *buf, size_t len)
{
	double d = wall_s() - t;

	if (d < 0)
		d = 0;
	if (d < 120)
		snprintf(buf, len, "%.0fs", d);
	else if (d < 7200)
		snprintf(buf, len, "%.0fm", d / 60);
	else if (d < 172800)
		snprintf(buf, len, "%.0fh", d / 3600);
	else
		snprintf(buf, len, "%.0fd", d / 86400);
	return buf;
}

static void
yw_entry(struct yw *w, const struct cstore_file *f)
{
	char hex[CSTORE_HEX_LEN + 1];

	cstore_hex(f->hash, f->hlen, hex);
	yw_map(w);
	yw_kstr(w, "tenant", f->tenant);
	yw_kstr(w, "hash", hex);
	yw_key(w, "bytes");
	yw_uint(w, f->len);
	yw_key(w, "disk_bytes");
	yw_uint(w, f->disk);
	yw_kdbl(w, "last_used", f->used, 3);
	yw_kbool(w, "pinned", f->pinned);
	yw_kbool(w, "damaged", f->bad);
	yw_end(w);
}

int
cmd_ls(const struct opts *o)
{
	struct cstore_file *f;
	char hex[CSTORE_HEX_LEN + 1], a[32], b[32], t[32];
	struct yw *w;
	size_t n, i;
	int hw = 32;		/* the HASH column: 64 with a strong name */

	f = scan(o, &n);
	for (i = 0; i < n; i++)
		if (2 * (int)f[i].hlen > hw)
			hw = 2 * (int)f[i].hlen;
	if (o->yaml) {
		if ((w = yw_new()) == NULL)
			fatalx(EXIT_IO, "out of memory");
		yw_map(w);
		yw_kstr(w, "dir", o->dir);
		yw_key(w, "entries");
		yw_seq(w);
		for (i = n; i-- > 0;)
			yw_entry(w, &f[i]);
		yw_end(w);
		yw_end(w);
		emit(w);
	} else {
		if (n > 0)
			printf("%-17s %-*s %10s %10s %9s %s\n", "TENANT", hw,
			    "HASH", "SIZE", "DISK", "USED", "PINNED");
		/* The most recently used first, as ls -t does. */
		for (i = n; i-- > 0;) {
			cstore_hex(f[i].hash, f[i].hlen, hex);
			printf("%-17s %-*s %10s %10s %9s %s\n", f[i].tenant,
			    hw, hex, f[i].bad ? "damaged" : fmt_size(f[i].len, a,
			    sizeof a), fmt_size(f[i].disk, b, sizeof b),
			    ago(f[i].used, t, sizeof t), f[i].pinned ? "yes" :
			    "no");
		}
	}
	free(f);
	out_done();
	return EXIT_OK;
}

struct tenant_sum {
	char		 name[CSTORE_TENANT_MAX];
	uint64_t	 entries, bytes;
};

int
cmd_du(const struct opts *o)
{
	struct cstore_counters c;
	struct cstore_file *f;
	struct tenant_sum *ts = NULL, *nt;
	struct yw *w;
	char s1[32], s2[32];
	size_t n, i, j, nts = 0;
	uint64_t disk = 0, data = 0, hits, asked;
	int have = cstore_read_counters(o->dir, &c) == 0;

	f = scan(o, &n);
	for (i = 0; i < n; i++) {
		disk += f[i].disk;
		data += f[i].len;
		for (j = 0; j < nts && strcmp(ts[j].name, f[i].tenant) != 0;
		    j++)
			;
		if (j == nts) {
			if ((nt = realloc(ts, (nts + 1) * sizeof *ts)) == NULL)
				fatalx(EXIT_IO, "out of memory");
			ts = nt;
			memset(&ts[nts], 0, sizeof *ts);
			snprintf(ts[nts].name, sizeof ts[nts].name, "%s",
			    f[i].tenant);
			nts++;
		}
		ts[j].entries++;
		ts[j].bytes += f[i].disk;
	}
	if (!have)
		memset(&c, 0, sizeof c);
	hits = c.ram_hits + c.disk_hits + c.gpu_hits;
	asked = hits + c.misses;
	if (o->yaml) {
		if ((w = yw_new()) == NULL)
			fatalx(EXIT_IO, "out of memory");
		yw_map(w);
		yw_kstr(w, "dir", o->dir);
		yw_key(w, "disk");
		yw_fmap(w);
		yw_kint(w, "entries", (long long)n);
		yw_key(w, "bytes"); yw_uint(w, disk);
		yw_key(w, "data_bytes"); yw_uint(w, data);
		yw_end(w);
		yw_key(w, "ram");
		yw_fmap(w);
		yw_key(w, "entries"); yw_uint(w, c.ram_entries);
		yw_key(w, "bytes"); yw_uint(w, c.ram_bytes);
		yw_end(w);
		yw_key(w, "gpu");
		yw_fmap(w);
		yw_key(w, "entries"); yw_uint(w, c.gpu_entries);
		yw_key(w, "bytes"); yw_uint(w, c.gpu_bytes);
		yw_end(w);
		yw_key(w, "hits");
		yw_fmap(w);
		yw_key(w, "ram"); yw_uint(w, c.ram_hits);
		yw_key(w, "disk"); yw_uint(w, c.disk_hits);
		yw_key(w, "gpu"); yw_uint(w, c.gpu_hits);
		yw_end(w);
		yw_key(w, "misses"); yw_uint(w, c.misses);
		yw_key(w, "hit_ratio");
		if (asked > 0)
			yw_dbl(w, (double)hits / (double)asked, 4);
		else
			yw_null(w);
		yw_key(w, "hit_bytes"); yw_uint(w, c.hit_bytes);
		yw_key(w, "miss_bytes"); yw_uint(w, c.miss_bytes);
		yw_key(w, "stored"); yw_uint(w, c.stored);
		yw_key(w, "evicted"); yw_uint(w, c.evicted);
		yw_key(w, "corrupt"); yw_uint(w, c.corrupt);
		yw_key(w, "write_errors"); yw_uint(w, c.write_errors);
		yw_key(w, "counters_updated");
		if (have)
			yw_dbl(w, c.updated, 3);
		else
			yw_null(w);
		yw_key(w, "tenants");
		yw_seq(w);
		for (j = 0; j < nts; j++) {
			yw_fmap(w);
			yw_kstr(w, "tenant", ts[j].name);
			yw_key(w, "entries"); yw_uint(w, ts[j].entries);
			yw_key(w, "bytes"); yw_uint(w, ts[j].bytes);
			yw_end(w);
		}
		yw_end(w);
		yw_end(w);
		emit(w);
	} else {
		printf("%-5s %8s %10s\n", "TIER", "ENTRIES", "SIZE");
		printf("%-5s %8zu %10s\n", "disk", n, fmt_size(disk, s1,
		    sizeof s1));
		printf("%-5s %8llu %10s\n", "ram",
		    (unsigned long long)c.ram_entries, fmt_size(c.ram_bytes,
		    s1, sizeof s1));
		printf("%-5s %8llu %10s\n", "gpu",
		    (unsigned long long)c.gpu_entries, fmt_size(c.gpu_bytes,
		    s1, sizeof s1));
		if (!have)
			printf("no counters yet (no server has used %s)\n",
			    o->dir);
		else if (asked == 0)
			printf("no requests yet\n");
		else
			printf("hits %llu (ram %llu, disk %llu, gpu %llu), "
			    "misses %llu: hit ratio %.1f%%, %s served, %s "
			    "sent\n", (unsigned long long)hits,
			    (unsigned long long)c.ram_hits,
			    (unsigned long long)c.disk_hits,
			    (unsigned long long)c.gpu_hits,
			    (unsigned long long)c.misses,
			    100.0 * (double)hits / (double)asked,
			    fmt_size(c.hit_bytes, s1, sizeof s1),
			    fmt_size(c.miss_bytes, s2, sizeof s2));
	}
	free(ts);
	free(f);
	out_done();
	return EXIT_OK;
}

/* Removes f (the lock held) unless this is a dry run; 0 if it went. */
static int
remove_one(const struct opts *o, const struct cstore_file *f)
{
	if (o->dry)
		return 0;
	if (cstore_remove(o->dir, f) == -1) {
		log_warn("%s: %s", f->path, strerror(errno));
		return -1;
	}
	return 0;
}

int
cmd_prune(const struct opts *o)
{
	struct cstore_file *f;
	struct yw *w;
	char err[1300], s1[32], s2[32], s3[32], hex[CSTORE_HEX_LEN + 1];
	double cut = o->age >= 0 ? wall_s() - o->age : -1;
	uint64_t total = 0, gone = 0, kept_pinned = 0;
	size_t n, i, ngone = 0, npinned = 0;
	int lock;

	/* Exclusive: gleam-serve holds it shared for every file it touches,
	 * and its pins (read under the lock) are current. */
	if ((lock = cstore_lock(o->dir, lock_wait(), err, sizeof err)) == -1)
		fatalx(EXIT_IO, "%s", err);
	f = scan(o, &n);
	for (i = 0; i < n; i++)
		total += f[i].disk;
	/* Oldest first: age, then least recent use, until the size holds. */
	for (i = 0; i < n; i++) {
		int old = cut >= 0 && f[i].used < cut;
		int big = o->have_size && total > o->size;

		if (!old && !big)
			continue;
		if (f[i].pinned) {
			npinned++;
			kept_pinned += f[i].disk;
			continue;
		}
		if (remove_one(o, &f[i]) == -1)
			continue;
		if (o->dry && !o->yaml) {
			cstore_hex(f[i].hash, f[i].hlen, hex);
			printf("would remove %s/%s\n", f[i].tenant, hex);
		}
		total -= f[i].disk;
		gone += f[i].disk;
		ngone++;
	}
	cstore_unlock(lock);
	if (o->yaml) {
		if ((w = yw_new()) == NULL)
			fatalx(EXIT_IO, "out of memory");
		yw_map(w);
		yw_kstr(w, "dir", o->dir);
		yw_kbool(w, "dry_run", o->dry);
		yw_kint(w, "removed", (long long)ngone);
		yw_key(w, "removed_bytes"); yw_uint(w, gone);
		yw_kint(w, "entries_left", (long long)(n - ngone));
		yw_key(w, "bytes_left"); yw_uint(w, total);
		yw_kint(w, "pinned_kept", (long long)npinned);
		yw_end(w);
		emit(w);
	} else if (!o->quiet && (ngone > 0 || npinned > 0)) {
		/* Silent when there was nothing to do: cron mails nothing. */
		printf("%s %zu entries (%s); %s left in %zu\n", o->dry ?
		    "would remove" : "removed", ngone, fmt_size(gone, s1,
		    sizeof s1), fmt_size(total, s2, sizeof s2), n - ngone);
		if (npinned > 0)
			printf("kept %zu entries (%s) in use by a client\n",
			    npinned, fmt_size(kept_pinned, s3, sizeof s3));
	}
	free(f);
	out_done();
	return EXIT_OK;
}

int
cmd_verify(const struct opts *o)
{
	struct cstore_file *f;
	struct yw *w = NULL;
	struct meter m;
	char why[256], err[1300], hex[CSTORE_HEX_LEN + 1], what[64], sz[32];
	size_t n, i, nbad = 0, nrm = 0;
	uint64_t all = 0, done = 0, t;
	int lock = -1;
	int *bad;

	f = scan(o, &n);
	for (i = 0; i < n; i++)
		all += f[i].len;
	meter_start(&m, STDERR_FILENO, meter_mode(STDERR_FILENO, o->quiet),
	    now_ns());
	if ((bad = calloc(n + 1, sizeof *bad)) == NULL)
		fatalx(EXIT_IO, "out of memory");
	if (o->yaml) {
		if ((w = yw_new()) == NULL)
			fatalx(EXIT_IO, "out of memory");
		yw_map(w);
		yw_kstr(w, "dir", o->dir);
		yw_key(w, "corrupt");
		yw_seq(w);
	}
	for (i = 0; i < n; done += f[i].len, i++) {
		if (meter_due(&m, (t = now_ns()))) {
			snprintf(what, sizeof what, "verify %zu/%zu:", i, n);
			meter_show(&m, what, done, all, t);
		}
		if (cstore_verify_file(f[i].path, cstore_naming(f[i].tenant),
		    f[i].hash, why, sizeof why) == 0)
			continue;
		if (access(f[i].path, F_OK) == -1 && errno == ENOENT)
			continue;	/* removed meanwhile: not corrupt */
		bad[i] = 1;
		nbad++;
		if (o->remove) {
			if (lock == -1 && (lock = cstore_lock(o->dir,
			    lock_wait(), err, sizeof err)) == -1)
				fatalx(EXIT_IO, "%s", err);
			if (cstore_remove(o->dir, &f[i]) == 0)
				nrm++, bad[i] = 2;
			else
				log_warn("%s: %s", f[i].path,
				    strerror(errno));
		}
		cstore_hex(f[i].hash, f[i].hlen, hex);
		if (o->yaml) {
			yw_fmap(w);
			yw_kstr(w, "tenant", f[i].tenant);
			yw_kstr(w, "hash", hex);
			yw_kstr(w, "reason", why);
			yw_kbool(w, "removed", bad[i] == 2);
			yw_end(w);
		} else {
			/* On one terminal, the line would run into it. */
			meter_done(&m);
			printf("corrupt: %s/%s: %s%s\n", f[i].tenant, hex, why,
			    bad[i] == 2 ? ": removed" : "");
			fflush(stdout);
		}
	}
	meter_done(&m);
	cstore_unlock(lock);
	if (o->yaml) {
		yw_end(w);
		yw_kint(w, "checked", (long long)n);
		yw_kint(w, "removed", (long long)nrm);
		yw_end(w);
		emit(w);
	} else if (!o->quiet)
		printf("verified %zu entries (%s): %zu corrupt, %zu removed\n",
		    n, fmt_size(all, sz, sizeof sz), nbad, nrm);
	free(bad);
	free(f);
	out_done();
	return nbad > nrm ? EXIT_FAIL : EXIT_OK;
}

int
cmd_rm(const struct opts *o, int argc, char **argv)
{
	struct cstore_file *f;
	uint8_t h[CSTORE_HASH_LEN];
	char err[1300];
	size_t n, i;
	int a, lock, found, hl, rc = EXIT_OK;

	for (a = 0; a < argc; a++)
		if (cstore_unhex(argv[a], h) == -1) {
			log_error("rm: '%s': not a hash (64 or 32 hex digits)",
			    argv[a]);
			return EXIT_USAGE;
		}
	if ((lock = cstore_lock(o->dir, lock_wait(), err, sizeof err)) == -1)
		fatalx(EXIT_IO, "%s", err);
	f = scan(o, &n);
	for (a = 0; a < argc; a++) {
		hl = cstore_unhex(argv[a], h);
		for (i = 0, found = 0; i < n; i++) {
			if ((size_t)hl != f[i].hlen ||
			    memcmp(f[i].hash, h, sizeof h) != 0)
				continue;
			found = 1;
			if (cstore_remove(o->dir, &f[i]) == -1) {
				log_error("%s: %s", f[i].path,
				    strerror(errno));
				rc = EXIT_IO;
			}
		}
		if (!found) {
			log_warn("rm: %s: no such entry", argv[a]);
			if (rc == EXIT_OK)
				rc = EXIT_FAIL;
		}
	}
	cstore_unlock(lock);
	free(f);
	return rc;
}
