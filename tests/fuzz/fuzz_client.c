/*
 * libFuzzer target: what the client library takes from a server.  A
 * server on loopback (a thread here) writes the input; the client shakes
 * hands with it as io_start does (conn_open: CHALLENGE, WELCOME or
 * ERROR), then its I/O thread's receiving half (lib/client/io.c,
 * io_recv: records, frames, replies handed to the calls that wait for
 * them, device-to-host replies taken straight to their destination,
 * one-way failures, ERROR, device output) runs here on the rest.
 *
 * io.c is included for its static state; the rest of the client library
 * is not linked: the few functions io.c calls in it are stubs below.
 *
 * Input:
 *	u8 flags: bits 0-3 r: records of at most 16 * r bytes (0: one
 *	   record for all); bit 4: an empty record before each; bit 5: the
 *	   target writes a right CHALLENGE and WELCOME (no key) itself, else
 *	   the input's handshake bytes are written as they are
 *	u16 n, then n bytes: the server's handshake (when bit 5 is clear)
 *	u8 k (mod 9): calls waiting for replies, ids 1 to k, each u8 call
 *	   (R_OPEN + n), u8 kind (0: keeps the reply; 1: wants its one blob
 *	   at a destination; 2: detached, nobody waits; 3: both), u24 bytes
 *	   of that destination (at most 256 KiB)
 *	the rest: frames, which the server seals into records (in the
 *	   clear) once WELCOME went
 * Every waiter must end answered or still waiting, never half-filled;
 * nothing may leak.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <signal.h>

#include "../../lib/common/net.h"
#include "../../lib/client/io.c"
#include "../../lib/client/hostcb.c"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)
#define KMAX	8

/* What io.c calls in the rest of the client library. */
struct gctx *
ctx_current(void)
{
	return NULL;
}

int
rc_sticky(CUresult rc)
{
	return rc == CUDA_ERROR_ILLEGAL_ADDRESS;
}

void stats_call(uint16_t type, int oneway, int beside) { }
void stats_sync(uint16_t type, uint64_t ns) { }
void stats_bytes(uint64_t out, uint64_t in) { }
void stats_batch(void) { }
void stats_saved(uint64_t n) { }
void stats_drop(void) { }
void stats_resume_end(uint64_t ns, uint64_t resent, int ok) { }
void stats_error(const char *fmt, ...) { }
void stats_migrated(void) { }
void progress_init(void) { }
void progress_tick(void) { }
void lanes_moved(void) { }
void lanes_skipped(void) { }
void uobj_gone(uint64_t id) { (void)id; }

static int	lfd = -1;
static int	lport;

struct server {
	const uint8_t	*hs;		/* handshake bytes, or NULL: forged */
	size_t		 hslen;
	struct pw	 rest;		/* the records */
	int		 fd;
};

static void *
server_main(void *arg)
{
	struct server *s = arg;
	struct msg_challenge ch;
	struct msg_welcome wel;
	struct frame_hdr h;
	struct pw w;
	uint8_t hb[PROTO_HDR_LEN];

	ENSURE((s->fd = accept(lfd, NULL, NULL)) >= 0);
	if (s->hs != NULL)
		(void)net_send_all(s->fd, s->hs, s->hslen);
	else {
		pw_init(&w);
		memset(&ch, 0, sizeof ch);
		ch.version = PROTO_VERSION_MAX;
		ch.auth = AUTH_NONE;
		snprintf(ch.name, sizeof ch.name, "fuzz");
		ch.max_frame = 1u << 20;
		memset(&h, 0, sizeof h);
		h.type = MSG_CHALLENGE;
		h.flags = FL_REPLY;
		pw_bytes(&w, hb, sizeof hb);
		msg_challenge_enc(&w, &ch);
		h.len = (uint32_t)(w.len - PROTO_HDR_LEN);
		proto_hdr_encode(w.p, &h);
		memset(&wel, 0, sizeof wel);
		wel.session = 9;
		h.type = MSG_WELCOME;
		{
			size_t at = w.len;

			pw_bytes(&w, hb, sizeof hb);
			msg_welcome_enc(&w, &wel);
			h.len = (uint32_t)(w.len - at - PROTO_HDR_LEN);
			proto_hdr_encode(w.p + at, &h);
		}
		ENSURE(!w.bad);
		(void)net_send_all(s->fd, w.p, w.len);
		pw_free(&w);
	}
	(void)net_send_all(s->fd, s->rest.p, s->rest.len);
	shutdown(s->fd, SHUT_WR);
	return NULL;
}

static void
setup(void)
{
	struct sockaddr_in a;
	socklen_t sl = sizeof a;

	log_init("fuzz", LL_QUIET);
	signal(SIGPIPE, SIG_IGN);
	ENSURE(auth_init() == 0);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ENSURE((lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	ENSURE(bind(lfd, (struct sockaddr *)&a, sizeof a) == 0);
	ENSURE(listen(lfd, 4) == 0);
	ENSURE(getsockname(lfd, (struct sockaddr *)&a, &sl) == 0);
	lport = ntohs(a.sin_port);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t zero[PROTO_NONCE_LEN];
	static uint8_t rec[CHAN_HDR + (1u << 20) + CHAN_TAG];
	struct rwait *ws[KMAX], *w;
	void *dst[KMAX];		/* the caller's, also of detached calls */
	int det[KMAX];
	struct server s;
	struct chan sc;
	struct io io;
	struct linger lg = { 1, 0 };
	struct pollfd pf;
	pthread_t t;
	size_t off, n, per;
	unsigned k, i, tries;
	uint8_t fl, kind;

	if (lfd == -1)
		setup();
	if (size < 4)
		return 0;
	fl = data[0];
	memset(&s, 0, sizeof s);
	n = (size_t)data[1] | (size_t)data[2] << 8;
	off = 3;
	if (!(fl & 0x20)) {
		s.hs = data + off;
		s.hslen = n < size - off ? n : size - off;
		off += s.hslen;
	}
	k = off < size ? data[off++] % (KMAX + 1) : 0;
	memset(ws, 0, sizeof ws);
	for (i = 0; i < k && size - off >= 5; i++) {
		ENSURE((w = calloc(1, sizeof *w)) != NULL);
		w->id = 1 + i;
		w->type = R_OPEN + data[off] % RPC_NCALLS;
		kind = data[off + 1] & 3;
		w->dstlen = ((size_t)data[off + 2] | (size_t)data[off + 3] <<
		    8 | (size_t)data[off + 4] << 16) & ((1u << 18) - 1);
		off += 5;
		if ((kind & 1) && w->dstlen > 0)
			ENSURE((w->dst = malloc(w->dstlen)) != NULL);
		w->detached = det[i] = (kind & 2) != 0;
		dst[i] = w->dst;
		ws[i] = w;
	}
	k = i;

	/* The frames into records, as gleam-serve seals them in the clear. */
	pw_init(&s.rest);
	ENSURE(chan_init(&sc, NULL, 1, zero, zero) == 0);
	per = (fl & 0x0f) ? 16 * (size_t)(fl & 0x0f) : size;
	for (; off < size; off += n) {
		n = size - off < per ? size - off : per;
		if (fl & 0x10)
			pw_bytes(&s.rest, rec, chan_seal(&sc, rec, NULL, 0));
		pw_bytes(&s.rest, rec, chan_seal(&sc, rec, data + off, n));
	}
	chan_fini(&sc);
	ENSURE(!s.rest.bad);

	ENSURE(pthread_create(&t, NULL, server_main, &s) == 0);
	memset(&rconn, 0, sizeof rconn);
	rconn.fd = -1;
	if (conn_open(&rconn, "127.0.0.1", lport, NULL, "fuzz", 2000) == -1) {
		pthread_join(t, NULL);
		goto out;
	}
	rconn.timeout_ms = -1;
	rstate = R_UP;
	rlost = 0;
	deferred = CUDA_SUCCESS;
	pthread_mutex_lock(&tlock);
	for (i = 0; i < k; i++) {
		ws[i]->next = waiters;
		waiters = ws[i];
		if (ws[i]->detached)
			ndetached++;
	}
	pthread_mutex_unlock(&tlock);

	memset(&io, 0, sizeof io);
	pw_init(&io.out);
	io.rmax = (size_t)rconn.max_frame + (1u << 20) + PROTO_HDR_LEN;
	io.rd.stop = PROTO_HDR_LEN + 8 + DIRECT_MIN;
	/* Until the server's end of stream: everything was sent first. */
	for (tries = 0; tries < 1000 && io_recv(&io) == 0; tries++) {
		pf.fd = rconn.fd;
		pf.events = POLLIN;
		(void)poll(&pf, 1, 100);
	}
	ENSURE(tries < 1000);
	ENSURE(rstate == R_LOST);
	pthread_join(t, NULL);

	/* Answered waiters hold their reply, detached ones are gone. */
	pthread_mutex_lock(&tlock);
	for (i = 0; i < k; i++) {
		for (w = waiters; w != NULL && w != ws[i]; w = w->next)
			;
		if (w != NULL) {
			ENSURE(!w->done && !w->filling);
			waiter_unlink(w);
			if (w->detached)
				ndetached--;
		} else if (det[i]) {
			ws[i] = NULL;	/* io.c freed it */
			continue;
		} else {
			ENSURE(ws[i]->done);
			ENSURE(ws[i]->direct ? ws[i]->len == 4 : 1);
		}
		if (ws[i]->done && ws[i]->direct)
			ENSURE(ws[i]->dst != NULL);
	}
	ENSURE(waiters == NULL && ndetached == 0);
	pw_free(&outq);
	pw_init(&outq);
	pthread_mutex_unlock(&tlock);
	pw_free(&io.out);
	free(io.rb);
	(void)setsockopt(rconn.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	conn_close(&rconn);
out:
	if (s.fd > 0) {
		(void)setsockopt(s.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
		close(s.fd);
	}
	for (i = 0; i < k; i++) {
		free(dst[i]);
		if (ws[i] == NULL)
			continue;
		free(ws[i]->buf);
		free(ws[i]);
	}
	pw_free(&s.rest);
	rstate = R_NONE;
	return 0;
}
