/* Unit tests for lib/util.c: quantiles, atomic file writes, clocks. */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"
#include "t.h"

static char dir[] = "/tmp/gleam-test-util-XXXXXX";

static void
test_quantile(void)
{
	double v[] = { 5, 1, 4, 2, 3 };
	double w[100], one[1] = { 42 };
	int i;

	CHECK(quantile(v, 5, 0.5) == 3);
	/* Sorted in place. */
	CHECK(v[0] == 1 && v[1] == 2 && v[2] == 3 && v[3] == 4 && v[4] == 5);
	CHECK(quantile(v, 5, 0) == 1);
	CHECK(quantile(v, 5, -1) == 1);
	CHECK(quantile(v, 5, 1) == 5);
	CHECK(quantile(v, 5, 2) == 5);
	/* Nearest rank: ceil(q * n); 0.2 * 5 is exactly rank 1. */
	CHECK(quantile(v, 5, 0.2) == 1);
	CHECK(quantile(v, 5, 0.21) == 2);
	CHECK(quantile(v, 5, 0.4) == 2);
	CHECK(quantile(v, 5, 0.41) == 3);
	CHECK(quantile(v, 5, 0.8) == 4);
	CHECK(quantile(v, 5, 0.81) == 5);
	CHECK(quantile(v, 0, 0.5) == 0);
	CHECK(quantile(one, 1, 0.99) == 42);

	/* 1..100 shuffled: the p-th percentile is p, for every p. */
	for (i = 0; i < 100; i++)
		w[i] = (double)((i * 37) % 100 + 1);
	for (i = 1; i <= 100; i++)
		if (quantile(w, 100, i / 100.0) != i) {
			fprintf(stderr, "p%d of 1..100 is %g\n", i,
			    quantile(w, 100, i / 100.0));
			CHECK(0);
		}
	CHECK(quantile(w, 100, 0.999) == 100);
	CHECK(quantile(w, 100, 0.001) == 1);
	CHECK(quantile(w, 100, 0.011) == 2);
}

/* Reads a whole small file into buf; returns its length or -1. */
static ssize_t
slurp(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY)) == -1)
		return -1;
	n = read(fd, buf, len);
	close(fd);
	return n;
}

/* Entries in dir other than . and .. */
static int
entries(const char *d)
{
	struct dirent *e;
	DIR *dp;
	int n = 0;

	if ((dp = opendir(d)) == NULL)
		return -1;
	while ((e = readdir(dp)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(dp);
	return n;
}

/*
 * In a child, as an unprivileged user where we are root, writes into the
 * read-only directory ro.  Returns 0 if the write failed as it should.
 */
static int
write_in_readonly(const char *ro, char *err, size_t errlen)
{
	char path[600];
	int pfd[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe(pfd) == -1)
		return -1;
	fflush(stdout);
	fflush(stderr);
	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		close(pfd[0]);
		if (geteuid() == 0 && (setgid(65534) == -1 ||
		    setuid(65534) == -1))
			_exit(2);
		snprintf(path, sizeof path, "%s/out", ro);
		if (file_write_atomic(path, "x", 1, err, errlen) == 0)
			_exit(1);
		(void)write(pfd[1], err, strlen(err));
		_exit(0);
	}
	close(pfd[1]);
	n = read(pfd[0], err, errlen - 1);
	err[n > 0 ? n : 0] = '\0';
	close(pfd[0]);
	if (waitpid(pid, &status, 0) == -1 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void
test_write(void)
{
	char path[512], path2[512], sub[512], inner[512], ro[512], buf[256];
	char err[600], want[700];
	static char big[300000];
	struct stat st;
	struct rlimit rl, small;
	size_t i;
	int fd, rc;

	snprintf(path, sizeof path, "%s/file", dir);
	CHECK(file_write_atomic(path, "hello\n", 6, err, sizeof err) == 0);
	CHECK(slurp(path, buf, sizeof buf) == 6 && memcmp(buf, "hello\n", 6) == 0);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
	/* Replaces, shorter. */
	CHECK(file_write_atomic(path, "hi", 2, err, sizeof err) == 0);
	CHECK(slurp(path, buf, sizeof buf) == 2 && memcmp(buf, "hi", 2) == 0);
	/* Empty. */
	CHECK(file_write_atomic(path, "", 0, err, sizeof err) == 0);
	CHECK(stat(path, &st) == 0 && st.st_size == 0);
	/* Large: every byte lands. */
	for (i = 0; i < sizeof big; i++)
		big[i] = (char)(i * 131 + 7);
	CHECK(file_write_atomic(path, big, sizeof big, err, sizeof err) == 0);
	CHECK(stat(path, &st) == 0 && st.st_size == (off_t)sizeof big);
	{
		static char back[sizeof big];

		fd = open(path, O_RDONLY);
		CHECK(fd != -1 && read(fd, back, sizeof back) ==
		    (ssize_t)sizeof back && memcmp(back, big, sizeof big) == 0);
		if (fd != -1)
			close(fd);
	}
	CHECK(entries(dir) == 1);	/* no temporary left behind */

	/* A relative path works too (the temp file goes in "."). */
	if ((fd = open(".", O_RDONLY | O_DIRECTORY)) != -1 && chdir(dir) == 0) {
		CHECK(file_write_atomic("rel", "r", 1, err, sizeof err) == 0);
		CHECK(slurp("rel", buf, sizeof buf) == 1 && buf[0] == 'r');
		unlink("rel");
		CHECK(fchdir(fd) == 0);
	} else
		CHECK(!"chdir");
	if (fd != -1)
		close(fd);

	/* No such directory. */
	snprintf(path2, sizeof path2, "%s/nodir/file", dir);
	CHECK(file_write_atomic(path2, "x", 1, err, sizeof err) == -1);
	snprintf(want, sizeof want, "%s: %s", path2, strerror(ENOENT));
	CHECK_STR(err, want);

	/* Renaming onto a non-empty directory fails after the temp exists. */
	snprintf(sub, sizeof sub, "%s/sub", dir);
	snprintf(inner, sizeof inner, "%s/sub/inner", dir);
	CHECK(mkdir(sub, 0755) == 0);
	CHECK(file_write_atomic(inner, "i", 1, err, sizeof err) == 0);
	CHECK(file_write_atomic(sub, "x", 1, err, sizeof err) == -1);
	CHECK(strncmp(err, sub, strlen(sub)) == 0 &&
	    strncmp(err + strlen(sub), ": ", 2) == 0);
	CHECK(entries(dir) == 2);	/* file and sub; no temp */
	CHECK(entries(sub) == 1);

	/* A write that fails (file size limit) leaves no temp behind. */
	CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0);
	small = rl;
	small.rlim_cur = 1000;
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &small) == 0) {
		snprintf(path2, sizeof path2, "%s/toobig", dir);
		CHECK(file_write_atomic(path2, big, sizeof big, err,
		    sizeof err) == -1);
		CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0);
		snprintf(want, sizeof want, "%s: %s", path2, strerror(EFBIG));
		CHECK_STR(err, want);
		CHECK(entries(dir) == 2);
		CHECK(access(path2, F_OK) == -1);
	} else
		CHECK(!"setrlimit");
	signal(SIGXFSZ, SIG_DFL);

	/* A directory we may not write to: fails and leaves nothing. */
	snprintf(ro, sizeof ro, "%s/ro", dir);
	CHECK(mkdir(ro, 0755) == 0);
	CHECK(chmod(ro, 0555) == 0);
	CHECK(chmod(dir, 0755) == 0);	/* the child must get through */
	rc = write_in_readonly(ro, err, sizeof err);
	if (rc == 2)
		fprintf(stderr, "cannot become uid 65534 to test a read-only "
		    "directory as root\n");
	CHECK(rc == 0);
	snprintf(want, sizeof want, "%s/out: %s", ro, strerror(EACCES));
	CHECK_STR(err, want);
	CHECK(entries(ro) == 0);
	rmdir(ro);

	/* "-" is stdout. */
	{
		char out[512];
		int saved_fd;

		snprintf(out, sizeof out, "%s/stdout", dir);
		fflush(stdout);
		saved_fd = dup(STDOUT_FILENO);
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		CHECK(fd != -1 && saved_fd != -1);
		dup2(fd, STDOUT_FILENO);
		close(fd);
		CHECK(file_write_atomic("-", "to stdout\n", 10, err,
		    sizeof err) == 0);
		dup2(saved_fd, STDOUT_FILENO);
		close(saved_fd);
		CHECK(slurp(out, buf, sizeof buf) == 10 &&
		    memcmp(buf, "to stdout\n", 10) == 0);
		CHECK(access("-", F_OK) == -1);		/* no file named "-" */
		unlink(out);
	}

	unlink(inner);
	rmdir(sub);
	unlink(path);
}

static void
test_clocks(void)
{
	uint64_t a, b;
	double w;

	a = now_ns();
	usleep(2000);
	b = now_ns();
	CHECK(b - a >= 2000000u && b - a < 2000000000u);
	CHECK(now_s() >= (double)b / 1e9);
	w = wall_s();
	CHECK(w > 1.6e9 && w < 1e10);	/* after 2020, before 2286 */
}

static void
test_mkdirs(void)
{
	char p[600], f[600];
	struct stat st;

	snprintf(p, sizeof p, "%s/a/b/c", dir);
	CHECK(mkdirs(p, 0700) == 0);
	CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode) &&
	    (st.st_mode & 0777) == 0700);
	CHECK(mkdirs(p, 0700) == 0);		/* there already: fine */
	snprintf(f, sizeof f, "%s/a/file", dir);
	CHECK(file_write_atomic(f, "x", 1, p, sizeof p) == 0);
	snprintf(p, sizeof p, "%s/a/file/d", dir);
	CHECK(mkdirs(p, 0700) == -1 && errno == ENOTDIR);
	unlink(f);
	snprintf(p, sizeof p, "%s/a/b/c", dir);
	CHECK(rmdir(p) == 0);
	snprintf(p, sizeof p, "%s/a/b", dir);
	CHECK(rmdir(p) == 0);
	snprintf(p, sizeof p, "%s/a", dir);
	CHECK(rmdir(p) == 0);
}

/* Standard input as "-": read once, kept, given to one kind of reader. */
static void
test_stdin(void)
{
	char path[] = "/tmp/gleam-stdin-XXXXXX", err[200], name[64];
	const char *buf, *buf2;
	size_t len, len2;
	int fd;

	CHECK(stdin_named("-") && !stdin_named("-x") && !stdin_named(NULL));
	if ((fd = mkstemp(path)) == -1) {
		CHECK(!"mkstemp");
		return;
	}
	CHECK(write(fd, "a: 1\n", 5) == 5);
	CHECK(lseek(fd, 0, SEEK_SET) == 0);
	CHECK(dup2(fd, STDIN_FILENO) == STDIN_FILENO);
	close(fd);
	unlink(path);
	CHECK(stdin_read("YAML", &buf, &len, err, sizeof err) == 0);
	CHECK(len == 5 && memcmp(buf, "a: 1\n", 6) == 0);
	/* Again (a reload): the same text, though the descriptor is at EOF. */
	CHECK(stdin_read("YAML", &buf2, &len2, err, sizeof err) == 0);
	CHECK(buf2 == buf && len2 == len);
	CHECK(stdin_read("a key file", &buf2, &len2, err, sizeof err) == -1);
	CHECK_STR(err, "stdin: already read as YAML (standard input gives "
	    "one file)");

	setenv("GLEAM_CLIENT", "laptop7", 1);
	CHECK(client_name(name, sizeof name, err, sizeof err) == 0);
	CHECK_STR(name, "laptop7");
	setenv("GLEAM_CLIENT", "a-name-longer-than-eight", 1);
	CHECK(client_name(name, 8, err, sizeof err) == -1);
	CHECK_STR(err, "GLEAM_CLIENT: longer than 7 bytes");
	unsetenv("GLEAM_CLIENT");
	CHECK(client_name(name, sizeof name, err, sizeof err) == 0);
	CHECK(name[0] != '\0');
}

int
main(void)
{
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	test_quantile();
	test_write();
	test_mkdirs();
	test_clocks();
	test_stdin();
	if (rmdir(dir) == -1)
		perror(dir);
	return t_done("util");
}
