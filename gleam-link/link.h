/*
 * The proxy: one listener; for each accepted client a connection to the
 * target and two shaped directions.
 */
#ifndef GLEAM_LINK_LINK_H
#define GLEAM_LINK_LINK_H

#include <netdb.h>
#include <stdint.h>

#include "shaper.h"

/* Directions, named by the side that sends: client to target first. */
enum link_dir { LINK_UP = 0, LINK_DOWN = 1 };

struct link_config {
	char			listen_host[NI_MAXHOST];
	int			listen_port;	/* 0: any free port */
	char			target_host[NI_MAXHOST];
	int			target_port;
	struct shaper_params	dir[2];
	uint64_t		seed;
};

/* Listens and serves until SIGINT or SIGTERM; returns an exit code. */
int	link_run(const struct link_config *);

#endif
