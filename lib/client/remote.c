/*
 * The connection to gleam-serve and the device list it describes.
 *
 * Contract: one connection per process, opened by cuInit(0), shared by all
 * threads; rcall() holds a lock from send to reply, so calls from many
 * threads are serialised and never interleave on the wire.  A lost
 * connection is final for the process: every later call fails at once
 * with CUDA_ERROR_DEVICE_UNAVAILABLE, after one message naming the server.
 * A child of fork(2) never touches the parent's connection: its calls fail
 * with CUDA_ERROR_NOT_INITIALIZED, as with the real driver.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "remote.h"
#include "client.h"
#include "auth.h"
#include "conn.h"
#include "hooks.h"
#include "log.h"
#include "parse.h"

static pthread_mutex_t	 rlock = PTHREAD_MUTEX_INITIALIZER;
static struct conn	 rconn;
static enum { R_NONE, R_UP, R_LOST, R_FORKED } rstate;
static struct client_device *rdevs;
static int		 rndev;

void *
gobj_check(const void *h, int kind)
{
	const struct gobj *o = h;

	if (o == NULL || (uintptr_t)o < 4096 || ((uintptr_t)o & 7) != 0)
		return NULL;
	if (o->magic != GOBJ_MAGIC || (int)o->kind != kind)
		return NULL;
	return (void *)(uintptr_t)o;
}

uint64_t
gobj_id(const void *h)
{
	return (uint64_t)(uintptr_t)h;
}

/* In the child of a fork: the socket is the parent's; leave it alone. */
static void
remote_atfork_child(void)
{
	if (rstate == R_UP || rstate == R_LOST) {
		close(rconn.fd);
		rconn.fd = -1;
		rstate = R_FORKED;
	}
	pthread_mutex_init(&rlock, NULL);
}

/* The first failure says why; later calls fail quietly. */
static CUresult
remote_lost(void)
{
	if (rstate == R_UP) {
		log_error("server %s lost: %s", rconn.peer, rconn.err);
		rstate = R_LOST;
		close(rconn.fd);
		rconn.fd = -1;
	}
	return rstate == R_FORKED ? CUDA_ERROR_NOT_INITIALIZED :
	    CUDA_ERROR_DEVICE_UNAVAILABLE;
}

size_t
rcall_max_payload(void)
{
	/* Room for a call's other fields beside its blob. */
	return rconn.max_frame > 4096 ? rconn.max_frame - 1024 : 4096;
}

CUresult
rcall(uint16_t type, const struct rpc_val *in, struct rpc_val *out,
    void **keep)
{
	const struct rpc_desc *d = rpc_lookup(type);
	struct frame_hdr h;
	const uint8_t *p;
	struct pw w;
	uint64_t id;
	uint32_t rc;

	*keep = NULL;
	if (d == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	pw_init(&w);
	if (rpc_pack(&w, d->req, in) == -1) {
		pw_free(&w);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_lock(&rlock);
	if (rstate != R_UP) {
		pthread_mutex_unlock(&rlock);
		pw_free(&w);
		return rstate == R_FORKED ? CUDA_ERROR_NOT_INITIALIZED :
		    rstate == R_NONE ? CUDA_ERROR_NOT_INITIALIZED :
		    CUDA_ERROR_DEVICE_UNAVAILABLE;
	}
	if (w.len > rconn.max_frame) {
		pthread_mutex_unlock(&rlock);
		pw_free(&w);
		return CUDA_ERROR_INVALID_VALUE;
	}
	id = rconn.next_id++;
	if (conn_send(&rconn, type, 0, id, w.p, w.len) == -1)
		goto lost;
	stats_call(type, w.len + PROTO_HDR_LEN, 0);
	for (;;) {
		if (conn_recv(&rconn, &h, &p) == -1)
			goto lost;
		if (h.type == MSG_ERROR) {
			conn_error_frame(&rconn, p, h.len);
			goto lost;
		}
		if ((h.flags & FL_REPLY) && h.id == id && h.type == type)
			break;
	}
	stats_call(0, 0, h.len + PROTO_HDR_LEN);
	pw_free(&w);
	if (h.len < 4 || (*keep = malloc(h.len)) == NULL) {
		pthread_mutex_unlock(&rlock);
		return h.len < 4 ? CUDA_ERROR_UNKNOWN : CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(*keep, p, h.len);
	pthread_mutex_unlock(&rlock);
	rc = (uint32_t)((uint8_t *)*keep)[0] | (uint32_t)((uint8_t *)*keep)[1]
	    << 8 | (uint32_t)((uint8_t *)*keep)[2] << 16 |
	    (uint32_t)((uint8_t *)*keep)[3] << 24;
	if (rc != CUDA_SUCCESS) {
		struct gctx *cur = ctx_current();

		log_debug("%s: %u", d->name, rc);
		if (cur != NULL && rc_sticky((CUresult)rc))
			cur->sticky = (CUresult)rc;
		return (CUresult)rc;
	}
	if (rpc_unpack((uint8_t *)*keep + 4, h.len - 4, d->rep, out) == -1) {
		log_error("server %s: malformed reply to %s", rconn.peer,
		    d->name);
		return CUDA_ERROR_UNKNOWN;
	}
	return CUDA_SUCCESS;
lost:
	pw_free(&w);
	rc = remote_lost();
	pthread_mutex_unlock(&rlock);
	return (CUresult)rc;
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

/* Dead servers are noticed in seconds, even without a FIN. */
static void
remote_keepalive(int fd)
{
	int on = 1, idle = 2, intvl = 1, cnt = 3;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

CUresult
client_init(void)
{
	struct auth_key key, *kp = NULL;
	struct rpc_val in[1], out[2];
	const char *server, *keyfile, *why, *s;
	char host[256], err[1200];
	void *keep;
	int port = PROTO_DEFAULT_PORT, level = LL_WARN;
	long long ll;
	CUresult rc;

	if ((s = getenv("GLEAM_DEBUG")) != NULL &&
	    parse_int(s, 0, 4, &ll, &why) == 0)
		level = LL_WARN + (int)ll;
	log_init("gleam", level);
	pthread_atfork(NULL, NULL, remote_atfork_child);
	if ((server = getenv("GLEAM_SERVER")) == NULL || *server == '\0') {
		log_error("no server: set GLEAM_SERVER (gleam-run -s does)");
		return CUDA_ERROR_NO_DEVICE;
	}
	if (parse_hostport(server, host, sizeof host, &port, &why) == -1 ||
	    port == 0 || host[0] == '\0') {
		log_error("GLEAM_SERVER=%s: %s", server,
		    port == 0 ? "port 0" : host[0] ? why : "no host");
		return CUDA_ERROR_NO_DEVICE;
	}
	if (auth_init() == -1)
		return CUDA_ERROR_OPERATING_SYSTEM;
	if ((keyfile = getenv("GLEAM_KEY_FILE")) != NULL && *keyfile) {
		if (auth_key_load(&key, keyfile, err, sizeof err) == -1) {
			log_error("%s", err);
			return CUDA_ERROR_NO_DEVICE;
		}
		kp = &key;
	}
	if (conn_open(&rconn, host, port, kp, program_invocation_short_name,
	    5000) == -1) {
		log_error("cannot use server %s", rconn.err);
		return CUDA_ERROR_NO_DEVICE;
	}
	remote_keepalive(rconn.fd);
	/* Calls may wait as long as the GPU works; keepalive finds the dead. */
	rconn.timeout_ms = -1;
	rstate = R_UP;
	in[0].u = 0;
	rc = rcall(R_OPEN, in, out, &keep);
	if (rc == CUDA_SUCCESS && remote_devices(out[1].p, out[1].len) == -1) {
		log_error("server %s: malformed device list", rconn.peer);
		rc = CUDA_ERROR_NO_DEVICE;
	}
	free(keep);
	if (rc != CUDA_SUCCESS) {
		if (rc != CUDA_ERROR_DEVICE_UNAVAILABLE)
			log_error("server %s: %s", rconn.peer,
			    rc == CUDA_ERROR_NOT_SUPPORTED ?
			    "it serves no GPU" : "open failed");
		return CUDA_ERROR_NO_DEVICE;
	}
	log_debug("connected to %s (%s): %d device(s), %s", rconn.peer,
	    rconn.server_name, rndev, rdevs[0].name);
	return CUDA_SUCCESS;
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
