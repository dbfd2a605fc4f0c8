/* gleam-probe's output: a table for people, YAML for programs. */
#ifndef PROBE_REPORT_H
#define PROBE_REPORT_H

#include <stdio.h>

#include "probe.h"

void	report_table(FILE *, struct probe *, int n);
/* Returns -1 if the YAML could not be produced. */
int	report_yaml(FILE *, struct probe *, int n, double bulk_s);

#endif
