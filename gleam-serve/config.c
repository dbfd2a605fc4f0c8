/* Loading gleam-serve.yaml. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfgtab.h"
#include "config.h"
#include "net.h"
#include "parse.h"
#include "proto.h"
#include "yamlio.h"

void
config_defaults(struct config *c)
{
	const char *cd;

	memset(c, 0, sizeof *c);
	snprintf(c->listen_host, sizeof c->listen_host, "*");
	c->listen_port = PROTO_DEFAULT_PORT;
	if (gethostname(c->name, sizeof c->name) == -1)
		snprintf(c->name, sizeof c->name, "localhost");
	c->max_clients = 64;
	c->max_handshakes = 32;
	c->max_handshakes_addr = 4;
	c->resume = 30;
	c->resume_buffer = 64ull << 20;
	c->max_frame = PROTO_MAX_FRAME_DEFAULT;
	c->handshake_timeout = 10;
	c->drain_timeout = 10;
	snprintf(c->backend, sizeof c->backend, "auto");
	c->isolation = ISO_PROCESS;
	c->cache_ram = 1ull << 30;
	c->cache_disk = 64ull << 30;
	c->cache_level = 1;
	/* systemd's CacheDirectory= (gleam-serve@.service): one per instance. */
	if ((cd = getenv("CACHE_DIRECTORY")) != NULL && cd[0] == '/')
		snprintf(c->cache_dir, sizeof c->cache_dir, "%.*s",
		    (int)strcspn(cd, ":"), cd);
	c->spin = sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? 200e-6 : 0;
	c->spin_max = sysconf(_SC_NPROCESSORS_ONLN) >= 8 ? 2e-3 : 0;
	c->lanes = 8;
}

/*
 * A "host:port" key: its text into text, its parts into host and *port (a
 * part left out leaves them as they are); with both, each part is needed.
 */
static int
config_hostport(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k,
    struct yerr *err, char *text, size_t textlen, char *host, size_t hostlen,
    int *port, int both)
{
	const char *why;

	if (yget_str(d, n, k->name, text, textlen, err) == -1)
		return -1;
	if (parse_hostport(text, host, hostlen, port, &why) == -1)
		return yerr_at(d, n, k->name, err, "'%s': %s", text, why);
	if (both && (host[0] == '\0' || *port == 0))
		return yerr_at(d, n, k->name, err, "'%s': expected host:port",
		    text);
	return 0;
}

/* listen: "host:port" into two fields, either part optional. */
static int
config_listen(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k,
    void *base, struct yerr *err)
{
	struct config *c = base;
	char buf[300];

	if (config_hostport(d, n, k, err, buf, sizeof buf, c->listen_host,
	    sizeof c->listen_host, &c->listen_port, 0) == -1)
		return -1;
	c->listen_set = 1;
	return 0;
}

/*
 * The identity at j of the list n (of group, for a message): the name, and
 * its node in *m; NULL after an error at the node.
 */
static const char *
config_ident(struct ydoc *d, yaml_node_t *n, size_t j, const struct cfg_key *k,
    const char *group, yaml_node_t **m, struct yerr *err)
{
	const char *ident;

	*m = yseq_get(d, n, j);
	if (*m == NULL || (ident = yscalar(*m)) == NULL ||
	    auth_name_check(ident) == -1) {
		(void)yerr_at(d, *m ? *m : n, k->name, err,
		    "%s%s'%s': not an identity's name", group ? group : "",
		    group ? ": " : "", *m && yscalar(*m) ? yscalar(*m) : "");
		return NULL;
	}
	return ident;
}

/*
 * cache_share: a mapping of group names to lists of identities, e.g.
 * "lab: [alice, bob]".  Names as in key files; an identity in one group.
 */
static int
config_share(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k,
    void *base, struct yerr *err)
{
	struct config *c = base;
	yaml_node_t *members, *m, *kn;
	const char *group, *ident;
	size_t i, j;
	int x;

	c->nshare = 0;
	if (yis_null(n))
		return 0;
	if (n->type != YAML_MAPPING_NODE)
		return yerr_at(d, n, k->name, err, "a mapping of groups to "
		    "lists of identities (lab: [alice, bob])");
	for (i = 0; i < ymap_len(n); i++) {
		members = ymap_pair(d, n, i, &group, &kn);
		if (group == NULL || auth_name_check(group) == -1)
			return yerr_at(d, kn, k->name, err, "'%s': not a group "
			    "name (letters, digits, '.', '_', '-', '@', at most "
			    "%d)", group ? group : "", AUTH_NAME_MAX);
		if (members == NULL || members->type != YAML_SEQUENCE_NODE)
			return yerr_at(d, kn, k->name, err, "%s: a list of "
			    "identities ([alice, bob])", group);
		for (j = 0; j < yseq_len(members); j++) {
			if ((ident = config_ident(d, members, j, k, group, &m,
			    err)) == NULL)
				return -1;
			for (x = 0; x < c->nshare; x++)
				if (strcmp(c->share[x].ident, ident) == 0)
					return yerr_at(d, m, k->name, err,
					    "%s: %s is in group %s already (an "
					    "identity shares with one group)",
					    group, ident, c->share[x].group);
			if (c->nshare == CONFIG_SHARE_MAX)
				return yerr_at(d, m, k->name, err, "more than "
				    "%d identities", CONFIG_SHARE_MAX);
			snprintf(c->share[c->nshare].ident,
			    sizeof c->share[c->nshare].ident, "%s", ident);
			snprintf(c->share[c->nshare].group,
			    sizeof c->share[c->nshare].group, "%s", group);
			c->share[c->nshare].line = ynode_line(m);
			c->nshare++;
		}
	}
	return 0;
}

/* admins: a list of identities, e.g. "[alice]"; checked against the keys. */
static int
config_admins(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k,
    void *base, struct yerr *err)
{
	struct config *c = base;
	yaml_node_t *m;
	const char *ident;
	size_t j;
	int x;

	c->nadmins = 0;
	c->admins_line = ynode_line(n);
	if (yis_null(n))
		return 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return yerr_at(d, n, k->name, err, "a list of identities "
		    "([alice, bob])");
	for (j = 0; j < yseq_len(n); j++) {
		if ((ident = config_ident(d, n, j, k, NULL, &m, err)) == NULL)
			return -1;
		for (x = 0; x < c->nadmins; x++)
			if (strcmp(c->admins[x], ident) == 0)
				return yerr_at(d, m, k->name, err,
				    "%s: listed twice", ident);
		if (c->nadmins == CONFIG_ADMINS_MAX)
			return yerr_at(d, m, k->name, err, "more than %d "
			    "identities", CONFIG_ADMINS_MAX);
		snprintf(c->admins[c->nadmins], sizeof c->admins[0], "%s",
		    ident);
		c->nadmins++;
	}
	return 0;
}

/* address: where clients reach us, host:port, both parts given. */
static int
config_address(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k,
    void *base, struct yerr *err)
{
	struct config *c = base;
	char host[256];
	int port = 0;

	return config_hostport(d, n, k, err, c->address, sizeof c->address,
	    host, sizeof host, &port, 1);
}

/* peer: "host:port", both parts needed. */
static int
config_peer(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k,
    void *base, struct yerr *err)
{
	struct config *c = base;
	char buf[300];

	c->peer_port = 0;
	return config_hostport(d, n, k, err, buf, sizeof buf, c->peer_host,
	    sizeof c->peer_host, &c->peer_port, 1);
}

/* In the order of DRAIN_CUT and DRAIN_MIGRATE. */
static const char *const config_drains[] = { "cut", "migrate", NULL };

/* In the order of AUTH_KEYED and AUTH_OFF. */
static const char *const config_auths[] = { "key", "off", NULL };

static const char *const config_backends[] = { "auto", "cuda", "host",
    "none", NULL };
/* In the order of ISO_PROCESS and ISO_THREAD. */
static const char *const config_isolations[] = { "process", "thread", NULL };

/*
 * gleam-serve.yaml(5), a row a key.  Keys are read in this order, so that
 * of two bad keys the same one is named as before.
 */
#define F(field)	CFG_FIELD(struct config, field)
static const struct cfg_key config_keys[] = {
	{ "listen",		CFG_FUNC,	F(listen_host),
	    .fn = config_listen },
	{ "name",		CFG_STR,	F(name) },
	{ "address",		CFG_FUNC,	F(address),
	    .fn = config_address },
	{ "key_file",		CFG_PATH,	F(key_file) },
	{ "auth",		CFG_ENUM,	F(auth),
	    .choices = config_auths },
	{ "user",		CFG_STR,	F(user) },
	{ "max_handshakes",	CFG_INT,	F(max_handshakes),
	    .min = 1, .max = 65536 },
	{ "max_handshakes_per_address", CFG_INT, F(max_handshakes_addr),
	    .min = 1, .max = 65536 },
	{ "resume",		CFG_DURATION,	F(resume),
	    .hi = 86400 },
	{ "resume_buffer",	CFG_SIZE,	F(resume_buffer),
	    .min = 40ll << 20, .max = 16ll << 30 },
	{ "idle_timeout",	CFG_DURATION,	F(idle_timeout),
	    .hi = 30 * 86400 },
	{ "pid_file",		CFG_PATH,	F(pid_file) },
	{ "max_clients",	CFG_INT,	F(max_clients),
	    .min = 1, .max = 65536 },
	{ "max_frame",		CFG_SIZE,	F(max_frame),
	    .min = PROTO_MAX_FRAME_MIN, .max = PROTO_MAX_FRAME_LIMIT,
	    .why = "must be between 64k and 1g" },
	{ "handshake_timeout",	CFG_DURATION,	F(handshake_timeout),
	    .flags = CFG_GTMIN, .why = "must be positive" },
	{ "drain_timeout",	CFG_DURATION,	F(drain_timeout) },
	{ "backend",		CFG_STR,	F(backend),
	    .choices = config_backends },
	{ "isolation",		CFG_ENUM,	F(isolation),
	    .choices = config_isolations },
	{ "host_kernels",	CFG_STR,	F(host_kernels) },
	{ "cache_dir",		CFG_PATH,	F(cache_dir) },
	{ "cache_ram",		CFG_SIZE,	F(cache_ram) },
	{ "cache_disk",		CFG_SIZE,	F(cache_disk) },
	{ "cache_gpu",		CFG_SIZE,	F(cache_gpu) },
	{ "cache_level",	CFG_INT,	F(cache_level),
	    .min = 0, .max = 19 },
	{ "cache_share",	CFG_FUNC,	F(nshare),
	    .fn = config_share },
	{ "spin",		CFG_DURATION,	F(spin),
	    .hi = 0.1, .why = "at most 100ms" },
	{ "spin_max",		CFG_DURATION,	F(spin_max),
	    .hi = 0.1, .why = "at most 100ms" },
	{ "lanes",		CFG_INT,	F(lanes),
	    .min = 0, .max = PROTO_LANES_MAX },
	{ "port_rate",		CFG_RATE,	F(port_rate) },
	{ "peer",		CFG_FUNC,	F(peer_host),
	    .fn = config_peer },
	{ "drain",		CFG_ENUM,	F(drain),
	    .choices = config_drains },
	{ "admins",		CFG_FUNC,	F(nadmins),
	    .fn = config_admins },
	{ NULL }
};
#undef F

/* The keys of a loaded document into c, which holds the defaults. */
static int
config_read(struct config *c, struct ydoc *d, struct yerr *err)
{
	yaml_node_t *root;

	if ((root = ydoc_root(d)) == NULL)
		return 0;	/* an empty file: every default stands */
	return cfg_read(d, root, "configuration", config_keys, c, err);
}

int
config_load(struct config *c, const char *path, int missing_ok, char *errbuf,
    size_t errlen)
{
	struct ydoc d;
	struct yerr err;
	int rc;

	if (missing_ok && access(path, F_OK) == -1 && errno == ENOENT)
		return 0;
	snprintf(c->path, sizeof c->path, "%s", path);
	if (ydoc_load_file(&d, path, &err) == -1) {
		snprintf(errbuf, errlen, "%s", err.msg);
		return -1;
	}
	if ((rc = config_read(c, &d, &err)) == -1)
		snprintf(errbuf, errlen, "%s", err.msg);
	ydoc_free(&d);
	return rc;
}

int
config_parse(struct config *c, const char *name, const void *buf, size_t len,
    char *errbuf, size_t errlen)
{
	struct ydoc d;
	struct yerr err;
	int rc;

	if (ydoc_load_mem(&d, name, buf, len, &err) == -1) {
		snprintf(errbuf, errlen, "%s", err.msg);
		return -1;
	}
	if ((rc = config_read(c, &d, &err)) == -1)
		snprintf(errbuf, errlen, "%s", err.msg);
	ydoc_free(&d);
	return rc;
}

/* Whether the key file names ident (auth_keys_find takes any for one key). */
static int
config_known(const struct config *c, const char *ident)
{
	size_t j;

	for (j = 0; j < c->keys.n; j++)
		if (strcmp(c->keys.v[j].name, ident) == 0)
			return 1;
	return 0;
}

int
config_load_key(struct config *c, char *err, size_t errlen)
{
	const char *where = c->path[0] ? c->path : "configuration";
	int i;

	memset(&c->keys, 0, sizeof c->keys);
	if (c->key_file[0] == '\0') {
		if (c->nshare > 0) {
			snprintf(err, errlen, "%s:%d: cache_share: no key_file, "
			    "so no identities to share", where,
			    c->share[0].line);
			return -1;
		}
		if (c->nadmins > 0) {
			snprintf(err, errlen, "%s:%d: admins: no key_file, "
			    "so no identities (without a key only this host "
			    "may send control requests)", where,
			    c->admins_line);
			return -1;
		}
		return 0;
	}
	if (auth_keys_load(&c->keys, c->key_file, err, errlen) == -1)
		return -1;
	/* A member the key file lacks is a typo, or one removed. */
	for (i = 0; i < c->nshare; i++) {
		if (!config_known(c, c->share[i].ident)) {
			snprintf(err, errlen, "%s:%d: cache_share: %s: no "
			    "identity %s in key file %s", where,
			    c->share[i].line, c->share[i].group,
			    c->share[i].ident, c->key_file);
			auth_keys_free(&c->keys);
			return -1;
		}
	}
	for (i = 0; i < c->nadmins; i++) {
		if (!config_known(c, c->admins[i])) {
			snprintf(err, errlen, "%s:%d: admins: no identity %s "
			    "in key file %s", where, c->admins_line,
			    c->admins[i], c->key_file);
			auth_keys_free(&c->keys);
			return -1;
		}
	}
	return 0;
}

void
config_free(struct config *c)
{
	auth_keys_free(&c->keys);
}

int
config_admin(const struct config *c, int authed, const char *ident,
    const char *host, char *why, size_t whylen)
{
	int i;

	if (c->keys.n == 0) {
		/* No key: this host's users alone, as for the signals. */
		if (net_is_loopback(host))
			return 0;
		snprintf(why, whylen, "without a key only this host may "
		    "send control requests");
		return -1;
	}
	if (!authed) {
		snprintf(why, whylen, "the key was not proven");
		return -1;
	}
	for (i = 0; i < c->nadmins; i++)
		if (strcmp(c->admins[i], ident) == 0)
			return 0;
	if (c->nadmins == 0 && c->keys.n == 1)
		return 0;	/* the holder of the one key */
	if (c->nadmins == 0)
		snprintf(why, whylen, "%s is not an admin (the key file has "
		    "several identities and admins names none)",
		    ident[0] ? ident : "this client");
	else
		snprintf(why, whylen, "%s is not an admin",
		    ident[0] ? ident : "this client");
	return -1;
}

const char *
config_share_group(const struct config *c, const char *ident)
{
	int i;

	for (i = 0; i < c->nshare; i++)
		if (strcmp(c->share[i].ident, ident) == 0)
			return c->share[i].group;
	return NULL;
}
