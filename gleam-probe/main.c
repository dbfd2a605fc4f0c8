/*
 * gleam-probe: measure round trips and throughput to Gleam servers and
 * read their GPU status.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "cli.h"
#include "conn.h"
#include "exitcode.h"
#include "log.h"
#include "parse.h"
#include "probe.h"
#include "proto.h"
#include "report.h"

static int show_progress;
static pthread_mutex_t progress_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct cli_opt opts[] = {
	{ 'N', "count", "count", "round trips to time per server (20)", 0 },
	{ 't', "time", "time", "how long to measure throughput each way (2s; 0: skip)", 0 },
	{ 'T', "timeout", "timeout", "give up on a server after this long (3s)", 0 },
	{ 'k', "key", "file", "prove this key file's key to the servers", 0 },
	{ 'o', "format", "format", "table (default) or yaml", 0 },
	{ 'q', "quiet", NULL, "no diagnostics and no progress", 0 },
	{ 'v', "verbose", NULL, "say more", 0 },
	{ 'N', NULL, "count", NULL, 'c' },
	{ 0 }
};

static struct cli cli = { "gleam-probe",
    "gleam-probe [-qv] [-N count] [-k keyfile] [-o format] [-T timeout]\n"
    "                   [-t time] server ...", opts, 0 };

/* One line on stderr, rewritten in place; only on a terminal. */
static void
progress(const char *server, const char *what)
{
	if (!show_progress)
		return;
	pthread_mutex_lock(&progress_lock);
	fprintf(stderr, "\r\033[Kprobing %s: %s", server, what);
	fflush(stderr);
	pthread_mutex_unlock(&progress_lock);
}

struct job {
	struct probe		*p;
	const struct probe_opts	*o;
	pthread_t		 tid;
};

static void *
job_run(void *arg)
{
	struct job *j = arg;

	probe_run(j->p, j->o);
	return NULL;
}

/* The exit code for a failed probe. */
static int
probe_exit(const struct probe *p)
{
	switch (p->fail) {
	case CONN_AUTH:
		return EXIT_AUTH;
	case CONN_NET:
		return EXIT_NET;
	default:
		return EXIT_FAIL;
	}
}

int
main(int argc, char *argv[])
{
	pthread_mutex_t bulk_lock = PTHREAD_MUTEX_INITIALIZER;
	struct probe_opts o;
	struct auth_key key;
	struct probe *probes;
	struct job *jobs;
	const char *keyfile = NULL, *format = "table", *why;
	char err[1200];
	double secs;
	long long ll;
	int ch, i, n, quiet = 0, verbose = 0, rc = EXIT_OK;

	log_init(argv[0], LL_WARN);
	memset(&o, 0, sizeof o);
	o.count = 20;
	o.bulk_s = 2;
	o.timeout_ms = 3000;
	o.chunk = 256 << 10;
	o.bulk_lock = &bulk_lock;
	while ((ch = cli_next(&cli, argc, argv)) != -1) {
		switch (ch) {
		case 'N':
			if (parse_int(optarg, 1, 1000000, &ll, &why) == -1)
				cli_bad(&cli, "-N: %s: %s", optarg, why);
			o.count = (int)ll;
			break;
		case 'k':
			keyfile = optarg;
			break;
		case 'o':
			if (strcmp(optarg, "table") != 0 &&
			    strcmp(optarg, "yaml") != 0)
				cli_bad(&cli, "-o: %s: expected table or yaml",
				    optarg);
			format = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'T':
			if (parse_duration(optarg, &secs, &why) == -1 ||
			    (secs < 0.001 && (why = "too small")) ||
			    (secs > 3600 && (why = "too large")))
				cli_bad(&cli, "-T: %s: %s", optarg, why);
			o.timeout_ms = (int)(secs * 1000);
			break;
		case 't':
			if (parse_duration(optarg, &secs, &why) == -1 ||
			    (secs > 600 && (why = "longer than 10 minutes")))
				cli_bad(&cli, "-t: %s: %s", optarg, why);
			o.bulk_s = secs;
			break;
		case 'v':
			verbose++;
			break;
		default:
			cli_usage_exit(&cli, EXIT_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0)
		cli_bad(&cli, "no server given");
	log_setlevel(quiet ? LL_ERROR : LL_WARN + verbose);
	show_progress = !quiet && isatty(STDOUT_FILENO) &&
	    isatty(STDERR_FILENO);
	if (show_progress)
		o.progress = progress;
	if (auth_init() == -1)
		fatalx(EXIT_SOFTWARE, "libsodium failed to start");
	if (keyfile != NULL) {
		if (auth_key_load(&key, keyfile, err, sizeof err) == -1)
			fatalx(EXIT_CONFIG, "%s", err);
		o.key = &key;
	}

	n = argc;
	probes = calloc((size_t)n, sizeof *probes);
	jobs = calloc((size_t)n, sizeof *jobs);
	if (probes == NULL || jobs == NULL)
		fatal(EXIT_IO, "calloc");
	for (i = 0; i < n; i++) {
		struct probe *p = &probes[i];

		snprintf(p->spec, sizeof p->spec, "%s", argv[i]);
		p->port = PROTO_DEFAULT_PORT;
		if (parse_connect(argv[i], p->host, sizeof p->host, &p->port,
		    &why) == -1)
			cli_bad(&cli, "%s: %s", argv[i], why);
	}
	for (i = 0; i < n; i++) {
		jobs[i].p = &probes[i];
		jobs[i].o = &o;
		if (pthread_create(&jobs[i].tid, NULL, job_run, &jobs[i]) != 0)
			fatalx(EXIT_IO, "cannot start a thread");
	}
	for (i = 0; i < n; i++)
		pthread_join(jobs[i].tid, NULL);
	if (show_progress)
		fprintf(stderr, "\r\033[K");

	for (i = 0; i < n; i++) {
		if (probes[i].ok)
			continue;
		log_error("%s: %s", probes[i].spec, probes[i].error);
		if (rc == EXIT_OK)
			rc = probe_exit(&probes[i]);
	}
	if (strcmp(format, "yaml") == 0) {
		if (report_yaml(stdout, probes, n, o.bulk_s) == -1)
			fatalx(EXIT_IO, "cannot write YAML");
	} else
		report_table(stdout, probes, n);
	if (fflush(stdout) == EOF || ferror(stdout))
		fatal(EXIT_IO, "stdout");
	for (i = 0; i < n; i++)
		probe_free(&probes[i]);
	free(probes);
	free(jobs);
	return rc;
}
