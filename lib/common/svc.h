/*
 * A daemon's side of a service manager: readiness notification (the
 * sd_notify protocol, through libsystemd), the pid file, and detaching
 * without losing the log.  Every call is harmless where no service manager
 * is: svc_ready() and friends do nothing when NOTIFY_SOCKET is unset.
 *
 * The order in a daemon: svc_pidfile() before binding (it refuses a second
 * copy early), bind, detach (svc_detach) or not, svc_ready() once the
 * listener is up (it also writes the pid into the pid file); then, from the
 * event loop, svc_reloading() and svc_ready() around a reload and
 * svc_stopping() when the drain starts.  The pid file goes at exit.
 */
#ifndef GLEAM_SVC_H
#define GLEAM_SVC_H

/* Whether a service manager started us (INVOCATION_ID or JOURNAL_STREAM). */
int	svc_managed(void);

/*
 * Claims path as this program's pid file: refused (-1, logged) when it
 * names a live process of the same name.  The file is created now, while
 * the daemon may still be root, and filled by svc_ready(); it is removed
 * at exit by the process that made it (emptied, if it can no longer be
 * removed once privileges are dropped).
 */
int	svc_pidfile(const char *path);

/*
 * daemon(3), keeping the log: to syslog where a syslog socket exists and
 * no service manager watches stderr, else on the inherited stderr (in a
 * container without syslog, the container's log).
 */
int	svc_detach(void);

/* READY=1, with MAINPID and status (a line, or NULL); writes the pid file. */
void	svc_ready(const char *status);
/* RELOADING=1: svc_ready() must follow once the reload is done or failed. */
void	svc_reloading(void);
/* STOPPING=1: the drain has begun. */
void	svc_stopping(void);

#endif
