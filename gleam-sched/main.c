/*
 * gleam-sched: pair clients with GPU servers by network and GPU
 * contention.  The one-shot mode reads links, servers and tasks and
 * prints a plan; with -d it is a daemon that gleam-run asks.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "exitcode.h"
#include "input.h"
#include "log.h"
#include "net.h"
#include "parse.h"
#include "place.h"
#include "plan.h"
#include "sched.h"
#include "svc.h"
#include "util.h"

static void __attribute__((noreturn))
usage(int code)
{
	fprintf(code == 0 ? stdout : stderr,
	    "usage: gleam-sched [-x] [-o format] -l links.yaml "
	    "-s servers.yaml -t tasks.yaml\n"
	    "       gleam-sched -d [-Av] [-i seconds] [-k keyfile] "
	    "[-L host:port] [-P pidfile] -l links.yaml -s servers.yaml "
	    "[-t tasks.yaml]\n");
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
	struct daemon_opts dopt;
	struct yerr err;
	const char *links = NULL, *servers = NULL, *tasks = NULL, *errstr;
	const char *listen = NULL, *key = NULL, *pidfile = NULL;
	double interval = 10;
	int ch, explain = 0, table = 0, rc, i, daemon = 0, verbose = 0;
	int oflag = 0, iflag = 0, aflag = 0;

	log_init("gleam-sched", LL_WARN);
	while ((ch = getopt(argc, argv, "Adhi:k:L:l:o:P:s:t:vx")) != -1) {
		switch (ch) {
		case 'd':
			daemon = 1;
			break;
		case 'h':
			usage(EXIT_OK);
		case 'i':
			if (parse_double(optarg, 0.1, 86400, &interval,
			    &errstr) == -1)
				misuse("-i %s: %s", optarg, errstr);
			iflag = 1;
			break;
		case 'k':
			key = optarg;
			break;
		case 'A':
			aflag = 1;
			break;
		case 'L':
			listen = optarg;
			break;
		case 'l':
			links = optarg;
			break;
		case 'o':
			oflag = 1;
			if (strcmp(optarg, "table") == 0)
				table = 1;
			else if (strcmp(optarg, "yaml") == 0)
				table = 0;
			else
				misuse("-o: %s: expected table or yaml",
				    optarg);
			break;
		case 'P':
			pidfile = optarg;
			break;
		case 's':
			servers = optarg;
			break;
		case 't':
			tasks = optarg;
			break;
		case 'v':
			verbose++;
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
	/* "-" is standard input, which gives one file. */
	if (stdin_named(links) + stdin_named(servers) + stdin_named(tasks) > 1)
		misuse("-%s and -%s both read standard input: at most one "
		    "file may be -", stdin_named(links) ? "l" : "s",
		    stdin_named(tasks) ? "t" : "s");
	if (daemon) {
		if (explain || oflag)
			misuse("-%c: not with -d", explain ? 'x' : 'o');
		log_setlevel(verbose > 0 ? LL_DEBUG : LL_INFO);
		memset(&dopt, 0, sizeof dopt);
		dopt.links = links;
		dopt.servers = servers;
		dopt.tasks = tasks;
		/*
		 * Without a key only this host is served, unless -A says
		 * that anyone may be (as gleam-serve's auth: off).
		 */
		dopt.listen = listen != NULL ? listen : key != NULL || aflag ?
		    "*:7384" : "127.0.0.1:7384";
		if (key == NULL && !aflag) {
			char h[256];
			int port;
			const char *e;

			if (parse_hostport(dopt.listen, h, sizeof h, &port,
			    &e) == 0 && !net_is_loopback(h))
				misuse("-L %s without a key: anyone who reaches "
				    "it could read and steer the placements; "
				    "give -k, listen on 127.0.0.1, or say -A",
				    dopt.listen);
		}
		dopt.key_file = key;
		dopt.interval = interval;
		dopt.verbose = verbose;
		if (pidfile != NULL && svc_pidfile(pidfile) == -1)
			return EXIT_IO;
		return daemon_main(&dopt);
	}
	if (listen != NULL || key != NULL || verbose || iflag || pidfile ||
	    aflag)
		misuse("-%s: only with -d", listen != NULL ? "L" : key != NULL ?
		    "k" : verbose ? "v" : iflag ? "i" : pidfile ? "P" : "A");
	if (tasks == NULL)
		misuse("no tasks file given (-t)");

	sched_init(&s);
	if (input_servers(&s, servers, links, &err) == -1 ||
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
