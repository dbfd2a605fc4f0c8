/*
 * hr_submit_cuda and friends: a HOMO tensor in device memory through the
 * context's own window (hreduce_dev.h), the codec's work on the GPU
 * (hcodec_cuda.h), only the bitmap and the payload crossing PCIe, from
 * and into pinned host buffers that the tensors' states keep for reuse.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "hcodec.h"
#include "hreduce.h"
#include "hreduce_dev.h"
}
#include "hcodec_cuda.h"
#include "hreduce_cuda.h"

#define SPARE_MAX	16	/* tensor states a context keeps */

/* A tensor's state; kept with its buffers once the tensor is done. */
struct hrc_t {
	struct hrc_t		*next;
	cudaStream_t		 st;
	uint8_t			*dbits, *hbits;
	size_t			 bcap;
	void			*dpay, *hpay;
	size_t			 pcap;
	struct hc_cuda_layout	*L;
};

/*
 * A context's device side: its GPU (the one current at its first
 * hr_submit_cuda) and the spare states.  The hooks run on the context's
 * device thread (hreduce_dev.h), which makes that GPU its own.
 */
struct hrc {
	int		 device;
	struct hrc_t	*spare;
	int		 nspare;
};

/* The context's GPU current on the calling thread. */
static int
use_device(const struct hrc *h, char *err, size_t errlen)
{
	cudaError_t e;
	int cur = -1;

	if (cudaGetDevice(&cur) == cudaSuccess && cur == h->device)
		return 0;
	if ((e = cudaSetDevice(h->device)) != cudaSuccess) {
		snprintf(err, errlen, "GPU %d: %s", h->device,
		    cudaGetErrorString(e));
		return HR_EINVAL;
	}
	return 0;
}

static void
t_destroy(struct hrc_t *t)
{
	hc_cuda_layout_free(t->L);
	cudaFree(t->dbits);
	cudaFreeHost(t->hbits);
	cudaFree(t->dpay);
	cudaFreeHost(t->hpay);
	free(t);
}

static int
codec_rc(int hc)
{
	return hc == HC_ENONFINITE ? HR_ENONFINITE : hc == HC_ENOMEM ?
	    HR_ENOMEM : HR_ECODEC;
}

/* A codec call's failure: its code and reason. */
static int
codec_err(int hc, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s on the GPU: %s%s%s", what, hc_strerror(hc),
	    hc == HC_EINVAL ? ": " : "", hc == HC_EINVAL ? hc_cuda_error() :
	    "");
	return codec_rc(hc);
}

static int
cuda_err(cudaError_t e, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(e));
	return e == cudaErrorMemoryAllocation ? HR_ENOMEM : HR_EINVAL;
}

/* Device and pinned host buffers of at least len bytes each. */
static cudaError_t
grow(void **d, void **h, size_t *cap, size_t len)
{
	cudaError_t e;

	if (*cap >= len)
		return cudaSuccess;
	cudaFree(*d);
	cudaFreeHost(*h);
	*d = *h = NULL;
	*cap = 0;
	if ((e = cudaMalloc(d, len)) != cudaSuccess ||
	    (e = cudaMallocHost(h, len)) != cudaSuccess)
		return e;
	*cap = len;
	return cudaSuccess;
}

static int
dev_bitmap(void *arg, void *call, void **ts, const float *grad, size_t n,
    uint8_t **bits, int *emax, char *err, size_t errlen)
{
	struct hrc *h = (struct hrc *)arg;
	struct hrc_t *t;
	size_t nb = hc_bitmap_bytes(n);
	cudaError_t e;
	int hc;

	if ((hc = use_device(h, err, errlen)) != 0)
		return hc;
	if ((t = h->spare) != NULL) {
		h->spare = t->next;
		h->nspare--;
	} else if ((t = (struct hrc_t *)calloc(1, sizeof *t)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return HR_ENOMEM;
	}
	*ts = t;
	t->st = (cudaStream_t)call;
	if ((e = grow((void **)&t->dbits, (void **)&t->hbits, &t->bcap,
	    nb + 8)) != cudaSuccess)
		return cuda_err(e, "the bitmap's buffers", err, errlen);
	*bits = t->hbits;
	*emax = HC_EXP_ZERO;
	if (n == 0)
		return 0;
	/* NaN or Inf: the exponent says so, to every rank, in round 1. */
	hc = hc_cuda_bitmap(grad, n, t->dbits, emax, t->st);
	if (hc != 0 && hc != HC_ENONFINITE)
		return codec_err(hc, "the bitmap", err, errlen);
	if ((e = cudaMemcpyAsync(t->hbits, t->dbits, nb,
	    cudaMemcpyDeviceToHost, t->st)) != cudaSuccess ||
	    (e = cudaStreamSynchronize(t->st)) != cudaSuccess)
		return cuda_err(e, "the bitmap to the host", err, errlen);
	return 0;
}

static int
dev_encode(void *arg, void *ts, const struct hc_params *p, int scale,
    const float *grad, void **payload, size_t *payload_bytes,
    size_t *union_count, size_t *core_count, char *err, size_t errlen)
{
	struct hrc_t *t = (struct hrc_t *)ts;
	struct hc_cuda_layout_info li;
	size_t pl, cb = (size_t)p->cell_bits / 8;
	cudaError_t e;
	int hc;

	(void)arg;
	if ((e = cudaMemcpyAsync(t->dbits, t->hbits, hc_bitmap_bytes(p->n),
	    cudaMemcpyHostToDevice, t->st)) != cudaSuccess)
		return cuda_err(e, "the union to the GPU", err, errlen);
	hc_cuda_layout_free(t->L);
	t->L = NULL;
	if ((hc = hc_cuda_layout_new(p, t->dbits, &t->L, t->st)) != 0)
		return codec_err(hc, "the layout", err, errlen);
	hc_cuda_layout_info(t->L, &li);
	*union_count = li.union_count;
	*core_count = li.core_count;
	pl = hc_cuda_layout_payload(t->L) * cb;
	if ((e = grow(&t->dpay, &t->hpay, &t->pcap, pl + 8)) != cudaSuccess)
		return cuda_err(e, "the payload's buffers", err, errlen);
	if ((hc = hc_cuda_encode(t->L, grad, scale, t->dpay, t->st)) != 0)
		return codec_err(hc, "encoding", err, errlen);
	if ((e = cudaMemcpyAsync(t->hpay, t->dpay, pl, cudaMemcpyDeviceToHost,
	    t->st)) != cudaSuccess ||
	    (e = cudaStreamSynchronize(t->st)) != cudaSuccess)
		return cuda_err(e, "the payload to the host", err, errlen);
	*payload = t->hpay;
	*payload_bytes = pl;
	return 0;
}

static int
dev_decode(void *arg, void *ts, int scale, float *grad, char *err,
    size_t errlen)
{
	struct hrc_t *t = (struct hrc_t *)ts;
	struct hc_cuda_layout_info li;
	size_t pl;
	cudaError_t e;
	int hc;

	(void)arg;
	hc_cuda_layout_info(t->L, &li);
	pl = hc_cuda_layout_payload(t->L) * (size_t)(li.cell_bits / 8);
	if ((e = cudaMemcpyAsync(t->dpay, t->hpay, pl, cudaMemcpyHostToDevice,
	    t->st)) != cudaSuccess)
		return cuda_err(e, "the sum to the GPU", err, errlen);
	if ((hc = hc_cuda_decode(t->L, t->dpay, scale, grad, t->st)) != 0)
		return codec_err(hc, "decoding the merged sketch", err, errlen);
	if ((e = cudaStreamSynchronize(t->st)) != cudaSuccess)
		return cuda_err(e, "decoding", err, errlen);
	return 0;
}

static void
dev_release(void *arg, void *ts)
{
	struct hrc *h = (struct hrc *)arg;
	struct hrc_t *t = (struct hrc_t *)ts;

	if (t == NULL)
		return;
	/* Its layout's buffers go to the codec's pool meanwhile. */
	hc_cuda_layout_free(t->L);
	t->L = NULL;
	if (h->nspare >= SPARE_MAX) {
		t_destroy(t);
		return;
	}
	t->next = h->spare;
	h->spare = t;
	h->nspare++;
}

static void
dev_destroy(void *arg)
{
	struct hrc *h = (struct hrc *)arg;
	struct hrc_t *t;

	while ((t = h->spare) != NULL) {
		h->spare = t->next;
		t_destroy(t);
	}
	free(h);
}

static const struct hr_dev cuda_dev = {
	dev_bitmap, dev_encode, dev_decode, dev_release, dev_destroy
};

extern "C" int
hr_submit_cuda(struct hr_ctx *x, float *grad, size_t n, void *stream)
{
	struct hrc *h;
	int rc;

	if (x == NULL || (grad == NULL && n > 0))
		return HR_EINVAL;
	if ((h = (struct hrc *)hr_dev_arg(x, &cuda_dev)) == NULL) {
		if ((h = (struct hrc *)calloc(1, sizeof *h)) == NULL)
			return HR_ENOMEM;
		if (cudaGetDevice(&h->device) != cudaSuccess)
			h->device = 0;
		if ((rc = hr_dev_attach(x, &cuda_dev, h)) != 0) {
			free(h);
			return rc;
		}
	}
	return hr_submit_dev(x, grad, n, stream);
}

static int
submit_cuda(struct hr_ctx *x, float *grad, size_t n, void *stream)
{
	return hr_submit_cuda(x, grad, n, stream);
}

extern "C" int
hr_allreduce_cuda(struct hr_ctx *x, float *grad, size_t n, void *stream)
{
	int ticket;

	if ((ticket = hr_submit_cuda(x, grad, n, stream)) < 0)
		return ticket;
	return hr_wait(x, ticket);
}

extern "C" int
hr_allreduce_many_cuda(struct hr_ctx *x, float *const *grads,
    const size_t *ns, size_t count, int *rcs, void *stream)
{
	if (x == NULL || (count > 0 && (grads == NULL || ns == NULL)))
		return HR_EINVAL;
	return hr_many(x, grads, ns, count, rcs, submit_cuda, stream);
}
