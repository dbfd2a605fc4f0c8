/* Diagnostics to stderr or syslog. */
#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <pthread.h>

#include "log.h"

static const char *log_name = "gleam";
static int log_level = LL_WARN;
static int log_to_syslog;
static int log_journal;		/* stderr is journald's: "<prio>" first */
static FILE *log_fp;		/* NULL: stderr */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

/*
 * A fork while another thread writes a line must not leave the child's
 * lock held (gleam-serve forks its workers from a process with threads).
 */
static void log_fork_prepare(void) { pthread_mutex_lock(&log_lock); }
static void log_fork_done(void) { pthread_mutex_unlock(&log_lock); }

static void
log_atfork(void)
{
	pthread_atfork(log_fork_prepare, log_fork_done, log_fork_done);
}

/*
 * Whether stderr is the stream journald gave us (JOURNAL_STREAM names its
 * device and inode, sd-daemon(3)): then each line starts with its priority
 * as "<N>", which journald takes off and keeps.  It adds the time too.
 */
static int
log_stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char c;

	if (js == NULL || sscanf(js, "%llu:%llu%c", &dev, &ino, &c) != 2 ||
	    fstat(2, &st) == -1)
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino;
}

void
log_init(const char *progname, int level)
{
	const char *p;

	pthread_once(&log_once, log_atfork);
	log_journal = log_stderr_is_journal();
	if (progname != NULL) {
		p = strrchr(progname, '/');
		log_name = p != NULL ? p + 1 : progname;
	}
	log_level = level;
}

void
log_syslog(int on)
{
	if (on && !log_to_syslog)
		openlog(log_name, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log_to_syslog = on;
}

void
log_file(FILE *fp)
{
	pthread_mutex_lock(&log_lock);
	log_fp = fp;
	pthread_mutex_unlock(&log_lock);
}

void
log_setlevel(int level)
{
	log_level = level;
}

int
log_getlevel(void)
{
	return log_level;
}

const char *
log_progname(void)
{
	return log_name;
}

void
log_vmsg(int level, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG,
	    LOG_DEBUG };
	char buf[2048], line[2200];

	if (level > log_level)
		return;
	vsnprintf(buf, sizeof buf, fmt, ap);
	if (log_to_syslog) {
		syslog(prio[level < 0 ? 0 : level > 4 ? 4 : level], "%s", buf);
		return;
	}
	/* One write per line so that threads (and workers) do not interleave. */
	if (log_journal && log_fp == NULL)
		snprintf(line, sizeof line, "<%d>%s: %s\n", prio[level < 0 ? 0 :
		    level > 4 ? 4 : level], log_name, buf);
	else
		snprintf(line, sizeof line, "%s: %s\n", log_name, buf);
	pthread_mutex_lock(&log_lock);
	fputs(line, log_fp != NULL ? log_fp : stderr);
	fflush(log_fp != NULL ? log_fp : stderr);
	pthread_mutex_unlock(&log_lock);
}

#define LOG_FN(name, level)					\
void								\
name(const char *fmt, ...)					\
{								\
	va_list ap;						\
	va_start(ap, fmt);					\
	log_vmsg(level, fmt, ap);				\
	va_end(ap);						\
}
LOG_FN(log_error, LL_ERROR)
LOG_FN(log_warn, LL_WARN)
LOG_FN(log_info, LL_INFO)
LOG_FN(log_debug, LL_DEBUG)
LOG_FN(log_trace, LL_TRACE)

void
fatalx(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LL_ERROR, fmt, ap);
	va_end(ap);
	exit(code);
}

void
fatal(int code, const char *fmt, ...)
{
	va_list ap;
	char buf[1024];
	int saved = errno;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	log_error("%s: %s", buf, strerror(saved));
	exit(code);
}
