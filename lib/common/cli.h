/*
 * The command-line grammar every Gleam program shares (gleam(7),
 * "COMMAND LINE"): getopt_long over one table per program, from which
 * the short option string, the long options and --help are all made, so
 * that they cannot disagree.  -h/--help and -V/--version are answered
 * here; a deprecated spelling is accepted with a warning and returned as
 * the letter that replaced it.
 */
#ifndef GLEAM_CLI_H
#define GLEAM_CLI_H

#include <getopt.h>
#include <stdio.h>

/* Long-only options get values from here up, never a letter. */
#define CLI_LONG	0x100

struct cli_opt {
	int		 val;	/* what cli_next returns: the letter, or CLI_LONG+n */
	const char	*name;	/* long name without "--"; NULL: no long form */
	const char	*arg;	/* the argument as --help names it; NULL: none */
	const char	*help;	/* one line for --help; for a deprecated alias,
				 * NULL, or what to say instead where that is
				 * not an option ("gleam-sched serve") */
	int		 old;	/* a deprecated letter: seen, it warns and returns val */
};

struct cli {
	const char		*prog;	/* "gleam-serve" */
	const char		*usage;	/* after "usage: ", forms joined by '\n'; a
					 * line that starts with a blank wraps
					 * the one before, as is */
	const struct cli_opt	*opts;	/* ends with an entry whose val is 0 */
	int			 stop;	/* stop at the first operand (gleam-run) */
	const char		*note;	/* NULL, or lines --help prints after the options */
	const char		*valone;/* NULL, or why -V is refused beside other
					 * arguments (it meant something else) */
	/* filled in by cli_next */
	char			 shortopts[128];
	struct option		 longopts[64];
	int			 built;
	unsigned		 warned[8];
};

/*
 * The next option of argv, as getopt_long: its val (the argument in
 * optarg), or -1 after the last.  -h/--help prints the help on standard
 * output and exits 0; -V/--version prints "PROG VERSION" and exits 0 (with
 * valone set, only as the one argument: beside others it is a usage
 * error); an unknown option or a missing argument prints one line saying
 * so and the usage on standard error and exits EXIT_USAGE.  argv[0] is not
 * looked at.
 */
int		 cli_next(struct cli *, int, char **);
/* The usage lines to f; cli_usage_exit(code) to stdout if 0, then exits. */
void		 cli_usage(const struct cli *, FILE *);
void		 cli_usage_exit(const struct cli *, int) __attribute__((noreturn));
/* A one-line reason (printf), then the usage, on stderr; exits EXIT_USAGE. */
void		 cli_bad(const struct cli *, const char *, ...)
		    __attribute__((noreturn, format(printf, 2, 3)));
/* The usage and one line per option, as -h prints it. */
void		 cli_help(const struct cli *, FILE *);
/* Warns once that an operand or spelling is deprecated: "PROG: WHAT". */
void		 cli_deprecated(const struct cli *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

#endif
