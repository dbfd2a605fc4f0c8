/*
 * gleam-link: a shaping TCP proxy that emulates a LAN link (rate, delay,
 * jitter, a bottleneck queue) between Gleam clients and servers.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "exitcode.h"
#include "link.h"
#include "log.h"
#include "parse.h"

#define QUEUE_MIN	1024ULL
#define QUEUE_MAX	(1024ULL * 1024 * 1024)
#define QUEUE_DEFAULT	(64 * 1024)	/* at least */
#define QUEUE_TIME	0.05		/* seconds at the rate, by default */

/* The options (gleam(7), COMMAND LINE), as gleam-link(1) has them. */
static const struct cli_opt opts[] = {
	{ 'b', "rate", "rate[/rate]", "bits per second (10mbit, 1gbit), "
	    "up/down", 0 },
	{ 'd', "delay", "delay[/delay]", "one-way delay (2ms), up/down", 0 },
	{ 'F', "fault", "fault", "cut@T, reset@T or hole@T+D; "
	    "repeatable", 0 },
	{ 'j', "jitter", "jitter[/jitter]", "delay variation, at most the "
	    "delay", 0 },
	{ 'l', "listen", "address:port", "where clients connect (port 0: "
	    "any)", 0 },
	{ 'Q', "queue", "size", "the bottleneck queue, 1k to 1g", 0 },
	{ 'S', "seed", "seed", "of the jitter's random numbers", 0 },
	{ 'v', "verbose", NULL, "more diagnostics; may be repeated", 0 },
	{ 'Q', NULL, "size", NULL, 'q' },
	{ 0 }
};

static struct cli cli = { "gleam-link", "gleam-link [-v] [-b rate[/rate]] "
    "[-d delay[/delay]] [-F fault] [-j jitter[/jitter]] [-Q size] "
    "[-S seed] -l address:port target:port", opts, 0 };

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

/*
 * "value" for both directions or "up/down": client to target, then
 * target to client.  The message names the part that is wrong.
 */
static void
pair_parse(int opt, const char *arg,
    int (*parse)(const char *, double *, const char **), double out[2])
{
	char buf[256], *down;
	const char *why;

	if ((size_t)snprintf(buf, sizeof buf, "%s", arg) >= sizeof buf)
		misuse("-%c: %.32s...: too long", opt, arg);
	if ((down = strchr(buf, '/')) != NULL) {
		*down++ = '\0';
		if (strchr(down, '/') != NULL)
			misuse("-%c: %s: more than two values", opt, arg);
	}
	/* An empty part is named by the whole argument. */
	if (parse(buf, &out[0], &why) == -1)
		misuse("-%c: %s: %s", opt, *buf != '\0' ? buf : arg, why);
	if (down == NULL)
		out[1] = out[0];
	else if (parse(down, &out[1], &why) == -1)
		misuse("-%c: %s: %s", opt, *down != '\0' ? down : arg, why);
}

/* host:port for -l (port 0 picks one) or for the target. */
static void
address_parse(const char *what, const char *arg, char *host, size_t len,
    int *port, int listening)
{
	const char *why;

	*port = -1;
	if (parse_hostport(arg, host, len, port, &why) == -1)
		misuse("%s: %s: %s", what, arg, why);
	if (*port == -1)
		misuse("%s: %s: missing port", what, arg);
	if (!listening && *port == 0)
		misuse("%s: %s: port out of range", what, arg);
	if (!listening && *host == '\0')
		misuse("%s: %s: missing host", what, arg);
}

int
main(int argc, char *argv[])
{
	struct link_config cfg;
	double rate[2] = { 0, 0 }, delay[2] = { 0, 0 }, jitter[2] = { 0, 0 };
	char j[32], d[32];
	const char *why, *laddr = NULL;
	uint64_t queue = 0;
	long long ll;
	int ch, i, verbose = 0;

	log_init(argv[0], LL_WARN);
	memset(&cfg, 0, sizeof cfg);
	cfg.seed = 1;
	while ((ch = cli_next(&cli, argc, argv)) != -1) {
		switch (ch) {
		case 'b':
			pair_parse('b', optarg, parse_rate, rate);
			break;
		case 'd':
			pair_parse('d', optarg, parse_duration, delay);
			break;
		case 'F':
			if (cfg.nfault == LINK_FAULTS_MAX)
				misuse("-F: more than %d faults",
				    LINK_FAULTS_MAX);
			if (link_fault_parse(optarg, &cfg.fault[cfg.nfault],
			    &why) == -1)
				misuse("-F: %s: %s", optarg, why);
			cfg.nfault++;
			break;
		case 'j':
			pair_parse('j', optarg, parse_duration, jitter);
			break;
		case 'l':
			laddr = optarg;
			break;
		case 'Q':
			if (parse_size(optarg, &queue, &why) == -1)
				misuse("-Q: %s: %s", optarg, why);
			if (queue < QUEUE_MIN || queue > QUEUE_MAX)
				misuse("-Q: %s: not between 1k and 1g", optarg);
			break;
		case 'S':
			if (parse_int(optarg, 0, LLONG_MAX, &ll, &why) == -1)
				misuse("-S: %s: %s", optarg, why);
			cfg.seed = (uint64_t)ll;
			break;
		case 'v':
			verbose++;
			break;
		}
	}
	argc -= optind;
	argv += optind;
	if (laddr == NULL)
		misuse("missing -l address:port");
	if (argc == 0)
		misuse("missing target:port");
	if (argc > 1)
		misuse("unexpected argument: %s", argv[1]);
	address_parse("-l", laddr, cfg.listen_host, sizeof cfg.listen_host,
	    &cfg.listen_port, 1);
	address_parse("target", argv[0], cfg.target_host,
	    sizeof cfg.target_host, &cfg.target_port, 0);

	for (i = 0; i < 2; i++) {
		/* Jitter beyond the delay would need negative delays. */
		if (jitter[i] > delay[i])
			misuse("-j: jitter %s exceeds the delay %s",
			    fmt_duration(jitter[i], j, sizeof j),
			    fmt_duration(delay[i], d, sizeof d));
		cfg.dir[i].rate = rate[i];
		cfg.dir[i].delay = delay[i];
		cfg.dir[i].jitter = jitter[i];
		if (queue != 0)
			cfg.dir[i].queue = (size_t)queue;
		else if (rate[i] > 0 && rate[i] * QUEUE_TIME / 8 > QUEUE_MAX)
			cfg.dir[i].queue = (size_t)QUEUE_MAX;
		else if (rate[i] * QUEUE_TIME / 8 > QUEUE_DEFAULT)
			cfg.dir[i].queue = (size_t)(rate[i] * QUEUE_TIME / 8);
		else
			cfg.dir[i].queue = QUEUE_DEFAULT;
	}
	log_setlevel(LL_WARN + verbose);
	return link_run(&cfg);
}
