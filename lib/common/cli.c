/*
 * The shared command-line grammar: one table per program makes the short
 * options, the long options and the help (cli.h).
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "exitcode.h"
#include "util.h"

#define LONGOPTS_MAX	64	/* as in cli.h */

static const struct cli_opt *
find(const struct cli *c, int val, int old)
{
	const struct cli_opt *o;

	for (o = c->opts; o->val != 0; o++)
		if ((old ? o->old : o->val) == val)
			return o;
	return NULL;
}

/* The entry that says what val is (not a deprecated alias). */
static const struct cli_opt *
canonical(const struct cli *c, int val)
{
	const struct cli_opt *o;

	for (o = c->opts; o->val != 0; o++)
		if (o->val == val && o->old == 0)
			return o;
	return NULL;
}

static void
build(struct cli *c)
{
	struct option *lo = c->longopts;
	const struct cli_opt *o;
	size_t n = 0, k = 0;
	char *s = c->shortopts;

	s[n++] = c->stop ? '+' : ':';
	if (c->stop)
		s[n++] = ':';
	s[n++] = 'h';
	s[n++] = 'V';
	lo[k++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[k++] = (struct option){ "version", no_argument, NULL, 'V' };
	for (o = c->opts; o->val != 0; o++) {
		int letter = o->old ? o->old : o->val < CLI_LONG ? o->val : 0;

		if (letter != 0 && n + 3 < sizeof c->shortopts) {
			s[n++] = (char)letter;
			if (o->arg != NULL)
				s[n++] = ':';
		}
		if (o->name != NULL && o->old == 0 && k + 1 < LONGOPTS_MAX)
			lo[k++] = (struct option){ o->name,
			    o->arg != NULL ? required_argument : no_argument,
			    NULL, o->val };
	}
	s[n] = '\0';
	lo[k] = (struct option){ NULL, 0, NULL, 0 };
	c->built = 1;
}

void
cli_usage(const struct cli *c, FILE *f)
{
	const char *p = c->usage, *nl;
	int first = 1;

	do {
		nl = strchr(p, '\n');
		/* A line that begins with a blank goes on the one before. */
		fprintf(f, "%s%.*s\n", first ? "usage: " : *p == ' ' ? "" :
		    "       ", nl != NULL ? (int)(nl - p) : (int)strlen(p), p);
		first = 0;
		p = nl != NULL ? nl + 1 : NULL;
	} while (p != NULL && *p != '\0');
}

void
cli_usage_exit(const struct cli *c, int code)
{
	cli_usage(c, code == 0 ? stdout : stderr);
	exit(code);
}

/* "PROG: MESSAGE" on stderr, a line. */
static void __attribute__((format(printf, 2, 0)))
cli_vsay(const struct cli *c, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", c->prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void
cli_bad(const struct cli *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vsay(c, fmt, ap);
	va_end(ap);
	cli_usage_exit(c, EXIT_USAGE);
}

static void
help_line(FILE *f, int letter, const char *name, const char *arg,
    const char *help)
{
	char lhs[64];
	int n;

	if (letter != 0 && name != NULL)
		n = snprintf(lhs, sizeof lhs, "-%c, --%s", letter, name);
	else if (letter != 0)
		n = snprintf(lhs, sizeof lhs, "-%c", letter);
	else
		n = snprintf(lhs, sizeof lhs, "    --%s", name);
	if (arg != NULL && n > 0 && (size_t)n < sizeof lhs)
		snprintf(lhs + n, sizeof lhs - n, name != NULL ? "=%s" : " %s",
		    arg);
	if (strlen(lhs) > 24)
		fprintf(f, "  %s\n  %24s  %s\n", lhs, "", help);
	else
		fprintf(f, "  %-24s  %s\n", lhs, help);
}

/* What replaces deprecated entry o: "-D or --foreground", or its help. */
static void
replacement(const struct cli *c, const struct cli_opt *o, FILE *f)
{
	const struct cli_opt *to = canonical(c, o->val);

	if (o->help != NULL)
		fputs(o->help, f);
	else if (to == NULL)
		fputs("nothing: it goes", f);
	else if (to->val < CLI_LONG && to->name != NULL)
		fprintf(f, "-%c or --%s", to->val, to->name);
	else if (to->val < CLI_LONG)
		fprintf(f, "-%c", to->val);
	else
		fprintf(f, "--%s", to->name);
}

void
cli_help(const struct cli *c, FILE *f)
{
	const struct cli_opt *o;
	int any = 0;

	cli_usage(c, f);
	fputc('\n', f);
	for (o = c->opts; o->val != 0; o++)
		if (o->old == 0 && o->help != NULL)
			help_line(f, o->val < CLI_LONG ? o->val : 0, o->name,
			    o->arg, o->help);
	help_line(f, 'h', "help", NULL, "print this help and exit");
	help_line(f, 'V', "version", NULL, "print the version and exit");
	if (c->note != NULL)
		fprintf(f, "\n%s%s", c->note,
		    c->note[strlen(c->note) - 1] == '\n' ? "" : "\n");
	for (o = c->opts; o->val != 0; o++)
		if (o->old != 0) {
			if (!any)
				fprintf(f, "\nDeprecated, still accepted with a "
				    "warning:\n");
			any = 1;
			fprintf(f, "  -%c%s%s   use ", o->old,
			    o->arg != NULL ? " " : "",
			    o->arg != NULL ? o->arg : "");
			replacement(c, o, f);
			fputc('\n', f);
		}
	fprintf(f, "\nSee %s(%s) for the whole story.\n", c->prog,
	    strcmp(c->prog, "gleam-serve") == 0 ? "8" : "1");
}

void
cli_deprecated(const struct cli *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vsay(c, fmt, ap);
	va_end(ap);
}

/*
 * After getopt_long failed on the option whose val is optopt: its entry
 * if the word that failed was its long spelling.  (A short option that
 * failed amid a cluster leaves optind on the cluster, so the word before
 * it is looked at: it is a long spelling of the same option only if the
 * command line said the option twice.)
 */
static const struct cli_opt *
failed_long(const struct cli *c, int argc, char **argv)
{
	const struct cli_opt *o;
	const char *w;
	size_t n;

	if (optopt == 0 || optind < 1 || optind > argc ||
	    (o = canonical(c, optopt)) == NULL || o->name == NULL)
		return NULL;
	if (optopt == 'h' || optopt == 'V')
		return NULL;
	w = argv[optind - 1];
	n = strlen(o->name);
	if (strncmp(w, "--", 2) == 0 && strncmp(w + 2, o->name, n) == 0 &&
	    (w[2 + n] == '\0' || w[2 + n] == '='))
		return o;
	return NULL;
}

int
cli_next(struct cli *c, int argc, char **argv)
{
	const struct cli_opt *o;
	int ch, saved = opterr;

	if (!c->built)
		build(c);
	opterr = 0;
	ch = getopt_long(argc, argv, c->shortopts, c->longopts, NULL);
	opterr = saved;
	switch (ch) {
	case -1:
		return -1;
	case 'h':
		cli_help(c, stdout);
		exit(EXIT_OK);
	case 'V':
		if (c->valone != NULL && argc > 2)
			cli_bad(c, "%s", c->valone);
		printf("%s %s\n", c->prog, GLEAM_VERSION);
		exit(EXIT_OK);
	case '?':
		if ((o = failed_long(c, argc, argv)) != NULL)
			cli_bad(c, "option --%s takes no argument", o->name);
		if ((optopt == 'h' || optopt == 'V') &&
		    strncmp(argv[optind - 1], "--", 2) == 0)
			cli_bad(c, "option --%s takes no argument",
			    optopt == 'h' ? "help" : "version");
		if (optopt != 0 && optopt < CLI_LONG)
			cli_bad(c, "unknown option -%c", optopt);
		cli_bad(c, "unknown option %s", argv[optind - 1]);
	case ':':
		if ((o = failed_long(c, argc, argv)) != NULL)
			cli_bad(c, "option --%s needs an argument: %s", o->name,
			    o->arg);
		o = find(c, optopt, 1);
		o = canonical(c, o != NULL ? o->val : optopt);
		cli_bad(c, "option -%c needs an argument%s%s", optopt,
		    o != NULL && o->arg != NULL ? ": " : "",
		    o != NULL && o->arg != NULL ? o->arg : "");
	}
	if ((o = find(c, ch, 1)) != NULL) {
		unsigned bit = (unsigned)ch & 255;

		if ((c->warned[bit / 32] & 1u << (bit % 32)) == 0) {
			c->warned[bit / 32] |= 1u << (bit % 32);
			fprintf(stderr, "%s: -%c is deprecated and will go; "
			    "use ", c->prog, ch);
			replacement(c, o, stderr);
			fputc('\n', stderr);
		}
		return o->val;
	}
	return ch;
}
