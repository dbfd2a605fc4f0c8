/* Loading gleam-serve.yaml. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfgtab.h"
#include "config.h"
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
	c->lanes = 8;
}

/* listen: "host:port" into two fields, either part optional. */
static int
config_listen(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k,
    void *base, struct yerr *err)
{
	struct config *c = base;
	char buf[300];
	const char *why;

	if (yget_str(d, n, k->name, buf, sizeof buf, err) == -1)
		return -1;
	if (parse_hostport(buf, c->listen_host, sizeof c->listen_host,
	    &c->listen_port, &why) == -1)
		return yerr_at(d, n, k->name, err, "'%s': %s", buf, why);
	c->listen_set = 1;
	return 0;
}

/* peer: "host:port", both parts needed. */
static int
config_peer(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k,
    void *base, struct yerr *err)
{
	struct config *c = base;
	char buf[300];
	const char *why;

	if (yget_str(d, n, k->name, buf, sizeof buf, err) == -1)
		return -1;
	c->peer_port = 0;
	if (parse_hostport(buf, c->peer_host, sizeof c->peer_host,
	    &c->peer_port, &why) == -1)
		return yerr_at(d, n, k->name, err, "'%s': %s", buf, why);
	if (c->peer_host[0] == '\0' || c->peer_port == 0)
		return yerr_at(d, n, k->name, err, "'%s': host and port "
		    "needed", buf);
	return 0;
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
	{ "spin",		CFG_DURATION,	F(spin),
	    .hi = 0.1, .why = "at most 100ms" },
	{ "lanes",		CFG_INT,	F(lanes),
	    .min = 0, .max = PROTO_LANES_MAX },
	{ "port_rate",		CFG_RATE,	F(port_rate) },
	{ "peer",		CFG_FUNC,	F(peer_host),
	    .fn = config_peer },
	{ "drain",		CFG_ENUM,	F(drain),
	    .choices = config_drains },
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

int
config_load_key(struct config *c, char *err, size_t errlen)
{
	memset(&c->key, 0, sizeof c->key);
	if (c->key_file[0] == '\0')
		return 0;
	return auth_key_load(&c->key, c->key_file, err, errlen);
}
