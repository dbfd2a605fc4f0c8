/*
 * gleam-serve: serve this host's GPUs to Gleam clients on the LAN.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "auth.h"
#include "config.h"
#include "exitcode.h"
#include "log.h"
#include "server.h"
#include "wcache.h"

static void __attribute__((noreturn))
usage(int code)
{
	fprintf(code == 0 ? stdout : stderr,
	    "usage: gleam-serve [-dnv] [-f file] [-k keyfile] "
	    "[-l address:port]\n");
	exit(code);
}

/* path made absolute against the working directory, in buf. */
static const char *
abspath(const char *path, char *buf, size_t len)
{
	char cwd[2048];

	if (path[0] == '/')
		return path;
	if (getcwd(cwd, sizeof cwd) == NULL)
		return NULL;
	if ((size_t)snprintf(buf, len, "%s/%s", cwd, path) >= len)
		return NULL;
	return buf;
}

int
main(int argc, char *argv[])
{
	struct overrides ov = { NULL, NULL, SERVE_CONFIG_DEFAULT, 1 };
	struct config cfg;
	struct server *srv;
	char cfgpath[4096], keypath[4096];
	int ch, dflag = 0, nflag = 0, verbose = 0, rc;

	log_init(argv[0], LL_INFO);
	while ((ch = getopt(argc, argv, "df:hk:l:nv")) != -1) {
		switch (ch) {
		case 'd':
			dflag = 1;
			break;
		case 'f':
			ov.config = optarg;
			ov.config_missing_ok = 0;
			break;
		case 'h':
			usage(EXIT_OK);
		case 'k':
			ov.key_file = optarg;
			break;
		case 'l':
			ov.listen = optarg;
			break;
		case 'n':
			nflag = 1;
			break;
		case 'v':
			verbose++;
			break;
		default:
			usage(EXIT_USAGE);
		}
	}
	argc -= optind;
	if (argc != 0) {
		log_error("unexpected argument: %s", argv[optind]);
		usage(EXIT_USAGE);
	}
	log_setlevel(LL_INFO + verbose);
	/* daemon(3) moves to /: keep the paths that a reload reads again. */
	if ((ov.config = abspath(ov.config, cfgpath, sizeof cfgpath)) == NULL ||
	    (ov.key_file != NULL && (ov.key_file = abspath(ov.key_file,
	    keypath, sizeof keypath)) == NULL))
		fatalx(EXIT_USAGE, "path too long");
	if (auth_init() == -1)
		fatalx(EXIT_SOFTWARE, "libsodium failed to start");

	if ((rc = server_configure(&cfg, &ov)) != 0)
		return rc;
	if (nflag) {
		fprintf(stdout, "configuration OK\n");
		return EXIT_OK;
	}
	/* Bind before detaching, so that "address in use" reaches the user. */
	if ((srv = server_new(&cfg, &ov, &rc)) == NULL)
		return rc;
	wcache_init(&cfg);
	if (!dflag) {
		if (daemon(0, 0) == -1)
			fatal(EXIT_IO, "daemon");
		log_syslog(1);
		if (server_after_fork(srv) == -1)
			fatalx(EXIT_SOFTWARE, "event_reinit failed");
	}
	rc = server_run(srv);
	server_free(srv);
	wcache_fini();
	return rc;
}
