/* Readiness, the pid file and detaching: a daemon under a service manager. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "log.h"
#include "svc.h"

static char	 svc_pidpath[1024];
static int	 svc_pidfd = -1;
static pid_t	 svc_owner;		/* the process that removes it */
static int	 svc_pidwritten;

int
svc_managed(void)
{
	return getenv("INVOCATION_ID") != NULL ||
	    getenv("JOURNAL_STREAM") != NULL;
}

/*
 * Whether pid is a live process named as we are.  /proc/PID/comm holds at
 * most 15 bytes of the name.
 */
static int
svc_same_program(pid_t pid)
{
	char path[64], comm[64];
	const char *me = log_progname();
	FILE *fp;
	size_t n;

	if (pid <= 0 || pid == getpid() || (kill(pid, 0) == -1 &&
	    errno == ESRCH))
		return 0;
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	if ((fp = fopen(path, "r")) == NULL)
		return 0;
	if (fgets(comm, sizeof comm, fp) == NULL)
		comm[0] = '\0';
	fclose(fp);
	comm[strcspn(comm, "\n")] = '\0';
	n = strlen(me) < 15 ? strlen(me) : 15;
	return comm[0] != '\0' && strlen(comm) == n &&
	    strncmp(comm, me, n) == 0;
}

static void
svc_pidfile_remove(void)
{
	if (svc_pidfd == -1 || getpid() != svc_owner)
		return;
	/* After dropping root the directory may refuse: leave no pid then. */
	if (unlink(svc_pidpath) == -1 && ftruncate(svc_pidfd, 0) == -1)
		log_warn("pid file %s: %s", svc_pidpath, strerror(errno));
	close(svc_pidfd);
	svc_pidfd = -1;
}

int
svc_pidfile(const char *path)
{
	char buf[32], *end;
	ssize_t n;
	long pid;
	int fd;

	if (snprintf(svc_pidpath, sizeof svc_pidpath, "%s", path) >=
	    (int)sizeof svc_pidpath) {
		log_error("pid file %s: path too long", path);
		return -1;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) != -1) {
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		errno = 0;
		pid = strtol(buf, &end, 10);
		if (errno == 0 && end != buf && (*end == '\n' ||
		    *end == '\0') && pid > 0 && pid < (1L << 30) &&
		    svc_same_program((pid_t)pid)) {
			log_error("pid file %s: %s is already running as "
			    "pid %ld", path, log_progname(), pid);
			return -1;
		}
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0644);
	if (fd == -1) {
		log_error("pid file %s: %s", path, strerror(errno));
		return -1;
	}
	svc_pidfd = fd;
	svc_owner = getpid();
	atexit(svc_pidfile_remove);
	return 0;
}

int
svc_detach(void)
{
	struct stat st;
	int keep, fd;

	/* syslog(3) with nobody listening drops every line. */
	keep = svc_managed() || stat("/dev/log", &st) == -1 ||
	    !S_ISSOCK(st.st_mode);
	if (daemon(0, keep) == -1)
		return -1;
	if (keep && (fd = open("/dev/null", O_RDWR)) != -1) {
		(void)dup2(fd, STDIN_FILENO);
		(void)dup2(fd, STDOUT_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	if (!keep)
		log_syslog(1);
	if (svc_pidfd != -1)
		svc_owner = getpid();
	return 0;
}

void
svc_ready(const char *status)
{
	char buf[32];
	int n;

	if (svc_pidfd != -1 && !svc_pidwritten) {
		n = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
		if (ftruncate(svc_pidfd, 0) == -1 ||
		    pwrite(svc_pidfd, buf, (size_t)n, 0) != n)
			log_warn("pid file %s: %s", svc_pidpath,
			    strerror(errno));
		svc_pidwritten = 1;
	}
	(void)sd_notifyf(0, "READY=1\nMAINPID=%d\nSTATUS=%s", (int)getpid(),
	    status != NULL ? status : "ready");
}

void
svc_reloading(void)
{
	struct timespec ts;

	/* MONOTONIC_USEC: what Type=notify-reload (systemd 253) requires. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	(void)sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
	    (unsigned long long)ts.tv_sec * 1000000ull +
	    (unsigned long long)ts.tv_nsec / 1000);
}

void
svc_stopping(void)
{
	(void)sd_notify(0, "STOPPING=1\nSTATUS=draining");
}
