/*
 * What gleam-run and the gleam-sched daemon say to each other, after the
 * usual handshake (proto.h): one definition in code (this file and
 * schedwire.c) and one in prose (gleam-sched(1), DAEMON).
 *
 * PLACE asks which server a task should run on; its payload is a YAML
 * mapping { client, task }, and movable: true for a program that the
 * daemon may move to another server while it runs (its re-planning).  The reply (PLACE with FL_REPLY) is a YAML
 * mapping { task, client, server, address, latency_ms, reason }, or
 * { task, client, error } for a task that cannot be placed (an unknown
 * client, no server with room), or { task, client, error, retry_ms }
 * from a daemon that is busy with the asking address (its rate limit):
 * ask again after retry_ms.  Both decoders treat
 * their input as hostile: unknown keys, missing keys, overlong or empty
 * names and non-mapping documents are errors with a reason.
 */
#ifndef GLEAM_SCHEDWIRE_H
#define GLEAM_SCHEDWIRE_H

#include <stddef.h>

#include "proto.h"

/* Beyond proto.h's types and below the remoting calls. */
#define MSG_PLACE		48

#define SCHEDWIRE_NAME_MAX	127	/* client, task and server names */
#define SCHEDWIRE_ADDR_MAX	300	/* host:port */
#define SCHEDWIRE_REASON_MAX	767
/*
 * A PLACE document, either way, is refused beyond these while it is
 * parsed (yamlio.h): a request is two names, a reply a few keys.
 */
#define SCHEDWIRE_DOC_MAX	4096
#define SCHEDWIRE_DEPTH_MAX	4
#define SCHEDWIRE_NODES_MAX	64

struct place_req {
	char		 client[SCHEDWIRE_NAME_MAX + 1];
	char		 task[SCHEDWIRE_NAME_MAX + 1];
	int		 movable;	/* written only when true */
};

struct place_rep {
	char		 task[SCHEDWIRE_NAME_MAX + 1];
	char		 client[SCHEDWIRE_NAME_MAX + 1];
	char		 server[SCHEDWIRE_NAME_MAX + 1];
	char		 address[SCHEDWIRE_ADDR_MAX + 1];
	double		 latency_ms;	/* predicted per request */
	char		 reason[SCHEDWIRE_REASON_MAX + 1];
	char		 error[SCHEDWIRE_REASON_MAX + 1];	/* "": placed */
	int		 retry_ms;	/* > 0: busy, ask again after it */
};

/*
 * The encoders return the YAML text, malloc'd, with its length in *len,
 * or NULL if memory ran out.  The decoders return 0, or -1 with a reason
 * in err.
 */
char	*place_req_enc(const struct place_req *, size_t *len);
int	 place_req_dec(const void *, size_t, struct place_req *, char *err,
	    size_t errlen);
char	*place_rep_enc(const struct place_rep *, size_t *len);
int	 place_rep_dec(const void *, size_t, struct place_rep *, char *err,
	    size_t errlen);

#endif
