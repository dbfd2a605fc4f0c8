/*
 * Printing a plan (gleam-sched(1), PLAN): YAML with stable keys, or a
 * table for people.  The daemon will answer gleam-run with the same YAML
 * for one task.
 */
#ifndef SCHED_PLAN_H
#define SCHED_PLAN_H

#include <stdio.h>

#include "place.h"
#include "sched.h"

/* why is NULL without -x.  Both return -1 if the output failed. */
int	plan_yaml(FILE *, struct sched *, const struct place_why *why);
int	plan_table(FILE *, struct sched *, const struct place_why *why);

#endif
