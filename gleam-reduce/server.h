/* gleam-reduce's daemon: the event loop around the aggregator. */
#ifndef REDUCE_SERVER_H
#define REDUCE_SERVER_H

#include <stdint.h>

#include "agg.h"
#include "auth.h"

struct server_opts {
	char		 host[256];	/* listen address, "" for every one */
	int		 port;		/* 0: any free port */
	struct auth_key	 key;		/* without keyfile: one key, or none */
	const char	*keyfile;	/* the key's file, read again on SIGHUP */
	struct auth_keys keys;		/* with keyfile: its identities, which
					   the server frees */
	struct agg_limits limits;
	int		 max_workers;	/* connections at once */
	int		 foreground;
	int		 ready_fd;	/* -1, or a pipe: "port\n" once bound */
};

/*
 * Runs until SIGTERM or SIGINT (SIGHUP reads the key file again); returns
 * an exit code (exitcode.h).
 */
int	server_run(const struct server_opts *);

#endif
