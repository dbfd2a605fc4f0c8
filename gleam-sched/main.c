/*
 * gleam-sched: pair clients with GPU servers by network and GPU
 * contention.  The one-shot mode (plan) reads links, servers and tasks
 * and prints a plan; serve is a daemon that gleam-run asks.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "daemon.h"
#include "exitcode.h"
#include "input.h"
#include "log.h"
#include "migrate.h"
#include "net.h"
#include "parse.h"
#include "place.h"
#include "plan.h"
#include "sched.h"
#include "svc.h"
#include "util.h"

enum { O_OLDSERVE = CLI_LONG };

/* The options of both modes (gleam(7), COMMAND LINE; gleam-sched(1)). */
static const struct cli_opt opts[] = {
	{ 'A', "allow-any", NULL, "serve: without -k, answer anyone", 0 },
	{ 'D', "foreground", NULL, "serve: it always runs in the foreground",
	    0 },
	{ 'i', "interval", "seconds", "serve: read the servers' status this "
	    "often (10)", 0 },
	{ 'k', "key", "keyfile", "serve, migrate: the key clients and "
	    "servers prove", 0 },
	{ 'l', "listen", "address:port", "serve: where to listen "
	    "(127.0.0.1:7384)", 0 },
	{ 'L', "links", "links.yaml", "the links from clients to servers", 0 },
	{ 'o', "format", "format", "plan: yaml (default) or table", 0 },
	{ 'P', "pid-file", "pidfile", "serve: the pid file", 0 },
	{ 'R', "replan", "seconds", "serve: plan the running clients again "
	    "this often (30; 0: never)", 0 },
	{ 's', "servers", "servers.yaml", "the servers", 0 },
	{ 't', "tasks", "tasks.yaml", "the tasks", 0 },
	{ 'v', "verbose", NULL, "serve: log each connection and request", 0 },
	{ 'x', "explain", NULL, "plan: say why each task goes where it goes",
	    0 },
	{ O_OLDSERVE, NULL, NULL, "gleam-sched serve (-l the address, -L the "
	    "links)", 'd' },
	{ 0 }
};

static struct cli cli = { "gleam-sched",
    "gleam-sched [plan] [-x] [-o format] -L links.yaml -s servers.yaml "
    "-t tasks.yaml\n"
    "gleam-sched serve [-ADv] [-i seconds] [-k keyfile] [-l address:port] "
    "[-P pidfile] [-R seconds] -L links.yaml -s servers.yaml "
    "[-t tasks.yaml]\n"
    "gleam-sched migrate [-k keyfile] server session|address target",
    opts, 0,
    "0.1's plan -l links.yaml is still taken, with a warning." };

/* A one-line reason, then the usage. */
static void __attribute__((noreturn, format(printf, 1, 2)))
misuse(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	cli_bad(&cli, "%s", msg);
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
	const char *larg = NULL, *Larg = NULL;
	char host[256];
	double interval = 10, replan = 30;
	int ch, explain = 0, table = 0, rc, i, daemon = 0, verbose = 0;
	int oflag = 0, iflag = 0, aflag = 0, fflag = 0, oldserve = 0, port;
	int rflag = 0;

	log_init("gleam-sched", LL_WARN);
	while ((ch = cli_next(&cli, argc, argv)) != -1) {
		switch (ch) {
		case O_OLDSERVE:
			oldserve = 1;
			break;
		case 'D':
			fflag = 1;	/* the daemon never detaches */
			break;
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
			Larg = optarg;
			break;
		case 'l':
			larg = optarg;
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
		case 'R':
			if (parse_double(optarg, 0, 86400, &replan,
			    &errstr) == -1)
				misuse("-R %s: %s", optarg, errstr);
			rflag = 1;
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
		}
	}
	argc -= optind;
	argv += optind;
	/* The mode: a word, plan by default; 0.1 said -d for serve. */
	if (argc > 0 && strcmp(argv[0], "migrate") == 0) {
		if (oldserve || Larg || larg || servers || tasks || oflag ||
		    explain || iflag || pidfile || aflag || fflag || verbose ||
		    rflag)
			misuse("migrate takes -k only");
		if (argc < 4)
			misuse("migrate: expected a server, a session or "
			    "address, and a target");
		if (argc > 4)
			misuse("unexpected argument '%s'", argv[4]);
		return migrate_main(argv[1], argv[2], argv[3], key);
	}
	if (argc > 0 && strcmp(argv[0], "serve") == 0)
		daemon = 1;
	else if (argc > 0 && strcmp(argv[0], "plan") != 0)
		misuse("unexpected argument '%s'", argv[0]);
	if (argc > 1)
		misuse("unexpected argument '%s'", argv[1]);
	if (oldserve && argc > 0 && !daemon)
		misuse("-d (serve) with plan");
	if (oldserve && !daemon) {
		/* 0.1's daemon: -L the address, -l the links. */
		daemon = 1;
		listen = Larg;
		links = larg;
	} else if (daemon) {
		listen = larg;
		links = Larg;
	} else if (larg != NULL && Larg != NULL) {
		misuse("-l and -L: the links file is -L");
	} else if (larg != NULL) {
		cli_deprecated(&cli, "-l links.yaml is deprecated and will "
		    "go; use -L (--links)");
		links = larg;
	} else
		links = Larg;
	if (links == NULL)
		misuse("no links file given (-L)");
	if (servers == NULL)
		misuse("no servers file given (-s)");
	/* "-" is standard input, which gives one file. */
	if (stdin_named(links) + stdin_named(servers) + stdin_named(tasks) > 1)
		misuse("-%s and -%s both read standard input: at most one "
		    "file may be -", stdin_named(links) ? "L" : "s",
		    stdin_named(tasks) ? "t" : "s");
	if (daemon) {
		if (explain || oflag)
			misuse("-%c: only in plan mode", explain ? 'x' : 'o');
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
		if (parse_hostport(dopt.listen, host, sizeof host, &port,
		    &errstr) == -1)
			misuse("-l %s: %s", dopt.listen, errstr);
		if (key == NULL && !aflag && !net_is_loopback(host))
			misuse("-l %s without a key: anyone who reaches it "
			    "could read and steer the placements; give -k, "
			    "listen on 127.0.0.1, or say -A", dopt.listen);
		dopt.key_file = key;
		dopt.interval = interval;
		dopt.replan = replan;
		dopt.verbose = verbose;
		if (pidfile != NULL && svc_pidfile(pidfile) == -1)
			return EXIT_IO;
		return daemon_main(&dopt);
	}
	if (key != NULL || verbose || iflag || pidfile || aflag || fflag ||
	    rflag)
		misuse("-%c: only with serve", key != NULL ? 'k' : verbose ?
		    'v' : iflag ? 'i' : pidfile ? 'P' : aflag ? 'A' : rflag ?
		    'R' : 'D');
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
