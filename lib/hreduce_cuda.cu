/*
 * hr_allreduce_cuda: round 0+1 and 2 of the codec on the GPU, the rounds
 * themselves through hr_reduce_raw from pinned host buffers.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include <mutex>
#include <vector>

extern "C" {
#include "hcodec.h"
#include "hreduce.h"
#include "hreduce_wire.h"
}
#include "hcodec_cuda.h"
#include "hreduce_cuda.h"

/* A failed CUDA call: HR_EINVAL, the reason in hc_cuda_error's manner. */
#define CU(call) do {							\
	if ((call) != cudaSuccess) {					\
		rc = HR_EINVAL;						\
		goto out;						\
	}								\
} while (0)

static int
codec_rc(int hc)
{
	return hc == HC_ENONFINITE ? HR_ENONFINITE : hc == HC_ENOMEM ?
	    HR_ENOMEM : HR_ECODEC;
}

/*
 * The bitmap's and the payload's buffers, on the device and pinned on the
 * host, kept across calls in a small pool per device (as hcodec_cuda's
 * are): pinning megabytes on every tensor costs milliseconds.  A buffer
 * only grows, and only while no queued work uses it.
 */
struct hbufs {
	int	 dev;
	void	*d[2], *h[2];		/* [0] the bitmap, [1] the payload */
	size_t	 dcap[2], hcap[2];
};

static std::mutex hb_mu;
static std::vector<struct hbufs *> hb_pool;

static void
hb_free(struct hbufs *b)
{
	for (int i = 0; i < 2; i++) {
		if (b->d[i] != NULL)
			cudaFree(b->d[i]);
		if (b->h[i] != NULL)
			cudaFreeHost(b->h[i]);
	}
	delete b;
}

static struct hbufs *
hb_take(void)
{
	struct hbufs *b;
	int dev = 0;

	if (cudaGetDevice(&dev) != cudaSuccess)
		return NULL;
	{
		std::lock_guard<std::mutex> g(hb_mu);

		for (size_t i = 0; i < hb_pool.size(); i++)
			if (hb_pool[i]->dev == dev) {
				b = hb_pool[i];
				hb_pool.erase(hb_pool.begin() + (long)i);
				return b;
			}
	}
	b = new struct hbufs();
	b->dev = dev;
	return b;
}

/* Back to the pool: no queued work may still use b. */
static void
hb_put(struct hbufs *b)
{
	if (b == NULL)
		return;
	{
		std::lock_guard<std::mutex> g(hb_mu);

		if (hb_pool.size() < 4) {
			hb_pool.push_back(b);
			return;
		}
	}
	hb_free(b);
}

/* At least bytes in buffer i of b, on the device or pinned. */
static cudaError_t
hb_need(struct hbufs *b, int i, size_t bytes, int host)
{
	void **p = host ? &b->h[i] : &b->d[i];
	size_t *cap = host ? &b->hcap[i] : &b->dcap[i];
	cudaError_t e;

	if (*cap >= bytes)
		return cudaSuccess;
	if (*p != NULL)
		host ? cudaFreeHost(*p) : cudaFree(*p);
	*p = NULL;
	*cap = 0;
	bytes += bytes / 8;	/* a union that grows a little */
	e = host ? cudaMallocHost(p, bytes) : cudaMalloc(p, bytes);
	if (e != cudaSuccess) {
		*p = NULL;
		return e;
	}
	*cap = bytes;
	return cudaSuccess;
}

extern "C" int
hr_allreduce_cuda(struct hr_ctx *x, float *grad, size_t n, void *stream)
{
	cudaStream_t st = (cudaStream_t)stream;
	struct hr_opts o;
	struct hc_params p;
	struct hc_cuda_layout *L = NULL;
	struct hbufs *B = NULL;
	uint8_t *dbits = NULL, *hbits = NULL;
	void *dpay = NULL, *hpay = NULL;
	size_t nb = hc_bitmap_bytes(n), pl = 0, cb;
	int e = HC_EXP_ZERO, s, rc = 0, hc;

	if (x == NULL || (grad == NULL && n > 0))
		return HR_EINVAL;
	hr_get_opts(x, &o);
	cb = (size_t)o.cell_bits / 8;
	if ((B = hb_take()) == NULL)
		return HR_EINVAL;
	CU(hb_need(B, 0, nb + 8, 0));
	CU(hb_need(B, 0, nb + 8, 1));
	dbits = (uint8_t *)B->d[0];
	hbits = (uint8_t *)B->h[0];
	/* NaN or Inf: the exponent says so, to every rank, in round 1. */
	hc = hc_cuda_bitmap(grad, n, dbits, &e, stream);
	if (hc != 0 && hc != HC_ENONFINITE) {
		rc = codec_rc(hc);
		goto out;
	}
	CU(cudaMemcpyAsync(hbits, dbits, nb, cudaMemcpyDeviceToHost, st));
	CU(cudaStreamSynchronize(st));
	if ((rc = hr_reduce_raw(x, HR_OP_OR, hbits, n, &e, 0)) != 0)
		goto out;
	if (e == HC_EXP_NONFINITE) {
		rc = HR_ENONFINITE;
		goto out;
	}
	if ((hc = hc_scale(e, o.world, o.cell_bits, &s)) != 0) {
		rc = codec_rc(hc);
		goto out;
	}
	CU(cudaMemcpyAsync(dbits, hbits, nb, cudaMemcpyHostToDevice, st));
	hc_params_init(&p, n, o.cell_bits);
	p.seed = o.seed;
	if ((hc = hc_cuda_layout_new(&p, dbits, &L, stream)) != 0) {
		rc = codec_rc(hc);
		goto out;
	}
	pl = hc_cuda_layout_payload(L);
	CU(hb_need(B, 1, pl * cb + 8, 0));	/* nothing queued uses them */
	CU(hb_need(B, 1, pl * cb + 8, 1));
	dpay = B->d[1];
	hpay = B->h[1];
	if ((hc = hc_cuda_encode(L, grad, s, dpay, stream)) != 0) {
		rc = codec_rc(hc);
		goto out;
	}
	CU(cudaMemcpyAsync(hpay, dpay, pl * cb, cudaMemcpyDeviceToHost, st));
	CU(cudaStreamSynchronize(st));
	if ((rc = hr_reduce_raw(x, HR_OP_SUM, hpay, pl, NULL, s)) != 0)
		goto out;
	CU(cudaMemcpyAsync(dpay, hpay, pl * cb, cudaMemcpyHostToDevice, st));
	if ((hc = hc_cuda_decode(L, dpay, s, grad, stream)) != 0)
		rc = codec_rc(hc);
out:
	cudaStreamSynchronize(st);	/* nothing queued uses them now */
	hc_cuda_layout_free(L);
	hb_put(B);
	return rc;
}
