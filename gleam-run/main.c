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

#include "exitcode.h"
#include "log.h"
#include "parse.h"
#include "proto.h"
#include "run.h"

static void __attribute__((noreturn))
usage(int code)
{
	fprintf(code == 0 ? stdout : stderr,
	    "usage: gleam-run [-Fv] [-k keyfile] [-o stats.yaml] "
	    "[-s host[:port] | -S host[:port]] [-t task] "
	    "-- prog [args ...]\n");
	exit(code);
}

int
main(int argc, char *argv[])
{
	struct run_opts o;
	const char *why, *e;
	char host[256];
	int ch, port = PROTO_DEFAULT_PORT;

	log_init("gleam-run", LL_WARN);
	memset(&o, 0, sizeof o);
	while ((ch = getopt(argc, argv, "+Fhk:o:S:s:t:v")) != -1) {
		switch (ch) {
		case 'F':
			o.fallback = 1;
			break;
		case 'h':
			usage(EXIT_OK);
		case 'k':
			o.key_file = optarg;
			break;
		case 'o':
			o.stats = optarg;
			break;
		case 'S':
		case 's':
			if (parse_hostport(optarg, host, sizeof host, &port,
			    &why) == -1 || (port == 0 && (why = "port 0")) ||
			    (host[0] == '\0' && (why = "no host"))) {
				log_error("-%c %s: %s", ch, optarg, why);
				usage(EXIT_USAGE);
			}
			if (ch == 's')
				o.server = optarg;
			else
				o.sched = optarg;
			break;
		case 't':
			if (optarg[0] == '\0' || strlen(optarg) > 127) {
				log_error("-t: a task name of 1 to 127 bytes");
				usage(EXIT_USAGE);
			}
			o.task = optarg;
			break;
		case 'v':
			o.verbose++;
			break;
		default:
			usage(EXIT_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0) {
		log_error("no program given");
		usage(EXIT_USAGE);
	}
	if (o.server != NULL && o.sched != NULL) {
		log_error("-s and -S: give one");
		usage(EXIT_USAGE);
	}
	if (o.task != NULL && o.sched == NULL) {
		log_error("-t: only with -S");
		usage(EXIT_USAGE);
	}
	if (!o.fallback && (e = getenv("GLEAM_FALLBACK")) != NULL && *e) {
		if (strcmp(e, "local") == 0)
			o.fallback = 2;
		else
			log_warn("GLEAM_FALLBACK=%s: expected 'local': ignored",
			    e);
	}
	return run_exec(&o, argv);
}
