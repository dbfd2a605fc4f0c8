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

static void __attribute__((noreturn))
usage(int code)
{
	fprintf(code == 0 ? stdout : stderr,
	    "usage: gleam-reduce [-Adv] [-k keyfile] [-l address:port] "
	    "[-m size] [-P pidfile] [-t timeout] [-w workers]\n"
	    "       gleam-reduce bench [-gqV] [-b bits] [-c address:port] "
	    "[-d density] [-j threads] [-k keyfile] [-n count] [-o format] "
	    "[-O overlap] "
	    "[-r steps] [-s scheme] [-S seed] [-t tensors] [-w workers] "
	    "[-z chunk]\n");
	exit(code);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
misuse(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LL_ERROR, fmt, ap);
	va_end(ap);
	usage(EXIT_USAGE);
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
	optind = 1;
	while ((ch = getopt(argc, argv, ":b:c:d:ghj:k:n:o:O:qr:s:S:t:Vw:z:")) !=
	    -1) {
		switch (ch) {
		case 'b':
			o.cell_bits = (int)num('b', optarg, 32, 64);
			if (o.cell_bits != 32 && o.cell_bits != 64)
				misuse("-b: %s: not 32 or 64", optarg);
			break;
		case 'c':
			/* address:port, or a list of them, one per rank. */
			o.naddr = 0;
			for (p = optarg; ; p = comma + 1) {
				struct bench_addr *a = &o.addr[o.naddr];
				char one[300];

				if (o.naddr == BENCH_ADDR_MAX)
					misuse("-c: more than %d addresses",
					    BENCH_ADDR_MAX);
				if ((comma = strchr(p, ',')) == NULL)
					comma = p + strlen(p);
				snprintf(one, sizeof one, "%.*s",
				    (int)(comma - p), p);
				a->port = HR_DEFAULT_PORT;
				if (parse_hostport(one, a->host, sizeof a->host,
				    &a->port, &why) == -1)
					misuse("-c: %s: %s", one, why);
				if (a->port == 0)
					misuse("-c: %s: port out of range", one);
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
		case 'd':
			if (parse_double(optarg, 0, 1, &o.density, &why) == -1)
				misuse("-d: %s: %s", optarg, why);
			break;
		case 'g':
			o.gpu = 1;
			break;
		case 'h':
			usage(EXIT_OK);
		case 'j':
			o.threads = (int)num('j', optarg, 1, HC_THREADS_MAX);
			break;
		case 'k':
			keyfile = optarg;
			break;
		case 'n':
			o.n = (size_t)num('n', optarg, 0, (long long)1 << 34);
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
			if ((o.scheme = hr_scheme_parse(optarg)) < 0)
				misuse("-s: %s: not homo, dense, gather, omni "
				    "or float", optarg);
			break;
		case 'S':
			o.seed = (uint64_t)num('S', optarg, 0, LLONG_MAX);
			break;
		case 't':
			o.tensors = (int)num('t', optarg, 1, 4096);
			break;
		case 'V':
			o.verify = 1;
			break;
		case 'w':
			o.workers = (int)num('w', optarg, 1, HR_MAX_WORLD);
			break;
		case 'z':
			if (parse_size(optarg, &sz, &why) == -1)
				misuse("-z: %s: %s", optarg, why);
			if (sz < HR_CHUNK_MIN || sz > (64u << 20))
				misuse("-z: %s: not between 1k and 64m",
				    optarg);
			o.chunk = (uint32_t)sz;
			break;
		case ':':
			misuse("-%c: missing argument", optopt);
		default:
			misuse("-%c: unknown option", optopt);
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
	opterr = 0;
	if (argc > 1 && strcmp(argv[1], "bench") == 0)
		return bench_main(argc - 1, argv + 1);
	memset(&o, 0, sizeof o);
	o.port = HR_DEFAULT_PORT;
	o.limits.max_frame = PROTO_MAX_FRAME_DEFAULT;
	o.limits.max_bytes = (uint64_t)1 << 30;
	o.limits.max_streams = 256;
	o.limits.timeout = 30;
	o.max_workers = MAX_CONNECTIONS;
	o.ready_fd = -1;
	while ((ch = getopt(argc, argv, ":Adhk:l:m:P:t:vw:")) != -1) {
		switch (ch) {
		case 'A':
			aflag = 1;
			break;
		case 'd':
			o.foreground = 1;
			break;
		case 'h':
			usage(EXIT_OK);
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
		case 't':
			if (parse_duration(optarg, &d, &why) == -1)
				misuse("-t: %s: %s", optarg, why);
			if (d < 0.001 || d > 86400)
				misuse("-t: %s: not between 1ms and 1 day",
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
		case ':':
			misuse("-%c: missing argument", optopt);
		default:
			misuse("-%c: unknown option", optopt);
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
