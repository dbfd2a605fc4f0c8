/*
 * gleam-reduce: the aggregator of compressed gradients (sums sketches and
 * ORs bitmaps chunk by chunk, never decoding), and its benchmark driver.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "bench.h"
#include "cli.h"
#include "exitcode.h"
#include "hcodec.h"
#include "hreduce.h"
#include "hreduce_wire.h"
#include "log.h"
#include "net.h"
#include "parse.h"
#include "server.h"
#include "svc.h"

#define MAX_CONNECTIONS	(2 * HR_MAX_WORLD)

#define USAGE	"gleam-reduce [serve] [-ADv] [-k keyfile] " \
	"[-l address:port] [-m size] [-P pidfile] [-T timeout] [-w workers]\n" \
	"gleam-reduce bench [-gq] [--verify] [-b bits] [-d density] " \
	"[-j threads] [-k keyfile] [-N count] [-o format] [-O overlap] " \
	"[-r steps] [-s address:port] [-S seed] [-t tensors] [-w workers] " \
	"[-x scheme] [-z chunk]"

/* The aggregator's options (gleam(7), COMMAND LINE; gleam-reduce(1)). */
static const struct cli_opt serve_opts[] = {
	{ 'A', "allow-any", NULL, "without -k, let ranks join from anywhere",
	    0 },
	{ 'D', "foreground", NULL, "do not detach; log to standard error", 0 },
	{ 'k', "key", "keyfile", "workers must prove the key in keyfile", 0 },
	{ 'l', "listen", "address:port", "where to listen (port 7385)", 0 },
	{ 'm', "memory", "size", "the most chunk bytes held, 1m to 1t (1g)",
	    0 },
	{ 'P', "pid-file", "pidfile", "the pid file", 0 },
	{ 'T', "timeout", "timeout", "the time a round may take (30s)", 0 },
	{ 'v', "verbose", NULL, "more diagnostics; may be repeated", 0 },
	{ 'w', "workers", "workers", "the group's size, 1 to 1024", 0 },
	{ 'D', NULL, NULL, NULL, 'd' },
	{ 'T', NULL, "timeout", NULL, 't' },
	{ 0 }
};

enum { O_VERIFY = CLI_LONG };

/* The benchmark's. */
static const struct cli_opt bench_opts[] = {
	{ 'b', "bits", "bits", "cells of 32 (default) or 64 bits", 0 },
	{ 'd', "density", "density", "the chance of a nonzero value (0.01)",
	    0 },
	{ 'g', "gpu", NULL, "the gradients in GPU memory (a CUDA build)", 0 },
	{ 'j', "threads", "threads", "codec threads per worker, 1 to 64", 0 },
	{ 'k', "key", "keyfile", "the aggregator's key", 0 },
	{ 'N', "count", "count", "values per tensor (1048576)", 0 },
	{ 'o', "format", "format", "human (default) or yaml", 0 },
	{ 'O', "overlap", "overlap", "the share of nonzeros alike at every "
	    "worker (0)", 0 },
	{ 'q', "quiet", NULL, "no diagnostics", 0 },
	{ 'r', "steps", "steps", "timed steps (5)", 0 },
	{ 's', "server", "address:port", "the aggregator, or a list, one per "
	    "rank (default: one of its own)", 0 },
	{ 'S', "seed", "seed", "of the gradients and the row hash (1)", 0 },
	{ 't', "tensors", "tensors", "tensors per step (1)", 0 },
	{ O_VERIFY, "verify", NULL, "check every result against the exact "
	    "sum", 0 },
	{ 'w', "workers", "workers", "worker processes (2)", 0 },
	{ 'x', "scheme", "scheme", "homo (default), dense, gather, omni or "
	    "float", 0 },
	{ 'z', "chunk", "chunk", "bytes per chunk, 1k to 64m (256k)", 0 },
	{ 's', NULL, "address:port", NULL, 'c' },
	{ 'N', NULL, "count", NULL, 'n' },
	{ 0 }
};

static struct cli serve_cli = { "gleam-reduce", USAGE, serve_opts, 0,
    "The benchmark's options: gleam-reduce bench -h." };
/* 0.1's bench -V was --verify: said beside other options, it is refused. */
static struct cli bench_cli = { "gleam-reduce", USAGE, bench_opts, 0,
    "The aggregator's options: gleam-reduce -h.\n"
    "0.1's -s SCHEME (a scheme's name) is still taken, with a warning.",
    "-V is the version now; --verify checks the sums" };
static struct cli *cli = &serve_cli;

static void __attribute__((noreturn, format(printf, 1, 2)))
misuse(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	cli_bad(cli, "%s", msg);
}

static long long
num(int opt, const char *arg, long long min, long long max)
{
	const char *why;
	long long v;

	if (parse_int(arg, min, max, &v, &why) == -1)
		misuse("-%c: %s: %s", opt, arg, why);
	return v;
}

static void
key_load(struct auth_key *key, const char *path)
{
	char err[512];

	if (auth_init() == -1)
		fatalx(EXIT_SOFTWARE, "cannot start libsodium");
	if (auth_key_load(key, path, err, sizeof err) == -1)
		fatalx(EXIT_CONFIG, "%s", err);
}

/*
 * The daemon's key file: one identity a line, as gleam-serve's
 * (gleam-key(1), KEY FILES); a worker proves any one of them.
 */
static void
keys_load(struct auth_keys *ks, const char *path)
{
	char err[512];

	if (auth_init() == -1)
		fatalx(EXIT_SOFTWARE, "cannot start libsodium");
	if (auth_keys_load(ks, path, err, sizeof err) == -1)
		fatalx(EXIT_CONFIG, "%s", err);
}

static int
bench_main(int argc, char *argv[])
{
	struct bench_opts o;
	const char *why, *keyfile = NULL, *p, *comma;
	uint64_t sz;
	double d;
	int ch;

	memset(&o, 0, sizeof o);
	o.port = HR_DEFAULT_PORT;
	o.workers = 2;
	o.n = 1 << 20;
	o.tensors = 1;
	o.density = 0.01;
	o.steps = 5;
	o.cell_bits = 32;
	o.chunk = HR_CHUNK_DEFAULT;
	o.seed = 1;
	o.threads = 0;
	cli = &bench_cli;
	while ((ch = cli_next(cli, argc, argv)) != -1) {
		switch (ch) {
		case 'b':
			o.cell_bits = (int)num('b', optarg, 32, 64);
			if (o.cell_bits != 32 && o.cell_bits != 64)
				misuse("-b: %s: not 32 or 64", optarg);
			break;
		case 'd':
			if (parse_double(optarg, 0, 1, &o.density, &why) == -1)
				misuse("-d: %s: %s", optarg, why);
			break;
		case 'g':
			o.gpu = 1;
			break;
		case 'j':
			o.threads = (int)num('j', optarg, 1, HC_THREADS_MAX);
			break;
		case 'k':
			keyfile = optarg;
			break;
		case 'N':
			o.n = (size_t)num('N', optarg, 0, (long long)1 << 34);
			break;
		case 'o':
			if (strcmp(optarg, "yaml") == 0)
				o.yaml = 1;
			else if (strcmp(optarg, "human") != 0)
				misuse("-o: %s: not human or yaml", optarg);
			break;
		case 'O':
			if (parse_double(optarg, 0, 1, &d, &why) == -1)
				misuse("-O: %s: %s", optarg, why);
			o.overlap = d;
			break;
		case 'q':
			o.quiet = 1;
			break;
		case 'r':
			o.steps = (int)num('r', optarg, 1, 100000);
			break;
		case 's':
			/*
			 * 0.1's -s SCHEME, for a release: no host of ours
			 * is named as a scheme.
			 */
			if (hr_scheme_parse(optarg) >= 0) {
				cli_deprecated(cli, "-s SCHEME is deprecated "
				    "and will go; use -x %s (--scheme)",
				    optarg);
				o.scheme = hr_scheme_parse(optarg);
				break;
			}
			/* address:port, or a list of them, one per rank. */
			o.naddr = 0;
			for (p = optarg; ; p = comma + 1) {
				struct bench_addr *a = &o.addr[o.naddr];
				char one[300];

				if (o.naddr == BENCH_ADDR_MAX)
					misuse("-s: more than %d addresses",
					    BENCH_ADDR_MAX);
				if ((comma = strchr(p, ',')) == NULL)
					comma = p + strlen(p);
				snprintf(one, sizeof one, "%.*s",
				    (int)(comma - p), p);
				a->port = HR_DEFAULT_PORT;
				if (parse_hostport(one, a->host, sizeof a->host,
				    &a->port, &why) == -1)
					misuse("-s: %s: %s", one, why);
				if (a->port == 0)
					misuse("-s: %s: port out of range",
					    one);
				if (a->host[0] == '\0')
					snprintf(a->host, sizeof a->host,
					    "127.0.0.1");
				o.naddr++;
				if (*comma == '\0')
					break;
			}
			snprintf(o.host, sizeof o.host, "%s", o.addr[0].host);
			o.port = o.addr[0].port;
			break;
		case 'S':
			o.seed = (uint64_t)num('S', optarg, 0, LLONG_MAX);
			break;
		case 't':
			o.tensors = (int)num('t', optarg, 1, 4096);
			break;
		case O_VERIFY:
			o.verify = 1;
			break;
		case 'w':
			o.workers = (int)num('w', optarg, 1, HR_MAX_WORLD);
			break;
		case 'x':
			if ((o.scheme = hr_scheme_parse(optarg)) < 0)
				misuse("-x: %s: not homo, dense, gather, omni "
				    "or float", optarg);
			break;
		case 'z':
			if (parse_size(optarg, &sz, &why) == -1)
				misuse("-z: %s: %s", optarg, why);
			if (sz < HR_CHUNK_MIN || sz > (64u << 20))
				misuse("-z: %s: not between 1k and 64m",
				    optarg);
			o.chunk = (uint32_t)sz;
			break;
		}
	}
	if (optind != argc)
		misuse("unexpected argument: %s", argv[optind]);
	if (o.gpu && bench_gpu == NULL)
		fatalx(EXIT_USAGE, "bench -g: this gleam-reduce was built "
		    "without CUDA (bench/reduce-cuda-build builds one with it)");
	if (keyfile != NULL)
		key_load(&o.key, keyfile);
	if (o.quiet)
		log_setlevel(LL_QUIET);
	return bench_run(&o);
}

int
main(int argc, char *argv[])
{
	struct server_opts o;
	const char *why, *laddr = NULL, *keyfile = NULL, *pidfile = NULL;
	uint64_t sz;
	double d;
	int ch, verbose = 0, aflag = 0;

	log_init(argv[0], LL_WARN);
	/* The mode is the first word; serve when there is none. */
	if (argc > 1 && strcmp(argv[1], "bench") == 0)
		return bench_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "serve") == 0) {
		argc--;
		argv++;
	}
	memset(&o, 0, sizeof o);
	o.port = HR_DEFAULT_PORT;
	o.limits.max_frame = PROTO_MAX_FRAME_DEFAULT;
	o.limits.max_bytes = (uint64_t)1 << 30;
	o.limits.max_streams = 256;
	o.limits.timeout = 30;
	o.max_workers = MAX_CONNECTIONS;
	o.ready_fd = -1;
	while ((ch = cli_next(cli, argc, argv)) != -1) {
		switch (ch) {
		case 'A':
			aflag = 1;
			break;
		case 'D':
			o.foreground = 1;
			break;
		case 'k':
			keyfile = optarg;
			break;
		case 'l':
			laddr = optarg;
			break;
		case 'm':
			if (parse_size(optarg, &sz, &why) == -1)
				misuse("-m: %s: %s", optarg, why);
			if (sz < (1u << 20) || sz > ((uint64_t)1 << 40))
				misuse("-m: %s: not between 1m and 1t", optarg);
			o.limits.max_bytes = sz;
			break;
		case 'P':
			pidfile = optarg;
			break;
		case 'T':
			if (parse_duration(optarg, &d, &why) == -1)
				misuse("-T: %s: %s", optarg, why);
			if (d < 0.001 || d > 86400)
				misuse("-T: %s: not between 1ms and 1 day",
				    optarg);
			o.limits.timeout = d;
			break;
		case 'v':
			verbose++;
			break;
		case 'w':
			o.limits.world = (int)num('w', optarg, 1,
			    HR_MAX_WORLD);
			break;
		}
	}
	if (optind != argc)
		misuse("unexpected argument: %s", argv[optind]);
	if (laddr != NULL && parse_hostport(laddr, o.host, sizeof o.host,
	    &o.port, &why) == -1)
		misuse("-l: %s: %s", laddr, why);
	/*
	 * Without a key only this host is served, unless -A says that any
	 * rank may join (as gleam-serve's auth: off).
	 */
	if (keyfile == NULL && !aflag) {
		if (laddr == NULL)
			snprintf(o.host, sizeof o.host, "127.0.0.1");
		else if (!net_is_loopback(o.host))
			misuse("-l %s without a key: anyone who reaches it "
			    "could join a round and spoil it; give -k, listen "
			    "on 127.0.0.1, or say -A", laddr);
	}
	if (keyfile != NULL)
		keys_load(&o.keys, keyfile);
	o.keyfile = keyfile;
	log_setlevel(LL_WARN + verbose);
	if (pidfile != NULL && svc_pidfile(pidfile) == -1)
		return EXIT_IO;
	return server_run(&o);
}
