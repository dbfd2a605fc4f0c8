/* Clocks, atomic file writes, statistics. */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#if defined(__SANITIZE_ADDRESS__)
#define UTIL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UTIL_ASAN 1
#endif
#endif
#if defined(UTIL_ASAN) || defined(__SANITIZE_THREAD__)
#define UTIL_SAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UTIL_SAN 1
#endif
#endif
#ifdef UTIL_SAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef UTIL_ASAN
#include <sanitizer/lsan_interface.h>
#endif

void
san_report_fd(int fd)
{
#ifdef UTIL_SAN
	__sanitizer_set_report_fd((void *)(intptr_t)fd);
#else
	(void)fd;
#endif
}

void
san_leak_check(void)
{
#ifdef UTIL_ASAN
	__lsan_do_leak_check();
#endif
}

uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double
now_s(void)
{
	return (double)now_ns() / 1e9;
}

double
wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
fd_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
fd_read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = read(fd, p, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
mkdirs(const char *path, mode_t mode)
{
	char b[4096], *p;

	if ((size_t)snprintf(b, sizeof b, "%s", path) >= sizeof b) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = b + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(b, mode) == -1 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(b, mode) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

static struct {
	pthread_mutex_t	 mu;
	char		*buf;		/* NULL: not read yet */
	size_t		 len;
	const char	*what;
} stdin_kept = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, NULL };

int
stdin_named(const char *path)
{
	return path != NULL && strcmp(path, "-") == 0;
}

/* Standard input to its end, into a buffer of its own. */
static int
stdin_slurp(char **out, size_t *outlen, char *err, size_t errlen)
{
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0;
	ssize_t n;

	for (;;) {
		if (len + 1 >= cap) {
			cap = cap == 0 ? 8192 : cap * 2;
			if (cap > STDIN_MAX + 2)
				cap = STDIN_MAX + 2;
			if (len + 1 >= cap) {
				snprintf(err, errlen, "stdin: longer than %d "
				    "MiB", STDIN_MAX >> 20);
				goto fail;
			}
			if ((nb = realloc(buf, cap)) == NULL) {
				snprintf(err, errlen, "stdin: out of memory");
				goto fail;
			}
			buf = nb;
		}
		if ((n = read(STDIN_FILENO, buf + len, cap - 1 - len)) == 0)
			break;
		if (n == -1) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "stdin: %s", strerror(errno));
			goto fail;
		}
		len += (size_t)n;
	}
	if (buf == NULL && (buf = malloc(1)) == NULL) {
		snprintf(err, errlen, "stdin: out of memory");
		return -1;
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
fail:
	free(buf);
	return -1;
}

int
stdin_read(const char *what, const char **buf, size_t *len, char *err,
    size_t errlen)
{
	int rc = 0;

	pthread_mutex_lock(&stdin_kept.mu);
	if (stdin_kept.buf == NULL) {
		if (stdin_slurp(&stdin_kept.buf, &stdin_kept.len, err,
		    errlen) == 0)
			stdin_kept.what = what;
		else
			rc = -1;
	} else if (strcmp(stdin_kept.what, what) != 0) {
		snprintf(err, errlen, "stdin: already read as %s (standard "
		    "input gives one file)", stdin_kept.what);
		rc = -1;
	}
	if (rc == 0) {
		*buf = stdin_kept.buf;
		*len = stdin_kept.len;
	}
	pthread_mutex_unlock(&stdin_kept.mu);
	return rc;
}

int
client_name(char *name, size_t len, char *err, size_t errlen)
{
	const char *e = getenv("GLEAM_CLIENT");

	if (e != NULL && *e != '\0') {
		if (strlen(e) >= len) {
			snprintf(err, errlen, "GLEAM_CLIENT: longer than %zu "
			    "bytes", len - 1);
			return -1;
		}
		snprintf(name, len, "%s", e);
		return 0;
	}
	if (gethostname(name, len) == -1 || name[0] == '\0') {
		snprintf(err, errlen, "no client name: set GLEAM_CLIENT");
		return -1;
	}
	name[len - 1] = '\0';
	return 0;
}

int
file_write_atomic(const char *path, const void *buf, size_t len, char *err,
    size_t errlen)
{
	char tmp[4096], dir[4096];
	mode_t mode;
	int fd, saved, dfd;

	if (strcmp(path, "-") == 0) {
		if (fd_write_all(STDOUT_FILENO, buf, len) == -1) {
			snprintf(err, errlen, "stdout: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	snprintf(dir, sizeof dir, "%s", path);
	if (snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dirname(dir),
	    strrchr(path, '/') ? strrchr(path, '/') + 1 : path) >=
	    (int)sizeof tmp) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	if ((fd = mkstemp(tmp)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fd_write_all(fd, buf, len) == -1 || fsync(fd) == -1) {
		saved = errno;
		close(fd);
		unlink(tmp);
		snprintf(err, errlen, "%s: %s", path, strerror(saved));
		return -1;
	}
	/* The mode of the file replaced, else what umask allows. */
	{
		struct stat st;
		mode_t mask = umask(0);

		umask(mask);
		if (stat(path, &st) == 0)
			mode = st.st_mode & 07777;
		else
			mode = 0666 & ~mask;
	}
	if (fchmod(fd, mode) == -1 || close(fd) == -1 ||
	    rename(tmp, path) == -1) {
		saved = errno;
		unlink(tmp);
		snprintf(err, errlen, "%s: %s", path, strerror(saved));
		return -1;
	}
	/* The rename itself must survive a crash too. */
	snprintf(dir, sizeof dir, "%s", path);
	if ((dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY)) != -1) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double
quantile(double *v, size_t n, double q)
{
	size_t i;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof *v, dbl_cmp);
	/* Nearest rank: the smallest value with at least q of the samples at or below it. */
	if (q <= 0)
		return v[0];
	i = (size_t)(q * (double)n + 0.999999999);
	if (i < 1)
		i = 1;
	if (i > n)
		i = n;
	return v[i - 1];
}

/* Is the wait over: *w as wanted, or quit set. */
static int
spin_done(const uint64_t *w, uint64_t v, int ne, const int *quit,
    uint64_t *got)
{
	*got = __atomic_load_n(w, __ATOMIC_ACQUIRE);
	return (ne ? *got != v : *got == v) ||
	    (quit != NULL && __atomic_load_n(quit, __ATOMIC_ACQUIRE));
}

uint64_t
spin_wait(const uint64_t *w, uint64_t v, int ne, const int *quit,
    uint64_t spin_ns, pthread_mutex_t *mu, pthread_cond_t *cv)
{
	uint64_t t0 = spin_ns > 0 ? now_ns() : 0, got;

	while (!spin_done(w, v, ne, quit, &got)) {
		if (spin_ns > 0 && now_ns() - t0 < spin_ns) {
			cpu_relax();
			continue;
		}
		pthread_mutex_lock(mu);
		while (!spin_done(w, v, ne, quit, &got))
			pthread_cond_wait(cv, mu);
		pthread_mutex_unlock(mu);
	}
	return got;
}

/*
 * Sends [p, p + len) with descriptor mfd (SCM_RIGHTS), or with none if
 * mfd is -1; -1 on error.
 */
int
fd_sendmsg(int fd, const void *p, size_t len, int mfd)
{
	union {
		struct cmsghdr	 h;
		char		 b[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = { (void *)(uintptr_t)p, len };
	struct msghdr m;
	struct cmsghdr *c;
	ssize_t n;

	memset(&m, 0, sizeof m);
	memset(&u, 0, sizeof u);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	if (mfd >= 0) {
		m.msg_control = u.b;
		m.msg_controllen = sizeof u.b;
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &mfd, sizeof mfd);
	}
	do
		n = sendmsg(fd, &m, MSG_NOSIGNAL);
	while (n == -1 && errno == EINTR);
	if (n <= 0)
		return -1;
	/* The descriptor went with the first byte; the rest plainly. */
	return (size_t)n == len ? 0 : fd_write_all(fd, (const char *)p + n,
	    len - (size_t)n);
}

/*
 * Reads len bytes, the first with recvmsg so that a descriptor sent with
 * them is received, in *mfd (-1 if none); -1 on error or EOF.
 */
int
fd_recvmsg(int fd, void *p, size_t len, int *mfd)
{
	union {
		struct cmsghdr	 h;
		char		 b[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = { p, len };
	struct msghdr m;
	struct cmsghdr *c;
	ssize_t n;

	*mfd = -1;
	memset(&m, 0, sizeof m);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.b;
	m.msg_controllen = sizeof u.b;
	do
		n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	if (n <= 0)
		return -1;
	for (c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(mfd, CMSG_DATA(c), sizeof *mfd);
	if ((size_t)n < len && fd_read_full(fd, (char *)p + n,
	    len - (size_t)n) == -1) {
		if (*mfd >= 0)
			close(*mfd);
		*mfd = -1;
		return -1;
	}
	return 0;
}
