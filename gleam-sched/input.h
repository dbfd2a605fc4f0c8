/*
 * Reading the one-shot mode's inputs (gleam-sched(1), INPUT) into a
 * struct sched: servers first (links name them), then links (which name
 * the clients), then tasks (which name clients).  Each returns -1 with a
 * message naming file, line and key.
 */
#ifndef SCHED_INPUT_H
#define SCHED_INPUT_H

#include "sched.h"
#include "yamlio.h"

/* servers may take statuses from the links' probes: links_path too. */
int	input_servers(struct sched *, const char *path, const char *links_path,
	    struct yerr *);
int	input_links(struct sched *, const char *path, const char *servers_path,
	    struct yerr *);
/* A path as messages name it: "-" is "stdin". */
const char *input_name(const char *path);
int	input_tasks(struct sched *, const char *path, const char *links_path,
	    struct yerr *);

#endif
