/*
 * gleam-sched -d: the daemon that gleam-run -S asks which server a task
 * should run on (gleam-sched(1), DAEMON).  It keeps the one-shot mode's
 * view of the LAN, refreshes the servers' part from their status every
 * interval, remembers what it placed, and re-reads its files on SIGHUP.
 */
#ifndef SCHED_DAEMON_H
#define SCHED_DAEMON_H

struct daemon_opts {
	const char	*links, *servers, *tasks;	/* tasks may be NULL */
	const char	*listen;	/* host:port */
	const char	*key_file;	/* NULL: no key */
	double		 interval;	/* seconds between status rounds */
	double		 replan;	/* seconds between re-plannings; 0 none */
	int		 verbose;
};

/* Runs until SIGTERM or SIGINT; returns the exit status. */
int	daemon_main(const struct daemon_opts *);

#endif
