/*
 * Unit tests for the client's kept tensor-map encodings (lib/client/
 * tmap.c): a repeat of an encoding is answered without a round trip, the
 * bits the encoder leaves as they were pass through from the map's own
 * bytes, keys (context, encoder, alignment, arguments) keep encodings
 * apart, failures and cuTensorMapReplaceAddress are never kept, and the
 * oldest of more than TM_KEEP encodings goes.  The server is a fake
 * encoder: the first 64 bytes from the arguments and alignment, the next
 * 32 half set (high nibble kept), the last 32 left as they were.
 */
#include <stdint.h>
#include <string.h>

#include "../../lib/client/tmap.c"
#include "t.h"

static int	 nremote;	/* R_TMAP_ENCODE calls the fake served */
static char	 ctx_a, ctx_b;
static struct gctx *cur = (struct gctx *)&ctx_a;

CUresult
ctx_need_at(struct gctx **c, const char *fn)
{
	(void)fn;
	*c = cur;
	return CUDA_SUCCESS;
}

uint64_t
gobj_id(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* The fake driver's encoder (see above); "address" 0xbad fails. */
CUresult
remote_call(uint16_t type, const struct rpc_val *in, struct rpc_val *out,
    void **keep)
{
	const unsigned char *map = in[3].p, *a = in[4].p;
	unsigned char *m;
	uint64_t h = 1469598103934665603ull ^ in[0].u ^ (in[1].u << 8) ^
	    (in[2].u << 16);
	uint32_t i;

	nremote++;
	*keep = NULL;
	CHECK(type == R_TMAP_ENCODE);
	CHECK(in[3].len == TMAP_BYTES);
	for (i = 0; i < in[4].len; i++)
		h = (h ^ a[i]) * 1099511628211ull;
	for (i = 0; i + 8 <= in[4].len; i++) {
		uint64_t v;

		memcpy(&v, a + i, 8);
		if (v == 0xbad)
			return CUDA_ERROR_INVALID_VALUE;
	}
	if ((m = malloc(TMAP_BYTES)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (i = 0; i < 64; i++)
		m[i] = (unsigned char)(h >> (i % 8 * 8)) ^ (unsigned char)i;
	for (; i < 96; i++)
		m[i] = (unsigned char)((map[i] & 0xf0) | ((h >> (i % 16)) & 0x0f));
	for (; i < TMAP_BYTES; i++)
		m[i] = map[i];
	out[0].p = m;
	out[0].len = TMAP_BYTES;
	*keep = m;
	return CUDA_SUCCESS;
}

static cuuint64_t dim[2] = { 256, 256 }, stride[1] = { 1024 };
static cuuint32_t box[2] = { 32, 32 }, one[2] = { 1, 1 };

static CUresult
tiled(CUtensorMap *m, uintptr_t addr)
{
	return cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2,
	    (void *)addr, dim, stride, box, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
	    CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
	    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

/* What the fake answers for map m's bytes as they are (a round trip). */
static void
truth(CUtensorMap *m, uintptr_t addr, CUtensorMap *want)
{
	struct rpc_tmap t;
	struct rpc_val in[5], out[1];
	struct pw w;
	void *keep;
	uint32_t i;

	memset(&t, 0, sizeof t);
	t.which = TMAP_TILED;
	t.dtype = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
	t.rank = 2;
	t.addr = addr;
	for (i = 0; i < 2; i++) {
		t.dim[i] = dim[i];
		t.estride[i] = one[i];
		t.box[i] = box[i];
	}
	t.stride[0] = stride[0];
	pw_init(&w);
	rpc_tmap_enc(&w, &t);
	memset(in, 0, sizeof in);
	in[0].u = gobj_id(cur);
	in[1].u = TMAP_TILED;
	in[2].u = (uintptr_t)m % TMAP_BYTES;
	in[3].p = m;
	in[3].len = TMAP_BYTES;
	in[4].p = w.p;
	in[4].len = (uint32_t)w.len;
	CHECK(remote_call(R_TMAP_ENCODE, in, out, &keep) == CUDA_SUCCESS);
	memcpy(want, out[0].p, TMAP_BYTES);
	free(keep);
	pw_free(&w);
	nremote--;
}

int
main(void)
{
	static const unsigned char fill[] = { 0x00, 0xff, 0x5a, 0x00, 0xa5,
	    0x3c, 0xff };
	_Alignas(128) unsigned char raw[2 * TMAP_BYTES];
	CUtensorMap m, want;
	size_t i;
	int n0;

	/*
	 * The same encoding over maps holding other bytes: the first a round
	 * trip, the second two (its answer and its complement's), then none,
	 * every answer the encoder's.
	 */
	for (i = 0; i < sizeof fill; i++) {
		memset(&m, fill[i], sizeof m);
		truth(&m, 0x7f0000000000, &want);
		n0 = nremote;
		CHECK(tiled(&m, 0x7f0000000000) == CUDA_SUCCESS);
		CHECK(memcmp(&m, &want, sizeof m) == 0);
		CHECK(nremote - n0 == (i == 0 ? 1 : i == 1 ? 2 : 0));
	}
	/* Bytes of no pattern. */
	for (i = 0; i < sizeof m; i++)
		((unsigned char *)&m)[i] = (unsigned char)(i * 37 + 11);
	truth(&m, 0x7f0000000000, &want);
	n0 = nremote;
	CHECK(tiled(&m, 0x7f0000000000) == CUDA_SUCCESS);
	CHECK(memcmp(&m, &want, sizeof m) == 0);
	CHECK(nremote == n0);

	/* The same input bytes again before the mask is known: no trip. */
	memset(&m, 0x11, sizeof m);
	n0 = nremote;
	CHECK(tiled(&m, 0x7e0000000000) == CUDA_SUCCESS);
	CHECK(nremote - n0 == 1);
	memset(&m, 0x11, sizeof m);
	truth(&m, 0x7e0000000000, &want);
	CHECK(tiled(&m, 0x7e0000000000) == CUDA_SUCCESS);
	CHECK(memcmp(&m, &want, sizeof m) == 0);
	CHECK(nremote - n0 == 1);

	/* Another alignment, another context: encodings of their own. */
	{
		CUtensorMap *mm = (CUtensorMap *)(raw + 8);

		memset(raw, 0, sizeof raw);
		truth(mm, 0x7f0000000000, &want);
		n0 = nremote;
		CHECK(tiled(mm, 0x7f0000000000) == CUDA_SUCCESS);
		CHECK(memcmp(mm, &want, sizeof want) == 0);
		CHECK(nremote - n0 == 1);
	}
	cur = (struct gctx *)&ctx_b;
	memset(&m, 0, sizeof m);
	truth(&m, 0x7f0000000000, &want);
	n0 = nremote;
	CHECK(tiled(&m, 0x7f0000000000) == CUDA_SUCCESS);
	CHECK(memcmp(&m, &want, sizeof m) == 0);
	CHECK(nremote - n0 == 1);
	cur = (struct gctx *)&ctx_a;

	/* A failure is the driver's each time, never kept. */
	n0 = nremote;
	CHECK(tiled(&m, 0xbad) == CUDA_ERROR_INVALID_VALUE);
	CHECK(tiled(&m, 0xbad) == CUDA_ERROR_INVALID_VALUE);
	CHECK(nremote - n0 == 2);

	/* cuTensorMapReplaceAddress always asks. */
	n0 = nremote;
	CHECK(cuTensorMapReplaceAddress(&m, (void *)0x7f0000001000) ==
	    CUDA_SUCCESS);
	CHECK(cuTensorMapReplaceAddress(&m, (void *)0x7f0000001000) ==
	    CUDA_SUCCESS);
	CHECK(nremote - n0 == 2);

	/* More than TM_KEEP encodings: the oldest goes, the newest stays. */
	for (i = 0; i < TM_KEEP + 1; i++) {
		memset(&m, 0, sizeof m);
		CHECK(tiled(&m, 0x100000000 + i * 0x1000) == CUDA_SUCCESS);
	}
	n0 = nremote;
	memset(&m, 0, sizeof m);
	CHECK(tiled(&m, 0x100000000 + TM_KEEP * 0x1000) == CUDA_SUCCESS);
	CHECK(nremote == n0);
	memset(&m, 0, sizeof m);
	CHECK(tiled(&m, 0x100000000) == CUDA_SUCCESS);
	CHECK(nremote - n0 == 1);
	return t_done("client_tmap");
}
