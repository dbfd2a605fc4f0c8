/*
 * Diagnostics, in the manner of err(3): "prog: message" on stderr, or to
 * syslog once a daemon has detached (svc_detach: only where a syslog
 * socket exists and no service manager reads stderr).  On journald's
 * stream (JOURNAL_STREAM) each line starts with its priority, "<3>" to
 * "<7>"; journald adds the time.  Messages are lowercase, name the
 * object, and carry no final period.
 */
#ifndef GLEAM_LOG_H
#define GLEAM_LOG_H

#include <stdarg.h>
#include <stdio.h>

enum log_level { LL_QUIET = -1, LL_ERROR = 0, LL_WARN = 1, LL_INFO = 2,
    LL_DEBUG = 3, LL_TRACE = 4 };

void	log_init(const char *progname, int level);
void	log_syslog(int on);		/* after daemon(3) */
void	log_setlevel(int level);
/* Lines go to fp from now on, not stderr (NULL: stderr again). */
void	log_file(FILE *fp);
int	log_getlevel(void);
const char *log_progname(void);

void	log_error(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_trace(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_vmsg(int level, const char *, va_list);

/* Print the message and exit with code (an enum gl_exit). */
void	fatalx(int code, const char *, ...)
	    __attribute__((format(printf, 2, 3), noreturn));
/* The same with ": strerror(errno)" appended, as err(3) does. */
void	fatal(int code, const char *, ...)
	    __attribute__((format(printf, 2, 3), noreturn));

#endif
