/*
 * gleam-sched: pair clients with GPU servers by network and GPU
 * contention.  The one-shot mode reads links, servers and tasks and
 * prints a plan.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exitcode.h"
#include "input.h"
#include "log.h"
#include "place.h"
#include "plan.h"
#include "sched.h"

static void __attribute__((noreturn))
usage(int code)
{
	fprintf(code == 0 ? stdout : stderr,
	    "usage: gleam-sched [-x] [-o format] -l links.yaml "
	    "-s servers.yaml -t tasks.yaml\n");
	exit(code);
}

/* A one-line reason, then the usage. */
static void __attribute__((noreturn, format(printf, 1, 2)))
misuse(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LL_ERROR, fmt, ap);
	va_end(ap);
	usage(EXIT_USAGE);
}

int
main(int argc, char *argv[])
{
	struct sched s;
	struct place_why *why = NULL;
	struct yerr err;
	const char *links = NULL, *servers = NULL, *tasks = NULL;
	int ch, explain = 0, table = 0, rc, i;

	log_init(argv[0], LL_WARN);
	while ((ch = getopt(argc, argv, "hl:o:s:t:x")) != -1) {
		switch (ch) {
		case 'h':
			usage(EXIT_OK);
		case 'l':
			links = optarg;
			break;
		case 'o':
			if (strcmp(optarg, "table") == 0)
				table = 1;
			else if (strcmp(optarg, "yaml") == 0)
				table = 0;
			else
				misuse("-o: %s: expected table or yaml",
				    optarg);
			break;
		case 's':
			servers = optarg;
			break;
		case 't':
			tasks = optarg;
			break;
		case 'x':
			explain = 1;
			break;
		default:
			usage(EXIT_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc > 0)
		misuse("unexpected argument '%s'", argv[0]);
	if (links == NULL)
		misuse("no links file given (-l)");
	if (servers == NULL)
		misuse("no servers file given (-s)");
	if (tasks == NULL)
		misuse("no tasks file given (-t)");

	sched_init(&s);
	if (input_servers(&s, servers, &err) == -1 ||
	    input_links(&s, links, servers, &err) == -1 ||
	    input_tasks(&s, tasks, links, &err) == -1)
		fatalx(EXIT_CONFIG, "%s", err.msg);
	if (explain && (why = calloc((size_t)s.ntasks + 1,
	    sizeof *why)) == NULL)
		fatal(EXIT_IO, "calloc");
	if (place_plan(&s, why) == -1)
		fatalx(EXIT_IO, "out of memory");
	if ((table ? plan_table(stdout, &s, why) :
	    plan_yaml(stdout, &s, why)) == -1)
		fatalx(EXIT_IO, "cannot write the plan");
	if (fflush(stdout) == EOF || ferror(stdout))
		fatal(EXIT_IO, "stdout");
	rc = EXIT_OK;
	for (i = 0; i < s.ntasks; i++)
		if (s.tasks[i].server < 0)
			rc = EXIT_FAIL;
	place_why_free(why, s.ntasks);
	free(why);
	sched_free(&s);
	return rc;
}
