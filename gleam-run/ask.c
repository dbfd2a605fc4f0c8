/* Asking the gleam-sched daemon where to run (gleam-sched(1), DAEMON). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "auth.h"
#include "conn.h"
#include "exitcode.h"
#include "log.h"
#include "parse.h"
#include "proto.h"
#include "run.h"
#include "schedwire.h"
#include "util.h"

#define ASK_TIMEOUT_MS	5000	/* for the answer, retries and all */
#define ASK_BACKOFF_MAX	1000	/* ms between two tries, at most */

static double
ask_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * How long to wait before asking again a daemon that is busy with our
 * address: what it says, or twice the last wait if longer (at most
 * ASK_BACKOFF_MAX), and up to a quarter more at random so that clients
 * turned away together do not come back together.
 */
static int
ask_backoff(int hint_ms, int last_ms)
{
	int ms = hint_ms;

	if (last_ms * 2 > ms)
		ms = last_ms * 2 < ASK_BACKOFF_MAX ? last_ms * 2 :
		    ASK_BACKOFF_MAX;
	if (ms < hint_ms)
		ms = hint_ms;
	return ms + (int)randombytes_uniform((uint32_t)ms / 4 + 1);
}

/* This client's name for the daemon: GLEAM_CLIENT, else the host name. */
static int
ask_client(char *name, size_t len)
{
	char err[200];

	if (client_name(name, len, err, sizeof err) == -1) {
		log_error("%s", err);
		return -1;
	}
	return 0;
}

/*
 * GLEAM_MOVABLE=1: the daemon may move the program to another server
 * while it runs (gleam-sched(1), Re-planning).  Anything but 1 or 0 is
 * ignored with a warning, as the toolkit does with its variables.
 */
static int
ask_movable(void)
{
	const char *e = getenv("GLEAM_MOVABLE");

	if (e == NULL || *e == '\0' || strcmp(e, "0") == 0)
		return 0;
	if (strcmp(e, "1") == 0)
		return 1;
	log_warn("GLEAM_MOVABLE=%s: expected 1 or 0: ignored", e);
	return 0;
}

int
run_ask(const char *addr, const char *key_file, const char *task,
    char *server, size_t len)
{
	struct place_req rq;
	struct place_rep rp;
	struct auth_key key;
	struct conn c;
	const uint8_t *reply;
	const char *why;
	struct timespec ts;
	char host[256], err[1024], *doc;
	size_t dlen, rlen;
	double t0 = ask_now(), left;
	int port = PROTO_DEFAULT_PORT + 1, rc, wait = 0;

	memset(&rq, 0, sizeof rq);
	memset(&key, 0, sizeof key);
	if (parse_hostport(addr, host, sizeof host, &port, &why) == -1) {
		log_error("-S %s: %s", addr, why);
		return EXIT_USAGE;
	}
	if (ask_client(rq.client, sizeof rq.client) == -1)
		return EXIT_CONFIG;
	snprintf(rq.task, sizeof rq.task, "%s", task);
	rq.movable = ask_movable();
	if (auth_init() == -1) {
		log_error("libsodium cannot start");
		return EXIT_IO;
	}
	if (key_file != NULL && auth_key_load(&key, key_file, err,
	    sizeof err) == -1) {
		log_error("%s", err);
		return EXIT_CONFIG;
	}
	if ((doc = place_req_enc(&rq, &dlen)) == NULL) {
		log_error("out of memory");
		return EXIT_IO;
	}
	if (conn_open(&c, host, port, key.set ? &key : NULL, "gleam-run",
	    ASK_TIMEOUT_MS) == -1) {
		/* c.err begins with the peer: "host:port: reason". */
		log_error("scheduler %s", c.err);
		free(doc);
		return c.fail == CONN_AUTH ? EXIT_AUTH : EXIT_NET;
	}
again:
	rc = conn_call(&c, MSG_PLACE, doc, dlen, MSG_PLACE, &reply, &rlen);
	if (rc == -1) {
		log_error("scheduler %s", c.err);
		conn_close(&c);
		free(doc);
		return c.fail == CONN_REMOTE ? EXIT_FAIL : EXIT_NET;
	}
	if (place_rep_dec(reply, rlen, &rp, err, sizeof err) == -1) {
		log_error("scheduler %s: %s", addr, err);
		conn_close(&c);
		free(doc);
		return EXIT_NET;
	}
	/* Busy with our address: again on the same connection, in time. */
	if (rp.retry_ms > 0) {
		wait = ask_backoff(rp.retry_ms, wait);
		left = ASK_TIMEOUT_MS / 1e3 - (ask_now() - t0);
		if (wait / 1e3 < left) {
			log_warn("scheduler %s: %s; asking again in %d ms",
			    addr, rp.error, wait);
			ts.tv_sec = wait / 1000;
			ts.tv_nsec = (long)(wait % 1000) * 1000000;
			nanosleep(&ts, NULL);
			goto again;
		}
		log_error("scheduler %s: %s (gave up after %.1f s)", addr,
		    rp.error, ask_now() - t0);
		conn_close(&c);
		free(doc);
		return EXIT_NET;
	}
	free(doc);
	conn_close(&c);
	if (rp.error[0] != '\0') {
		log_error("scheduler %s: task %s of %s: %s", addr, rp.task,
		    rp.client, rp.error);
		return EXIT_FAIL;
	}
	why = "too long";
	if (strlen(rp.address) >= len || parse_hostport(rp.address, host,
	    sizeof host, &port, &why) == -1) {
		log_error("scheduler %s: address %s: %s", addr, rp.address,
		    why);
		return EXIT_NET;
	}
	snprintf(server, len, "%s", rp.address);
	log_info("scheduler %s: task %s of %s on %s (%s)", addr, rq.task,
	    rq.client, rp.server, rp.address);
	return 0;
}
