/*
 * Checking the server before the program runs: a connection and a
 * handshake with the key, then goodbye.  A program that found no server
 * would otherwise run on without a GPU (PyTorch falls back to the CPU) and
 * exit 0; gleam-run says so itself and exits EXIT_NOSERVER instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "conn.h"
#include "exitcode.h"
#include "log.h"
#include "parse.h"
#include "proto.h"
#include "run.h"

#define CHECK_TIMEOUT_S	5

/* GLEAM_CHECK_TIMEOUT seconds, else the default; a bad value warns. */
static int
check_timeout_ms(void)
{
	const char *e = getenv("GLEAM_CHECK_TIMEOUT"), *why;
	long long s;

	if (e == NULL || *e == '\0')
		return CHECK_TIMEOUT_S * 1000;
	if (parse_int(e, 1, 600, &s, &why) == -1) {
		log_warn("GLEAM_CHECK_TIMEOUT=%s: %s (1 to 600 seconds): "
		    "using %d", e, why, CHECK_TIMEOUT_S);
		return CHECK_TIMEOUT_S * 1000;
	}
	return (int)s * 1000;
}

int
run_check(const char *server, const char *key_file, char *why, size_t len)
{
	struct auth_key key;
	struct conn c;
	const char *err;
	char host[256], kerr[1024];
	int port = PROTO_DEFAULT_PORT;

	memset(&key, 0, sizeof key);
	if (parse_connect(server, host, sizeof host, &port, &err) == -1) {
		snprintf(why, len, "%s: %s", server, err);
		return EXIT_USAGE;
	}
	if (auth_init() == -1) {
		snprintf(why, len, "libsodium cannot start");
		return EXIT_IO;
	}
	if (key_file != NULL && auth_key_load(&key, key_file, kerr,
	    sizeof kerr) == -1) {
		snprintf(why, len, "%s", kerr);
		return EXIT_CONFIG;
	}
	if (conn_open(&c, host, port, key.set ? &key : NULL, "gleam-run",
	    check_timeout_ms()) == -1) {
		/* c.err begins with the peer: "host:port: reason". */
		snprintf(why, len, "%s", c.err);
		return EXIT_NOSERVER;
	}
	conn_close(&c);
	return 0;
}
