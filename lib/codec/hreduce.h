/*
 * hreduce: the worker side of gleam-reduce; gleam-hreduce(3) is the manual.
 *
 * A worker connects to a gleam-reduce(1) aggregator, joins a group of
 * `world` ranks as `rank`, and sums float32 gradients with the other
 * ranks in place:
 *
 *	hr_allreduce(ctx, grad, n)	one tensor, blocking
 *	hr_submit / hr_wait		many in flight: round 1 of one tensor
 *					overlaps round 2 of the one before
 *	hr_allreduce_many		a list, through submit and wait
 *
 * With the default scheme, HR_SCHEME_HOMO, a tensor goes through the
 * homomorphic codec of hcodec.h: the aggregator ORs the bitmaps, takes
 * the MAX of the exponents, and sums the sketches, chunk by chunk, never
 * decoding; every worker decodes the same sum, bit for bit the dense sum
 * of the same fixed-point numbers (hc_dense_fixed) converted back to
 * float.  Every rank must submit the same tensors, of the same lengths,
 * in the same order.
 *
 * The other schemes are the peers the benchmarks compare against: dense
 * float32 allreduce, sparse allgather of (index, value) pairs,
 * OmniReduce-style nonzero blocks of 256 values, and the published
 * float-cell sketch with a median estimate for what peeling cannot reach
 * (lossy).  Their sums are float sums, not the fixed-point ones.
 *
 * Errors.  A round that fails at the aggregator (workers disagree on
 * sizes or scales, a malformed chunk, a worker gone, a timeout) fails at
 * every worker with HR_EROUND and the aggregator's reason; the context
 * stays usable.  After a worker was lost every rank's tensors in flight
 * fail, and so does every submit, until hr_rejoin: the caller calls it
 * once all ranks stand at the same tensor again (the next step, say),
 * and the next submit joins the group afresh.  NaN or Inf in any worker's gradient fails that tensor
 * with HR_ENONFINITE at every worker, the gradients untouched (the
 * round-0 exponent tells all of them).  HR_ENET and HR_ETIMEOUT leave the
 * context dead: close it.  A failed tensor's gradient is left as it was.
 * Functions return 0 or a negative HR_E* code; hr_errmsg says more.  A
 * context belongs to one thread at a time.
 */
#ifndef GLEAM_HREDUCE_H
#define GLEAM_HREDUCE_H

#include <stddef.h>
#include <stdint.h>

/* A loaded key: the toolkit's own programs pass one; others give keyfile. */
struct auth_key;

#define HR_DEFAULT_PORT	7385	/* gleam-reduce's (gleam-serve 7383, gleam-sched 7384) */
#define HR_WINDOW_MAX	64

/* How the aggregator merges a round (hr_reduce_raw's op). */
enum hr_op {
	HR_OP_OR = 1,		/* bytes ORed; exponents merged by MAX */
	HR_OP_SUM = 2,		/* wrapping integer sum of cell_bits cells */
	HR_OP_FSUM = 3,		/* float32 sum, in arrival order (peers only) */
	HR_OP_GATHER = 4	/* each rank's bytes relayed to the others */
};

enum hr_scheme {
	HR_SCHEME_HOMO = 0,	/* ours: exact, homomorphic */
	HR_SCHEME_DENSE = 1,	/* float32 sum of all n values */
	HR_SCHEME_GATHER = 2,	/* (u32 index, f32 value) pairs, relayed */
	HR_SCHEME_OMNI = 3,	/* OR of nonzero blocks, then their sum */
	HR_SCHEME_FLOAT = 4	/* float cells, median where peeling stalls */
};

enum hr_rc {
	HR_OK = 0,
	HR_EINVAL = -1,		/* a bad argument */
	HR_ENOMEM = -2,
	HR_ENET = -3,		/* connection lost or refused: context dead */
	HR_EAUTH = -4,		/* the aggregator refused the key */
	HR_EROUND = -5,		/* the round failed at the aggregator */
	HR_ENONFINITE = -6,	/* NaN or Inf in some worker's gradient */
	HR_ETIMEOUT = -7,	/* nothing heard in time: context dead */
	HR_ECODEC = -8		/* the codec refused (hc_strerror in errmsg) */
};

struct hr_opts {
	const char	*host;
	int		 port;		/* default HR_DEFAULT_PORT */
	const char	*keyfile;	/* a key file, as gleam-reduce -k */
	const struct auth_key *key;	/* loaded already; wins over keyfile */
	const char	*name;		/* in the aggregator's logs */
	int		 world;		/* ranks in the group, 1..1024 */
	int		 rank;		/* 0..world-1 */
	int		 scheme;	/* enum hr_scheme */
	int		 cell_bits;	/* 32 (default) or 64 */
	uint32_t	 chunk;		/* bytes per chunk, default 1 MiB */
	int		 window;	/* tensors in flight, default 4 */
	int		 timeout_ms;	/* silence that kills, default 60000 */
	uint64_t	 seed;		/* of the codec's row hash */
	/*
	 * HOMO, FLOAT: threads the codec may use (hcodec.h's
	 * hc_params.threads), 1..HC_THREADS_MAX; default 1, or
	 * GLEAM_REDUCE_THREADS from the environment.  The sums do not
	 * depend on it.
	 */
	int		 threads;
	/*
	 * HOMO: bitmap chunks travel as zstd frames where that is shorter,
	 * both ways (HR_BEGIN_ZSTD); default 0, 1 with GLEAM_REDUCE_ZINDEX=1
	 * in the environment.  It saves bytes and costs CPU, the
	 * aggregator's most; the sums do not depend on it.
	 */
	int		 zindex;
};

/* What a context has done; bytes count the framing too. */
struct hr_stats {
	uint64_t	tensors;	/* completed, failed ones included */
	uint64_t	failed;
	uint64_t	bytes_sent;
	uint64_t	bytes_received;
	uint64_t	union_count;	/* HOMO, FLOAT: |U| of the last tensor */
	uint64_t	core_count;	/* HOMO: |C|; FLOAT: estimated ones */
	uint64_t	payload_bytes;	/* of the last tensor's round 2 */
};

struct hr_ctx;

void		 hr_opts_init(struct hr_opts *);
/* Connects, shakes hands, joins; on failure err says why. */
int		 hr_open(const struct hr_opts *, struct hr_ctx **, char *err,
		    size_t errlen);
/* The same from "host:port" and a key file (NULL: none), for bindings. */
int		 hr_open_addr(const char *addr, const char *keyfile, int world,
		    int rank, int scheme, struct hr_ctx **, char *err,
		    size_t errlen);
void		 hr_close(struct hr_ctx *);

int		 hr_allreduce(struct hr_ctx *, float *grad, size_t n);
/* A ticket (> 0) to wait for, or a negative HR_E* code. */
int		 hr_submit(struct hr_ctx *, float *grad, size_t n);
int		 hr_wait(struct hr_ctx *, int ticket);
/* rcs (count of them, may be NULL) gets each tensor's result. */
int		 hr_allreduce_many(struct hr_ctx *, float *const *grads,
		    const size_t *ns, size_t count, int *rcs);

/*
 * One round alone, in place, for codecs outside this library (the CUDA
 * one of hcodec_cuda.h): op HR_OP_OR ORs n bits and
 * merges *exponent by MAX; HR_OP_SUM sums n cells of the context's
 * cell_bits at scale.  It takes a tensor's place in the stream numbering:
 * every rank must make the same calls in the same order.
 */
int		 hr_reduce_raw(struct hr_ctx *, int op, void *buf, uint64_t n,
		    int *exponent, int scale);
void		 hr_get_opts(const struct hr_ctx *, struct hr_opts *);
/* After a lost worker: every rank is at the same tensor again. */
void		 hr_rejoin(struct hr_ctx *);

const char	*hr_errmsg(const struct hr_ctx *);
const char	*hr_strerror(int);
void		 hr_get_stats(const struct hr_ctx *, struct hr_stats *);
/* The scale HOMO used for the last tensor (for tests and peers). */
int		 hr_last_scale(const struct hr_ctx *);
const char	*hr_scheme_name(int);
int		 hr_scheme_parse(const char *);

#endif
