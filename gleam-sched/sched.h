/*
 * gleam-sched's view of a LAN: GPU servers, clients, the measured link
 * between each pair, and the tasks to place.  The one-shot mode fills it
 * from YAML (input.c); the daemon will fill it from status and probe
 * replies; the simulator (bench/sched-sim.c) fills it from its trace.  The
 * predictor (predict.h) and the placement (place.h) read only this.
 */
#ifndef SCHED_SCHED_H
#define SCHED_SCHED_H

#include <stdint.h>

#define SCHED_NAME_MAX		128
#define SCHED_WHY_MAX		512	/* a reason, names included */
#define SCHED_ERR_MAX		256	/* a probe's error */
#define SCHED_MAX_SERVERS	256
#define SCHED_MAX_CLIENTS	4096
#define SCHED_MAX_TASKS		4096
#define SCHED_MAX_MODELS	256	/* resident models per server */
#define SCHED_ADDR_MAX		300	/* host:port */

struct sched_server {
	char		 name[SCHED_NAME_MAX];	/* its status' host */
	double		 speed;		/* relative to the reference GPU */
	int		 ngpus;
	uint64_t	 mem_free;	/* bytes free on all its GPUs */
	uint64_t	 gpu_free_max;	/* bytes free on its emptiest GPU */
	double		 background;	/* occupancy by others, 0 to 1 */
	double		 queued;	/* GPU seconds waiting there now */
	int		 medium;	/* shared channel: media[medium-1]; 0 none */
	double		 port;		/* its own link's rate, bit/s; 0 unknown */
	int		 nclients;	/* connected clients, probes not counted */
	char		**models;	/* weights on its GPUs already */
	int		 nmodels;
	int		 line;		/* in its file, for messages */
	char		 address[SCHED_ADDR_MAX];	/* host:port it serves on */
	int		 down;		/* its status did not answer (daemon) */
	char		 down_why[SCHED_ERR_MAX];
};

struct sched_client {
	char		 name[SCHED_NAME_MAX];
	int		 medium;	/* as for a server */
};

/* What gleam-probe measured from a client to a server. */
struct sched_link {
	int		 ok;
	double		 rtt;		/* median round trip, seconds */
	double		 up, down;	/* bit/s, client to server and back */
	char		 why[SCHED_ERR_MAX];	/* when not ok */
};

struct sched_task {
	char		 name[SCHED_NAME_MAX];
	int		 client;
	char		 model[SCHED_NAME_MAX];	/* "" if it has no weights */
	uint64_t	 model_size;	/* bytes of weights */
	uint64_t	 model_sent;	/* of which a running upload sent */
	uint64_t	 memory;	/* device bytes besides the weights */
	double		 requests;	/* still to come */
	double		 rate;		/* requests per second */
	double		 burst;		/* squared CV of inter-arrival times */
	double		 gpu_time;	/* seconds per request, reference GPU */
	double		 in, out;	/* bytes per request each way */
	double		 round_trips;	/* per request */
	int		 window;	/* requests in flight at most; 0: any */
	int		 line;

	/* The placement. */
	int		 server;	/* -1: not placed */
	int		 fixed;		/* running already: not to be moved */
	int		 from;		/* where it ran before the plan, or -1 */
	char		 why[SCHED_WHY_MAX];	/* why not placed */
};

struct sched {
	struct sched_server	*servers;
	int			 nservers;
	struct sched_client	*clients;
	int			 nclients;
	struct sched_link	*links;		/* [client * nservers + server] */
	struct sched_task	*tasks;
	int			 ntasks;
	/*
	 * Shared channels (a Wi-Fi network): every client and server on one
	 * shares its capacity, both ways, instead of a link of its own.
	 */
	char			(*media)[SCHED_NAME_MAX];
	int			 nmedia;
	/*
	 * The share of GPU work that the queue terms count beyond what the
	 * tasks say (place_plan sets it; see PREDICT_HEADROOM).
	 */
	double			 headroom;
};

static inline struct sched_link *
sched_link(const struct sched *s, int client, int server)
{
	return &s->links[(long)client * s->nservers + server];
}

void	sched_init(struct sched *);
void	sched_free(struct sched *);
int	sched_server_find(const struct sched *, const char *);
int	sched_client_find(const struct sched *, const char *);
int	sched_task_find(const struct sched *, const char *);
/* Is the model's weights on the server's GPUs already? */
int	sched_resident(const struct sched_server *, const char *model);
/* Adds a resident model; -1 if the list is full or memory ran out. */
int	sched_model_add(struct sched_server *, const char *model);
void	sched_model_remove(struct sched_server *, const char *model);
/* The medium's number (1 and up), added if new; -1 if memory ran out. */
int	sched_medium(struct sched *, const char *name);

#endif
