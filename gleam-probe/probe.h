/* Measuring one server: round trips, bulk throughput, status. */
#ifndef PROBE_PROBE_H
#define PROBE_PROBE_H

#include <pthread.h>

#include "auth.h"
#include "status.h"

struct probe_opts {
	int			 count;		/* RTT exchanges */
	double			 bulk_s;	/* per direction; 0: none */
	int			 timeout_ms;
	uint32_t		 chunk;		/* bytes per bulk frame */
	const struct auth_key	*key;
	pthread_mutex_t		*bulk_lock;	/* one bulk test at a time */
	void			(*progress)(const char *server, const char *what);
};

struct probe {
	/* Input. */
	char			 spec[300];	/* as given */
	char			 host[256];
	int			 port;
	/* Results. */
	int			 ok;
	int			 fail;		/* enum conn_fail */
	char			 error[1200];
	char			 name[256];	/* the server's, from the handshake */
	int			 protocol;
	int			 rtt_n;
	double			 rtt_min, rtt_median, rtt_p99;	/* seconds */
	int			 bulk_done;
	double			 up_bps, down_bps;
	uint64_t		 up_bytes, down_bytes;
	int			 have_status;
	struct server_status	 status;
};

/* Fills p's results; never fails as a call: p->ok tells. */
void	probe_run(struct probe *, const struct probe_opts *);
void	probe_free(struct probe *);

#endif
