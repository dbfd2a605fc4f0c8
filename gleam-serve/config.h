/* gleam-serve's configuration file, gleam-serve.yaml(5). */
#ifndef SERVE_CONFIG_H
#define SERVE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"

#define SERVE_CONFIG_DEFAULT	"/etc/gleam/gleam-serve.yaml"
#define CONFIG_SHARE_MAX	256	/* identities in cache_share */
#define CONFIG_ADMINS_MAX	64	/* identities in admins */

/*
 * How remoting clients are kept apart: a worker process each (a kernel
 * fault is sticky for the whole process in the CUDA driver, so only a
 * process of its own keeps one client's fault from every other client),
 * or a thread each in the server's process (the GPU tier of the weight
 * cache, which keeps buffers across clients, needs that).
 */
enum { ISO_PROCESS, ISO_THREAD };

/*
 * auth: key (the default) serves beyond this host only clients that
 * prove the key; off is the explicit choice to serve anyone, unsealed.
 */
enum { AUTH_KEYED, AUTH_OFF };

/* drain: what SIGTERM does to remoting clients (gleam-serve.yaml(5)). */
enum { DRAIN_CUT, DRAIN_MIGRATE };

struct config {
	char		 path[1024];	/* "" when none was read */
	char		 listen_host[256];
	int		 listen_port;
	int		 listen_set;	/* by listen: or -l, not the default */
	int		 auth;		/* AUTH_KEYED or AUTH_OFF */
	char		 user[64];	/* to run as after binding; "" */
	char		 pid_file[1024]; /* written once listening; "" */
	char		 name[256];	/* reported as host */
	char		 address[300];	/* reported as address; "": the bound
					   one (gleam-serve.yaml(5)) */
	char		 key_file[1024];
	struct auth_keys keys;		/* its identities; n 0: no key */
	int		 max_clients;
	int		 max_handshakes;	/* connections before WELCOME */
	int		 max_handshakes_addr;	/* of them, from one address */
	double		 idle_timeout;	/* a remoting client's; 0: none */
	double		 resume;	/* a dropped session waits; 0: none */
	uint64_t	 resume_buffer;	/* its unacknowledged output, bytes */
	uint64_t	 max_frame;
	double		 handshake_timeout;
	double		 drain_timeout;
	char		 backend[16];	/* auto, cuda, host or none */
	int		 isolation;	/* ISO_PROCESS or ISO_THREAD */
	char		 host_kernels[1024]; /* the host backend's kernels */
	char		 cache_dir[1024]; /* the weight cache's disk tier */
	uint64_t	 cache_ram;	/* bytes of the RAM tier */
	uint64_t	 cache_disk;	/* bytes of the disk tier */
	uint64_t	 cache_gpu;	/* bytes of the GPU tier per device */
	int		 cache_level;	/* zstd level on disk; 0: raw */
	/*
	 * cache_share: the identities whose weight-cache entries are one
	 * group's (each identity in one group at most); the others keep
	 * theirs to themselves.
	 */
	struct {
		char	 ident[AUTH_NAME_MAX + 1];
		char	 group[AUTH_NAME_MAX + 1];
		int	 line;		/* in the file, for errors */
	}		 share[CONFIG_SHARE_MAX];
	int		 nshare;
	double		 spin;		/* seconds a client's thread polls */
	double		 spin_max;	/* at most, learned from its gaps */
	int		 lanes;		/* bulk connections a client may open */
	double		 port_rate;	/* its link's bit/s for the status; 0 */
	char		 peer_host[256]; /* where clients migrate; "" none */
	int		 peer_port;
	int		 drain;		/* DRAIN_CUT or DRAIN_MIGRATE */
	/*
	 * admins: the identities that may send control requests
	 * (MIGRATE_ONE); line is where the list is, for errors.
	 */
	char		 admins[CONFIG_ADMINS_MAX][AUTH_NAME_MAX + 1];
	int		 nadmins;
	int		 admins_line;
};

/*
 * A new key is a field here, its default in config_defaults, a row of
 * config_keys (config.c) and an entry in gleam-serve.yaml(5).
 */
void	config_defaults(struct config *);
/*
 * Reads path into c (which holds defaults).  Errors name file, line and
 * key, go into err, and leave c in an unspecified state.  If missing_ok and
 * the file does not exist, c keeps its defaults.
 */
int	config_load(struct config *, const char *path, int missing_ok,
	    char *err, size_t errlen);
/* As config_load, from a buffer; name stands for the file in messages. */
int	config_parse(struct config *, const char *name, const void *,
	    size_t, char *err, size_t errlen);
/* Loads the identities of key_file, if any, and checks cache_share's. */
int	config_load_key(struct config *, char *err, size_t errlen);
/* Frees what config_load_key loaded. */
void	config_free(struct config *);
/*
 * Whether identity ident (authed: it proved the key) may send control
 * requests; host is its address (no port) for the keyless case.
 * Returns 0, or -1 with the reason in why.
 */
int	config_admin(const struct config *, int authed, const char *ident,
	    const char *host, char *why, size_t whylen);
/* The group whose cache ident shares, or NULL. */
const char *config_share_group(const struct config *, const char *ident);

#endif
