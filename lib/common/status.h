/*
 * A server's status: what gleam-serve answers to STATUS and what gleam-probe
 * and gleam-sched read.  On the wire and on stdout it is a YAML mapping
 * with the stable keys documented in gleam-serve(8); this module is the one
 * place that writes and reads them.
 */
#ifndef GLEAM_STATUS_H
#define GLEAM_STATUS_H

#include <stdint.h>

#include "cfgtab.h"
#include "yamlio.h"

#define STATUS_MAX_GPUS		64
#define STATUS_MAX_CLIENTS	65536

/* NVML's clock types, in its order (nvmlClockType_t). */
enum { STATUS_CLK_GRAPHICS, STATUS_CLK_SM, STATUS_CLK_MEM, STATUS_CLK_VIDEO,
	STATUS_NCLK };

/*
 * One GPU as the server's NVML reports it.  The numbers after utilization
 * are -1 and the strings "" where the server does not know them (older
 * servers, GPUs that do not say); they are what the client's
 * libnvidia-ml.so.1 answers with.
 */
struct gpu_status {
	int		 index;
	char		 name[128];
	uint64_t	 memory_total;	/* bytes */
	uint64_t	 memory_free;	/* bytes */
	int		 utilization;	/* percent, -1 if unknown */
	int		 utilization_memory;	/* percent */
	char		 uuid[96];	/* "GPU-8f3a..." */
	char		 serial[32];
	char		 pci_bus_id[32];	/* "00000000:17:00.0" */
	int64_t		 pci_device_id;	/* device << 16 | vendor */
	int64_t		 pci_subsystem_id;
	int64_t		 pci_class;	/* base class << 8 | subclass */
	int		 cc_major, cc_minor;	/* compute capability */
	int		 minor_number;	/* of /dev/nvidiaN */
	int		 temperature_c;
	int		 power_mw;	/* drawn now */
	int		 power_limit_mw;	/* the management limit */
	int		 enforced_power_limit_mw;
	int		 fan_percent;
	int		 pstate;	/* 0 (P0) to 15 */
	int		 compute_mode;	/* nvmlComputeMode_t */
	int		 persistence_mode;	/* 0 or 1 */
	int		 brand;		/* nvmlBrandType_t */
	int		 architecture;	/* nvmlDeviceArchitecture_t */
	int		 pcie_gen, pcie_width;	/* the PCIe link now */
	int		 max_pcie_gen, max_pcie_width;
	int		 clock_mhz[STATUS_NCLK];	/* now */
	int		 max_clock_mhz[STATUS_NCLK];
};

#define STATUS_IDENT_LEN	64	/* an identity, with the NUL (proto.h) */
#define STATUS_SCOPE_LEN	96	/* a cache tenant, with the NUL (cstore.h) */

struct client_status {
	char		 address[64];
	char		 name[256];
	double		 connected_s;
	uint64_t	 bytes_in, bytes_out;
	uint64_t	 session;	/* a remoting session's number; 0 none */
	/* For status_filter, never written: the identity it proved ("" if
	   none yet) and whether it runs CUDA calls (not a probe's). */
	char		 ident[STATUS_IDENT_LEN];
	int		 remote;
};

/* The weight cache (gleam-cache(1)), as the server sees it now. */
#define STATUS_MODELS_MAX	32
#define STATUS_MODEL_LEN	64	/* with the NUL */

struct cache_status {
	uint64_t	 entries;	/* in RAM or on disk */
	/* Models whose last load is all in the cache (GLEAM_MODEL). */
	int		 nmodels;
	char		 models[STATUS_MODELS_MAX][STATUS_MODEL_LEN];
	/* For status_filter, never written: the tenant of each model's
	   entries. */
	char		 scopes[STATUS_MODELS_MAX][STATUS_SCOPE_LEN];
	uint64_t	 ram_bytes, disk_bytes, gpu_bytes;
	uint64_t	 hits, misses;	/* since the cache directory began */
};

struct server_status {
	char		 host[256];
	char		 address[300];	/* host:port it is reached at; "" */
	char		 version[32];
	int		 protocol;
	char		 backend[16];	/* "cuda", "host" or "none" */
	char		 gpu_source[64]; /* "nvml", "driver", or why none */
	char		 driver_version[32];	/* NVML's; "" unknown */
	char		 nvml_version[32];
	int		 cuda_version;	/* the driver's, 13000 for 13.0; 0 */
	double		 uptime_s;
	int		 auth;		/* a key is required */
	int		 max_clients;
	double		 port_bps;	/* its network link, bit/s; 0 unknown */
	int		 ngpus;
	struct gpu_status gpus[STATUS_MAX_GPUS];
	int		 nclients;
	struct client_status *clients;	/* nclients entries, or NULL */
	int		 has_cache;	/* the server keeps a weight cache */
	struct cache_status cache;
};

/*
 * The keys of a status mapping, a row each (cfgtab.h); gpus, clients,
 * nclients and cache are read by status_read itself.
 */
extern const struct cfg_key status_keys[];

/* Writes the status as a YAML mapping at the writer's current position. */
void	status_write(struct yw *, const struct server_status *);
/*
 * Leaves in s what one identity may know of the others (gleam(7),
 * SECURITY): its own clients whole; of the others', only those that run
 * CUDA calls, with no address, name or byte counts; the models of its
 * cache scope (a tenant, cstore.h) alone.  The GPUs, the cache's totals
 * and the server's own keys stay: they are the server's, not a client's.
 * ident NULL: everything stays (a server without a key, or with one
 * identity).  An empty ident or scope matches nothing.
 */
void	status_filter(struct server_status *, const char *ident,
	    const char *scope);
/* Reads a status mapping; unknown keys are ignored (newer servers). */
int	status_read(struct ydoc *, yaml_node_t *, struct server_status *,
	    struct yerr *);
/* A GPU with nothing known of it but its index. */
void	status_gpu_init(struct gpu_status *, int index);
/* Reads a sequence of GPUs (a status's gpus) into s->gpus, s->ngpus. */
int	status_read_gpus(struct ydoc *, yaml_node_t *, struct server_status *,
	    struct yerr *);
/* Parses a whole YAML document holding a status. */
int	status_parse(const char *name, const void *, size_t,
	    struct server_status *, struct yerr *);
void	status_free(struct server_status *);

#endif
