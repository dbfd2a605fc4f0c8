/*
 * The latency predictor: what one request of a task would take on a
 * server, given everything else placed, and the plan's cost.  gleam-sched(1)
 * gives the formulas under PREDICTOR; this file is their one definition.
 *
 * A predictor keeps per-server, per-client and per-channel sums of what is
 * placed, each server's tasks and each link's weight uploads, so that
 * moving a task costs little and predicting one costs O(tasks on its
 * server + uploads on its links).  predict_add and predict_remove set the
 * task's server field; the sched's tasks and servers must not change
 * otherwise while a predictor is alive.
 */
#ifndef SCHED_PREDICT_H
#define SCHED_PREDICT_H

#include "sched.h"

/* Above this occupancy a queue is predicted as backlog growing linearly. */
#define PREDICT_RHO_KNEE	0.95
/*
 * A request that a task with a window cannot send before its session
 * ends costs its latency and this share of the task's horizon.
 */
#define PREDICT_LOST		0.5
/*
 * Placing tasks among tasks that run already (the daemon, re-planning),
 * the queue terms count every task's GPU work this much more than it
 * says (struct sched's headroom): more tasks will come while these run,
 * and measured GPU times and speeds are 10 to 20% off, where a queue
 * near saturation grows far faster than it shrinks below.
 */
#define PREDICT_HEADROOM	0.3

struct pred {
	double		 transfer;	/* seconds per request: input and output */
	double		 queue;		/* waiting for a GPU */
	double		 compute;	/* on the GPU */
	double		 rtt;		/* round trips */
	double		 load_wait;	/* waiting for the weights, averaged */
	double		 slowdown;	/* a full window holding requests back */
	double		 latency;	/* the six summed */
	double		 load;		/* seconds: one upload of the weights */
	double		 completion;	/* seconds until the last reply */
	double		 answered;	/* requests it gets answered */
	double		 gpu_rho;	/* the server's GPU occupancy */
	double		 link_rho;	/* the busier direction of its path */
	int		 cached;	/* the weights are there already */
};

struct pserver {
	double		 lam;		/* requests per second */
	double		 work;		/* GPU seconds per second (sum lam S) */
	double		 work2;		/* sum lam S^2 */
	double		 burst;		/* sum lam ca^2 */
	double		 requests;	/* requests to come */
	double		 up, down;	/* bit/s offered to its link */
	double		 up_now, down_now;	/* by tasks sending from now */
	uint64_t	 mem;		/* bytes the plan puts on it */
	int		 ntasks;
	double		 cap_up, cap_down; /* its link: best measured, bit/s */
	int		 first;		/* its tasks: a list through next */
};

struct pclient {
	double		 up, down;
	double		 up_now, down_now;
	double		 cap_up, cap_down;
};

/* A shared channel carries both directions of all its members. */
struct pmedium {
	double		 traffic;	/* bit/s */
	double		 traffic_now;
	double		 cap;		/* the best any member measured */
};

/*
 * Weights that cross to a server: one upload for all the plan's tasks of
 * that model there (the cache is by content).
 */
struct pupload {
	int		 server;
	int		 first;		/* a task of the group: model, client */
	int		 refs;		/* tasks waiting for it; 0: slot free */
	int		 link[2];	/* the links it crosses (see predict.c) */
	int		 lnext[2];	/* the next upload on each of them */
};

/*
 * A server's GPU queue solved for the plan's tasks on it (see
 * server_solve in predict.c), kept until the plan changes.
 */
struct psolve {
	unsigned long	 gen;		/* the plan's generation it is of */
};

struct predictor {
	struct sched	*s;
	unsigned long	 gen;		/* bumped by every add and remove */
	struct psolve	*solve;		/* per server */
	double		*x;		/* per task: requests/s it sends */
	double		*wait;		/* per task: its wait for a GPU */
	double		*rho;		/* per task: the GPU load it meets */
	struct pserver	*sv;
	struct pclient	*cl;
	struct pmedium	*md;		/* [medium - 1] */
	struct pupload	*up;		/* at most one per task */
	int		 nup;
	int		*group;		/* per task: its upload, or -1 */
	int		*next, *prev;	/* per task: its server's list */
	int		*lfirst;	/* per link: its uploads, a list */
};

/*
 * The predictor's cached solutions, saved before a trial move and put
 * back after it is undone, so that the state before it needs no solving
 * again.  Valid only if the tasks' servers are as when it was taken.
 */
struct psnap {
	unsigned long	 gen;
	unsigned long	*sgen;		/* per server */
	double		*x, *wait, *rho;	/* per task */
};

int	predict_snap_init(const struct predictor *, struct psnap *);
void	predict_snap_free(struct psnap *);
void	predict_snap_take(const struct predictor *, struct psnap *);
void	predict_snap_put(struct predictor *, const struct psnap *);

/* Sums what the tasks' server fields place; -1 if out of memory. */
int	predict_init(struct predictor *, struct sched *);
void	predict_free(struct predictor *);
void	predict_add(struct predictor *, int task, int server);
void	predict_remove(struct predictor *, int task);
/* The prediction for a placed task. */
void	predict_task(const struct predictor *, int task, struct pred *);
/* A placed task's share of the plan's cost: requests times latency. */
double	predict_cost(const struct predictor *, int task);
/* The plan's cost: the sum over placed tasks. */
double	predict_total(const struct predictor *);
/* The bytes the task would add to the server's memory. */
uint64_t predict_mem_need(const struct predictor *, int task, int server);
/* Whether the task fits in what the server has left. */
int	predict_fits(const struct predictor *, int task, int server);

#endif
