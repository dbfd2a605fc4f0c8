/*
 * Tensor maps: cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col,
 * cuTensorMapEncodeIm2colWide and cuTensorMapReplaceAddress.  The real
 * driver encodes them on the host, into a 128-byte CUtensorMap whose
 * format NVIDIA does not document, so this library cannot: a call is one
 * round trip (R_TMAP_ENCODE) in which the server's driver encodes and the
 * map comes back, unless the same encoding was asked for before (below).  The global address is never dereferenced, only
 * encoded, and the program's device pointers already are the server's
 * addresses.  cuDNN 9 and cuBLASLt look these up for their Hopper
 * kernels; while they were missing or stubs, PyTorch's conv2d through
 * cuDNN failed with CUDNN_STATUS_INTERNAL_ERROR.
 *
 * What the driver would read through a pointer is read here and sent by
 * value; a pointer it needs and is NULL fails here, as the driver's own
 * argument checks would (the server never passes a NULL array on).  The
 * rest (enumerations, sizes, alignments) is the server's driver's to judge,
 * so that the error codes are the driver's.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

/*
 * Encodings kept (issue 25: XLA's Triton kernels encode the same few maps
 * every step, a round trip each).  An encoder is a function of its
 * arguments, the map's alignment and the bytes it leaves as they were, so
 * an entry keeps, for one context, encoder, alignment and argument bytes:
 * the map it gave for the input bytes it was given, and, once the same
 * arguments come with other input bytes, which bits the encoder sets and
 * to what (the bits equal in its answers for input bytes and their
 * complement; the rest it passed through).  A hit needs no round trip;
 * cuTensorMapReplaceAddress, which reads the map it changes, is never
 * kept.  Failures are not kept either.
 */
#define TM_KEEP		64

struct tm_entry {
	uint64_t	 ctx, use;
	uint32_t	 which, align, len;
	int		 masked;	/* set and mask known */
	unsigned char	 in[TMAP_BYTES];	/* !masked: the input bytes */
	unsigned char	 out[TMAP_BYTES];	/* !masked: the answer; masked:
						   the bits the encoder sets */
	unsigned char	 mask[TMAP_BYTES];	/* the bits it sets */
	unsigned char	*args;
};

static struct {
	pthread_mutex_t	 lock;
	struct tm_entry	 e[TM_KEEP];
	uint64_t	 clock;
} TM = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The entry for the key, or NULL; TM.lock held. */
static struct tm_entry *
tm_find(uint64_t ctx, uint32_t which, uint32_t align, const struct pw *w)
{
	struct tm_entry *e;
	int i;

	for (i = 0; i < TM_KEEP; i++) {
		e = &TM.e[i];
		if (e->args != NULL && e->ctx == ctx && e->which == which &&
		    e->align == align && e->len == w->len &&
		    memcmp(e->args, w->p, w->len) == 0)
			return e;
	}
	return NULL;
}

/*
 * A kept answer for map (its input bytes there) into ans: 1; -1 where the
 * arguments are kept with other input bytes (and which bits are the
 * encoder's is not known yet); 0 where they are not kept.
 */
static int
tm_hit(uint64_t ctx, uint32_t which, uint32_t align, const struct pw *w,
    const unsigned char *map, unsigned char *ans)
{
	struct tm_entry *e;
	int i, hit = 0;

	pthread_mutex_lock(&TM.lock);
	if ((e = tm_find(ctx, which, align, w)) != NULL) {
		hit = -1;
		if (e->masked) {
			for (i = 0; i < TMAP_BYTES; i++)
				ans[i] = (unsigned char)((e->out[i] &
				    e->mask[i]) | (map[i] & ~e->mask[i]));
			hit = 1;
		} else if (memcmp(e->in, map, TMAP_BYTES) == 0) {
			memcpy(ans, e->out, TMAP_BYTES);
			hit = 1;
		}
		if (hit)
			e->use = ++TM.clock;
	}
	pthread_mutex_unlock(&TM.lock);
	return hit;
}

/*
 * Keeps the answer ans to input map.  Where the arguments were kept with
 * other input bytes, the answer to their complement (cmp, from a second
 * call) gives the bits the encoder sets.
 */
static void
tm_keep(uint64_t ctx, uint32_t which, uint32_t align, const struct pw *w,
    const unsigned char *map, const unsigned char *ans,
    const unsigned char *cmp)
{
	struct tm_entry *e, *old = NULL;
	int i;

	pthread_mutex_lock(&TM.lock);
	if ((e = tm_find(ctx, which, align, w)) == NULL) {
		for (i = 0; i < TM_KEEP; i++)
			if (old == NULL || TM.e[i].args == NULL ||
			    (old->args != NULL && TM.e[i].use < old->use))
				old = &TM.e[i];
		e = old;
		free(e->args);
		memset(e, 0, sizeof *e);
		if ((e->args = malloc(w->len + 1)) == NULL) {
			pthread_mutex_unlock(&TM.lock);
			return;
		}
		memcpy(e->args, w->p, w->len);
		e->ctx = ctx;
		e->which = which;
		e->align = align;
		e->len = (uint32_t)w->len;
	}
	e->use = ++TM.clock;
	if (cmp != NULL) {
		for (i = 0; i < TMAP_BYTES; i++) {
			e->mask[i] = (unsigned char)~(ans[i] ^ cmp[i]);
			e->out[i] = (unsigned char)(ans[i] & e->mask[i]);
		}
		e->masked = 1;
	} else if (!e->masked) {
		memcpy(e->in, map, TMAP_BYTES);
		memcpy(e->out, ans, TMAP_BYTES);
	}
	pthread_mutex_unlock(&TM.lock);
}

/* One encoding by the server's driver: in's bytes in, the map into ans. */
static CUresult
tmap_remote(uint64_t ctx, uint32_t which, uint32_t align,
    const unsigned char *map, const struct pw *w, unsigned char *ans)
{
	struct rpc_val in[5], out[1];
	void *keep = NULL;
	CUresult rc;

	memset(in, 0, sizeof in);
	in[0].u = ctx;
	in[1].u = which;
	in[2].u = align;
	in[3].p = map;
	in[3].len = TMAP_BYTES;
	in[4].p = w->p;
	in[4].len = (uint32_t)w->len;
	rc = remote_call(R_TMAP_ENCODE, in, out, &keep);
	if (rc == CUDA_SUCCESS && out[0].len != TMAP_BYTES)
		rc = CUDA_ERROR_INVALID_VALUE;	/* a server gone wrong */
	if (rc == CUDA_SUCCESS)
		memcpy(ans, out[0].p, TMAP_BYTES);
	free(keep);
	return rc;
}

/*
 * Sends encoder t->which with the map's present bytes (the driver may
 * leave bytes it does not set as they were) and the map's address modulo
 * 128 (the server encodes at the same alignment, so that the driver judges
 * a misaligned map as it would here), and stores the result in *map.  The
 * map is only copied as bytes, since it may be off its type's alignment.
 */
static CUresult
tmap_call(void *map, const struct rpc_tmap *t)
{
	unsigned char cur[TMAP_BYTES], ans[TMAP_BYTES], cmp[TMAP_BYTES];
	uint32_t align = (uint32_t)((uintptr_t)map % TMAP_BYTES);
	uint64_t ctx;
	struct gctx *c;
	struct pw w;
	CUresult rc;
	int i, keep = t->which != TMAP_REPLACE, seen;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	ctx = gobj_id(c);
	pw_init(&w);
	rpc_tmap_enc(&w, t);
	if (w.bad) {
		pw_free(&w);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(cur, map, TMAP_BYTES);
	seen = keep ? tm_hit(ctx, t->which, align, &w, cur, ans) : 0;
	if (seen == 1) {
		pw_free(&w);
		memcpy(map, ans, TMAP_BYTES);
		return CUDA_SUCCESS;
	}
	rc = tmap_remote(ctx, t->which, align, cur, &w, ans);
	if (rc == CUDA_SUCCESS && keep) {
		/*
		 * Seen before with other input bytes: which bits are the
		 * encoder's, from its answer for their complement.
		 */
		if (seen == -1) {
			for (i = 0; i < TMAP_BYTES; i++)
				cmp[i] = (unsigned char)~cur[i];
			if (tmap_remote(ctx, t->which, align, cmp, &w,
			    cmp) == CUDA_SUCCESS)
				tm_keep(ctx, t->which, align, &w, cur, ans,
				    cmp);
		} else
			tm_keep(ctx, t->which, align, &w, cur, ans, NULL);
	}
	pw_free(&w);
	if (rc == CUDA_SUCCESS)
		memcpy(map, ans, TMAP_BYTES);
	return rc;
}

/* The arguments the encoders share, read into t; -1 if one is missing. */
static int
tmap_common(struct rpc_tmap *t, uint32_t which, CUtensorMapDataType dtype,
    cuuint32_t rank, void *addr, const cuuint64_t *dim,
    const cuuint64_t *stride, const cuuint32_t *estride)
{
	uint32_t i;

	memset(t, 0, sizeof *t);
	/* The rank says how much of each array there is to read. */
	if (rank < (which == TMAP_TILED ? 1u : 3u) || rank > TMAP_RANK_MAX)
		return -1;
	if (dim == NULL || estride == NULL || (stride == NULL && rank > 1))
		return -1;
	t->which = which;
	t->dtype = (uint32_t)dtype;
	t->rank = rank;
	t->addr = (uintptr_t)addr;
	for (i = 0; i < rank; i++) {
		t->dim[i] = dim[i];
		t->estride[i] = estride[i];
	}
	for (i = 0; i + 1 < rank; i++)
		t->stride[i] = stride[i];
	return 0;
}

CUresult
cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType dtype,
    cuuint32_t rank, void *addr, const cuuint64_t *dim,
    const cuuint64_t *stride, const cuuint32_t *box,
    const cuuint32_t *estride, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
    CUtensorMapFloatOOBfill oobfill)
{
	struct rpc_tmap t;
	uint32_t i;

	if (map == NULL || box == NULL || tmap_common(&t, TMAP_TILED, dtype,
	    rank, addr, dim, stride, estride) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < rank; i++)
		t.box[i] = box[i];
	t.interleave = (uint32_t)interleave;
	t.swizzle = (uint32_t)swizzle;
	t.l2 = (uint32_t)l2;
	t.oobfill = (uint32_t)oobfill;
	return tmap_call(map, &t);
}

CUresult
cuTensorMapEncodeIm2col(CUtensorMap *map, CUtensorMapDataType dtype,
    cuuint32_t rank, void *addr, const cuuint64_t *dim,
    const cuuint64_t *stride, const int *lower, const int *upper,
    cuuint32_t channels, cuuint32_t pixels, const cuuint32_t *estride,
    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oobfill)
{
	struct rpc_tmap t;
	uint32_t i;

	if (map == NULL || lower == NULL || upper == NULL ||
	    tmap_common(&t, TMAP_IM2COL, dtype, rank, addr, dim, stride,
	    estride) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	/* The corners are in the spatial dimensions: all but N and C. */
	for (i = 0; i + 2 < rank; i++) {
		t.lower[i] = lower[i];
		t.upper[i] = upper[i];
	}
	t.channels = channels;
	t.pixels = pixels;
	t.interleave = (uint32_t)interleave;
	t.swizzle = (uint32_t)swizzle;
	t.l2 = (uint32_t)l2;
	t.oobfill = (uint32_t)oobfill;
	return tmap_call(map, &t);
}

CUresult
cuTensorMapEncodeIm2colWide(CUtensorMap *map, CUtensorMapDataType dtype,
    cuuint32_t rank, void *addr, const cuuint64_t *dim,
    const cuuint64_t *stride, int lower, int upper, cuuint32_t channels,
    cuuint32_t pixels, const cuuint32_t *estride,
    CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
    CUtensorMapFloatOOBfill oobfill)
{
	struct rpc_tmap t;

	if (map == NULL || tmap_common(&t, TMAP_IM2COL_WIDE, dtype, rank,
	    addr, dim, stride, estride) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	t.lower[0] = lower;
	t.upper[0] = upper;
	t.channels = channels;
	t.pixels = pixels;
	t.interleave = (uint32_t)interleave;
	t.mode = (uint32_t)mode;
	t.swizzle = (uint32_t)swizzle;
	t.l2 = (uint32_t)l2;
	t.oobfill = (uint32_t)oobfill;
	return tmap_call(map, &t);
}

CUresult
cuTensorMapReplaceAddress(CUtensorMap *map, void *addr)
{
	struct rpc_tmap t;

	if (map == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&t, 0, sizeof t);
	t.which = TMAP_REPLACE;
	t.addr = (uintptr_t)addr;
	return tmap_call(map, &t);
}
