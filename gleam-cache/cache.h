/* gleam-cache's commands, each over one cache directory. */
#ifndef CACHE_CACHE_H
#define CACHE_CACHE_H

#include <stdint.h>

#define CACHE_DIR_DEFAULT	"/var/cache/gleam"

struct opts {
	const char	*dir;
	const char	*tenant;	/* NULL: every tenant */
	int		 yaml;
	int		 quiet;
	int		 dry;		/* prune -n */
	int		 remove;	/* verify -r */
	double		 age;		/* prune -a: seconds; < 0 unset */
	uint64_t	 size;		/* prune -s: bytes */
	int		 have_size;
};

/* Each returns an exit code (enum gl_exit). */
int	cmd_ls(const struct opts *);
int	cmd_du(const struct opts *);
int	cmd_prune(const struct opts *);
int	cmd_verify(const struct opts *);
int	cmd_rm(const struct opts *, int argc, char **argv);

#endif
