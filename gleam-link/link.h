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

/*
 * Faults on demand (-F): kind@trigger[+duration].  A trigger counts the
 * bytes that crossed the link (every connection, both directions) or the
 * time since the first connection; when it is reached every connection
 * open is cut (both ends see the end of data), reset (both see a reset)
 * or black-holed: nothing crosses, new connections included, for the
 * duration, then the traffic goes on where it stopped.  Each fault fires
 * once.
 */
enum fault_kind { FAULT_CUT, FAULT_RESET, FAULT_HOLE };

#define LINK_FAULTS_MAX	64

struct link_fault {
	enum fault_kind	 kind;
	int		 by_time;	/* else by bytes */
	uint64_t	 bytes;		/* trigger: bytes crossed */
	double		 at;		/* trigger: seconds */
	double		 hold;		/* FAULT_HOLE: seconds */
	int		 fired;
};

/* Parses one -F argument; -1 with *why set. */
int	link_fault_parse(const char *, struct link_fault *, const char **why);

struct link_config {
	char			listen_host[NI_MAXHOST];
	int			listen_port;	/* 0: any free port */
	char			target_host[NI_MAXHOST];
	int			target_port;
	struct shaper_params	dir[2];
	uint64_t		seed;
	struct link_fault	fault[LINK_FAULTS_MAX];
	int			nfault;
};

/* Listens and serves until SIGINT or SIGTERM; returns an exit code. */
int	link_run(const struct link_config *);

#endif
