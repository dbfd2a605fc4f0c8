/* gleam-sched migrate: one MIGRATE_ONE to one server. */
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "conn.h"
#include "exitcode.h"
#include "log.h"
#include "migrate.h"
#include "parse.h"
#include "proto.h"

#define MIGRATE_TIMEOUT_MS	10000

/* host[:port] into host and port (PROTO_DEFAULT_PORT if none); -1: bad. */
static int
migrate_addr(const char *what, const char *s, char *host, size_t hostlen,
    int *port)
{
	const char *why;

	*port = PROTO_DEFAULT_PORT;
	if (parse_connect(s, host, hostlen, port, &why) == -1) {
		log_error("%s %s: %s", what, s, why);
		return -1;
	}
	return 0;
}

int
migrate_main(const char *server, const char *which, const char *target,
    const char *key_file)
{
	struct msg_migrate_one m;
	struct auth_keys keys;
	const char *why;
	char host[256], ahost[256], err[600];
	long long v;
	int port, tport, aport, rc;

	memset(&m, 0, sizeof m);
	memset(&keys, 0, sizeof keys);
	if (migrate_addr("server", server, host, sizeof host, &port) == -1 ||
	    migrate_addr("target", target, m.host, sizeof m.host,
	    &tport) == -1)
		return EXIT_USAGE;
	m.port = (uint16_t)tport;
	/* A number is a session; anything else a client's address. */
	if (which[strspn(which, "0123456789")] == '\0') {
		if (parse_int(which, 1, INT64_MAX, &v, &why) == -1) {
			log_error("session %s: %s", which, why);
			return EXIT_USAGE;
		}
		m.selector = MIGSEL_SESSION;
		m.session = (uint64_t)v;
	} else {
		aport = -1;
		if (parse_hostport(which, ahost, sizeof ahost, &aport,
		    &why) == -1 || (ahost[0] == '\0' && (why = "no host")) ||
		    (aport <= 0 && (why = "no port (the address is a "
		    "client's address and port, as the status shows it)")) ||
		    (strlen(which) >= sizeof m.address && (why = "too long"))) {
			log_error("client address %s: %s", which, why);
			return EXIT_USAGE;
		}
		m.selector = MIGSEL_ADDRESS;
		snprintf(m.address, sizeof m.address, "%s", which);
	}
	if (auth_init() == -1) {
		log_error("libsodium failed to start");
		return EXIT_SOFTWARE;
	}
	/* As serve's -k: the file may list identities; the first is proven. */
	if (key_file != NULL && auth_keys_load(&keys, key_file, err,
	    sizeof err) == -1) {
		log_error("%s", err);
		return EXIT_CONFIG;
	}
	rc = migrate_send(host, port, &m, keys.n > 0 ? &keys.v[0] : NULL,
	    "gleam-sched migrate", err, sizeof err);
	auth_keys_free(&keys);
	if (rc != EXIT_OK)
		log_error("%s", err);
	return rc;
}

int
migrate_send(const char *host, int port, const struct msg_migrate_one *m,
    const struct auth_key *key, const char *name, char *err, size_t errlen)
{
	struct conn c;
	struct pw w;
	const uint8_t *reply;
	size_t rlen;
	int rc;

	err[0] = '\0';
	if (conn_open(&c, host, port, key, name, MIGRATE_TIMEOUT_MS) == -1) {
		snprintf(err, errlen, "%s", c.err);
		return c.fail == CONN_AUTH ? EXIT_AUTH : EXIT_NET;
	}
	pw_init(&w);
	msg_migrate_one_enc(&w, m);
	if (w.bad) {
		pw_free(&w);
		conn_close(&c);
		snprintf(err, errlen, "out of memory");
		return EXIT_IO;
	}
	rc = conn_call(&c, MSG_MIGRATE_ONE, w.p, w.len, MSG_MIGRATE_ONE,
	    &reply, &rlen);
	pw_free(&w);
	if (rc == -1) {
		snprintf(err, errlen, "%s", c.err);
		rc = c.fail == CONN_AUTH ? EXIT_AUTH :
		    c.fail != CONN_REMOTE ? EXIT_NET :
		    c.perr == PERR_MALFORMED ? EXIT_SOFTWARE : EXIT_FAIL;
		conn_close(&c);
		return rc;
	}
	if (rlen != 4 || reply[0] || reply[1] || reply[2] || reply[3]) {
		snprintf(err, errlen, "%s:%d: a reply to MIGRATE_ONE that is "
		    "not 0", host, port);
		conn_close(&c);
		return EXIT_NET;
	}
	(void)conn_send(&c, MSG_BYE, 0, 0, NULL, 0);
	conn_close(&c);
	return EXIT_OK;
}
