/* Asking the gleam-sched daemon where to run (gleam-sched(1), DAEMON). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "conn.h"
#include "exitcode.h"
#include "log.h"
#include "parse.h"
#include "proto.h"
#include "run.h"
#include "schedwire.h"
#include "util.h"

#define ASK_TIMEOUT_MS	5000

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
	char host[256], err[1024], *doc;
	size_t dlen, rlen;
	int port = PROTO_DEFAULT_PORT + 1, rc;

	memset(&rq, 0, sizeof rq);
	memset(&key, 0, sizeof key);
	if (parse_hostport(addr, host, sizeof host, &port, &why) == -1) {
		log_error("-S %s: %s", addr, why);
		return EXIT_USAGE;
	}
	if (ask_client(rq.client, sizeof rq.client) == -1)
		return EXIT_CONFIG;
	snprintf(rq.task, sizeof rq.task, "%s", task);
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
	rc = conn_call(&c, MSG_PLACE, doc, dlen, MSG_PLACE, &reply, &rlen);
	free(doc);
	if (rc == -1) {
		log_error("scheduler %s", c.err);
		conn_close(&c);
		return c.fail == CONN_REMOTE ? EXIT_FAIL : EXIT_NET;
	}
	if (place_rep_dec(reply, rlen, &rp, err, sizeof err) == -1) {
		log_error("scheduler %s: %s", addr, err);
		conn_close(&c);
		return EXIT_NET;
	}
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
