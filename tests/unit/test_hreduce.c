/*
 * Unit tests for lib/hreduce.c against the real aggregator (gleam-reduce's
 * own sources, compiled in here and run in a child process): W worker
 * processes allreduce random sparse gradients and each checks its sum,
 * bit for bit, against the dense fixed-point sum of every worker's
 * gradient; then the bad inputs of the issue, each of which must fail the
 * round at every worker with a clear reason and leave the aggregator
 * serving the next round.  Raw frames stand in for a broken worker.
 */
#include <sys/wait.h>

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

/* The aggregator itself: not in libgleam.a, so compiled in. */
#include "../../gleam-reduce/agg.c"
#include "../../gleam-reduce/peer.c"
#include "../../gleam-reduce/server.c"

#include "conn.h"
#include "hcodec.h"
#include "hreduce.h"
#include "hreduce_dev.h"
#include "hreduce_wire.h"
#include "t.h"
#include "util.h"

enum support { SUP_RANDOM, SUP_SAME, SUP_DISJOINT, SUP_ZERO };

struct tcase {
	size_t		n;
	int		W;
	double		density;
	enum support	sup;
	int		bits;
	int		tensors;	/* pipelined, sizes n, n/2+1, ... */
	uint64_t	seed;
	int		dev;		/* odd ranks through the fake device */
};

static int agg_port, plain_port, key_port;
static pid_t agg_pid, key_pid;
/* The key workers prove, where agg_port is key_port. */
static struct auth_key *worker_key, test_key;

#define rnd splitmix64

/* Worker w's gradient for tensor t of case c. */
static void
gen(const struct tcase *c, int w, int t, float *g, size_t n)
{
	uint64_t sup = c->seed * 1000003 + (uint64_t)t, val = sup ^
	    ((uint64_t)w + 1) * 0x51ed27u;
	uint64_t th = (uint64_t)(c->density * 18446744073709551615.0);
	size_t i;
	int on;

	for (i = 0; i < n; i++) {
		switch (c->sup) {
		case SUP_SAME:
			on = rnd(&sup) < th;
			break;
		case SUP_DISJOINT:
			on = (int)(i % (size_t)c->W) == w && rnd(&val) < th;
			break;
		case SUP_ZERO:
			on = 0;
			break;
		default:
			on = rnd(&val) < th;
		}
		if (!on) {
			/* Both zeros: -0 is zero too. */
			g[i] = (i & 1) ? -0.0f : 0.0f;
			continue;
		}
		/* Magnitudes over many binades, both signs. */
		g[i] = (float)ldexp((double)(rnd(&val) >> 40) + 1,
		    (int)(rnd(&val) % 30) - 50) * ((rnd(&val) & 1) ? 1 : -1);
	}
}

static size_t
tensor_n(const struct tcase *c, int t)
{
	return t == 0 ? c->n : c->n / (size_t)(t + 1) + (size_t)t;
}

/* The sum every worker must hold, from every worker's gradient. */
static int
expect_sum(const struct tcase *c, int t, float *out, int *scale)
{
	size_t n = tensor_n(c, t), i;
	float **g;
	void *fixed;
	int w, e, emax = HC_EXP_ZERO, rc = -1;

	g = calloc((size_t)c->W, sizeof *g);
	fixed = malloc(n * 8 + 8);
	if (g == NULL || fixed == NULL)
		goto out;
	for (w = 0; w < c->W; w++) {
		if ((g[w] = malloc(n * sizeof *g[w] + 4)) == NULL)
			goto out;
		gen(c, w, t, g[w], n);
		hc_exponent(g[w], n, &e);
		emax = e > emax ? e : emax;
	}
	if (hc_scale(emax, c->W, c->bits, scale) != 0 ||
	    hc_dense_fixed((const float *const *)g, c->W, n, *scale, c->bits,
	    fixed) != 0 ||
	    hc_fixed_to_float(fixed, n, c->bits, *scale, out) != 0)
		goto out;
	for (i = 0; i < n; i++)
		if (out[i] == 0)
			out[i] = 0.0f;	/* decoded zeros are +0 */
	rc = 0;
out:
	if (g != NULL)
		for (w = 0; w < c->W; w++)
			free(g[w]);
	free(g);
	free(fixed);
	return rc;
}

static int
open_worker(int W, int rank, int bits, struct hr_ctx **x)
{
	struct hr_opts o;
	char err[256];
	int rc;

	hr_opts_init(&o);
	o.host = "127.0.0.1";
	o.port = agg_port;
	o.world = W;
	o.rank = rank;
	o.cell_bits = bits;
	o.chunk = 4096;		/* many chunks even for small tensors */
	o.timeout_ms = 20000;
	o.seed = 7;
	o.name = "test";
	o.key = worker_key;
	/*
	 * Ranks of one group with 1, 2 and 3 codec threads: the sums must
	 * not depend on it (cases of 2^18 values and more split the work).
	 */
	o.threads = 1 + rank % 3;
	/* Rank 1 sends and takes its bitmaps raw, the others zstd. */
	o.zindex = rank != 1;
	if ((rc = hr_open(&o, x, err, sizeof err)) != 0)
		fprintf(stderr, "rank %d: hr_open: %s\n", rank, err);
	return rc;
}

/*
 * ---- a device's hooks (hreduce_dev.h) ------------------------------------
 * The CPU codec plays the GPU: its own buffers, handed over as the
 * rounds' host memory, the way hreduce_cuda.cu does it.  fake_fail makes
 * the fake's encode fail at that call (1 for the first), as a GPU out of
 * memory would.
 */
struct fake_t {
	uint8_t			*bits;
	void			*pay;
	struct hc_layout	*L;
};

struct fake {
	int	states;		/* made and not released */
	int	encodes;
	int	fail;
	int	destroyed;
};

static struct fake fake;

static int
fake_bitmap(void *arg, void *call, void **ts, const float *g, size_t n,
    uint8_t **bits, int *emax, char *err, size_t len)
{
	struct fake_t *t;

	(void)arg;
	(void)err;
	(void)len;
	if (call != &fake || (t = calloc(1, sizeof *t)) == NULL)
		return HR_EINVAL;
	*ts = t;
	fake.states++;
	if ((t->bits = malloc(hc_bitmap_bytes(n) + 1)) == NULL)
		return HR_ENOMEM;
	*emax = HC_EXP_ZERO;
	(void)hc_bitmap(g, n, t->bits, emax);
	*bits = t->bits;
	return 0;
}

static int
fake_encode(void *arg, void *ts, const struct hc_params *p, int scale,
    const float *g, void **payload, size_t *payload_bytes,
    size_t *union_count, size_t *core_count, char *err, size_t len)
{
	struct fake_t *t = ts;
	struct hc_layout_info li;
	size_t pl;
	int rc;

	(void)arg;
	if (++fake.encodes == fake.fail) {
		snprintf(err, len, "the fake device is out of memory");
		return HR_ENOMEM;
	}
	if ((rc = hc_layout_new(p, t->bits, &t->L)) != 0) {
		snprintf(err, len, "%s", hc_strerror(rc));
		return HR_ECODEC;
	}
	pl = hc_layout_payload(t->L) * (size_t)(p->cell_bits / 8);
	if ((t->pay = malloc(pl + 1)) == NULL)
		return HR_ENOMEM;
	if ((rc = hc_encode(t->L, g, scale, t->pay)) != 0) {
		snprintf(err, len, "%s", hc_strerror(rc));
		return HR_ECODEC;
	}
	hc_layout_info(t->L, &li);
	*union_count = li.union_count;
	*core_count = li.core_count;
	*payload = t->pay;
	*payload_bytes = pl;
	return 0;
}

static int
fake_decode(void *arg, void *ts, int scale, float *g, char *err, size_t len)
{
	struct fake_t *t = ts;
	int rc;

	(void)arg;
	if ((rc = hc_decode(t->L, t->pay, scale, g)) != 0) {
		snprintf(err, len, "%s", hc_strerror(rc));
		return HR_ECODEC;
	}
	return 0;
}

static void
fake_release(void *arg, void *ts)
{
	struct fake_t *t = ts;

	(void)arg;
	if (t == NULL)
		return;
	fake.states--;
	free(t->bits);
	free(t->pay);
	hc_layout_free(t->L);
	free(t);
}

static void
fake_destroy(void *arg)
{
	(void)arg;
	fake.destroyed++;
}

static const struct hr_dev fake_dev = {
	fake_bitmap, fake_encode, fake_decode, fake_release, fake_destroy
};

static int
fake_submit(struct hr_ctx *x, float *g, size_t n, void *call)
{
	int rc;

	if ((rc = hr_dev_attach(x, &fake_dev, &fake)) != 0)
		return rc;
	return hr_submit_dev(x, g, n, call);
}

/* One worker of a correctness case; its exit status is its verdict. */
static void
case_worker(const struct tcase *c, int w)
{
	struct hr_ctx *x;
	float **g, *want;
	size_t *ns, i;
	int t, s, bad = 0, *rcs;

	if (open_worker(c->W, w, c->bits, &x) != 0)
		_exit(2);
	g = calloc((size_t)c->tensors, sizeof *g);
	ns = calloc((size_t)c->tensors, sizeof *ns);
	rcs = calloc((size_t)c->tensors, sizeof *rcs);
	want = malloc(c->n * sizeof *want + 4);
	for (t = 0; t < c->tensors; t++) {
		ns[t] = tensor_n(c, t);
		g[t] = malloc(ns[t] * sizeof *g[t] + 4);
		gen(c, w, t, g[t], ns[t]);
	}
	if ((c->dev && w % 2 == 1 ? hr_many(x, g, ns, (size_t)c->tensors,
	    rcs, fake_submit, &fake) : hr_allreduce_many(x, g, ns,
	    (size_t)c->tensors, rcs)) != 0) {
		fprintf(stderr, "n %zu W %d rank %d: %s\n", c->n, c->W, w,
		    hr_errmsg(x));
		_exit(3);
	}
	for (t = 0; t < c->tensors; t++) {
		if (expect_sum(c, t, want, &s) != 0)
			_exit(4);
		for (i = 0; i < ns[t]; i++)
			if (memcmp(&want[i], &g[t][i], 4) != 0) {
				if (bad++ < 3)
					fprintf(stderr, "n %zu W %d density %g "
					    "rank %d tensor %d: [%zu] %a, not "
					    "%a\n", c->n, c->W, c->density, w,
					    t, i, g[t][i], want[i]);
			}
	}
	if (c->tensors == 1 && c->sup != SUP_ZERO && hr_last_scale(x) != s) {
		fprintf(stderr, "scale %d, not %d\n", hr_last_scale(x), s);
		bad++;
	}
	hr_close(x);
	/* The device's thread released every state before it stopped. */
	if (c->dev && w % 2 == 1 && fake.states != 0) {
		fprintf(stderr, "rank %d: %d device states left\n", w,
		    fake.states);
		bad++;
	}
	if (c->dev && w % 2 == 1 && fake.destroyed != 1) {
		fprintf(stderr, "rank %d: the device not destroyed\n", w);
		bad++;
	}
	_exit(bad ? 1 : 0);
}

/* Forks W workers for f and returns how many failed. */
static int
run_workers(int W, void (*f)(const void *, int), const void *arg)
{
	pid_t pids[64];
	int w, st, failed = 0;

	for (w = 0; w < W; w++) {
		if ((pids[w] = fork()) == 0)
			f(arg, w);
	}
	for (w = 0; w < W; w++) {
		if (pids[w] == -1 || waitpid(pids[w], &st, 0) == -1 ||
		    !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	return failed;
}

static void
case_thunk(const void *arg, int w)
{
	case_worker(arg, w);
}

static void
check_case_dev(size_t n, int W, double density, enum support sup, int bits,
    int tensors, int dev)
{
	struct tcase c = { n, W, density, sup, bits, tensors, 0, dev };

	c.seed = n * 31 + (uint64_t)W * 7 + (uint64_t)(density * 1e6) +
	    (uint64_t)sup;
	CHECK(run_workers(W, case_thunk, &c) == 0);
}

static void
check_case(size_t n, int W, double density, enum support sup, int bits,
    int tensors)
{
	check_case_dev(n, W, density, sup, bits, tensors, 0);
}

/*
 * A device that fails its first encode at rank 1 of 3: that tensor fails
 * at every rank with the device's reason, the next one sums as it must;
 * and a device's gradient under another scheme is refused.
 */
static void
devfail_worker(const void *arg, int w)
{
	struct tcase c = { 40000, 3, 0.02, SUP_RANDOM, 32, 2, 99, 1 };
	struct hr_ctx *x;
	float *g[2], *want;
	size_t ns[2];
	int rcs[2], t, s, bad = 0;

	(void)arg;
	fake.fail = 1;
	if (open_worker(c.W, w, c.bits, &x) != 0)
		_exit(2);
	want = malloc(c.n * sizeof *want + 4);
	for (t = 0; t < 2; t++) {
		ns[t] = tensor_n(&c, t);
		g[t] = malloc(ns[t] * sizeof *g[t] + 4);
		gen(&c, w, t, g[t], ns[t]);
	}
	if (w == 1)
		hr_many(x, g, ns, 2, rcs, fake_submit, &fake);
	else
		hr_allreduce_many(x, g, ns, 2, rcs);
	if (rcs[0] != (w == 1 ? HR_ENOMEM : HR_EROUND) || rcs[1] != 0) {
		fprintf(stderr, "devfail rank %d: %d %d: %s\n", w, rcs[0],
		    rcs[1], hr_errmsg(x));
		bad++;
	}
	if (expect_sum(&c, 1, want, &s) != 0 ||
	    memcmp(want, g[1], ns[1] * 4) != 0) {
		fprintf(stderr, "devfail rank %d: tensor 1 wrong\n", w);
		bad++;
	}
	hr_close(x);
	_exit(bad ? 1 : 0);
}

/* hr_submit_dev: only homo, and only with a device attached. */
static void
check_dev_refused(void)
{
	struct hr_opts o;
	struct hr_ctx *x;
	char err[256];
	float g[4] = { 1, 0, 0, 2 };

	hr_opts_init(&o);
	o.host = "127.0.0.1";
	o.port = agg_port;
	o.world = 1;
	o.scheme = HR_SCHEME_DENSE;
	o.name = "test";
	CHECK(hr_open(&o, &x, err, sizeof err) == 0);
	CHECK(hr_submit_dev(x, g, 4, &fake) == HR_EINVAL);
	CHECK(strstr(hr_errmsg(x), "no device") != NULL);
	CHECK(hr_dev_attach(x, &fake_dev, &fake) == 0);
	CHECK(hr_dev_attach(x, &fake_dev, &fake) == 0);
	CHECK(hr_submit_dev(x, g, 4, &fake) == HR_EINVAL);
	CHECK(strstr(hr_errmsg(x), "only homo") != NULL);
	CHECK(hr_allreduce(x, g, 4) == 0 && g[3] == 2);
	fake.destroyed = 0;
	hr_close(x);
	CHECK(fake.destroyed == 1);
}

/* ---- bad input --------------------------------------------------------- */

/* A hand-driven worker: frames as a broken or hostile one sends them. */
static int
raw_open(struct conn *c, int W, int rank)
{
	struct hr_join j = { (uint32_t)W, (uint32_t)rank };
	struct frame_hdr h;
	const uint8_t *p;
	struct pw w;

	if (conn_open(c, "127.0.0.1", agg_port, worker_key, "raw", 5000) ==
	    -1)
		return -1;
	pw_init(&w);
	hr_join_enc(&w, &j);
	conn_send(c, HR_MSG_JOIN, 0, 0, w.p, w.len);
	pw_free(&w);
	if (conn_recv(c, &h, &p) == -1 || h.type != HR_MSG_JOINED)
		return -1;
	return 0;
}

static void
raw_begin(struct conn *c, const struct hr_begin *b)
{
	struct pw w;

	pw_init(&w);
	hr_begin_enc(&w, b);
	conn_send(c, HR_MSG_BEGIN, 0, 0, w.p, w.len);
	pw_free(&w);
}

static void
raw_chunk(struct conn *c, uint64_t id, uint32_t index, const void *data,
    size_t len)
{
	uint8_t buf[HR_CHUNK_HDR + 4096];

	hr_chunk_hdr_enc(buf, id, index, 0);
	memcpy(buf + HR_CHUNK_HDR, data, len);
	conn_send(c, HR_MSG_CHUNK, 0, 0, buf, HR_CHUNK_HDR + len);
}

/* Waits for READY of id: every rank has begun it. */
static int
raw_wait_ready(struct conn *c, uint64_t id)
{
	struct hr_ready rd;
	struct frame_hdr h;
	const uint8_t *p;

	while (conn_recv(c, &h, &p) == 0)
		if (h.type == HR_MSG_READY && hr_ready_dec(p, h.len, &rd) ==
		    0 && rd.id == id)
			return 0;
	return -1;
}

/* BYE, then waits for the aggregator to close: it has seen us leave. */
static void
raw_bye(struct conn *c)
{
	struct frame_hdr h;
	const uint8_t *p;

	conn_send(c, MSG_BYE, 0, 0, NULL, 0);
	while (conn_recv(c, &h, &p) == 0)
		;
	conn_close(c);
}

/* Waits for FAIL of id (or any FAIL with id 0); 0 if it came. */
static int
raw_expect_fail(struct conn *c, uint64_t id, char *text, size_t len)
{
	struct hr_fail_msg f;
	struct frame_hdr h;
	const uint8_t *p;
	int i;

	for (i = 0; i < 1000; i++) {
		if (conn_recv(c, &h, &p) == -1)
			return -1;
		if (h.type == HR_MSG_FAIL && hr_fail_dec(p, h.len, &f) == 0 &&
		    (f.id == id || f.id == 0)) {
			snprintf(text, len, "%s", f.text);
			return 0;
		}
	}
	return -1;
}

enum bad {
	BAD_SIZE,	/* rank 1 declares another n */
	BAD_SCALE,	/* rank 1 sends round 2 at another scale */
	BAD_ORDER,	/* rank 1 skips a chunk */
	BAD_LENGTH,	/* rank 1 sends a short chunk */
	BAD_SPARE,	/* rank 1's bitmap has bits past n */
	BAD_DIE,	/* rank 1 dies mid-round */
	BAD_SILENT,	/* rank 1 never sends: the aggregator's timeout */
	BAD_GARBAGE,	/* rank 1 sends a BEGIN that does not decode */
	BAD_ZJUNK,	/* rank 1's zstd chunk is not zstd */
	BAD_ZLONG,	/* rank 1's zstd chunk inflates past the chunk */
	BAD_ZSUM	/* rank 1 asks for zstd chunks in a SUM */
};

struct badcase {
	enum bad	 what;
	const char	*expect;	/* in rank 0's message */
};

#define BAD_N	10001		/* not a multiple of 8 */

/* Rank 0 writes a byte here once it has its verdict: rank 1 may go. */
static int sync_pipe[2];

/* Rank 1 of a bad case: a raw connection misbehaving. */
static void
bad_rank1(const struct badcase *bc)
{
	struct conn c;
	struct hr_begin b;
	uint8_t bits[4096];
	char text[512];
	size_t nb = hc_bitmap_bytes(BAD_N);

	if (raw_open(&c, 2, 1) == -1)
		_exit(2);
	memset(bits, 0, sizeof bits);
	bits[0] = 1;
	memset(&b, 0, sizeof b);
	b.id = 1;
	b.op = HR_OP_OR;
	b.exponent = 0;
	b.n = BAD_N;
	b.total = nb;
	b.chunk = 4096;		/* as open_worker's */
	switch (bc->what) {
	case BAD_SIZE:
		b.n = BAD_N - 9;
		b.total = hc_bitmap_bytes(b.n);
		raw_begin(&c, &b);
		break;
	case BAD_SCALE:
		/* Round 1 as it should be; round 2 lies about the scale. */
		raw_begin(&c, &b);
		raw_chunk(&c, 1, 0, bits, nb);
		{
			struct frame_hdr h;
			const uint8_t *p;
			struct hr_ready rd;
			struct hr_chunk ch;
			struct hc_params hp;
			struct hc_layout *L;
			uint8_t u[2048];
			int done = 0;

			memset(&rd, 0, sizeof rd);
			while (!done && conn_recv(&c, &h, &p) == 0)
				if (h.type == HR_MSG_DONE)
					done = 1;
				else if (h.type == HR_MSG_READY)
					hr_ready_dec(p, h.len, &rd);
				else if (h.type == HR_MSG_CHUNK &&
				    hr_chunk_dec(p, h.len, &ch) == 0 &&
				    ch.index == 0 && ch.len <= sizeof u)
					memcpy(u, ch.data, ch.len);
			if (!done)
				_exit(5);
			/* Rank 0's round 2 but for a scale off by one. */
			hc_params_init(&hp, BAD_N, 32);
			hp.seed = 7;
			if (hc_layout_new(&hp, u, &L) != 0)
				_exit(5);
			b.total = hc_layout_payload(L) * 4;
			hc_layout_free(L);
			hc_scale(rd.exponent, 2, 32, &b.scale);
			b.scale += 1;
		}
		b.id = 2;
		b.op = HR_OP_SUM;
		b.exponent = 0;
		b.cell_bits = 32;
		raw_begin(&c, &b);
		break;
	case BAD_ORDER:
		raw_begin(&c, &b);
		raw_chunk(&c, 1, 1, bits, nb);
		break;
	case BAD_LENGTH:
		raw_begin(&c, &b);
		raw_chunk(&c, 1, 0, bits, 1000);
		break;
	case BAD_SPARE:
		raw_begin(&c, &b);
		bits[nb - 1] = 0x80;	/* bit 10007 of 10001 */
		raw_chunk(&c, 1, 0, bits, nb);
		break;
	case BAD_DIE:
		raw_begin(&c, &b);
		if (raw_wait_ready(&c, 1) == -1)
			_exit(5);
		/* Half a chunk frame, and gone. */
		{
			uint8_t fr[PROTO_HDR_LEN + HR_CHUNK_HDR + 100];
			struct frame_hdr fh = { (uint32_t)(HR_CHUNK_HDR + nb),
			    HR_MSG_CHUNK, 0, 0 };

			memset(fr, 0, sizeof fr);
			proto_hdr_encode(fr, &fh);
			hr_chunk_hdr_enc(fr + PROTO_HDR_LEN, 1, 0, 0);
			/* A whole record of it: the frame is what is cut. */
			if (conn_write(&c, fr, sizeof fr) == -1)
				_exit(5);
		}
		_exit(0);	/* the connection closes with the process */
	case BAD_SILENT:
		break;
	case BAD_GARBAGE:
		raw_begin(&c, &b);
		if (raw_wait_ready(&c, 1) == -1)
			_exit(5);
		conn_send(&c, HR_MSG_BEGIN, 0, 0, "junk", 4);
		_exit(0);
	case BAD_ZJUNK:
		b.flags = HR_BEGIN_ZSTD;
		raw_begin(&c, &b);
		raw_chunk(&c, 1, 0, "\x28\xb5\x2f\xfd junk", 9);
		break;
	case BAD_ZLONG:
		/* A true frame, of 20 bytes more than the chunk. */
		{
			uint8_t z[512];
			size_t zn = ZSTD_compress(z, sizeof z, bits, nb + 20,
			    1);

			if (ZSTD_isError(zn) || zn >= nb)
				_exit(5);
			b.flags = HR_BEGIN_ZSTD;
			raw_begin(&c, &b);
			raw_chunk(&c, 1, 0, z, zn);
		}
		break;
	case BAD_ZSUM:
		/* Once rank 0 is in the group. */
		raw_begin(&c, &b);
		if (raw_wait_ready(&c, 1) == -1)
			_exit(5);
		b.id = 2;
		b.flags = HR_BEGIN_ZSTD;
		b.op = HR_OP_SUM;
		b.cell_bits = 32;
		b.exponent = 0;
		b.total = 4 * 100;
		raw_begin(&c, &b);
		_exit(0);	/* the aggregator closes on it */
	}
	/* The failure reaches this worker too. */
	if (raw_expect_fail(&c, b.id, text, sizeof text) == -1) {
		fprintf(stderr, "bad case %d: rank 1 got no FAIL\n", bc->what);
		_exit(1);
	}
	/* Leaving earlier would reset the group under rank 0. */
	if (read(sync_pipe[0], text, 1) != 1)
		_exit(6);
	raw_bye(&c);
	_exit(0);
}

/* Rank 0 of a bad case: an honest worker that must see HR_EROUND. */
static int
bad_rank0(const struct badcase *bc)
{
	struct hr_ctx *x;
	float g[BAD_N];
	int rc;

	memset(g, 0, sizeof g);
	g[5] = 1.5f;
	if (open_worker(2, 0, 32, &x) != 0)
		return 2;
	rc = hr_allreduce(x, g, BAD_N);
	if (rc != HR_EROUND || strstr(hr_errmsg(x), bc->expect) == NULL) {
		fprintf(stderr, "bad case %d: rank 0 got %d (%s), wanted "
		    "HR_EROUND with \"%s\"\n", bc->what, rc, hr_errmsg(x),
		    bc->expect);
		return 1;
	}
	if (g[5] != 1.5f || g[6] != 0) {
		fprintf(stderr, "bad case %d: gradient changed\n", bc->what);
		return 1;
	}
	/* A lost worker: nothing more until the caller says hr_rejoin. */
	if ((bc->what == BAD_DIE || bc->what == BAD_GARBAGE) &&
	    (hr_submit(x, g, BAD_N) != HR_EROUND ||
	    strstr(hr_errmsg(x), "hr_rejoin") == NULL)) {
		fprintf(stderr, "bad case %d: submit after a lost worker: %s\n",
		    bc->what, hr_errmsg(x));
		return 1;
	}
	hr_close(x);
	return 0;
}

static void
bad_thunk(const void *arg, int w)
{
	int rc;

	if (w == 0) {
		rc = bad_rank0(arg);
		if (write(sync_pipe[1], "", 1) != 1)
			rc = 7;
		_exit(rc);
	}
	bad_rank1(arg);
}

/* Two good workers: the aggregator still serves. */
static void
check_serving(void)
{
	check_case(3000, 2, 0.01, SUP_RANDOM, 32, 1);
}

/*
 * The same tensor with bitmaps raw, then zstd: the same sum, and at 1 %
 * density the zstd round costs at least half the bitmap less each way.
 */
static void
zindex_worker(const void *arg, int w)
{
	struct tcase c = { 200003, 2, 0.01, SUP_RANDOM, 32, 1, 5, 0 };
	struct hr_stats st[2];
	struct hr_opts o;
	struct hr_ctx *x;
	float *g[2];
	char err[256];
	size_t nb = hc_bitmap_bytes(c.n);
	int z, bad = 0;

	(void)arg;
	for (z = 0; z < 2; z++) {
		hr_opts_init(&o);
		o.host = "127.0.0.1";
		o.port = agg_port;
		o.key = worker_key;
		o.world = c.W;
		o.rank = w;
		o.seed = 7;
		o.name = "test";
		o.zindex = z;
		g[z] = malloc(c.n * sizeof *g[z]);
		gen(&c, w, 0, g[z], c.n);
		if (hr_open(&o, &x, err, sizeof err) != 0 ||
		    hr_allreduce(x, g[z], c.n) != 0) {
			fprintf(stderr, "zindex %d rank %d: %s\n", z, w,
			    x != NULL ? hr_errmsg(x) : err);
			_exit(2);
		}
		hr_get_stats(x, &st[z]);
		hr_close(x);
	}
	if (memcmp(g[0], g[1], c.n * sizeof *g[0]) != 0) {
		fprintf(stderr, "zindex rank %d: sums differ\n", w);
		bad++;
	}
	if (st[1].bytes_sent + nb / 2 > st[0].bytes_sent ||
	    st[1].bytes_received + nb / 2 > st[0].bytes_received) {
		fprintf(stderr, "zindex rank %d: sent %llu, received %llu "
		    "with zstd; %llu, %llu raw (bitmap %zu)\n", w,
		    (unsigned long long)st[1].bytes_sent,
		    (unsigned long long)st[1].bytes_received,
		    (unsigned long long)st[0].bytes_sent,
		    (unsigned long long)st[0].bytes_received, nb);
		bad++;
	}
	_exit(bad ? 1 : 0);
}

/* A worker with NaN: every worker gets HR_ENONFINITE, gradients kept. */
static void
nonfinite_worker(const void *arg, int w)
{
	struct hr_ctx *x;
	float g[100];
	int rc, i, bad = 0;

	for (i = 0; i < 100; i++)
		g[i] = i % 7 == 0 ? 0.25f * (float)i : 0;
	if (w == 1)
		g[3] = *(const float *)arg;
	if (open_worker(3, w, 32, &x) != 0)
		_exit(2);
	rc = hr_allreduce(x, g, 100);
	if (rc != HR_ENONFINITE || strstr(hr_errmsg(x), "NaN") == NULL) {
		fprintf(stderr, "nonfinite: rank %d got %d (%s)\n", w, rc,
		    hr_errmsg(x));
		bad = 1;
	}
	if (g[7] != 1.75f)
		bad = 1;
	/* The next tensor goes through. */
	g[3] = 0;
	if ((rc = hr_allreduce(x, g, 100)) != 0 || g[7] != 3 * 1.75f) {
		fprintf(stderr, "nonfinite: rank %d next round %d (%s)\n", w,
		    rc, hr_errmsg(x));
		bad = 1;
	}
	hr_close(x);
	_exit(bad);
}

/*
 * Three tensors in flight, the middle one of another length at rank 1:
 * only it fails, at both ranks; the others are summed exactly.
 */
static void
window_worker(const void *arg, int w)
{
	static const size_t ns0[3] = { 1000, 2000, 3000 };
	struct hr_ctx *x;
	float *g[3];
	size_t ns[3], i;
	int rcs[3], t, bad = 0;

	if (open_worker(2, w, 32, &x) != 0)
		_exit(2);
	for (t = 0; t < 3; t++) {
		ns[t] = ns0[t] + (t == 1 ? (size_t)w : 0);
		g[t] = calloc(ns[t], sizeof *g[t]);
		for (i = 0; i < ns[t]; i += 5)
			g[t][i] = 0.5f * (float)(w + 1);
	}
	hr_allreduce_many(x, g, ns, 3, rcs);
	if (rcs[0] != 0 || rcs[1] != HR_EROUND || rcs[2] != 0) {
		fprintf(stderr, "window: rank %d got %d %d %d\n", w, rcs[0],
		    rcs[1], rcs[2]);
		bad = 1;
	}
	for (t = 0; t < 3; t += 2)
		for (i = 0; i < ns[t]; i++)
			if (g[t][i] != (i % 5 == 0 ? 1.5f : 0.0f))
				bad = 1;
	if (g[1][5] != 0.5f * (float)(w + 1))
		bad = 1;	/* the failed one is left as it was */
	/* And the next one goes through. */
	if (hr_allreduce(x, g[0], ns[0]) != 0 || g[0][5] != 3.0f)
		bad = 1;
	hr_close(x);
	_exit(bad);
}

/* Raw rounds, as the CUDA path uses them: an OR with the MAX, a SUM. */
static void
raw_worker(const void *arg, int w)
{
	struct hr_ctx *x;
	uint8_t bits[3] = { 0, 0, 0 };
	uint32_t cells[5];
	int e = w == 0 ? -3 : 7, i, bad = 0;

	if (open_worker(3, w, 32, &x) != 0)
		_exit(2);
	bits[w] = (uint8_t)(1u << w);
	if (hr_reduce_raw(x, HR_OP_OR, bits, 20, &e, 0) != 0 || e != 7 ||
	    bits[0] != 1 || bits[1] != 2 || bits[2] != 4)
		bad = 1;
	for (i = 0; i < 5; i++)
		cells[i] = (uint32_t)(w == 1 ? -i : 10 * i);
	if (hr_reduce_raw(x, HR_OP_SUM, cells, 5, NULL, 3) != 0)
		bad = 1;
	for (i = 0; i < 5; i++)
		if (cells[i] != (uint32_t)(19 * i))
			bad = 1;
	/* Bits past n are refused, at every rank. */
	bits[2] = 0x80;
	e = 0;
	if (hr_reduce_raw(x, HR_OP_OR, bits, 20, &e, 0) != HR_EROUND)
		bad = 1;
	if (bad)
		fprintf(stderr, "raw: rank %d: %s\n", w, hr_errmsg(x));
	hr_close(x);
	_exit(bad);
}

/* The right key, and a wrong one. */
static void
check_auth(void)
{
	struct hr_opts o;
	struct hr_ctx *x = NULL;
	struct auth_key k;
	char err[256];

	auth_key_from(&k, "not the aggregator's key at all", 31);
	hr_opts_init(&o);
	o.host = "127.0.0.1";
	o.port = agg_port;
	o.key = &k;
	CHECK(hr_open(&o, &x, err, sizeof err) == HR_EAUTH);
	CHECK(x == NULL);
	o.port = 1;
	CHECK(hr_open(&o, &x, err, sizeof err) == HR_ENET);
	o.world = 0;
	CHECK(hr_open(&o, &x, err, sizeof err) == HR_EINVAL);
	o.world = 1;
	o.threads = HC_THREADS_MAX + 1;
	CHECK(hr_open(&o, &x, err, sizeof err) == HR_EINVAL);
	o.threads = -1;
	CHECK(hr_open(&o, &x, err, sizeof err) == HR_EINVAL);
	CHECK(x == NULL);
	/* GLEAM_REDUCE_THREADS: a number from 1 to 64, else ignored. */
	setenv("GLEAM_REDUCE_THREADS", "3", 1);
	hr_opts_init(&o);
	CHECK(o.threads == 3);
	setenv("GLEAM_REDUCE_THREADS", "65", 1);
	hr_opts_init(&o);
	CHECK(o.threads == 1);
	setenv("GLEAM_REDUCE_THREADS", "2x", 1);
	hr_opts_init(&o);
	CHECK(o.threads == 1);
	unsetenv("GLEAM_REDUCE_THREADS");
	hr_opts_init(&o);
	CHECK(o.threads == 1);
}

/* An aggregator in a child, with key k if not NULL; its port. */
static int
agg_start(double timeout, const struct auth_key *k, pid_t *pid)
{
	struct server_opts so;
	char line[32];
	int p[2];
	ssize_t n;

	CHECK(pipe(p) == 0);
	if ((*pid = fork()) == 0) {
		close(p[0]);
		memset(&so, 0, sizeof so);
		snprintf(so.host, sizeof so.host, "127.0.0.1");
		so.limits.max_frame = PROTO_MAX_FRAME_DEFAULT;
		so.limits.max_bytes = (uint64_t)1 << 30;
		so.limits.max_streams = 256;
		so.limits.timeout = timeout;
		so.max_workers = 64;
		so.foreground = 1;
		so.ready_fd = p[1];
		if (k != NULL)
			so.key = *k;
		auth_init();
		log_setlevel(LL_ERROR);
		if (freopen("/dev/null", "w", stderr) == NULL)
			_exit(6);
		_exit(server_run(&so));
	}
	close(p[1]);
	n = read(p[0], line, sizeof line - 1);
	close(p[0]);
	CHECK(n > 0);
	line[n > 0 ? n : 0] = '\0';
	return atoi(line);
}

static void
agg_stop(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0);
}

/* ---- sealed connections ------------------------------------------------ */

static int
open_at(int port, const struct auth_key *k, int W, int rank, int scheme,
    struct hr_ctx **x, char *err, size_t errlen)
{
	struct hr_opts o;

	hr_opts_init(&o);
	o.host = "127.0.0.1";
	o.port = port;
	o.key = k;
	o.world = W;
	o.rank = rank;
	o.scheme = scheme;
	o.chunk = 4096;
	o.timeout_ms = 20000;
	o.seed = 7;
	o.name = "test";
	o.zindex = rank == 0;
	return hr_open(&o, x, err, errlen);
}

/*
 * Every scheme's round through the aggregator without a key and through
 * the one with: the very same bits.  The exact schemes with W of 3; the
 * float sums at the aggregator (dense, float) with W of 2, since a sum of
 * three floats depends on the order the chunks come in, key or not.
 */
static void
same_worker(const void *arg, int w)
{
	static const int exact[] = { HR_SCHEME_HOMO, HR_SCHEME_GATHER,
	    HR_SCHEME_OMNI, -1 }, fsum[] = { HR_SCHEME_DENSE,
	    HR_SCHEME_FLOAT, -1 };
	struct tcase c = { 70001, 3, 0.03, SUP_RANDOM, 32, 1, 11, 0 };
	const int *schemes;
	struct hr_stats st[2];
	struct hr_ctx *x;
	float *g[2];
	char err[256];
	size_t i;
	int k, bad = 0;

	c.W = *(const int *)arg;
	schemes = c.W == 2 ? fsum : exact;
	g[0] = malloc(c.n * sizeof *g[0]);
	g[1] = malloc(c.n * sizeof *g[1]);
	for (i = 0; schemes[i] != -1; i++) {
		for (k = 0; k < 2; k++) {
			gen(&c, w, (int)i, g[k], c.n);
			if (open_at(k ? key_port : plain_port, k ? &test_key :
			    NULL, c.W, w, schemes[i], &x, err, sizeof err) !=
			    0 || hr_allreduce(x, g[k], c.n) != 0) {
				fprintf(stderr, "sealed %d: %s rank %d: %s\n",
				    k, hr_scheme_name(schemes[i]), w,
				    x != NULL ? hr_errmsg(x) : err);
				_exit(2);
			}
			hr_get_stats(x, &st[k]);
			hr_close(x);
			x = NULL;
		}
		if (memcmp(g[0], g[1], c.n * sizeof *g[0]) != 0) {
			fprintf(stderr, "sealed: %s rank %d: sums differ\n",
			    hr_scheme_name(schemes[i]), w);
			bad++;
		}
		/* Tags (16 bytes a record) cost next to nothing. */
		if (st[1].bytes_sent < st[0].bytes_sent ||
		    st[1].bytes_sent > st[0].bytes_sent + st[0].bytes_sent /
		    20 + 4096) {
			fprintf(stderr, "sealed: %s rank %d: %llu bytes sent, "
			    "%llu in the clear\n", hr_scheme_name(schemes[i]),
			    w, (unsigned long long)st[1].bytes_sent,
			    (unsigned long long)st[0].bytes_sent);
			bad++;
		}
	}
	_exit(bad ? 1 : 0);
}

/*
 * Rank 1 first comes with the wrong key, then with none: refused both
 * times, and rank 0 never hears of it; with the key it joins and the
 * round is summed.
 */
static void
wrongkey_worker(const void *arg, int w)
{
	struct auth_key bad;
	struct hr_ctx *x = NULL;
	char err[256];
	float g[100];
	int i, rc;

	(void)arg;
	for (i = 0; i < 100; i++)
		g[i] = i % 3 == 0 ? 0.5f * (float)(w + 1) : 0;
	if (w == 1) {
		auth_key_from(&bad, "a key, but not the aggregator's", 31);
		rc = open_at(key_port, &bad, 2, 1, HR_SCHEME_HOMO, &x, err,
		    sizeof err);
		if (rc != HR_EAUTH || x != NULL ||
		    strstr(err, "wrong key") == NULL) {
			fprintf(stderr, "wrong key: %d: %s\n", rc, err);
			_exit(1);
		}
		rc = open_at(key_port, NULL, 2, 1, HR_SCHEME_HOMO, &x, err,
		    sizeof err);
		if (rc != HR_EAUTH || x != NULL ||
		    strstr(err, "requires a key") == NULL) {
			fprintf(stderr, "no key: %d: %s\n", rc, err);
			_exit(1);
		}
	}
	if (open_at(key_port, &test_key, 2, w, HR_SCHEME_HOMO, &x, err,
	    sizeof err) != 0 || hr_allreduce(x, g, 100) != 0) {
		fprintf(stderr, "wrong key: rank %d: %s\n", w,
		    x != NULL ? hr_errmsg(x) : err);
		_exit(2);
	}
	for (i = 0; i < 100; i++)
		if (g[i] != (i % 3 == 0 ? 1.5f : 0.0f))
			_exit(3);
	hr_close(x);
	_exit(0);
}

/*
 * A record that does not open ends its connection, without a word: one
 * with a byte changed, and one sent again.
 */
static void
check_forged(void)
{
	struct hr_join j = { 2, 0 };
	uint8_t rec[CHAN_HDR + PROTO_HDR_LEN + 64 + CHAN_TAG];
	struct frame_hdr h = { 0, HR_MSG_JOIN, 0, 0 }, rh;
	const uint8_t *p;
	struct conn c;
	struct pw w;
	size_t n;
	int how;

	for (how = 0; how < 2; how++) {
		CHECK(conn_open(&c, "127.0.0.1", key_port, &test_key, "forger",
		    5000) == 0);
		CHECK(c.ch.sealed);
		pw_init(&w);
		hr_join_enc(&w, &j);
		h.len = (uint32_t)w.len;
		proto_hdr_encode(rec + CHAN_HDR, &h);
		memcpy(rec + CHAN_HDR + PROTO_HDR_LEN, w.p, w.len);
		n = chan_seal(&c.ch, rec, rec + CHAN_HDR,
		    PROTO_HDR_LEN + w.len);
		pw_free(&w);
		if (how == 0)
			rec[CHAN_HDR + 3] ^= 0x20;	/* in the frame's type */
		else {
			/* Once as it is: JOINED comes; then again. */
			CHECK(write(c.fd, rec, n) == (ssize_t)n);
			CHECK(conn_recv(&c, &rh, &p) == 0 &&
			    rh.type == HR_MSG_JOINED);
		}
		CHECK(write(c.fd, rec, n) == (ssize_t)n);
		CHECK(conn_recv(&c, &rh, &p) == -1 && c.fail == CONN_NET);
		conn_close(&c);
	}
}

/*
 * Sealed connections, to an aggregator with a key: the correctness cases
 * through it, sums checked bit for bit; every scheme the same bits as in
 * the clear; the wrong key refused; forged records.
 */
static void
check_sealed(void)
{
	auth_key_from(&test_key, "the aggregator's test key, long enough",
	    38);
	key_port = agg_start(1.0, &test_key, &key_pid);
	agg_port = key_port;
	worker_key = &test_key;
	memset(&fake, 0, sizeof fake);	/* as the forks before left it */
	check_case(1 << 20, 3, 0.01, SUP_RANDOM, 32, 1);
	check_case(200003, 4, 0.05, SUP_RANDOM, 32, 1);
	check_case(20011, 2, 0.5, SUP_RANDOM, 64, 1);
	check_case(50000, 3, 0.02, SUP_RANDOM, 32, 12);
	check_case_dev(50000, 3, 0.02, SUP_RANDOM, 32, 6, 1);
	CHECK(run_workers(3, raw_worker, NULL) == 0);
	CHECK(run_workers(2, zindex_worker, NULL) == 0);
	CHECK(run_workers(3, same_worker, (int []){ 3 }) == 0);
	CHECK(run_workers(2, same_worker, (int []){ 2 }) == 0);
	CHECK(run_workers(2, wrongkey_worker, NULL) == 0);
	check_forged();
	/* It still serves. */
	check_case(3000, 2, 0.01, SUP_RANDOM, 32, 1);
	worker_key = NULL;
	agg_port = plain_port;
	agg_stop(key_pid);
}

/* The payload of the last CHUNK frame in out, and whether a FAIL came. */
static long
out_chunk(struct evbuffer *out, uint8_t *buf, size_t cap, int *failed)
{
	uint8_t hb[PROTO_HDR_LEN];
	struct frame_hdr h;
	long got = -1;

	*failed = 0;
	while (evbuffer_get_length(out) >= PROTO_HDR_LEN) {
		evbuffer_copyout(out, hb, sizeof hb);
		proto_hdr_decode(hb, &h);
		evbuffer_drain(out, PROTO_HDR_LEN);
		if (h.type == HR_MSG_FAIL)
			*failed = 1;
		if (h.type == HR_MSG_CHUNK && h.len >= HR_CHUNK_HDR &&
		    h.len - HR_CHUNK_HDR <= cap) {
			evbuffer_drain(out, HR_CHUNK_HDR);
			got = (long)(h.len - HR_CHUNK_HDR);
			evbuffer_remove(out, buf, (size_t)got);
		} else
			evbuffer_drain(out, h.len);
	}
	return got;
}

/*
 * The aggregator merges a chunk where the input buffer holds it, in
 * pieces of any size (agg_input_chunk, as the server reads): cells split
 * between pieces, first arrivals and merges, every operation, must give
 * the bytes that one contiguous piece gives; and a bitmap's spare bit in
 * the last piece still fails the round.
 */
static void
test_agg_pieces(void)
{
	static const int ops[] = { HR_OP_OR, HR_OP_SUM, HR_OP_SUM, HR_OP_FSUM,
	    HR_OP_GATHER };
	static const size_t pieces[] = { 1, 3, 7, 13, 1000 };
	struct agg_limits lim = { 2, PROTO_MAX_FRAME_DEFAULT, 1 << 30, 16,
	    30 };
	enum { LEN = 1000 };
	uint8_t a[LEN], b[LEN], want[LEN], got[LEN], fr[HR_CHUNK_HDR + LEN];
	struct evbuffer *out[2], *eb;
	struct agg_member *m[2];
	struct hr_begin bg;
	struct hr_join j;
	struct agg *ag;
	struct pw w;
	char err[256];
	uint64_t st = 7, x, y;
	uint32_t x32, y32;
	float fx, fy;
	size_t o, pi, i, off, len, cs;
	int r, order, bad, failed, ok = 1;
	long n;

	for (o = 0; o < sizeof ops / sizeof ops[0]; o++)
	for (pi = 0; pi < sizeof pieces / sizeof pieces[0]; pi++)
	for (order = 0; order < 2; order++)
	for (bad = 0; bad < (ops[o] == HR_OP_OR ? 2 : 1); bad++) {
		ag = agg_new(&lim);
		for (r = 0; r < 2; r++) {
			out[r] = evbuffer_new();
			m[r] = agg_member_new(ag, out[r], "t");
			j.world = 2;
			j.rank = (uint32_t)r;
			pw_init(&w);
			hr_join_enc(&w, &j);
			ok &= agg_input(ag, m[r], HR_MSG_JOIN, w.p, w.len, err,
			    sizeof err) == 0;
			pw_free(&w);
		}
		memset(&bg, 0, sizeof bg);
		bg.id = 1;
		bg.op = (uint8_t)ops[o];
		bg.cell_bits = ops[o] == HR_OP_SUM ? (o == 1 ? 32 : 64) : 0;
		bg.total = LEN;
		bg.n = ops[o] == HR_OP_OR ? 8 * LEN - 3 : LEN / 4;
		bg.chunk = 1024;
		for (r = 0; r < 2; r++) {
			pw_init(&w);
			hr_begin_enc(&w, &bg);
			ok &= agg_input(ag, m[r], HR_MSG_BEGIN, w.p, w.len, err,
			    sizeof err) == 0;
			pw_free(&w);
		}
		for (i = 0; i < LEN; i++) {
			a[i] = (uint8_t)rnd(&st);
			b[i] = (uint8_t)rnd(&st);
		}
		if (ops[o] == HR_OP_FSUM)
			for (i = 0; i < LEN; i += 4) {
				fx = (float)(rnd(&st) % 2001) / 7 - 100;
				fy = (float)(rnd(&st) % 2001) / 3 - 300;
				memcpy(a + i, &fx, 4);
				memcpy(b + i, &fy, 4);
			}
		if (ops[o] == HR_OP_OR) {
			a[LEN - 1] &= 0x1f;
			b[LEN - 1] &= bad ? 0xff : 0x1f;
			b[LEN - 1] |= bad ? 0x80 : 0;
		}
		cs = bg.cell_bits ? bg.cell_bits / 8u : ops[o] == HR_OP_FSUM ?
		    4 : 1;
		for (i = 0; i < LEN; i += cs)
			switch (ops[o]) {
			case HR_OP_OR:
				want[i] = a[i] | b[i];
				break;
			case HR_OP_SUM:
				if (cs == 4) {
					memcpy(&x32, a + i, 4);
					memcpy(&y32, b + i, 4);
					x32 += y32;
					memcpy(want + i, &x32, 4);
				} else {
					memcpy(&x, a + i, 8);
					memcpy(&y, b + i, 8);
					x += y;
					memcpy(want + i, &x, 8);
				}
				break;
			case HR_OP_FSUM:
				memcpy(&fx, a + i, 4);
				memcpy(&fy, b + i, 4);
				fx += fy;
				memcpy(want + i, &fx, 4);
				break;
			case HR_OP_GATHER:
				want[i] = b[i];	/* what rank 0 gets */
				break;
			}
		/* Rank 0 in one piece, rank 1 in pieces; either first. */
		for (r = order; r < order + 2; r++) {
			hr_chunk_hdr_enc(fr, 1, 0, 0);
			if (r % 2 == 0) {
				memcpy(fr + HR_CHUNK_HDR, a, LEN);
				ok &= agg_input(ag, m[0], HR_MSG_CHUNK, fr,
				    sizeof fr, err, sizeof err) == 0;
				continue;
			}
			eb = evbuffer_new();
			for (off = 0; off < LEN; off += len) {
				len = LEN - off < pieces[pi] ? LEN - off :
				    pieces[pi];
				evbuffer_add_reference(eb, b + off, len, NULL,
				    NULL);
			}
			evbuffer_add(eb, "trailing", 8);
			ok &= agg_input_chunk(ag, m[1], fr, eb, LEN) == 0;
			ok &= evbuffer_get_length(eb) == LEN + 8;
			evbuffer_free(eb);
		}
		n = out_chunk(out[0], got, sizeof got, &failed);
		if (bad)
			ok &= failed && n == -1;
		else
			ok &= !failed && n == LEN && memcmp(got, want, LEN) == 0;
		if (!ok) {
			fprintf(stderr, "agg pieces: op %d, pieces of %zu, "
			    "order %d, bad %d: failed %d, %ld bytes\n",
			    ops[o], pieces[pi], order, bad, failed, n);
			ok = 1;
			t_fail++;
		}
		for (r = 0; r < 2; r++) {
			evbuffer_free(out[r]);
			agg_member_free(ag, m[r]);
		}
		agg_free(ag);
	}
	CHECK(ok);
}

int
main(void)
{
	static const struct badcase bad[] = {
		{ BAD_SIZE, "rank 1 sends or of n 9992" },
		{ BAD_SCALE, "scale" },
		{ BAD_ORDER, "chunk 1" },
		{ BAD_LENGTH, "1000 bytes" },
		{ BAD_SPARE, "bits set past its end" },
		{ BAD_DIE, "worker rank 1" },
		{ BAD_SILENT, "timed out" },
		{ BAD_GARBAGE, "worker rank 1" },
		{ BAD_ZJUNK, "not zstd frames of the chunk's length" },
		{ BAD_ZLONG, "not zstd frames of the chunk's length" },
		{ BAD_ZSUM, "worker rank 1" },
	};
	static const size_t sizes[] = { 1, 7, 1023, 1025, 4099, 65536 + 3 };
	static const double dens[] = { 0.00001, 0.001, 0.05, 0.5 };
	static const int Ws[] = { 1, 2, 3, 5, 16 };
	float nan = NAN, inf = -INFINITY;
	size_t i, j;

	log_init("test_hreduce", LL_ERROR);
	signal(SIGPIPE, SIG_IGN);
	auth_init();
	test_agg_pieces();
	agg_port = plain_port = agg_start(1.0, NULL, &agg_pid);

	/* make tsan: only the device's cases, whose thread it checks. */
	if (getenv("HR_TEST_DEV_ONLY") != NULL) {
		check_case_dev(50000, 3, 0.02, SUP_RANDOM, 32, 6, 1);
		check_case_dev(3000, 2, 0, SUP_ZERO, 32, 2, 1);
		CHECK(run_workers(3, devfail_worker, NULL) == 0);
		check_dev_refused();
		agg_stop(agg_pid);
		return t_done("test_hreduce");
	}

	/* Sizes tiny to a million, not multiples of the block or byte. */
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		check_case(sizes[i], 2, 0.05, SUP_RANDOM, 32, 1);
	check_case(1 << 20, 3, 0.01, SUP_RANDOM, 32, 1);
	/* Densities 0.001% to 50%, int32 and int64 cells. */
	for (i = 0; i < sizeof dens / sizeof dens[0]; i++) {
		check_case(200003, 4, dens[i], SUP_RANDOM, 32, 1);
		check_case(20011, 2, dens[i], SUP_RANDOM, 64, 1);
	}
	/* Identical and disjoint supports, all zeros, W from 1 to 16. */
	for (i = 0; i < sizeof Ws / sizeof Ws[0]; i++) {
		check_case(30000, Ws[i], 0.02, SUP_SAME, 32, 1);
		check_case(30000, Ws[i], 0.3, SUP_DISJOINT, 32, 1);
		check_case(5000, Ws[i], 0, SUP_ZERO, 32, 1);
	}
	/* Many tensors in flight, of different sizes. */
	check_case(50000, 3, 0.02, SUP_RANDOM, 32, 12);
	check_case(9000, 2, 0.1, SUP_SAME, 64, 7);

	/* Gradients on a device, ranks of both kinds in one group. */
	check_case_dev(50000, 3, 0.02, SUP_RANDOM, 32, 6, 1);
	check_case_dev(1025, 4, 0.3, SUP_RANDOM, 64, 3, 1);
	check_case_dev(3000, 2, 0, SUP_ZERO, 32, 2, 1);
	CHECK(run_workers(3, devfail_worker, NULL) == 0);
	check_dev_refused();

	CHECK(run_workers(3, raw_worker, NULL) == 0);
	CHECK(run_workers(2, zindex_worker, NULL) == 0);

	/* A round that fails among others in flight fails alone. */
	CHECK(run_workers(2, window_worker, NULL) == 0);

	/* NaN and Inf: a clear error at every worker, then on as before. */
	CHECK(run_workers(3, nonfinite_worker, &nan) == 0);
	CHECK(run_workers(3, nonfinite_worker, &inf) == 0);

	/* Bad input: fails at every worker; the next round is served. */
	for (j = 0; j < sizeof bad / sizeof bad[0]; j++) {
		CHECK(pipe(sync_pipe) == 0);
		CHECK(run_workers(2, bad_thunk, &bad[j]) == 0);
		close(sync_pipe[0]);
		close(sync_pipe[1]);
		check_serving();
	}
	check_auth();
	check_sealed();
	agg_stop(agg_pid);
	return t_done("test_hreduce");
}
