/* gleam-serve's event loop: listener, clients, signals. */
#ifndef SERVE_SERVER_H
#define SERVE_SERVER_H

#include "config.h"

struct server;

/* Command-line settings that outrank the file, also across reloads. */
struct overrides {
	const char	*listen;	/* "host:port" or NULL */
	const char	*key_file;	/* or NULL */
	const char	*config;	/* path */
	int		 config_missing_ok;
};

/*
 * Loads the configuration and the key; on failure prints why and returns
 * the exit code, else 0.
 */
int	server_configure(struct config *, const struct overrides *);
/* Binds the listener (reporting "listening on" at info level). */
struct server *server_new(const struct config *, const struct overrides *,
	    int *exitcode);
/* After daemon(3): the event base must be told about the fork. */
int	server_after_fork(struct server *);
/* Runs until drained; returns the exit code. */
int	server_run(struct server *);
void	server_free(struct server *);

#endif
