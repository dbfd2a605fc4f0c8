/*
 * Call statistics for gleam-run: calls by name, round trips, bytes each
 * way and wall time, written as YAML at exit to the file GLEAM_STATS names.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "remote.h"
#include "client.h"
#include "log.h"
#include "util.h"
#include "yamlio.h"

static struct {
	uint64_t	 calls[RPC_NCALLS];
	uint64_t	 round_trips;
	uint64_t	 bytes_out, bytes_in;
	uint64_t	 start;
	pid_t		 pid;		/* a forked child writes nothing */
} st;
static pthread_mutex_t st_lock = PTHREAD_MUTEX_INITIALIZER;

void
stats_call(uint16_t type, uint64_t out, uint64_t in)
{
	pthread_mutex_lock(&st_lock);
	if (type >= R_OPEN && type < R_CALL_END) {
		st.calls[type - R_OPEN]++;
		st.round_trips++;
	}
	st.bytes_out += out;
	st.bytes_in += in;
	pthread_mutex_unlock(&st_lock);
}

/* gleam-run -v: a summary on stderr. */
static void
stats_print(void)
{
	const struct rpc_desc *d;
	int i;

	fprintf(stderr, "gleam: %s: %.3f s, %llu round trips, %llu bytes sent,"
	    " %llu received\n", program_invocation_short_name,
	    (double)(now_ns() - st.start) / 1e9,
	    (unsigned long long)st.round_trips,
	    (unsigned long long)st.bytes_out, (unsigned long long)st.bytes_in);
	for (i = 0; i < RPC_NCALLS; i++)
		if (st.calls[i] != 0 &&
		    (d = rpc_lookup((uint16_t)(R_OPEN + i))) != NULL)
			fprintf(stderr, "gleam:   %-28s %llu\n", d->name,
			    (unsigned long long)st.calls[i]);
}

/* Runs at exit: the statistics, if asked for. */
static void
stats_write(void)
{
	if (getpid() == st.pid && getenv("GLEAM_VERBOSE") != NULL)
		stats_print();
	const char *path = getenv("GLEAM_STATS");
	const struct rpc_desc *d;
	struct yw *w;
	const char *text;
	char err[512];
	size_t len;
	int i;

	if (path == NULL || *path == '\0' || getpid() != st.pid ||
	    (w = yw_new()) == NULL)
		return;
	pthread_mutex_lock(&st_lock);
	yw_map(w);
	yw_kstr(w, "program", program_invocation_short_name);
	yw_kdbl(w, "wall_s", (double)(now_ns() - st.start) / 1e9, 3);
	yw_key(w, "round_trips");
	yw_uint(w, st.round_trips);
	yw_key(w, "bytes_sent");
	yw_uint(w, st.bytes_out);
	yw_key(w, "bytes_received");
	yw_uint(w, st.bytes_in);
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
	yw_end(w);
	pthread_mutex_unlock(&st_lock);
	if ((text = yw_finish(w, &len)) != NULL &&
	    file_write_atomic(path, text, len, err, sizeof err) == -1)
		log_warn("statistics: %s", err);
	yw_free(w);
}

__attribute__((constructor)) static void
stats_start(void)
{
	st.start = now_ns();
	st.pid = getpid();
	if (getenv("GLEAM_STATS") != NULL || getenv("GLEAM_VERBOSE") != NULL)
		atexit(stats_write);
}
