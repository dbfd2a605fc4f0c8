/*
 * Call statistics for gleam-run: calls by name, round trips, bytes each
 * way and wall time, written as YAML at exit to the file GLEAM_STATS names.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "io.h"
#include "log.h"
#include "parse.h"
#include "readahead.h"
#include "util.h"
#include "wcache.h"
#include "yamlio.h"

static struct {
	uint64_t	 calls[RPC_NCALLS];
	uint64_t	 rt_calls[RPC_NCALLS];	/* of those, round trips */
	uint64_t	 rt_ns[RPC_NCALLS];	/* and the time they waited */
	uint64_t	 round_trips;	/* calls that waited for a reply */
	uint64_t	 one_way;	/* calls that did not */
	uint64_t	 batches;	/* writes of requests to the connection */
	uint64_t	 syncs;		/* synchronizations the program asked for */
	uint64_t	 local_syncs;	/* of which answered here: stream idle */
	uint64_t	 bytes_out, bytes_in;
	uint64_t	 saved;		/* bytes compression kept off the wire */
	uint64_t	 lanes;		/* bulk lanes up */
	uint64_t	 lane_bytes;	/* bytes over them, both ways */
	uint64_t	 drops;		/* the link broke, the session resumable */
	uint64_t	 resumes;	/* and it resumed */
	uint64_t	 resent;	/* bytes sent again after a resume */
	uint64_t	 resume_ns;	/* time from drops to resumes (or loss) */
	uint64_t	 lane_drops;	/* a bulk lane broke, the session resumable */
	uint64_t	 lane_resent;	/* bytes its stripes moved again */
	uint64_t	 migrations;	/* the server moved the session */
	uint64_t	 mapped_out;	/* mapped memory's bytes pushed */
	uint64_t	 mapped_in;	/* and fetched or pulled */
	uint64_t	 mapped_fetches;	/* blocks fetched when touched */
	uint64_t	 mapped_pre;	/* bytes prefetched beside a wait */
	uint64_t	 start;
	pid_t		 pid;		/* a forked child writes nothing */
	int		 writer;	/* this process writes GLEAM_STATS */
	int		 status;	/* the exit status, once exiting */
	int		 have_status;
	int		 deferred;	/* stats_status writes them */
	int		 wanted;	/* GLEAM_STATS or GLEAM_VERBOSE set */
	char		 error[600];	/* stats_error's first reason */
} st;
static pthread_mutex_t st_lock = PTHREAD_MUTEX_INITIALIZER;

void
stats_call(uint16_t type, int oneway, int beside)
{
	const struct rpc_desc *d;

	pthread_mutex_lock(&st_lock);
	if (type >= R_OPEN && type < R_CALL_END)
		st.calls[type - R_OPEN]++;
	if (oneway)
		st.one_way++;
	/* Where the program waits for the GPU (RPC_F_WAITS): a
	 * synchronization or a copy back (not a mapped buffer's pull that
	 * goes with one, nor the one-way one that freeing a slab's piece
	 * sends). */
	if (beside || oneway)
		;
	else if ((d = rpc_lookup(type)) != NULL && (d->flags & RPC_F_WAITS))
		st.syncs++;
	pthread_mutex_unlock(&st_lock);
}

/* A call waited ns for its reply. */
void
stats_sync(uint16_t type, uint64_t ns)
{
	pthread_mutex_lock(&st_lock);
	st.round_trips++;
	if (type >= R_OPEN && type < R_CALL_END) {
		st.rt_calls[type - R_OPEN]++;
		st.rt_ns[type - R_OPEN] += ns;
	}
	pthread_mutex_unlock(&st_lock);
}

void
stats_local_sync(void)
{
	pthread_mutex_lock(&st_lock);
	st.syncs++;
	st.local_syncs++;
	pthread_mutex_unlock(&st_lock);
}

void
stats_bytes(uint64_t out, uint64_t in)
{
	pthread_mutex_lock(&st_lock);
	st.bytes_out += out;
	st.bytes_in += in;
	pthread_mutex_unlock(&st_lock);
}

/* A batch of requests went out, one write of the connection's. */
void
stats_batch(void)
{
	pthread_mutex_lock(&st_lock);
	st.batches++;
	pthread_mutex_unlock(&st_lock);
}

/* n lanes up (n and no bytes), or bytes that went over them each way. */
void
stats_lanes(unsigned n, uint64_t out, uint64_t in)
{
	pthread_mutex_lock(&st_lock);
	if (n > 0)
		st.lanes = n;
	st.lane_bytes += out + in;
	st.bytes_out += out;
	st.bytes_in += in;
	pthread_mutex_unlock(&st_lock);
}

void
stats_drop(void)
{
	pthread_mutex_lock(&st_lock);
	st.drops++;
	pthread_mutex_unlock(&st_lock);
}

void
stats_migrated(void)
{
	pthread_mutex_lock(&st_lock);
	st.migrations++;
	pthread_mutex_unlock(&st_lock);
}

void
stats_resume_end(uint64_t ns, uint64_t resent, int ok)
{
	pthread_mutex_lock(&st_lock);
	if (ok)
		st.resumes++;
	st.resent += resent;
	st.resume_ns += ns;
	pthread_mutex_unlock(&st_lock);
}

/* A bulk lane broke (and its stripe moved again: resent bytes). */
void
stats_lane_drop(uint64_t resent)
{
	pthread_mutex_lock(&st_lock);
	if (resent == 0)
		st.lane_drops++;
	st.lane_resent += resent;
	pthread_mutex_unlock(&st_lock);
}

/* Mapped or managed memory's bytes: pushed to the device, brought back. */
void
stats_mapped(uint64_t out, uint64_t in)
{
	pthread_mutex_lock(&st_lock);
	st.mapped_out += out;
	st.mapped_in += in;
	pthread_mutex_unlock(&st_lock);
}

/* A block fetched when the host touched it (prefetched 0), or n bytes
 * brought beside a synchronization (prefetched 1). */
void
stats_mapped_fetch(int prefetched, uint64_t n)
{
	pthread_mutex_lock(&st_lock);
	if (prefetched)
		st.mapped_pre += n;
	else
		st.mapped_fetches++;
	pthread_mutex_unlock(&st_lock);
}

void
stats_saved(uint64_t n)
{
	pthread_mutex_lock(&st_lock);
	st.saved += n;
	pthread_mutex_unlock(&st_lock);
}

void
stats_error(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&st_lock);
	if (st.error[0] == '\0') {
		va_start(ap, fmt);
		vsnprintf(st.error, sizeof st.error, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&st_lock);
}

/* gleam-run -v: a summary on stderr. */
static void
stats_print(void)
{
	const struct rpc_desc *d;
	int i;

	fprintf(stderr, "gleam: %s: %.3f s, %llu round trips, %llu one-way "
	    "calls, %llu synchronizations (%llu answered here), %llu bytes sent (%llu saved by "
	    "compression), %llu received\n", program_invocation_short_name,
	    (double)(now_ns() - st.start) / 1e9,
	    (unsigned long long)st.round_trips,
	    (unsigned long long)st.one_way, (unsigned long long)st.syncs,
	    (unsigned long long)st.local_syncs,
	    (unsigned long long)st.bytes_out, (unsigned long long)st.saved,
	    (unsigned long long)st.bytes_in);
	for (i = 0; i < RPC_NCALLS; i++)
		if (st.calls[i] != 0 &&
		    (d = rpc_lookup((uint16_t)(R_OPEN + i))) != NULL)
			fprintf(stderr, "gleam:   %-28s %llu (%llu waited, "
			    "%.3f s)\n", d->name,
			    (unsigned long long)st.calls[i],
			    (unsigned long long)st.rt_calls[i],
			    (double)st.rt_ns[i] / 1e9);
}

/* A mapping of the calls that waited: their count, or seconds waited. */
static void
rt_map(struct yw *w, const char *key, int secs)
{
	const struct rpc_desc *d;
	int i;

	yw_key(w, key);
	yw_map(w);
	for (i = 0; i < RPC_NCALLS; i++) {
		if (st.rt_calls[i] == 0 ||
		    (d = rpc_lookup((uint16_t)(R_OPEN + i))) == NULL)
			continue;
		if (secs)
			yw_kdbl(w, d->name, (double)st.rt_ns[i] / 1e9, 6);
		else {
			yw_key(w, d->name);
			yw_uint(w, st.rt_calls[i]);
		}
	}
	yw_end(w);
}

/*
 * The statistics are written after every exit handler, cudart's among
 * them (its modules unloaded, its context released), so that their calls
 * count whichever order the handlers were registered in: by
 * client_at_exit, a destructor, with the exit status that stats_status
 * (on_exit: what the program passed to exit or returned from main) kept.
 * An on_exit handler registered by the constructor of a library loaded
 * with the program (LD_PRELOAD) runs after the destructors, though; so
 * client_init registers it again, and where the destructor found no
 * status (a program that made no CUDA call) the late handler writes.
 */
static void	stats_write(void);

static void
stats_status(int status, void *arg)
{
	(void)arg;
	if (st.have_status)
		return;
	st.status = status;
	st.have_status = 1;
	if (st.deferred)
		stats_write();
}

void
stats_arm(void)
{
	if (st.wanted)
		on_exit(stats_status, NULL);
}

void
stats_at_exit(void)
{
	if (st.have_status)
		stats_write();
	else
		st.deferred = 1;
}

/* At exit: the statistics, if asked for. */
static void
stats_write(void)
{
	int status = st.status;

	if (getpid() == st.pid && getenv("GLEAM_VERBOSE") != NULL)
		stats_print();
	const char *path = getenv("GLEAM_STATS");
	const struct rpc_desc *d;
	struct wcache_stats wc;
	struct yw *w;
	const char *text;
	char err[512];
	size_t len;
	int i;

	if (path == NULL || *path == '\0' || getpid() != st.pid ||
	    !st.writer || (w = yw_new()) == NULL)
		return;
	pthread_mutex_lock(&st_lock);
	yw_map(w);
	yw_kstr(w, "program", program_invocation_short_name);
	{
		const char *srv = io_peer();

		if (srv == NULL || *srv == '\0')
			srv = getenv("GLEAM_SERVER");
		yw_kstr(w, "server", srv != NULL && *srv != '\0' ? srv : NULL);
	}
	yw_kstr(w, "error", st.error[0] != '\0' ? st.error : NULL);
	yw_kint(w, "exit", status);
	yw_kdbl(w, "wall_s", (double)(now_ns() - st.start) / 1e9, 3);
	wcache_stats(&wc);
	{
		/* The counters, in the documented order (gleam-run(1)). */
		const struct {
			const char	*key;
			uint64_t	 v;
		} u[] = {
			{ "round_trips", st.round_trips },
			{ "one_way", st.one_way },
			{ "batches", st.batches },
			{ "synchronizations", st.syncs },
			{ "local_syncs", st.local_syncs },
			{ NULL, 0 },	/* round_trips_per_sync */
			{ "bytes_sent", st.bytes_out },
			{ "bytes_saved", st.saved },
			{ "bytes_received", st.bytes_in },
			{ "lanes", st.lanes },
			{ "lane_bytes", st.lane_bytes },
			{ "cache_hits", wc.hits },
			{ "cache_hit_bytes", wc.hit_bytes },
			{ "cache_misses", wc.misses },
			{ "cache_miss_bytes", wc.miss_bytes },
			{ "hash_bytes", wc.hash_bytes },
		};
		size_t k;

		for (k = 0; k < sizeof u / sizeof u[0]; k++) {
			if (u[k].key == NULL) {
				yw_kdbl(w, "round_trips_per_sync", st.syncs ?
				    (double)st.round_trips / (double)st.syncs :
				    0, 2);
				continue;
			}
			yw_key(w, u[k].key);
			yw_uint(w, u[k].v);
		}
	}
	yw_kdbl(w, "hash_s", (double)wc.hash_ns / 1e9, 6);
	yw_key(w, "drops");
	yw_uint(w, st.drops);
	yw_key(w, "resumes");
	yw_uint(w, st.resumes);
	yw_key(w, "bytes_resent");
	yw_uint(w, st.resent);
	yw_kdbl(w, "resume_s", (double)st.resume_ns / 1e9, 6);
	yw_key(w, "lane_drops");
	yw_uint(w, st.lane_drops);
	yw_key(w, "lane_bytes_resent");
	yw_uint(w, st.lane_resent);
	yw_key(w, "migrations");
	yw_uint(w, st.migrations);
	yw_key(w, "mapped_bytes_pushed");
	yw_uint(w, st.mapped_out);
	yw_key(w, "mapped_bytes_fetched");
	yw_uint(w, st.mapped_in);
	yw_key(w, "mapped_fetches");
	yw_uint(w, st.mapped_fetches);
	yw_key(w, "mapped_bytes_prefetched");
	yw_uint(w, st.mapped_pre);
	yw_key(w, "mapped_faults");
	yw_uint(w, mapped_faults());
	{
		uint64_t r, b, h;

		rahead_stats(&r, &b, &h);
		yw_key(w, "reads_ahead");
		yw_uint(w, r);
		yw_key(w, "read_ahead_bytes");
		yw_uint(w, b);
		yw_key(w, "copies_read_ahead");
		yw_uint(w, h);
	}
	yw_key(w, "calls");
	yw_map(w);
	for (i = 0; i < RPC_NCALLS; i++) {
		if (st.calls[i] == 0 || (d = rpc_lookup((uint16_t)(R_OPEN + i)))
		    == NULL)
			continue;
		yw_key(w, d->name);
		yw_uint(w, st.calls[i]);
	}
	yw_end(w);
	/* Where the round trips went: count and seconds waited by call. */
	rt_map(w, "round_trip_calls", 0);
	rt_map(w, "round_trip_s", 1);
	yw_end(w);
	pthread_mutex_unlock(&st_lock);
	if ((text = yw_finish(w, &len)) != NULL &&
	    file_write_atomic(path, text, len, err, sizeof err) == -1)
		log_warn("statistics: %s", err);
	yw_free(w);
}

/*
 * Only one process writes the statistics: the one whose pid is
 * GLEAM_STATS_PID (gleam-run's, which the program it exec'd keeps).  With
 * no GLEAM_STATS_PID, the first process to load the library sets it to its
 * own, so the children it starts (fork and exec: compilers, worker
 * processes) inherit it and write nothing over its file.
 */
static void
stats_writer(void)
{
	const char *e = getenv("GLEAM_STATS_PID"), *why;
	char buf[32];
	long long pid;

	if (e != NULL && parse_int(e, 1, INT32_MAX, &pid, &why) == 0) {
		st.writer = (pid_t)pid == st.pid;
		return;
	}
	snprintf(buf, sizeof buf, "%ld", (long)st.pid);
	st.writer = setenv("GLEAM_STATS_PID", buf, 1) == 0;
}

__attribute__((constructor)) static void
stats_start(void)
{
	const char *e = getenv("GLEAM_STATS");

	st.start = now_ns();
	st.pid = getpid();
	/* Read before stats_writer's setenv: bash's own, early, hides the rest. */
	st.wanted = e != NULL || getenv("GLEAM_VERBOSE") != NULL;
	if (e != NULL && *e != '\0')
		stats_writer();
	stats_arm();
}
