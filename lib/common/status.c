/* Server status: the YAML keys in one place. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfgtab.h"
#include "status.h"

static const char *const status_clk_names[STATUS_NCLK] = {
	"graphics", "sm", "memory", "video"
};

/* key: n, or null where n is -1 (not known). */
static void
status_kint(struct yw *w, const char *key, long long n)
{
	yw_key(w, key);
	if (n < 0)
		yw_null(w);
	else
		yw_int(w, n);
}

/* key: s, or null where s is "" (not known). */
static void
status_kstr(struct yw *w, const char *key, const char *s)
{
	yw_key(w, key);
	if (*s == '\0')
		yw_null(w);
	else
		yw_str(w, s);
}

/* What a GPU's NVML told beyond name, memory and utilization. */
static void
status_write_gpu(struct yw *w, const struct gpu_status *g)
{
	char key[32];
	int i;

	status_kint(w, "utilization_memory", g->utilization_memory);
	status_kstr(w, "uuid", g->uuid);
	status_kstr(w, "serial", g->serial);
	status_kstr(w, "pci_bus_id", g->pci_bus_id);
	status_kint(w, "pci_device_id", g->pci_device_id);
	status_kint(w, "pci_subsystem_id", g->pci_subsystem_id);
	status_kint(w, "pci_class", g->pci_class);
	status_kint(w, "cc_major", g->cc_major);
	status_kint(w, "cc_minor", g->cc_minor);
	status_kint(w, "minor_number", g->minor_number);
	status_kint(w, "temperature_c", g->temperature_c);
	status_kint(w, "power_mw", g->power_mw);
	status_kint(w, "power_limit_mw", g->power_limit_mw);
	status_kint(w, "enforced_power_limit_mw", g->enforced_power_limit_mw);
	status_kint(w, "fan_percent", g->fan_percent);
	status_kint(w, "pstate", g->pstate);
	status_kint(w, "compute_mode", g->compute_mode);
	status_kint(w, "persistence_mode", g->persistence_mode);
	status_kint(w, "brand", g->brand);
	status_kint(w, "architecture", g->architecture);
	status_kint(w, "pcie_gen", g->pcie_gen);
	status_kint(w, "pcie_width", g->pcie_width);
	status_kint(w, "max_pcie_gen", g->max_pcie_gen);
	status_kint(w, "max_pcie_width", g->max_pcie_width);
	for (i = 0; i < STATUS_NCLK; i++) {
		snprintf(key, sizeof key, "clock_%s_mhz", status_clk_names[i]);
		status_kint(w, key, g->clock_mhz[i]);
	}
	for (i = 0; i < STATUS_NCLK; i++) {
		snprintf(key, sizeof key, "max_clock_%s_mhz",
		    status_clk_names[i]);
		status_kint(w, key, g->max_clock_mhz[i]);
	}
}

void
status_write(struct yw *w, const struct server_status *s)
{
	const struct gpu_status *g;
	const struct client_status *c;
	int i;

	yw_map(w);
	yw_kstr(w, "host", s->host);
	status_kstr(w, "address", s->address);
	yw_kstr(w, "version", s->version);
	yw_kint(w, "protocol", s->protocol);
	yw_kstr(w, "backend", s->backend);
	yw_kstr(w, "gpu_source", s->gpu_source);
	status_kstr(w, "driver_version", s->driver_version);
	status_kstr(w, "nvml_version", s->nvml_version);
	status_kint(w, "cuda_version", s->cuda_version > 0 ?
	    s->cuda_version : -1);
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
		status_write_gpu(w, g);
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
		/* Null: not the asker's to know (status_filter). */
		status_kstr(w, "address", c->address);
		yw_kstr(w, "name", c->name);
		yw_kdbl(w, "connected_s", c->connected_s, 1);
		yw_key(w, "bytes_in");
		yw_uint(w, c->bytes_in);
		yw_key(w, "bytes_out");
		yw_uint(w, c->bytes_out);
		yw_key(w, "session");
		if (c->session == 0)
			yw_null(w);
		else
			yw_uint(w, c->session);
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

void
status_filter(struct server_status *s, const char *ident, const char *scope)
{
	struct client_status *c;
	int i, k;

	if (ident == NULL)
		return;
	for (i = k = 0; s->clients != NULL && i < s->nclients; i++) {
		c = &s->clients[i];
		if (ident[0] != '\0' && strcmp(c->ident, ident) == 0) {
			s->clients[k++] = *c;
			continue;
		}
		/* A probe of another says nothing the asker needs: gone.
		   Its CUDA clients count, for placement, as nobody's. */
		if (!c->remote)
			continue;
		memset(c->address, 0, sizeof c->address);
		memset(c->name, 0, sizeof c->name);
		memset(c->ident, 0, sizeof c->ident);
		c->bytes_in = c->bytes_out = 0;
		c->session = 0;		/* an admin's to know */
		s->clients[k++] = *c;
	}
	s->nclients = k;
	for (i = k = 0; i < s->cache.nmodels; i++) {
		if (scope == NULL || scope[0] == '\0' ||
		    strcmp(s->cache.scopes[i], scope) != 0)
			continue;
		if (k != i) {
			memcpy(s->cache.models[k], s->cache.models[i],
			    sizeof s->cache.models[k]);
			memcpy(s->cache.scopes[k], s->cache.scopes[i],
			    sizeof s->cache.scopes[k]);
		}
		k++;
	}
	s->cache.nmodels = k;
}

/*
 * The keys of a status, a row each, read in this order.  Strings may be
 * null (an unknown value reads as ""); counters are integers that fit in
 * 63 bits on any machine we will meet.
 */
#define U64(f, k)	{ k, CFG_INT, f, .flags = CFG_REQUIRED, \
			    .min = 0, .max = INT64_MAX }
#define F(f)		CFG_FIELD(struct server_status, f)
const struct cfg_key status_keys[] = {
	{ "host",	CFG_STR,	F(host),
	    .flags = CFG_REQUIRED | CFG_NULLOK },
	/* Null or absent from older servers. */
	{ "address",	CFG_STR,	F(address), .flags = CFG_NULLOK },
	{ "version",	CFG_STR,	F(version), .flags = CFG_NULLOK },
	{ "protocol",	CFG_INT,	F(protocol), .flags = CFG_REQUIRED,
	    .min = 0, .max = 65535 },
	{ "backend",	CFG_STR,	F(backend),
	    .flags = CFG_REQUIRED | CFG_NULLOK },
	{ "gpu_source",	CFG_STR,	F(gpu_source), .flags = CFG_NULLOK },
	{ "driver_version", CFG_STR,	F(driver_version), .flags = CFG_NULLOK },
	{ "nvml_version", CFG_STR,	F(nvml_version), .flags = CFG_NULLOK },
	{ "cuda_version", CFG_INT,	F(cuda_version), .flags = CFG_NULLOK,
	    .min = 0, .max = 1000000 },
	{ "max_clients", CFG_INT,	F(max_clients), .flags = CFG_REQUIRED,
	    .min = 0, .max = 1 << 20 },
	{ "uptime_s",	CFG_DBL,	F(uptime_s), .lo = 0, .hi = 1e12 },
	{ "auth",	CFG_BOOL,	F(auth) },
	/* Null where the server does not know it. */
	{ "port",	CFG_RATE,	F(port_bps), .flags = CFG_NULLOK },
	{ "gpus",	CFG_NONE },
	{ "clients",	CFG_NONE },
	{ "nclients",	CFG_NONE },
	{ "cache",	CFG_NONE },
	{ NULL }
};
#undef F

#define F(f)		CFG_FIELD(struct gpu_status, f)
#define STAT_INT(f, lo, hi) { #f, CFG_INT, F(f), .flags = CFG_NULLOK, \
			    .min = lo, .max = hi }
static const struct cfg_key status_gpu_keys[] = {
	{ "index",	CFG_INT,	F(index), .flags = CFG_REQUIRED,
	    .min = 0, .max = STATUS_MAX_GPUS - 1 },
	{ "name",	CFG_STR,	F(name),
	    .flags = CFG_REQUIRED | CFG_NULLOK },
	U64(F(memory_total), "memory_total"),
	U64(F(memory_free), "memory_free"),
	{ "utilization", CFG_INT,	F(utilization), .flags = CFG_NULLOK,
	    .min = 0, .max = 100 },
	/* Optional, null where unknown: what the client's NVML answers. */
	{ "utilization_memory", CFG_INT, F(utilization_memory),
	    .flags = CFG_NULLOK, .min = 0, .max = 100 },
	{ "uuid",	CFG_STR,	F(uuid), .flags = CFG_NULLOK },
	{ "serial",	CFG_STR,	F(serial), .flags = CFG_NULLOK },
	{ "pci_bus_id",	CFG_STR,	F(pci_bus_id), .flags = CFG_NULLOK },
	{ "pci_device_id", CFG_INT,	F(pci_device_id), .flags = CFG_NULLOK,
	    .min = 0, .max = UINT32_MAX },
	{ "pci_subsystem_id", CFG_INT,	F(pci_subsystem_id),
	    .flags = CFG_NULLOK, .min = 0, .max = UINT32_MAX },
	{ "pci_class",	CFG_INT,	F(pci_class), .flags = CFG_NULLOK,
	    .min = 0, .max = 0xffff },
	STAT_INT(cc_major, 0, 99),
	STAT_INT(cc_minor, 0, 99),
	STAT_INT(minor_number, 0, 1 << 20),
	STAT_INT(temperature_c, 0, 1000),
	STAT_INT(power_mw, 0, 100000000),
	STAT_INT(power_limit_mw, 0, 100000000),
	STAT_INT(enforced_power_limit_mw, 0, 100000000),
	STAT_INT(fan_percent, 0, 100),
	STAT_INT(pstate, 0, 15),
	STAT_INT(compute_mode, 0, 3),
	STAT_INT(persistence_mode, 0, 1),
	STAT_INT(brand, 0, 1000),
	STAT_INT(architecture, 0, 1000),
	STAT_INT(pcie_gen, 0, 100),
	STAT_INT(pcie_width, 0, 1024),
	STAT_INT(max_pcie_gen, 0, 100),
	STAT_INT(max_pcie_width, 0, 1024),
	{ "clock_graphics_mhz", CFG_INT, F(clock_mhz[STATUS_CLK_GRAPHICS]),
	    .flags = CFG_NULLOK, .min = 0, .max = 100000 },
	{ "clock_sm_mhz", CFG_INT,	F(clock_mhz[STATUS_CLK_SM]),
	    .flags = CFG_NULLOK, .min = 0, .max = 100000 },
	{ "clock_memory_mhz", CFG_INT,	F(clock_mhz[STATUS_CLK_MEM]),
	    .flags = CFG_NULLOK, .min = 0, .max = 100000 },
	{ "clock_video_mhz", CFG_INT,	F(clock_mhz[STATUS_CLK_VIDEO]),
	    .flags = CFG_NULLOK, .min = 0, .max = 100000 },
	{ "max_clock_graphics_mhz", CFG_INT,
	    F(max_clock_mhz[STATUS_CLK_GRAPHICS]),
	    .flags = CFG_NULLOK, .min = 0, .max = 100000 },
	{ "max_clock_sm_mhz", CFG_INT,	F(max_clock_mhz[STATUS_CLK_SM]),
	    .flags = CFG_NULLOK, .min = 0, .max = 100000 },
	{ "max_clock_memory_mhz", CFG_INT, F(max_clock_mhz[STATUS_CLK_MEM]),
	    .flags = CFG_NULLOK, .min = 0, .max = 100000 },
	{ "max_clock_video_mhz", CFG_INT, F(max_clock_mhz[STATUS_CLK_VIDEO]),
	    .flags = CFG_NULLOK, .min = 0, .max = 100000 },
	{ NULL }
};
#undef F

#define F(f)		CFG_FIELD(struct client_status, f)
static const struct cfg_key status_client_keys[] = {
	{ "address",	CFG_STR,	F(address),
	    .flags = CFG_REQUIRED | CFG_NULLOK },
	{ "name",	CFG_STR,	F(name), .flags = CFG_NULLOK },
	U64(F(bytes_in), "bytes_in"),
	U64(F(bytes_out), "bytes_out"),
	/* Absent from older servers. */
	{ "session",	CFG_INT,	F(session), .flags = CFG_NULLOK,
	    .min = 0, .max = INT64_MAX },
	{ "connected_s", CFG_DBL,	F(connected_s), .flags = CFG_REQUIRED,
	    .lo = 0, .hi = 1e12 },
	{ NULL }
};
#undef F

#define F(f)		CFG_FIELD(struct cache_status, f)
static const struct cfg_key status_cache_keys[] = {
	U64(F(entries), "entries"),
	U64(F(ram_bytes), "ram_bytes"),
	U64(F(disk_bytes), "disk_bytes"),
	U64(F(gpu_bytes), "gpu_bytes"),
	U64(F(hits), "hits"),
	U64(F(misses), "misses"),
	{ NULL }
};
#undef F
#undef U64
#undef STAT_INT

void
status_gpu_init(struct gpu_status *g, int index)
{
	memset(g, 0, sizeof *g);
	g->index = index;
	g->utilization = g->utilization_memory = -1;
	g->pci_device_id = g->pci_subsystem_id = g->pci_class = -1;
	g->cc_major = g->cc_minor = g->minor_number = -1;
	g->temperature_c = g->power_mw = g->power_limit_mw = -1;
	g->enforced_power_limit_mw = g->fan_percent = g->pstate = -1;
	g->compute_mode = g->persistence_mode = -1;
	g->brand = g->architecture = -1;
	g->pcie_gen = g->pcie_width = g->max_pcie_gen = g->max_pcie_width = -1;
	memset(g->clock_mhz, 0xff, sizeof g->clock_mhz);
	memset(g->max_clock_mhz, 0xff, sizeof g->max_clock_mhz);
}

static int
status_read_gpu(struct ydoc *d, yaml_node_t *n, struct gpu_status *g,
    struct yerr *err)
{
	if (n == NULL || n->type != YAML_MAPPING_NODE)
		return yerr_at(d, n, "gpus", err, "expected a mapping");
	status_gpu_init(g, 0);
	return cfg_fill(d, n, status_gpu_keys, g, err);
}

static int
status_read_client(struct ydoc *d, yaml_node_t *n, struct client_status *c,
    struct yerr *err)
{
	if (n == NULL || n->type != YAML_MAPPING_NODE)
		return yerr_at(d, n, "clients", err, "expected a mapping");
	return cfg_fill(d, n, status_client_keys, c, err);
}

int
status_read_gpus(struct ydoc *d, yaml_node_t *n, struct server_status *s,
    struct yerr *err)
{
	size_t i, len;

	s->ngpus = 0;
	if (n == NULL || n->type != YAML_SEQUENCE_NODE)
		return yerr_at(d, n, "gpus", err, "expected a sequence");
	len = yseq_len(n);
	if (len > STATUS_MAX_GPUS)
		return yerr_at(d, n, "gpus", err, "more than %d GPUs",
		    STATUS_MAX_GPUS);
	for (i = 0; i < len; i++)
		if (status_read_gpu(d, yseq_get(d, n, i), &s->gpus[i],
		    err) == -1)
			return -1;
	s->ngpus = (int)len;
	return 0;
}

int
status_read(struct ydoc *d, yaml_node_t *m, struct server_status *s,
    struct yerr *err)
{
	yaml_node_t *n;
	size_t i, len;
	long long count;
	int rc;

	memset(s, 0, sizeof *s);
	if (m == NULL || m->type != YAML_MAPPING_NODE)
		return yerr_at(d, m, NULL, err, "status: expected a mapping%s",
		    m == NULL ? ", got an empty document" : "");
	if (cfg_fill(d, m, status_keys, s, err) == -1)
		return -1;
	if ((n = ymap_get(d, m, "gpus")) == NULL)
		return yerr_at(d, m, "gpus", err, "expected a sequence");
	if (status_read_gpus(d, n, s, err) == -1)
		return -1;
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
		rc = yget_int(d, n, "nclients", 0, 1 << 20, &count, err);
		/* clients holds nclients entries: another count overruns it. */
		if (rc == 0 && count != s->nclients)
			rc = yerr_at(d, n, "nclients", err,
			    "%lld, but %d clients listed", count, s->nclients);
		if (rc == -1) {
			status_free(s);
			return -1;
		}
	}
	/* Optional: older servers have no cache key. */
	if ((n = ymap_get(d, m, "cache")) != NULL && !yis_null(n)) {
		if (n->type != YAML_MAPPING_NODE ||
		    cfg_fill(d, n, status_cache_keys, &s->cache, err) == -1) {
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

/*
 * A status from the network: STATUS_MAX_CLIENTS clients of long names
 * need more room than a file (yamlio's defaults), and no more.
 */
static const struct ylimits status_limits = {
	32u << 20, YDOC_MAX_DEPTH, YDOC_MAX_NODES
};

int
status_parse(const char *name, const void *buf, size_t len,
    struct server_status *s, struct yerr *err)
{
	struct ydoc d;
	int rc;

	memset(s, 0, sizeof *s);
	if (ydoc_load_mem_lim(&d, name, buf, len, &status_limits, err) == -1)
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
