/* Setting up the environment and exec'ing the program. */
#ifndef RUN_RUN_H
#define RUN_RUN_H

struct run_opts {
	const char	*server;	/* -s, or NULL */
	const char	*sched;		/* -S: the gleam-sched daemon, or NULL */
	const char	*task;		/* -t: the task's name for it, or NULL */
	const char	*key_file;	/* -k, or NULL */
	const char	*stats;		/* -O, or NULL */
	int		 verbose;	/* -v, repeated */
	int		 quiet;		/* -q: no warnings, no progress */
	int		 fallback;	/* 1: -F, 2: GLEAM_FALLBACK=local */
};

/* Execs argv[0] with the client library; returns only on failure. */
int	run_exec(const struct run_opts *, char **argv);
/*
 * Asks the gleam-sched daemon at addr which server the task of this
 * client should use; its host:port into server.  Returns 0, or an exit
 * status with the reason logged.
 */
int	run_ask(const char *addr, const char *key_file, const char *task,
	    char *server, size_t len);

/*
 * Connects to server and shakes hands with the key in key_file (NULL: no
 * key), then says goodbye.  Returns 0, or an exit status with the reason
 * in why: EXIT_NOSERVER when the server could not be used.
 */
int	run_check(const char *server, const char *key_file, char *why,
	    size_t len);

#endif
