/*
 * hr_allreduce_cuda: round 0+1 and 2 of the codec on the GPU, the rounds
 * themselves through hr_reduce_raw from pinned host buffers.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

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

extern "C" int
hr_allreduce_cuda(struct hr_ctx *x, float *grad, size_t n, void *stream)
{
	cudaStream_t st = (cudaStream_t)stream;
	struct hr_opts o;
	struct hc_params p;
	struct hc_cuda_layout *L = NULL;
	uint8_t *dbits = NULL, *hbits = NULL;
	void *dpay = NULL, *hpay = NULL;
	size_t nb = hc_bitmap_bytes(n), pl = 0, cb;
	int e = HC_EXP_ZERO, s, rc = 0, hc;

	if (x == NULL || (grad == NULL && n > 0))
		return HR_EINVAL;
	hr_get_opts(x, &o);
	cb = (size_t)o.cell_bits / 8;
	CU(cudaMalloc((void **)&dbits, nb + 8));
	CU(cudaMallocHost((void **)&hbits, nb + 8));
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
	CU(cudaMalloc(&dpay, pl * cb + 8));
	CU(cudaMallocHost(&hpay, pl * cb + 8));
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
	hc_cuda_layout_free(L);
	cudaFree(dbits);
	cudaFree(dpay);
	cudaFreeHost(hbits);
	cudaFreeHost(hpay);
	return rc;
}
