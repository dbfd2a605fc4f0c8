/*
 * cuInit's remoting half: the connection to the server named by
 * GLEAM_SERVER (with GLEAM_KEY_FILE's key), and the device list it
 * describes, fetched once at connect (the hooks' answers, hooks.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "io.h"
#include "hooks.h"
#include "lanes.h"
#include "mapped.h"
#include "progress.h"
#include "wcache.h"
#include "clenv.h"
#include "log.h"

static struct client_device *rdevs;
static int		 rndev;
static uint32_t		 rdriver;	/* the server's driver version */

/*
 * GLEAM_MODEL names the model the program loads: the server then lists it
 * in its status as resident while the cache holds all that this run
 * loaded (gleam-sched places by it).  One-way; a bad name is only
 * logged.
 */
static void
remote_model(void)
{
	struct rpc_val in[1];
	const char *m = getenv("GLEAM_MODEL");
	size_t i, n;

	if (m == NULL || *m == '\0')
		return;
	n = strlen(m);
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)m[i]) &&
		    strchr("._:/+-", m[i]) == NULL)
			break;
	if (n > RPC_MODEL_MAX || i < n) {
		log_warn("GLEAM_MODEL: '%s': expected at most %d letters, "
		    "digits and ._:/+-: not sent", m, RPC_MODEL_MAX);
		return;
	}
	memset(in, 0, sizeof in);
	in[0].p = m;
	in[0].len = (uint32_t)n;
	rpost(R_MODEL, in, 0);
}

/* Decodes R_OPEN's device list into the hooks' descriptions. */
static int
remote_devices(const void *blob, size_t len)
{
	struct rpc_device *d;
	uint32_t n, i;
	int a;

	if (rpc_devices_dec(blob, len, &d, &n) == -1)
		return -1;
	if ((rdevs = calloc(n, sizeof *rdevs)) == NULL) {
		free(d);
		return -1;
	}
	for (i = 0; i < n; i++) {
		snprintf(rdevs[i].name, sizeof rdevs[i].name, "%s", d[i].name);
		memcpy(rdevs[i].uuid.bytes, d[i].uuid, sizeof d[i].uuid);
		rdevs[i].totalmem = (size_t)d[i].totalmem;
		for (a = 0; a < CU_DEVICE_ATTRIBUTE_MAX &&
		    a < RPC_DEV_ATTR_MAX; a++)
			rdevs[i].attr[a] = d[i].attr[a];
	}
	free(d);
	rndev = (int)n;
	return 0;
}

CUresult
client_init(void)
{
	struct clenv env;
	struct rpc_val in[1], out[2];
	const char *why;
	char err[1200];
	void *keep;
	CUresult rc;

	log_init("gleam", clenv_log_level());
	stats_arm();	/* before the destructors, where preloaded */
	if (clenv_read(&env, err, sizeof err) == -1) {
		if (getenv("GLEAM_SERVER") == NULL || !*getenv("GLEAM_SERVER"))
			log_error("no server: set GLEAM_SERVER (gleam-run -s "
			    "does)");
		else
			log_error("%s", err);
		stats_error("%s", err);
		return CUDA_ERROR_NO_DEVICE;
	}
	/* Mapped host memory's calls go before the work that needs them. */
	io_hook(mapped_before_send);
	if ((rc = io_start(env.host, env.port, env.kp)) != CUDA_SUCCESS)
		return rc;
	in[0].u = 0;
	rc = remote_call(R_OPEN, in, out, &keep);
	if (rc == CUDA_SUCCESS)
		rdriver = (uint32_t)out[0].u;
	if (rc == CUDA_SUCCESS && remote_devices(out[1].p, out[1].len) == -1) {
		log_error("server %s: malformed device list", io_peer());
		rc = CUDA_ERROR_NO_DEVICE;
	}
	free(keep);
	if (rc != CUDA_SUCCESS) {
		why = rc == CUDA_ERROR_NOT_SUPPORTED ? "it serves no GPU" :
		    rc == CUDA_ERROR_DEVICE_UNAVAILABLE ? "lost while opening" :
		    "open failed";
		if (rc != CUDA_ERROR_DEVICE_UNAVAILABLE)
			log_error("server %s: %s", io_peer(), why);
		stats_error("server %s: %s", io_peer(), why);
		return CUDA_ERROR_NO_DEVICE;
	}
	log_debug("connected to %s (%s): %d device(s), %s", io_peer(),
	    io_server_name(), rndev, rdevs[0].name);
	remote_model();
	lanes_init();
	wcache_early();
	return CUDA_SUCCESS;
}

uint32_t
client_server_driver(void)
{
	return rdriver;
}

int
client_device_count(void)
{
	return rndev;
}

const struct client_device *
client_device(int ordinal)
{
	if (ordinal < 0 || ordinal >= rndev)
		return NULL;
	return &rdevs[ordinal];
}

/*
 * At exit, last: a destructor runs after every exit handler, cudart's
 * among them (its modules unloaded, its context released), so what they
 * sent reaches the server before the connection goes and the statistics
 * count it, whichever order the handlers were registered in.
 */
__attribute__((destructor)) static void
client_at_exit(void)
{
	io_drain_at_exit();
	progress_end();
	stats_at_exit();
}
