/*
 * libFuzzer target: a remoting client's calls as gleam-serve's worker
 * serves them after the handshake (gleam-serve/remote.c, remote_serve),
 * on the host backend (host.c, with check.c's argument checks and the
 * weight cache of wcache.c on a RAM store).  The CUDA backend needs a
 * GPU and its driver, so it is not fuzzed here: the checks it shares with
 * the host backend are, its own code is not.
 *
 * remote.c is included, so that frames are served one at a time on this
 * thread and the replies read from the output buffer (never sent),
 * as a worker would serve what its records opened into.
 *
 * Input: one byte of flags (bit 0: an R_OPEN goes first), then frames,
 * at most MAX_FRAMES of them:
 *	u8 call (R_OPEN + n mod RPC_NCALLS; 255: MSG_ECHO, 254: MSG_BYE)
 *	u8 flags (FL_ONEWAY, FL_ZSTD or junk)
 *	u16 length, then that many bytes of payload
 * A payload's bytes "GLPTR" then i then o, anywhere, become the address
 * that the i-th (mod 16) successful reply whose first field was a u64
 * gave, plus o: device pointers are the server's addresses, which the
 * fuzzer cannot guess; so stale pointers, pointers into the middle of an
 * allocation and pointers freed twice get exercised.  Ids of contexts,
 * streams, modules and the rest are the client's to choose anyway.
 *
 * Every input must end with everything it made freed (LeakSanitizer),
 * the host backend's budget all given back.
 */
#include <sys/socket.h>

#include <signal.h>

#include "../../gleam-serve/remote.c"

#include "config.h"
#include "host.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)

#define MAX_FRAMES	64
#define NPTRS		16
#define BUDGET		(64u << 20)

static const uint8_t magic[5] = { 'G', 'L', 'P', 'T', 'R' };

static void
fuzz_done(void *arg, void *client)
{
	(void)arg;
	(void)client;
}

/*
 * Notes the first u64 of each successful reply; drops the replies.
 * ended: the call just served ended the session (-1).  A reply whose
 * last blob is large goes to the socket with it at once (REPLY_DIRECT),
 * and the socket here is closed: that write fails, the session ends,
 * and the header is left in the output without its body.  Only then may
 * the last frame be short.
 */
static void
take_replies(struct remote *r, uint64_t *ptrs, unsigned *nptrs, int ended)
{
	struct frame_hdr h;
	const struct rpc_desc *d;
	const uint8_t *q;
	size_t off = 0;
	uint64_t v;
	int i;

	while (r->out.len - off >= PROTO_HDR_LEN) {
		proto_hdr_decode(r->out.p + off, &h);
		if (r->out.len - off - PROTO_HDR_LEN < h.len) {
			ENSURE(ended && (h.flags & FL_REPLY));
			off = r->out.len;
			break;
		}
		/*
		 * A reply, or what the server sends of its own accord: host
		 * functions that came due (cuLaunchHostFunc, a user object's
		 * destructor) and device output.
		 */
		if (h.type == MSG_HOST || h.type == MSG_OUTPUT) {
			ENSURE(h.flags == 0);
			off += PROTO_HDR_LEN + h.len;
			continue;
		}
		ENSURE(h.flags & FL_REPLY);
		d = rpc_lookup(h.type);
		q = r->out.p + off + PROTO_HDR_LEN;
		if (d != NULL && !(h.flags & FL_ONEWAY) && h.len >= 12 &&
		    d->rep[0] == 'Q' && (q[0] | q[1] | q[2] | q[3]) == 0) {
			v = 0;
			for (i = 7; i >= 0; i--)
				v = v << 8 | q[4 + i];
			ptrs[(*nptrs)++ % NPTRS] = v;
		}
		off += PROTO_HDR_LEN + h.len;
	}
	ENSURE(off == r->out.len);
	r->out.len = 0;
	r->nbrk = 0;
}

static void
put_ptrs(uint8_t *p, size_t n, const uint64_t *ptrs)
{
	size_t i;
	uint64_t v;
	int k;

	for (i = 0; i + 7 <= n; i++) {
		if (memcmp(p + i, magic, sizeof magic) != 0)
			continue;
		v = ptrs[p[i + 5] % NPTRS] + p[i + 6];
		for (k = 0; k < 8 && i + k < n; k++)
			p[i + k] = (uint8_t)(v >> (8 * k));
		i += 7;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int inited;
	static struct remote_env env;
	static const uint8_t zero[PROTO_NONCE_LEN];
	struct remote_stats st;
	struct remote_handoff ho;
	struct remote *r;
	struct frame_hdr h;
	struct pw open;
	uint64_t ptrs[NPTRS];
	unsigned nptrs = 0, nf;
	uint8_t *p;
	size_t off, len;
	int sv[2], rc = 0;

	if (!inited) {
		struct config cfg;
		char err[256];

		log_init("fuzz", LL_QUIET);
		signal(SIGPIPE, SIG_IGN);
		if (auth_init() == -1)
			abort();
		host_backend_configure(NULL, BUDGET);
		if (backend_host.init(err, sizeof err) == -1)
			abort();
		config_defaults(&cfg);
		cfg.cache_ram = 32u << 20;
		cfg.cache_disk = 0;
		cfg.cache_dir[0] = '\0';
		wcache_init(&cfg);
		env.be = &backend_host;
		env.max_frame = 1u << 20;
		env.max_lanes = 0;
		env.done = fuzz_done;
		inited = 1;
	}
	if (size < 1)
		return 0;
	memset(ptrs, 0, sizeof ptrs);
	ENSURE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	memset(&ho, 0, sizeof ho);
	ho.ctl = -1;
	ENSURE(chan_init(&ho.ch, NULL, 1, zero, zero) == 0);
	memset(&st, 0, sizeof st);
	r = remote_new(sv[0], "fuzz:1", "fuzz", &ho, &env, &st, NULL);
	ENSURE(r != NULL);
	/* What a worker is never sent: a written reply ends the session. */
	close(sv[1]);

	if (data[0] & 1) {
		memset(&h, 0, sizeof h);
		h.type = R_OPEN;
		h.id = 1;
		pw_init(&open);
		pw_u32(&open, 0);
		h.len = (uint32_t)open.len;
		rc = remote_serve(r, &h, open.p);
		pw_free(&open);
		take_replies(r, ptrs, &nptrs, rc == -1);
	}
	p = malloc(65536);
	ENSURE(p != NULL);
	for (off = 1, nf = 0; rc == 0 && nf < MAX_FRAMES &&
	    size - off >= 4; nf++) {
		memset(&h, 0, sizeof h);
		h.type = data[off] == 255 ? MSG_ECHO : data[off] == 254 ?
		    MSG_BYE : R_OPEN + data[off] % RPC_NCALLS;
		h.flags = data[off + 1];
		len = (size_t)data[off + 2] | (size_t)data[off + 3] << 8;
		off += 4;
		if (len > size - off)
			len = size - off;
		memcpy(p, data + off, len);
		off += len;
		put_ptrs(p, len, ptrs);
		h.len = (uint32_t)len;
		h.id = 2 + nf;
		rc = remote_serve(r, &h, p);
		take_replies(r, ptrs, &nptrs, rc == -1);
	}
	free(p);
	/*
	 * The worker's way out: its client gone, everything it held freed
	 * (remote_main finds the connection closed and cleans up).
	 */
	remote_main(r);
	return 0;
}
