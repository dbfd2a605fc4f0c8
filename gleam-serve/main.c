/*
 * gleam-serve: serve this host's GPUs to Gleam clients on the LAN.
 */
#include <sys/resource.h>

#include <errno.h>
#include <execinfo.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "cli.h"
#include "config.h"
#include "exitcode.h"
#include "log.h"
#include "server.h"
#include "svc.h"
#include "wcache.h"

/* The options (gleam(7), COMMAND LINE), as gleam-serve(8) has them. */
static const struct cli_opt opts[] = {
	{ 'c', "config", "file", "configuration file "
	    "(" SERVE_CONFIG_DEFAULT ")", 0 },
	{ 'D', "foreground", NULL, "do not detach; log to standard error", 0 },
	{ 'k', "key", "keyfile", "the key file (key_file:)", 0 },
	{ 'l', "listen", "address:port", "where to listen (listen:)", 0 },
	{ 'n', "dry-run", NULL, "check the configuration and exit", 0 },
	{ 'P', "pid-file", "pidfile", "the pid file (pid_file:)", 0 },
	{ 'v', "verbose", NULL, "more diagnostics; may be repeated", 0 },
	{ 'D', NULL, NULL, NULL, 'd' },
	{ 'c', NULL, "file", NULL, 'f' },
	{ 0 }
};

static struct cli cli = { "gleam-serve", "gleam-serve [-Dnv] [-c file] "
    "[-k keyfile] [-l address:port] [-P pidfile]", opts, 0 };

/*
 * A crash (in our code or in the driver) leaves one line naming the signal
 * and the call stack on stderr, so that a server that died can be
 * diagnosed from its log; then the signal's default action (a core dump
 * where enabled).  Only async-signal-safe calls here.
 */
static void
fatal_signal(int sig)
{
	void *pc[48];
	const char *name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ?
	    "SIGBUS" : sig == SIGFPE ? "SIGFPE" : sig == SIGILL ? "SIGILL" :
	    "SIGABRT";
	static const char a[] = "gleam-serve: fatal signal ";
	static const char b[] = "; call stack (addr2line -e gleam-serve):\n";
	int n;

	(void)!write(2, a, sizeof a - 1);
	(void)!write(2, name, strlen(name));
	(void)!write(2, b, sizeof b - 1);
	n = backtrace(pc, 48);
	backtrace_symbols_fd(pc, n, 2);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
catch_fatal_signals(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	struct sigaction sa;
	void *pc[1];
	size_t i;

#ifndef __SANITIZE_ADDRESS__	/* ASan reports these itself */
	backtrace(pc, 1);	/* loads libgcc now, not in the handler */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fatal_signal;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaction(sigs[i], &sa, NULL);
#else
	(void)sa; (void)pc; (void)i; (void)sigs; (void)fatal_signal;
#endif
}

/* path made absolute against the working directory, in buf. */
static const char *
abspath(const char *path, char *buf, size_t len)
{
	char cwd[2048];

	/* "-", standard input, is read once and kept (gleam(7)). */
	if (path[0] == '/' || strcmp(path, "-") == 0)
		return path;
	if (getcwd(cwd, sizeof cwd) == NULL)
		return NULL;
	if ((size_t)snprintf(buf, len, "%s/%s", cwd, path) >= len)
		return NULL;
	return buf;
}

/*
 * user: in the configuration: become that user (its groups too) once the
 * port is bound; as root without it, say so.
 */
static int
drop_user(const char *user)
{
	struct passwd *pw;

	if (user[0] == '\0') {
		if (geteuid() == 0)
			log_warn("running as root: a flaw in serving clients "
			    "would give them the host; set user: in the "
			    "configuration to drop to an unprivileged user");
		return 0;
	}
	if ((pw = getpwnam(user)) == NULL) {
		log_error("user: %s: no such user", user);
		return EXIT_CONFIG;
	}
	if (geteuid() != 0) {
		if (pw->pw_uid == geteuid())
			return 0;
		log_error("user: %s: only root can become another user", user);
		return EXIT_CONFIG;
	}
	if (initgroups(pw->pw_name, pw->pw_gid) == -1 ||
	    setgid(pw->pw_gid) == -1 || setuid(pw->pw_uid) == -1) {
		log_error("user: %s: %s", user, strerror(errno));
		return EXIT_IO;
	}
	/* Gone for good: root must not come back. */
	if (pw->pw_uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
		log_error("user: %s: root could be regained", user);
		return EXIT_SOFTWARE;
	}
	log_info("running as %s (uid %u)", pw->pw_name,
	    (unsigned)pw->pw_uid);
	return 0;
}

int
main(int argc, char *argv[])
{
	struct overrides ov = { NULL, NULL, SERVE_CONFIG_DEFAULT, 1 };
	struct config cfg;
	struct server *srv;
	char cfgpath[4096], keypath[4096];
	const char *pidfile = NULL;
	int ch, dflag = 0, nflag = 0, verbose = 0, rc;

	log_init(argv[0], LL_INFO);
	catch_fatal_signals();
	/* Each weight-cache entry in RAM holds a descriptor (lib/common/cbuf.c). */
	{
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur <
		    rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			(void)setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	while ((ch = cli_next(&cli, argc, argv)) != -1) {
		switch (ch) {
		case 'c':
			ov.config = optarg;
			ov.config_missing_ok = 0;
			break;
		case 'D':
			dflag = 1;
			break;
		case 'k':
			ov.key_file = optarg;
			break;
		case 'l':
			ov.listen = optarg;
			break;
		case 'n':
			nflag = 1;
			break;
		case 'P':
			pidfile = optarg;
			break;
		case 'v':
			verbose++;
			break;
		}
	}
	if (optind != argc)
		cli_bad(&cli, "unexpected argument: %s", argv[optind]);
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
	/* A second copy is refused before it binds. */
	if (pidfile == NULL && cfg.pid_file[0] != '\0')
		pidfile = cfg.pid_file;
	if (pidfile != NULL && svc_pidfile(pidfile) == -1)
		return EXIT_IO;
	/* Bind before detaching, so that "address in use" reaches the user. */
	if ((srv = server_new(&cfg, &ov, &rc)) == NULL)
		return rc;
	/* Then no more root than binding needed. */
	if ((rc = drop_user(cfg.user)) != 0)
		return rc;
	wcache_init(&cfg);
	if (!dflag) {
		if (svc_detach() == -1)
			fatal(EXIT_IO, "daemon");
		if (server_after_fork(srv) == -1)
			fatalx(EXIT_SOFTWARE, "event_reinit failed");
	}
	svc_ready(NULL);
	rc = server_run(srv);
	server_free(srv);
	wcache_fini();
	return rc;
}
