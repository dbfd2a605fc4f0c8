/*
 * What the client libraries (libcuda.so.1, libnvidia-ml.so.1) read from
 * the environment that gleam-run sets: the server (GLEAM_SERVER), its key
 * (GLEAM_KEY_FILE) and how much to log (GLEAM_DEBUG).  One reading, so
 * both libraries reach the same server the same way.
 */
#ifndef GLEAM_CLENV_H
#define GLEAM_CLENV_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"

struct clenv {
	char		 server[256];	/* GLEAM_SERVER as given */
	char		 host[256];
	int		 port;
	struct auth_key	 key;
	struct auth_key	*kp;		/* &key, or NULL: no key */
};

/* The log level GLEAM_DEBUG asks for (LL_WARN and up). */
int	clenv_log_level(void);
/*
 * Reads the server and the key.  Returns 0, or -1 with the reason in err
 * ("no server: ...", "GLEAM_SERVER=x: no host", the key file's error).
 */
int	clenv_read(struct clenv *, char *err, size_t errlen);
/*
 * A size from environment variable name (k, m, g: powers of 1024): def
 * where it is unset or empty, or bad (warned of: "NAME=value: why:
 * ignored"); with positive, 0 is bad too.
 */
uint64_t clenv_size(const char *name, uint64_t def, int positive);

#endif
