/*
 * Placement: which server each task goes to (gleam-sched(1), PLACEMENT).
 * Tasks marked fixed keep their server; every other task is placed anew
 * or, if it has a server already, may be moved.  The daemon calls
 * place_plan again whenever links, load or tasks change.
 */
#ifndef SCHED_PLACE_H
#define SCHED_PLACE_H

#include "predict.h"
#include "sched.h"

/* Why a task went where it went (-x). */
struct place_why {
	int		 runner_up;	/* the next best server, or -1 */
	double		 margin;	/* seconds per request of this task */
	char		 reason[768];
	int		 nexcluded;
	int		*excluded;	/* servers it cannot go to ... */
	char		(*excluded_why)[SCHED_WHY_MAX];	/* ... and why */
};

/*
 * Places the tasks (their server and why fields).  With why non-NULL, an
 * array of ntasks, explains each placed task.  Returns -1 if memory ran
 * out.
 */
int	place_plan(struct sched *, struct place_why *why);
void	place_why_free(struct place_why *, int n);
/*
 * Whether the server could ever hold the task, ignoring the rest of the
 * plan; if not, why says so.
 */
int	place_feasible(const struct sched *, int task, int server, char *why,
	    size_t len);

#endif
