/* The environment that puts the client library in the driver's place. */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfgtab.h"
#include "exitcode.h"
#include "log.h"
#include "run.h"
#include "util.h"
#include "yamlio.h"

#ifndef GLEAM_LIBDIR
#define GLEAM_LIBDIR	"/usr/local/lib/gleam"
#endif
#define RUN_CONFIG	"/etc/gleam/gleam-run.yaml"

/*
 * Where libcuda.so.1 is: GLEAM_LIBDIR in the environment; then, beside the
 * bin/ we run from, lib/gleam (an installed tree moved elsewhere) or lib/
 * holding libgleam.a too (a build tree: a bare lib/libcuda.so.1 could be
 * the real driver); then the directory we were installed for.
 */
static int
run_libdir(char *dir, size_t len)
{
	static const char *const tries[][2] = {
		{ "/../lib/gleam", "/libcuda.so.1" },
		{ "/../lib", "/libgleam.a" },
	};
	char self[PATH_MAX], try[PATH_MAX + 64], *p;
	const char *env = getenv("GLEAM_LIBDIR");
	ssize_t n;
	size_t i;

	if (env != NULL && *env != '\0') {
		snprintf(dir, len, "%s", env);
		return 0;
	}
	if ((n = readlink("/proc/self/exe", self, sizeof self - 1)) > 0) {
		self[n] = '\0';
		if ((p = strrchr(self, '/')) != NULL)
			*p = '\0';
		for (i = 0; p != NULL && i < 2; i++) {
			snprintf(try, sizeof try, "%s%s%s", self, tries[i][0],
			    tries[i][1]);
			if (access(try, R_OK) == 0 &&
			    (size_t)snprintf(dir, len, "%.*s%s", (int)(len - 16),
			    self, tries[i][0]) < len)
				return 0;
		}
	}
	snprintf(dir, len, "%s", GLEAM_LIBDIR);
	return 0;
}

/* "name=value" prepended to a colon list in the environment. */
static int
run_prepend(const char *name, const char *value)
{
	const char *old = getenv(name);
	char *buf;
	int rc;

	if (old == NULL || *old == '\0')
		return setenv(name, value, 1);
	if (asprintf(&buf, "%s:%s", value, old) == -1)
		return -1;
	rc = setenv(name, buf, 1);
	free(buf);
	return rc;
}

/*
 * GLEAM_PRELOAD ahead of the client library in LD_PRELOAD: the runtime of
 * the sanitizer a client library was built with (make asan), which must
 * come first into a program that was not.
 */
static int
run_preload_first(void)
{
	const char *first = getenv("GLEAM_PRELOAD");

	if (first == NULL || *first == '\0')
		return 0;
	return run_prepend("LD_PRELOAD", first);
}

/* gleam-run's configuration file: where the values go while it is read. */
struct run_conf {
	char	server[300];
	char	key_file[PATH_MAX];
};

#define F(f)	CFG_FIELD(struct run_conf, f)
static const struct cfg_key run_keys[] = {
	{ "server",	CFG_STR,	F(server) },
	{ "key_file",	CFG_STR,	F(key_file) },
	{ NULL }
};
#undef F

/*
 * The server and key from the configuration file, if the flags gave none;
 * a key the flags gave is not read, so a flag also overrides a bad value.
 */
static int
run_config(const char **server, const char **key, struct run_conf *rc)
{
	const char *path = getenv("GLEAM_RUN_CONFIG");
	struct ydoc d;
	struct yerr err;
	yaml_node_t *root;
	int r = -1;

	if (path == NULL)
		path = RUN_CONFIG;
	if (access(path, F_OK) == -1)
		return 0;
	if (ydoc_load_file(&d, path, &err) == -1) {
		log_error("%s", err.msg);
		return -1;
	}
	memset(rc, 0, sizeof *rc);
	if ((root = ydoc_root(&d)) == NULL) {
		r = 0;
		goto out;
	}
	if (cfg_check(&d, root, "configuration", run_keys, NULL, &err) == -1)
		goto out;
	if (*server == NULL) {
		if (cfg_get(&d, root, cfg_find(run_keys, "server"), rc,
		    &err) == -1)
			goto out;
		if (ymap_get(&d, root, "server") != NULL)
			*server = rc->server;
	}
	if (*key == NULL) {
		if (cfg_get(&d, root, cfg_find(run_keys, "key_file"), rc,
		    &err) == -1)
			goto out;
		if (ymap_get(&d, root, "key_file") != NULL)
			*key = rc->key_file;
	}
	r = 0;
out:
	if (r == -1)
		log_error("%s", err.msg);
	ydoc_free(&d);
	return r;
}

/* Execs argv; returns only with the status for why it could not. */
static int
run_execvp(char **argv)
{
	execvp(argv[0], argv);
	log_error("%s: %s", argv[0], strerror(errno));
	return errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
}

/*
 * -o when the program runs without the library: the keys that say why,
 * written now, since no library will write them at its exit.
 */
static void
run_local_stats(const char *path, const char *prog, const char *server,
    const char *why)
{
	struct yw *w;
	const char *text, *p;
	char err[512];
	size_t len;

	if ((w = yw_new()) == NULL)
		return;
	yw_map(w);
	yw_kstr(w, "program", (p = strrchr(prog, '/')) != NULL ? p + 1 : prog);
	yw_kstr(w, "server", server);
	yw_kstr(w, "error", why);
	yw_key(w, "exit");
	yw_null(w);
	yw_kstr(w, "fallback", "local");
	yw_end(w);
	if ((text = yw_finish(w, &len)) != NULL &&
	    file_write_atomic(path, text, len, err, sizeof err) == -1)
		log_warn("statistics: %s", err);
	yw_free(w);
}

/*
 * -F or GLEAM_FALLBACK=local: the server could not be used (why, a
 * phrase naming it), and the program runs anyway without the client
 * library, on the real driver if there is one; one line says so.
 */
static int
run_local(const struct run_opts *o, char **argv, const char *server,
    const char *why)
{
	log_warn("%s: running %s without it (%s)", why, argv[0],
	    o->fallback == 2 ? "GLEAM_FALLBACK=local" : "-F");
	if (o->stats != NULL)
		run_local_stats(o->stats, argv[0], server, why);
	return run_execvp(argv);
}

int
run_exec(const struct run_opts *o, char **argv)
{
	char dir[PATH_MAX], lib[PATH_MAX + 32], nvml[PATH_MAX + 32];
	char cwd[PATH_MAX], abs[PATH_MAX * 2], placed[300], why[1200];
	char pid[32];
	const char *server = o->server, *key = o->key_file, *e, *task;
	struct run_conf conf;
	struct stat st;
	int rc;

	if (server == NULL && (e = getenv("GLEAM_SERVER")) != NULL && *e)
		server = e;
	if (key == NULL && (e = getenv("GLEAM_KEY_FILE")) != NULL && *e)
		key = e;
	if (run_config(&server, &key, &conf) == -1)
		return EXIT_CONFIG;
	/*
	 * The client library reads the key file again in the program, whose
	 * standard input is its own: a key cannot come from it.
	 */
	if (key != NULL && strcmp(key, "-") == 0) {
		log_error("key file -: standard input is the program's; name "
		    "a key file");
		return EXIT_USAGE;
	}
	if (o->sched != NULL) {
		/* The daemon picks: its answer wins over the rest. */
		if ((task = o->task) == NULL)
			task = (task = strrchr(argv[0], '/')) != NULL ?
			    task + 1 : argv[0];
		if ((rc = run_ask(o->sched, key, task, placed,
		    sizeof placed)) != 0) {
			if (!o->fallback || (rc != EXIT_NET && rc != EXIT_AUTH &&
			    rc != EXIT_FAIL))
				return rc;
			snprintf(why, sizeof why, "scheduler %s: no server",
			    o->sched);
			return run_local(o, argv, NULL, why);
		}
		server = placed;
	}
	if (server == NULL) {
		log_error("no server: give -s, set GLEAM_SERVER, or name one "
		    "in %s", RUN_CONFIG);
		return EXIT_USAGE;
	}
	run_libdir(dir, sizeof dir);
	snprintf(lib, sizeof lib, "%s/libcuda.so.1", dir);
	/* NVML's queries too, from the same server, where it is built. */
	snprintf(nvml, sizeof nvml, "%s/libnvidia-ml.so.1", dir);
	if (stat(lib, &st) == -1) {
		log_error("%s: %s (set GLEAM_LIBDIR)", lib, strerror(errno));
		return EXIT_IO;
	}
	if (key != NULL && access(key, R_OK) == -1) {
		log_error("key file %s: %s", key, strerror(errno));
		return EXIT_CONFIG;
	}
	/* Before the program runs: a server it cannot use is our failure. */
	if ((rc = run_check(server, key, why, sizeof why)) != 0) {
		if (rc == EXIT_NOSERVER && o->fallback) {
			snprintf(abs, sizeof abs, "cannot use server %s", why);
			return run_local(o, argv, server, abs);
		}
		log_error("cannot use server %s", why);
		return rc;
	}
	/* The library reads these; relative paths must survive a chdir. */
	if (key != NULL && key[0] != '/' && getcwd(cwd, sizeof cwd) != NULL) {
		snprintf(abs, sizeof abs, "%s/%s", cwd, key);
		key = abs;
	}
	/* exec keeps our pid: the program's, and only its, statistics. */
	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	if (setenv("GLEAM_SERVER", server, 1) == -1 ||
	    (key != NULL && setenv("GLEAM_KEY_FILE", key, 1) == -1) ||
	    (o->stats != NULL && setenv("GLEAM_STATS", o->stats, 1) == -1) ||
	    setenv("GLEAM_STATS_PID", pid, 1) == -1 ||
	    (o->verbose > 0 && setenv("GLEAM_VERBOSE", "1", 1) == -1) ||
	    (o->quiet && setenv("GLEAM_PROGRESS", "0", 1) == -1) ||
	    (o->verbose > 1 && setenv("GLEAM_DEBUG", o->verbose > 2 ? "2" :
	    "1", 1) == -1) ||
	    run_prepend("LD_LIBRARY_PATH", dir) == -1 ||
	    (access(nvml, R_OK) == 0 &&
	    run_prepend("LD_PRELOAD", nvml) == -1) ||
	    run_prepend("LD_PRELOAD", lib) == -1 ||
	    run_preload_first() == -1) {
		log_error("environment: %s", strerror(errno));
		return EXIT_IO;
	}
	return run_execvp(argv);
}
