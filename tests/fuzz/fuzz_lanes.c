/*
 * libFuzzer target: bulk lanes as gleam-serve takes them
 * (gleam-serve/lanes.c): R_LANES's offer, the lanes' connections and
 * their hellos (lanes_accept), then one host-to-device copy's stripes
 * over them (lanes_recv), on loopback TCP.  fuzz_proto has the hello's
 * decoder alone; this is what the server does around it: duplicate and
 * missing lanes, hellos cut short or wrong, records of the wrong length
 * or that do not open.
 *
 * Input: a byte of flags, then the copy's length less one (u16), then
 * for each lane offered its bytes (u16 length, then the bytes), which
 * the target writes on that lane's connection before it closes its
 * sending side:
 *	bits 0-3  lanes asked for, less one (the server offers them all)
 *	bit 4	  the main connection's records are sealed (the lanes' too)
 *	bit 5	  the target writes each lane's right hello first
 *	bit 6	  and then seals the lane's bytes (zero-padded to its stripe)
 *		  into its stripe's records: the copy must then land whole
 *		  and exact, and every lane is up
 *	bit 7	  R_LANES_UP names one lane more than were offered
 * Connections are reset, not closed, at the end (no TIME_WAIT).
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "chan.h"
#include "lanes.h"
#include "log.h"
#include "net.h"
#include "proto.h"
#include "stripe.h"
#include "util.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)

static int	mainfd = -1;		/* the server's end of a connection */
static struct auth_key key;

/* A loopback connection whose server end lanes listen beside. */
static void
setup(void)
{
	struct sockaddr_in a;
	socklen_t sl = sizeof a;
	int l, c;

	log_init("fuzz", LL_QUIET);
	signal(SIGPIPE, SIG_IGN);
	ENSURE(auth_init() == 0);
	auth_key_from(&key, "fuzzing secret, sixteen+", 24);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ENSURE((l = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	ENSURE(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
	ENSURE(listen(l, 1) == 0);
	ENSURE(getsockname(l, (struct sockaddr *)&a, &sl) == 0);
	ENSURE((c = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	ENSURE(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
	ENSURE((mainfd = accept(l, NULL, NULL)) >= 0);
	close(l);
	/* c stays open, unused: the main connection's client. */
}

struct put {
	const uint8_t	*want;		/* the copy's bytes, or NULL */
	size_t		 len, got;
};

static int
put(void *arg, size_t off, const void *p, size_t n)
{
	struct put *pp = arg;

	ENSURE(off + n <= pp->len);
	if (pp->want != NULL)
		ENSURE(memcmp(pp->want + off, p, n) == 0);
	pp->got += n;
	return 0;
}

static void
reset(int fd)
{
	struct linger lg = { 1, 0 };

	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(fd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t cn[PROTO_NONCE_LEN] = { 1 }, sn[PROTO_NONCE_LEN] = { 2 };
	struct lanes *ls = NULL;
	struct sockaddr_in a;
	struct rcall c;
	struct chan pc, cc, lc;
	struct put pp;
	uint8_t hello[PROTO_LANE_HELLO], token[PROTO_LANE_TOKEN];
	uint8_t *want = NULL, *stage = NULL;
	uint32_t n, i, up;
	uint64_t off, cnt;
	size_t len, pos, l;
	int fds[PROTO_LANES_MAX], rc;
	uint8_t fl;

	if (mainfd == -1)
		setup();
	if (size < 3)
		return 0;
	fl = data[0];
	len = 1 + ((size_t)data[1] | (size_t)data[2] << 8);
	pos = 3;
	n = 1 + (fl & 0x0f);
	memset(&c, 0, sizeof c);
	lanes_offer(&ls, mainfd, n, PROTO_LANES_MAX, 0, &c);
	ENSURE(ls != NULL && c.out[0].u == n && c.out[2].len == sizeof token);
	memcpy(token, c.out[2].p, sizeof token);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)c.out[1].u);

	ENSURE(chan_init(&pc, fl & 0x10 ? &key : NULL, 1, cn, sn) == 0);
	ENSURE(chan_init(&cc, fl & 0x10 ? &key : NULL, 0, cn, sn) == 0);
	if ((fl & 0x60) == 0x60) {
		ENSURE((want = calloc(1, len)) != NULL);
		ENSURE((stage = malloc(STRIPE_STAGE)) != NULL);
	}
	for (i = 0; i < n; i++) {
		ENSURE((fds[i] = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
		if (connect(fds[i], (struct sockaddr *)&a, sizeof a) == -1) {
			/*
			 * The kernel's, not the code's: in a long run loopback's
			 * ports run out, or a port comes back while the server's
			 * end of a refused lane waits in TIME_WAIT.
			 */
			close(fds[i]);
			n = i;
			goto out;
		}
		l = 0;
		if (size - pos >= 2) {
			l = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
			pos += 2;
			if (l > size - pos)
				l = size - pos;
		}
		if (fl & 0x20) {
			proto_lane_hello_enc(hello, i, token);
			ENSURE(net_send_all(fds[i], hello, sizeof hello) == 0);
		}
		if (want != NULL) {
			/* The stripe's records, the lane's bytes in them. */
			proto_lane_stripe(len, n, i, &off, &cnt);
			memcpy(want + off, data + pos, l < cnt ? l : cnt);
			ENSURE(chan_init_lane(&lc, &cc, i) == 0);
			if (cnt > 0)
				ENSURE(stripe_send(&lc, fds[i], want + off,
				    cnt, stage) == 0);
			chan_fini(&lc);
		} else if (l > 0)
			ENSURE(net_send_all(fds[i], data + pos, l) == 0);
		pos += l;
		shutdown(fds[i], SHUT_WR);
	}
	up = lanes_accept(ls, fl & 0x80 ? n + 1 : n, &pc);
	ENSURE(up == 0 || up == n);
	if (want != NULL && !(fl & 0x80))
		ENSURE(up == n);
	if (up > 0) {
		ENSURE(lanes_count(ls) == n);
		ENSURE(lanes_prepare(ls, &l) != NULL && l >= len);
		memset(&pp, 0, sizeof pp);
		pp.want = want;
		pp.len = len;
		rc = 0;
		if (lanes_recv(ls, len, put, &pp, &rc) == 0)
			ENSURE(pp.got == len && rc == 0);
		else
			ENSURE(want == NULL);
	}
out:
	for (i = 0; i < n; i++)
		reset(fds[i]);
	lanes_free(ls);
	chan_fini(&pc);
	chan_fini(&cc);
	free(want);
	free(stage);
	return 0;
}
