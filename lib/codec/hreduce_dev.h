/*
 * hreduce_dev: a codec on another device for HOMO tensors, so that a
 * gradient that lives there goes through the same rounds, streams and
 * window as hr_submit's (hreduce_cuda.cu is the one user).  Not an
 * interface of the library: it may change with it.
 *
 * The context calls the hooks from the thread that drives it (hr_submit,
 * hr_wait), each when the round before is merged; each returns 0 or a
 * negative HR_E* code with its reason in err.  A tensor's state is the
 * device's own (*ts): it holds the host buffers the rounds are sent from
 * and merged into, and the hooks find them there.
 */
#ifndef GLEAM_HREDUCE_DEV_H
#define GLEAM_HREDUCE_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "hcodec.h"
#include "hreduce.h"

struct hr_dev {
	/*
	 * Round 1: the bitmap of grad's n values into host memory of
	 * hc_bitmap_bytes(n) bytes (*bits, which the OR lands in), and the
	 * largest exponent (HC_EXP_NONFINITE for NaN or Inf).  call is what
	 * the caller gave hr_submit_dev (a stream).
	 */
	int	(*bitmap)(void *arg, void *call, void **ts, const float *grad,
		    size_t n, uint8_t **bits, int *emax, char *err,
		    size_t errlen);
	/*
	 * Round 2: the layout of p from the merged bitmap, and grad
	 * encoded at scale into host memory (*payload, payload_bytes), which
	 * the sum lands in.
	 */
	int	(*encode)(void *arg, void *ts, const struct hc_params *p,
		    int scale, const float *grad, void **payload,
		    size_t *payload_bytes, size_t *union_count,
		    size_t *core_count, char *err, size_t errlen);
	/* The merged payload decoded into grad; done when it returns. */
	int	(*decode)(void *arg, void *ts, int scale, float *grad,
		    char *err, size_t errlen);
	/* A tensor finished, failed or not; ts may be NULL. */
	void	(*release)(void *arg, void *ts);
	/* At hr_close. */
	void	(*destroy)(void *arg);
};

/* Sets the context's device once; the same dev again is a no-op. */
int	hr_dev_attach(struct hr_ctx *, const struct hr_dev *, void *arg);
/* The arg attached with dev, or NULL. */
void	*hr_dev_arg(const struct hr_ctx *, const struct hr_dev *);
/* hr_submit of a gradient on the attached device; hr_wait finishes it. */
int	hr_submit_dev(struct hr_ctx *, float *grad, size_t n, void *call);
/* hr_allreduce_many through a submit function. */
int	hr_many(struct hr_ctx *, float *const *grads, const size_t *ns,
	    size_t count, int *rcs,
	    int (*submit)(struct hr_ctx *, float *, size_t, void *), void *call);

#endif
