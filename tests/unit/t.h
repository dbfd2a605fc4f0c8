/*
 * A minimal unit-test harness: CHECK records a failure and goes on, each
 * test file ends with t_done(), which prints "N passed, N failed".
 */
#ifndef GLEAM_T_H
#define GLEAM_T_H

#include <stdio.h>
#include <string.h>

static int t_pass, t_fail;

#define CHECK(cond) do {						\
	if (cond)							\
		t_pass++;						\
	else {								\
		t_fail++;						\
		fprintf(stderr, "%s:%d: check failed: %s\n",		\
		    __FILE__, __LINE__, #cond);				\
	}								\
} while (0)

#define CHECK_STR(a, b) do {						\
	const char *t_a = (a), *t_b = (b);				\
	if (t_a != NULL && t_b != NULL && strcmp(t_a, t_b) == 0)	\
		t_pass++;						\
	else {								\
		t_fail++;						\
		fprintf(stderr, "%s:%d: \"%s\" != \"%s\"\n", __FILE__,	\
		    __LINE__, t_a ? t_a : "(null)", t_b ? t_b : "(null)");\
	}								\
} while (0)

static inline int
t_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, t_pass, t_fail);
	return t_fail != 0;
}

#endif
