/*
 * Re-planning among running tasks (gleam-sched(1), Re-planning): the
 * daemon's clients planned again as tasks that run where they are, and
 * the moves of that plan worth making.  The daemon sends the moves
 * (MIGRATE_ONE); this module only decides, and says why.
 */
#ifndef SCHED_REPLAN_H
#define SCHED_REPLAN_H

#include "sched.h"

struct replan_conf {
	double		 margin;	/* a move saves this share of its cost */
	double		 stay;		/* seconds on a server before a move */
	int		 moves;		/* at most, in one re-planning */
};

struct replan_move {
	int		 task, from, to;
	double		 before, after;	/* its latency per request, seconds */
	double		 cost_before, cost_after;	/* the plan's, seconds */
	double		 saved;		/* the share of its cost there saved */
};

/*
 * The tasks of s run where their server says (from is the same); those
 * not fixed may move.  here[i] is how long task i has been on its server
 * (or since a move of it last failed).  Plans again, then weighs each
 * move the plan makes against where the task runs, one after the other
 * in the order of what they save: a move is made if it lowers the plan's
 * cost by at least margin times the task's own cost where it runs, and
 * the task has been there stay seconds; conf->moves moves at most.  Each
 * decision is logged.  Fills mv (conf->moves entries) and returns how
 * many, or -1 if memory ran out; the tasks' servers are left as they
 * were.
 */
int	replan_decide(struct sched *s, const double *here,
	    const struct replan_conf *conf, struct replan_move *mv);

#endif
