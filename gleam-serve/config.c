/* Loading gleam-serve.yaml. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "parse.h"
#include "proto.h"
#include "yamlio.h"

void
config_defaults(struct config *c)
{
	memset(c, 0, sizeof *c);
	snprintf(c->listen_host, sizeof c->listen_host, "*");
	c->listen_port = PROTO_DEFAULT_PORT;
	if (gethostname(c->name, sizeof c->name) == -1)
		snprintf(c->name, sizeof c->name, "localhost");
	c->max_clients = 64;
	c->max_frame = PROTO_MAX_FRAME_DEFAULT;
	c->handshake_timeout = 10;
	c->drain_timeout = 10;
	snprintf(c->backend, sizeof c->backend, "auto");
	c->isolation = ISO_PROCESS;
	c->cache_ram = 1ull << 30;
	c->cache_disk = 64ull << 30;
	c->cache_level = 1;
	c->spin = sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? 200e-6 : 0;
	c->lanes = 8;
}

static int
config_listen(struct ydoc *d, yaml_node_t *n, struct config *c,
    struct yerr *err)
{
	char buf[300];
	const char *why;

	if (yget_str(d, n, "listen", buf, sizeof buf, err) == -1)
		return -1;
	if (parse_hostport(buf, c->listen_host, sizeof c->listen_host,
	    &c->listen_port, &why) == -1)
		return yerr_at(d, n, "listen", err, "'%s': %s", buf, why);
	return 0;
}

/* A path relative to the file that names it, as an admin expects. */
static int
config_path(struct ydoc *d, yaml_node_t *n, const char *key, const char *file,
    char *out, size_t outlen, struct yerr *err)
{
	char rel[1024], dir[1024];

	if (yget_str(d, n, key, rel, sizeof rel, err) == -1)
		return -1;
	snprintf(dir, sizeof dir, "%s", file);
	if (rel[0] != '/' && strchr(dir, '/') != NULL) {
		*strrchr(dir, '/') = '\0';
		if ((size_t)snprintf(out, outlen, "%s/%s", dir, rel) >= outlen)
			return yerr_at(d, n, key, err, "too long");
	} else if ((size_t)snprintf(out, outlen, "%s", rel) >= outlen)
		return yerr_at(d, n, key, err, "too long");
	return 0;
}

int
config_load(struct config *c, const char *path, int missing_ok, char *errbuf,
    size_t errlen)
{
	static const char *const keys[] = { "listen", "name", "key_file",
	    "max_clients", "max_frame", "handshake_timeout", "drain_timeout",
	    "backend", "host_kernels", "cache_dir", "cache_ram", "cache_disk",
	    "cache_gpu", "cache_level", "isolation", "spin", "lanes",
	    "port_rate", NULL };
	struct ydoc d;
	struct yerr err;
	yaml_node_t *root, *n;
	long long v;
	int rc = -1;

	if (missing_ok && access(path, F_OK) == -1 && errno == ENOENT)
		return 0;
	snprintf(c->path, sizeof c->path, "%s", path);
	if (ydoc_load_file(&d, path, &err) == -1) {
		snprintf(errbuf, errlen, "%s", err.msg);
		return -1;
	}
	if ((root = ydoc_root(&d)) == NULL) {
		rc = 0;		/* an empty file: every default stands */
		goto out;
	}
	if (ymap_check_keys(&d, root, "configuration", keys, &err) == -1)
		goto out;
	if ((n = ymap_get(&d, root, "listen")) != NULL &&
	    config_listen(&d, n, c, &err) == -1)
		goto out;
	if ((n = ymap_get(&d, root, "name")) != NULL &&
	    yget_str(&d, n, "name", c->name, sizeof c->name, &err) == -1)
		goto out;
	if ((n = ymap_get(&d, root, "key_file")) != NULL) {
		char rel[1024], dir[1024];

		if (yget_str(&d, n, "key_file", rel, sizeof rel, &err) == -1)
			goto out;
		/* Relative to the file that names it, as an admin expects. */
		snprintf(dir, sizeof dir, "%s", path);
		if (rel[0] != '/' && strchr(dir, '/') != NULL) {
			*strrchr(dir, '/') = '\0';
			if ((size_t)snprintf(c->key_file, sizeof c->key_file,
			    "%s/%s", dir, rel) >= sizeof c->key_file) {
				yerr_at(&d, n, "key_file", &err, "too long");
				goto out;
			}
		} else
			snprintf(c->key_file, sizeof c->key_file, "%s", rel);
	}
	if ((n = ymap_get(&d, root, "max_clients")) != NULL) {
		if (yget_int(&d, n, "max_clients", 1, 65536, &v, &err) == -1)
			goto out;
		c->max_clients = (int)v;
	}
	if ((n = ymap_get(&d, root, "max_frame")) != NULL) {
		if (yget_size(&d, n, "max_frame", &c->max_frame, &err) == -1)
			goto out;
		if (c->max_frame < PROTO_MAX_FRAME_MIN ||
		    c->max_frame > PROTO_MAX_FRAME_LIMIT) {
			yerr_at(&d, n, "max_frame", &err, "must be between "
			    "64k and 1g");
			goto out;
		}
	}
	if ((n = ymap_get(&d, root, "handshake_timeout")) != NULL &&
	    yget_duration(&d, n, "handshake_timeout", &c->handshake_timeout,
	    &err) == -1)
		goto out;
	if ((n = ymap_get(&d, root, "drain_timeout")) != NULL &&
	    yget_duration(&d, n, "drain_timeout", &c->drain_timeout,
	    &err) == -1)
		goto out;
	if ((n = ymap_get(&d, root, "backend")) != NULL) {
		if (yget_str(&d, n, "backend", c->backend, sizeof c->backend,
		    &err) == -1)
			goto out;
		if (strcmp(c->backend, "auto") != 0 &&
		    strcmp(c->backend, "cuda") != 0 &&
		    strcmp(c->backend, "host") != 0 &&
		    strcmp(c->backend, "none") != 0) {
			yerr_at(&d, n, "backend", &err, "'%s': expected auto, "
			    "cuda, host or none", c->backend);
			goto out;
		}
	}
	if ((n = ymap_get(&d, root, "isolation")) != NULL) {
		char iso[16];

		if (yget_str(&d, n, "isolation", iso, sizeof iso, &err) == -1)
			goto out;
		if (strcmp(iso, "process") == 0)
			c->isolation = ISO_PROCESS;
		else if (strcmp(iso, "thread") == 0)
			c->isolation = ISO_THREAD;
		else {
			yerr_at(&d, n, "isolation", &err, "'%s': expected "
			    "process or thread", iso);
			goto out;
		}
	}
	if ((n = ymap_get(&d, root, "host_kernels")) != NULL &&
	    yget_str(&d, n, "host_kernels", c->host_kernels,
	    sizeof c->host_kernels, &err) == -1)
		goto out;
	if ((n = ymap_get(&d, root, "cache_dir")) != NULL &&
	    config_path(&d, n, "cache_dir", path, c->cache_dir,
	    sizeof c->cache_dir, &err) == -1)
		goto out;
	if ((n = ymap_get(&d, root, "cache_ram")) != NULL &&
	    yget_size(&d, n, "cache_ram", &c->cache_ram, &err) == -1)
		goto out;
	if ((n = ymap_get(&d, root, "cache_disk")) != NULL &&
	    yget_size(&d, n, "cache_disk", &c->cache_disk, &err) == -1)
		goto out;
	if ((n = ymap_get(&d, root, "cache_gpu")) != NULL &&
	    yget_size(&d, n, "cache_gpu", &c->cache_gpu, &err) == -1)
		goto out;
	if ((n = ymap_get(&d, root, "cache_level")) != NULL) {
		if (yget_int(&d, n, "cache_level", 0, 19, &v, &err) == -1)
			goto out;
		c->cache_level = (int)v;
	}
	if ((n = ymap_get(&d, root, "spin")) != NULL) {
		if (yget_duration(&d, n, "spin", &c->spin, &err) == -1)
			goto out;
		if (c->spin > 0.1) {
			yerr_at(&d, n, "spin", &err, "at most 100ms");
			goto out;
		}
	}
	if ((n = ymap_get(&d, root, "lanes")) != NULL) {
		if (yget_int(&d, n, "lanes", 0, PROTO_LANES_MAX, &v, &err) == -1)
			goto out;
		c->lanes = (int)v;
	}
	if ((n = ymap_get(&d, root, "port_rate")) != NULL &&
	    yget_rate(&d, n, "port_rate", &c->port_rate, &err) == -1)
		goto out;
	if (c->handshake_timeout <= 0) {
		yerr_at(&d, ymap_get(&d, root, "handshake_timeout"),
		    "handshake_timeout", &err, "must be positive");
		goto out;
	}
	rc = 0;
out:
	if (rc == -1)
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
