/* One server's measurements, over one connection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "probe.h"
#include "util.h"

#define ECHO_LEN	64
#define WARMUP		2

static int
probe_fail(struct probe *p, struct conn *c)
{
	const char *e = c->err;
	size_t n = strlen(c->peer);

	/* The report names the server already; keep the reason alone. */
	if (strncmp(e, c->peer, n) == 0 && strncmp(e + n, ": ", 2) == 0)
		e += n + 2;
	snprintf(p->error, sizeof p->error, "%s", e);
	p->fail = c->fail;
	p->ok = 0;
	return -1;
}

static int
probe_rtt(struct probe *p, struct conn *c, const struct probe_opts *o)
{
	uint8_t payload[ECHO_LEN];
	const uint8_t *reply;
	size_t len;
	double *v;
	uint64_t t0;
	int i;

	memset(payload, 0xa5, sizeof payload);
	if ((v = calloc((size_t)o->count, sizeof *v)) == NULL) {
		snprintf(p->error, sizeof p->error, "out of memory");
		return -1;
	}
	for (i = -WARMUP; i < o->count; i++) {
		t0 = now_ns();
		if (conn_call(c, MSG_ECHO, payload, sizeof payload, MSG_ECHO,
		    &reply, &len) == -1) {
			free(v);
			return probe_fail(p, c);
		}
		if (len != sizeof payload || memcmp(reply, payload, len) != 0) {
			free(v);
			snprintf(p->error, sizeof p->error, "echo corrupted");
			p->fail = CONN_PROTO;
			return -1;
		}
		if (i >= 0)
			v[i] = (double)(now_ns() - t0) / 1e9;
	}
	p->rtt_n = o->count;
	p->rtt_min = quantile(v, (size_t)o->count, 0);
	p->rtt_median = quantile(v, (size_t)o->count, 0.5);
	p->rtt_p99 = quantile(v, (size_t)o->count, 0.99);
	free(v);
	return 0;
}

/*
 * Client to server: BULK_DATA for bulk_s, then BULK_END.  The rate is the
 * server's: bytes after the first frame over the time between the first
 * and last frames' arrival, which is what the link delivered.
 */
static int
probe_up(struct probe *p, struct conn *c, const struct probe_opts *o)
{
	struct msg_bulk_result r;
	const uint8_t *reply;
	uint8_t *buf;
	size_t len;
	uint64_t end;

	if ((buf = malloc(o->chunk)) == NULL) {
		snprintf(p->error, sizeof p->error, "out of memory");
		return -1;
	}
	/* Incompressible, in case a link on the way compresses. */
	for (len = 0; len < o->chunk; len++)
		buf[len] = (uint8_t)(len * 2654435761u >> 13);
	end = now_ns() + (uint64_t)(o->bulk_s * 1e9);
	while (now_ns() < end) {
		if (conn_send(c, MSG_BULK_DATA, 0, 0, buf, o->chunk) == -1) {
			free(buf);
			return probe_fail(p, c);
		}
	}
	free(buf);
	if (conn_call(c, MSG_BULK_END, NULL, 0, MSG_BULK_END, &reply,
	    &len) == -1)
		return probe_fail(p, c);
	if (msg_bulk_result_dec(reply, len, &r) == -1) {
		snprintf(p->error, sizeof p->error, "bad BULK_END reply");
		p->fail = CONN_PROTO;
		return -1;
	}
	p->up_bytes = r.bytes;
	if (r.bytes > o->chunk && r.elapsed_ns > 0)
		p->up_bps = (double)(r.bytes - o->chunk) * 8 / (r.elapsed_ns /
		    1e9);
	return 0;
}

/* Server to client, measured here the same way. */
static int
probe_down(struct probe *p, struct conn *c, const struct probe_opts *o)
{
	struct msg_bulk_get g;
	struct frame_hdr h;
	const uint8_t *payload;
	struct pw w;
	uint64_t id, first = 0, last = 0, bytes = 0, firstlen = 0;
	int rc;

	g.max_bytes = UINT64_MAX;
	g.duration_ms = (uint32_t)(o->bulk_s * 1000);
	g.chunk = o->chunk;
	pw_init(&w);
	msg_bulk_get_enc(&w, &g);
	id = c->next_id++;
	rc = w.bad ? -1 : conn_send(c, MSG_BULK_GET, 0, id, w.p, w.len);
	pw_free(&w);
	if (rc == -1)
		return probe_fail(p, c);
	for (;;) {
		if (conn_recv(c, &h, &payload) == -1)
			return probe_fail(p, c);
		if (h.type == MSG_BULK_DATA && h.id == id) {
			last = now_ns();
			if (bytes == 0) {
				first = last;
				firstlen = h.len;
			}
			bytes += h.len;
			continue;
		}
		if (h.type == MSG_BULK_END && h.id == id)
			break;
		if (h.type == MSG_ERROR) {
			conn_error_frame(c, payload, h.len);
			return probe_fail(p, c);
		}
	}
	p->down_bytes = bytes;
	if (bytes > firstlen && last > first)
		p->down_bps = (double)(bytes - firstlen) * 8 /
		    ((double)(last - first) / 1e9);
	return 0;
}

static int
probe_status(struct probe *p, struct conn *c)
{
	const uint8_t *reply;
	struct yerr err;
	size_t len;

	if (conn_call(c, MSG_STATUS, NULL, 0, MSG_STATUS, &reply, &len) == -1)
		return probe_fail(p, c);
	if (status_parse("status reply", reply, len, &p->status, &err) == -1) {
		snprintf(p->error, sizeof p->error, "bad status: %s", err.msg);
		p->fail = CONN_PROTO;
		return -1;
	}
	p->have_status = 1;
	return 0;
}

void
probe_run(struct probe *p, const struct probe_opts *opts)
{
	struct probe_opts o_, *o = &o_;
	struct conn c;
	int rc;

	*o = *opts;

	p->ok = 0;
	if (o->progress)
		o->progress(p->spec, "connecting");
	if (conn_open(&c, p->host, p->port, o->key, "gleam-probe",
	    o->timeout_ms) == -1) {
		probe_fail(p, &c);
		return;
	}
	snprintf(p->name, sizeof p->name, "%s", c.server_name);
	/* Bulk frames within the server's limit, header included. */
	if (o->chunk > c.max_frame - PROTO_HDR_LEN)
		o->chunk = c.max_frame - PROTO_HDR_LEN;
	p->protocol = c.version;
	if (o->progress)
		o->progress(p->spec, "status");
	if (probe_status(p, &c) == -1)
		goto out;
	if (o->progress)
		o->progress(p->spec, "round trips");
	if (probe_rtt(p, &c, o) == -1)
		goto out;
	if (o->bulk_s > 0) {
		/* Bulk tests of different servers would share our link. */
		pthread_mutex_lock(o->bulk_lock);
		if (o->progress)
			o->progress(p->spec, "upload");
		rc = probe_up(p, &c, o);
		if (rc == 0 && o->progress)
			o->progress(p->spec, "download");
		if (rc == 0)
			rc = probe_down(p, &c, o);
		pthread_mutex_unlock(o->bulk_lock);
		if (rc == -1)
			goto out;
		p->bulk_done = 1;
	}
	p->ok = 1;
out:
	conn_close(&c);
}

void
probe_free(struct probe *p)
{
	status_free(&p->status);
}
