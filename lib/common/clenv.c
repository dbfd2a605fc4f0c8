/* The client libraries' environment: server, key, log level. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clenv.h"
#include "log.h"
#include "parse.h"
#include "proto.h"

int
clenv_log_level(void)
{
	const char *s, *why;
	long long ll;

	if ((s = getenv("GLEAM_DEBUG")) != NULL &&
	    parse_int(s, 0, 4, &ll, &why) == 0)
		return LL_WARN + (int)ll;
	return LL_WARN;
}

int
clenv_read(struct clenv *e, char *err, size_t errlen)
{
	const char *server, *keyfile, *why;

	memset(e, 0, sizeof *e);
	e->port = PROTO_DEFAULT_PORT;
	if ((server = getenv("GLEAM_SERVER")) == NULL || *server == '\0') {
		snprintf(err, errlen, "no server: GLEAM_SERVER is not set");
		return -1;
	}
	snprintf(e->server, sizeof e->server, "%s", server);
	if (parse_connect(server, e->host, sizeof e->host, &e->port,
	    &why) == -1) {
		snprintf(err, errlen, "GLEAM_SERVER=%s: %s", server, why);
		return -1;
	}
	if (auth_init() == -1) {
		snprintf(err, errlen, "libsodium cannot start");
		return -1;
	}
	if ((keyfile = getenv("GLEAM_KEY_FILE")) != NULL && *keyfile) {
		/* A program's standard input is its own, never our key. */
		if (strcmp(keyfile, "-") == 0) {
			snprintf(err, errlen, "GLEAM_KEY_FILE=-: standard input "
			    "is the program's; name a key file");
			return -1;
		}
		if (auth_key_load(&e->key, keyfile, err, errlen) == -1)
			return -1;
		e->kp = &e->key;
	}
	return 0;
}

uint64_t
clenv_size(const char *name, uint64_t def, int positive)
{
	const char *s, *why = NULL;
	uint64_t v = 0;

	if ((s = getenv(name)) == NULL || *s == '\0')
		return def;
	if (parse_size(s, &v, &why) == -1 || (positive && v == 0)) {
		log_warn("%s=%s: %s: ignored", name, s, why != NULL ? why :
		    "must be positive");
		return def;
	}
	return v;
}
