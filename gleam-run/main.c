/*
 * gleam-run: run a program with the Gleam client library in place of the
 * CUDA driver, so that its CUDA work runs on a gleam-serve GPU.
 *
 * It chainloads: the environment is set and the program exec'd in
 * gleam-run's place, so its exit status, signals and process id are its
 * own.  Statistics are the client library's to write, at the program's
 * exit.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "exitcode.h"
#include "log.h"
#include "parse.h"
#include "proto.h"
#include "run.h"

enum { O_STATS = 'O' };

static const struct cli_opt opts[] = {
	{ 's', "server", "host[:port]", "use this gleam-serve (port 7383 unless given)", 0 },
	{ 'S', "sched", "host[:port]", "ask this gleam-sched daemon which server to use", 0 },
	{ 't', "task", "name", "with -S: the task's name for the daemon", 0 },
	{ 'k', "key", "file", "prove this key file's key to the server", 0 },
	{ 'O', "stats", "file", "the program writes its statistics here (YAML)", 0 },
	{ 'F', "fallback", NULL, "if the server cannot be used, run without it", 0 },
	{ 'q', "quiet", NULL, "no warnings and no upload progress", 0 },
	{ 'v', "verbose", NULL, "say more (again: debug lines)", 0 },
	{ 'O', NULL, "file", NULL, 'o' },
	{ 0 }
};

static struct cli cli = { "gleam-run",
    "gleam-run [-Fqv] [-k keyfile] [-O stats.yaml]\n"
    "                 [-s host[:port] | -S host[:port] [-t task]] [--] prog [args ...]",
    opts, 1 };

int
main(int argc, char *argv[])
{
	struct run_opts o;
	const char *why, *e;
	char host[256];
	int ch, port = PROTO_DEFAULT_PORT;

	log_init("gleam-run", LL_WARN);
	memset(&o, 0, sizeof o);
	while ((ch = cli_next(&cli, argc, argv)) != -1) {
		switch (ch) {
		case 'F':
			o.fallback = 1;
			break;
		case 'k':
			o.key_file = optarg;
			break;
		case 'O':
			o.stats = optarg;
			break;
		case 'q':
			o.quiet = 1;
			break;
		case 'S':
		case 's':
			if (parse_connect(optarg, host, sizeof host, &port,
			    &why) == -1)
				cli_bad(&cli, "-%c %s: %s", ch, optarg, why);
			if (ch == 's')
				o.server = optarg;
			else
				o.sched = optarg;
			break;
		case 't':
			if (optarg[0] == '\0' || strlen(optarg) > 127)
				cli_bad(&cli, "-t: a task name of 1 to 127 "
				    "bytes");
			o.task = optarg;
			break;
		case 'v':
			o.verbose++;
			break;
		default:
			cli_usage_exit(&cli, EXIT_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0)
		cli_bad(&cli, "no program given");
	if (o.server != NULL && o.sched != NULL)
		cli_bad(&cli, "-s and -S: give one");
	if (o.task != NULL && o.sched == NULL)
		cli_bad(&cli, "-t: only with -S");
	if (o.quiet)
		log_init("gleam-run", LL_ERROR);
	if (!o.fallback && (e = getenv("GLEAM_FALLBACK")) != NULL && *e) {
		if (strcmp(e, "local") == 0)
			o.fallback = 2;
		else
			log_warn("GLEAM_FALLBACK=%s: expected 'local': ignored",
			    e);
	}
	return run_exec(&o, argv);
}
