/* Setting up the environment and exec'ing the program. */
#ifndef RUN_RUN_H
#define RUN_RUN_H

struct run_opts {
	const char	*server;	/* -s, or NULL */
	const char	*key_file;	/* -k, or NULL */
	const char	*stats;		/* -o, or NULL */
	int		 verbose;	/* -v, repeated */
};

/* Execs argv[0] with the client library; returns only on failure. */
int	run_exec(const struct run_opts *, char **argv);

#endif
