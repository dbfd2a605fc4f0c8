/* Server status: the YAML keys in one place. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

void
status_write(struct yw *w, const struct server_status *s)
{
	const struct gpu_status *g;
	const struct client_status *c;
	int i;

	yw_map(w);
	yw_kstr(w, "host", s->host);
	yw_kstr(w, "version", s->version);
	yw_kint(w, "protocol", s->protocol);
	yw_kstr(w, "backend", s->backend);
	yw_kstr(w, "gpu_source", s->gpu_source);
	yw_kdbl(w, "uptime_s", s->uptime_s, 1);
	yw_kbool(w, "auth", s->auth);
	yw_kint(w, "max_clients", s->max_clients);
	yw_key(w, "port");
	if (s->port_bps <= 0)
		yw_null(w);
	else {
		char rate[32];

		/* parse_rate's units, exact: whole Gbit/s, else Mbit/s. */
		if (fmod(s->port_bps, 1e9) == 0)
			snprintf(rate, sizeof rate, "%.0fgbit", s->port_bps / 1e9);
		else if (fmod(s->port_bps, 1e6) == 0)
			snprintf(rate, sizeof rate, "%.0fmbit", s->port_bps / 1e6);
		else
			snprintf(rate, sizeof rate, "%.0fbit", s->port_bps);
		yw_str(w, rate);
	}
	yw_key(w, "gpus");
	if (s->ngpus == 0)
		yw_fseq(w);
	else
		yw_seq(w);
	for (i = 0; i < s->ngpus; i++) {
		g = &s->gpus[i];
		yw_map(w);
		yw_kint(w, "index", g->index);
		yw_kstr(w, "name", g->name);
		yw_key(w, "memory_total");
		yw_uint(w, g->memory_total);
		yw_key(w, "memory_free");
		yw_uint(w, g->memory_free);
		yw_key(w, "utilization");
		if (g->utilization < 0)
			yw_null(w);
		else
			yw_int(w, g->utilization);
		yw_end(w);
	}
	yw_end(w);
	yw_kint(w, "nclients", s->nclients);
	yw_key(w, "clients");
	if (s->nclients == 0 || s->clients == NULL)
		yw_fseq(w);
	else
		yw_seq(w);
	for (i = 0; s->clients != NULL && i < s->nclients; i++) {
		c = &s->clients[i];
		yw_map(w);
		yw_kstr(w, "address", c->address);
		yw_kstr(w, "name", c->name);
		yw_kdbl(w, "connected_s", c->connected_s, 1);
		yw_key(w, "bytes_in");
		yw_uint(w, c->bytes_in);
		yw_key(w, "bytes_out");
		yw_uint(w, c->bytes_out);
		yw_end(w);
	}
	yw_end(w);
	yw_key(w, "cache");
	if (!s->has_cache)
		yw_null(w);
	else {
		yw_fmap(w);
		yw_key(w, "entries"); yw_uint(w, s->cache.entries);
		yw_key(w, "ram_bytes"); yw_uint(w, s->cache.ram_bytes);
		yw_key(w, "disk_bytes"); yw_uint(w, s->cache.disk_bytes);
		yw_key(w, "gpu_bytes"); yw_uint(w, s->cache.gpu_bytes);
		yw_key(w, "hits"); yw_uint(w, s->cache.hits);
		yw_key(w, "misses"); yw_uint(w, s->cache.misses);
		yw_key(w, "models");
		yw_fseq(w);
		for (i = 0; i < s->cache.nmodels; i++)
			yw_str(w, s->cache.models[i]);
		yw_end(w);
		yw_end(w);
	}
	yw_end(w);
}

static int
get_u64(struct ydoc *d, yaml_node_t *map, const char *key, uint64_t *out,
    struct yerr *err)
{
	yaml_node_t *n = ymap_get(d, map, key);
	long long v;

	if (n == NULL)
		return yerr_at(d, map, key, err, "missing");
	/* Memory sizes fit in 63 bits on any machine we will meet. */
	if (yget_int(d, n, key, 0, INT64_MAX, &v, err) == -1)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

static int
get_str(struct ydoc *d, yaml_node_t *map, const char *key, char *out,
    size_t len, int required, struct yerr *err)
{
	yaml_node_t *n = ymap_get(d, map, key);

	if (n == NULL) {
		if (required)
			return yerr_at(d, map, key, err, "missing");
		out[0] = '\0';
		return 0;
	}
	if (yis_null(n)) {
		out[0] = '\0';
		return 0;
	}
	return yget_str(d, n, key, out, len, err);
}

static int
get_int(struct ydoc *d, yaml_node_t *map, const char *key, long long min,
    long long max, int *out, struct yerr *err)
{
	yaml_node_t *n = ymap_get(d, map, key);
	long long v;

	if (n == NULL)
		return yerr_at(d, map, key, err, "missing");
	if (yget_int(d, n, key, min, max, &v, err) == -1)
		return -1;
	*out = (int)v;
	return 0;
}

static int
status_read_gpu(struct ydoc *d, yaml_node_t *n, struct gpu_status *g,
    struct yerr *err)
{
	yaml_node_t *u;
	long long v;

	if (n == NULL || n->type != YAML_MAPPING_NODE)
		return yerr_at(d, n, "gpus", err, "expected a mapping");
	if (get_int(d, n, "index", 0, STATUS_MAX_GPUS - 1, &g->index, err) ||
	    get_str(d, n, "name", g->name, sizeof g->name, 1, err) ||
	    get_u64(d, n, "memory_total", &g->memory_total, err) ||
	    get_u64(d, n, "memory_free", &g->memory_free, err))
		return -1;
	u = ymap_get(d, n, "utilization");
	g->utilization = -1;
	if (u != NULL && !yis_null(u)) {
		if (yget_int(d, u, "utilization", 0, 100, &v, err) == -1)
			return -1;
		g->utilization = (int)v;
	}
	return 0;
}

static int
status_read_client(struct ydoc *d, yaml_node_t *n, struct client_status *c,
    struct yerr *err)
{
	yaml_node_t *v;

	if (n == NULL || n->type != YAML_MAPPING_NODE)
		return yerr_at(d, n, "clients", err, "expected a mapping");
	if (get_str(d, n, "address", c->address, sizeof c->address, 1, err) ||
	    get_str(d, n, "name", c->name, sizeof c->name, 0, err) ||
	    get_u64(d, n, "bytes_in", &c->bytes_in, err) ||
	    get_u64(d, n, "bytes_out", &c->bytes_out, err))
		return -1;
	if ((v = ymap_get(d, n, "connected_s")) == NULL)
		return yerr_at(d, n, "connected_s", err, "missing");
	return yget_dbl(d, v, "connected_s", 0, 1e12, &c->connected_s, err);
}

int
status_read(struct ydoc *d, yaml_node_t *m, struct server_status *s,
    struct yerr *err)
{
	yaml_node_t *n;
	size_t i, len;
	int count, rc;

	memset(s, 0, sizeof *s);
	if (m == NULL || m->type != YAML_MAPPING_NODE)
		return yerr_at(d, m, NULL, err, "status: expected a mapping%s",
		    m == NULL ? ", got an empty document" : "");
	if (get_str(d, m, "host", s->host, sizeof s->host, 1, err) ||
	    get_str(d, m, "version", s->version, sizeof s->version, 0, err) ||
	    get_int(d, m, "protocol", 0, 65535, &s->protocol, err) ||
	    get_str(d, m, "backend", s->backend, sizeof s->backend, 1, err) ||
	    get_str(d, m, "gpu_source", s->gpu_source, sizeof s->gpu_source,
	    0, err) ||
	    get_int(d, m, "max_clients", 0, 1 << 20, &s->max_clients, err))
		return -1;
	if ((n = ymap_get(d, m, "uptime_s")) != NULL &&
	    yget_dbl(d, n, "uptime_s", 0, 1e12, &s->uptime_s, err) == -1)
		return -1;
	if ((n = ymap_get(d, m, "auth")) != NULL &&
	    yget_bool(d, n, "auth", &s->auth, err) == -1)
		return -1;
	/* Optional, null where the server does not know it. */
	if ((n = ymap_get(d, m, "port")) != NULL && !yis_null(n) &&
	    yget_rate(d, n, "port", &s->port_bps, err) == -1)
		return -1;
	n = ymap_get(d, m, "gpus");
	if (n == NULL || n->type != YAML_SEQUENCE_NODE)
		return yerr_at(d, n ? n : m, "gpus", err,
		    "expected a sequence");
	len = yseq_len(n);
	if (len > STATUS_MAX_GPUS)
		return yerr_at(d, n, "gpus", err, "more than %d GPUs",
		    STATUS_MAX_GPUS);
	for (i = 0; i < len; i++)
		if (status_read_gpu(d, yseq_get(d, n, i), &s->gpus[i],
		    err) == -1)
			return -1;
	s->ngpus = (int)len;
	n = ymap_get(d, m, "clients");
	if (n == NULL || n->type != YAML_SEQUENCE_NODE)
		return yerr_at(d, n ? n : m, "clients", err,
		    "expected a sequence");
	len = yseq_len(n);
	if (len > STATUS_MAX_CLIENTS)
		return yerr_at(d, n, "clients", err, "more than %d clients",
		    STATUS_MAX_CLIENTS);
	if (len > 0 && (s->clients = calloc(len, sizeof *s->clients)) == NULL)
		return yerr_at(d, n, "clients", err, "out of memory");
	for (i = 0; i < len; i++) {
		if (status_read_client(d, yseq_get(d, n, i), &s->clients[i],
		    err) == -1) {
			status_free(s);
			return -1;
		}
	}
	s->nclients = (int)len;
	if ((n = ymap_get(d, m, "nclients")) != NULL) {
		rc = get_int(d, m, "nclients", 0, 1 << 20, &count, err);
		/* clients holds nclients entries: another count overruns it. */
		if (rc == 0 && count != s->nclients)
			rc = yerr_at(d, n, "nclients", err,
			    "%d, but %d clients listed", count, s->nclients);
		if (rc == -1) {
			status_free(s);
			return -1;
		}
	}
	/* Optional: older servers have no cache key. */
	if ((n = ymap_get(d, m, "cache")) != NULL && !yis_null(n)) {
		if (n->type != YAML_MAPPING_NODE ||
		    get_u64(d, n, "entries", &s->cache.entries, err) ||
		    get_u64(d, n, "ram_bytes", &s->cache.ram_bytes, err) ||
		    get_u64(d, n, "disk_bytes", &s->cache.disk_bytes, err) ||
		    get_u64(d, n, "gpu_bytes", &s->cache.gpu_bytes, err) ||
		    get_u64(d, n, "hits", &s->cache.hits, err) ||
		    get_u64(d, n, "misses", &s->cache.misses, err)) {
			if (n->type != YAML_MAPPING_NODE)
				yerr_at(d, n, "cache", err,
				    "expected a mapping");
			status_free(s);
			return -1;
		}
		s->has_cache = 1;
		/* Optional: older servers list no models. */
		yaml_node_t *v;

		if ((v = ymap_get(d, n, "models")) != NULL && !yis_null(v)) {
			if (v->type != YAML_SEQUENCE_NODE ||
			    (len = yseq_len(v)) > STATUS_MODELS_MAX) {
				yerr_at(d, v, "models", err, "expected a "
				    "sequence of at most %d names",
				    STATUS_MODELS_MAX);
				status_free(s);
				return -1;
			}
			for (i = 0; i < len; i++)
				if (yget_str(d, yseq_get(d, v, i), "models",
				    s->cache.models[i], STATUS_MODEL_LEN,
				    err) == -1) {
					status_free(s);
					return -1;
				}
			s->cache.nmodels = (int)len;
		}
	}
	return 0;
}

int
status_parse(const char *name, const void *buf, size_t len,
    struct server_status *s, struct yerr *err)
{
	struct ydoc d;
	int rc;

	memset(s, 0, sizeof *s);
	if (ydoc_load_mem(&d, name, buf, len, err) == -1)
		return -1;
	rc = status_read(&d, ydoc_root(&d), s, err);
	ydoc_free(&d);
	return rc;
}

void
status_free(struct server_status *s)
{
	free(s->clients);
	s->clients = NULL;
	s->nclients = 0;
}
