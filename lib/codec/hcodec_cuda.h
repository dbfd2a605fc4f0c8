/*
 * hcodec_cuda: the homomorphic codec of hcodec.h on an NVIDIA GPU.  The
 * same rounds, numbers and wire formats, the same layout (R, rows, the
 * 2-core C in ascending order), the same payload and the same decoded
 * sums, bit for bit; only the buffers are in device memory and the work
 * is queued on a CUDA stream (NULL: the default stream).
 *
 *	index		hc_cuda_bitmap: bitmap and largest exponent
 *	layout		hc_cuda_layout_new: lane counts and R, rows, then
 *			lane by lane (cell (r, t) only holds lane t's
 *			coordinates), one thread block a lane with its R
 *			cells in shared memory (in global memory where they
 *			do not fit): cell counts and block-id sums, then the
 *			pre-peel in rounds of two phases (find the pure
 *			cells, then take their coordinates out), which
 *			leaves C and the order in which decoding peels
 *	encode		hc_cuda_encode: wrapping integer atomics, so the
 *			cells hold what the CPU's sequential adds give
 *	decode		hc_cuda_decode: the pre-peel's rounds replayed,
 *			again a block a lane with its cells in shared
 *			memory; no entry of a round writes a cell another
 *			reads
 *
 * Each function returns 0 or a negative HC_E* code of hcodec.h
 * (HC_EINVAL also when a CUDA call fails; hc_cuda_error tells which).
 * The calls synchronize the stream where they return a host value (an
 * exponent, a layout's sizes, an error found on the device); each returns
 * once its work on the stream is done.  A layout is read-only once made.
 * Device buffers are kept for reuse: hc_cuda_layout_free gives a layout's
 * buffers to a small per-device pool that the next hc_cuda_layout_new
 * takes (growing them only when the union outgrows them), and each call's
 * scratch (counters, the pre-peel's cells and fronts) is pooled likewise,
 * so steady use neither allocates nor frees device memory.  Free a layout
 * only once no queued work uses it.  hc_cuda_trim frees what the pools
 * hold.  Link with the CUDA runtime.
 *
 * GLEAM_HC_CUDA_PROFILE=1 in the environment makes hc_cuda_layout_new and
 * the decodes print one line each to stderr: the GPU time of each of
 * their steps, and the clock cycles of the lane kernels' phases summed
 * over the lanes.  It adds an allocation and events to every call: for
 * finding where time goes, not for timing.
 */
#ifndef GLEAM_HCODEC_CUDA_H
#define GLEAM_HCODEC_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "hcodec.h"

struct hc_cuda_layout;

struct hc_cuda_layout_info {
	size_t		n;
	unsigned	block;		/* B in use */
	unsigned	k;
	int		cell_bits;
	size_t		nblocks;
	uint32_t	rows;		/* R */
	uint32_t	max_lane;
	size_t		cells;		/* R * B */
	size_t		union_count;
	size_t		core_count;
	size_t		nrounds;	/* of the pre-peel, the most of any lane */
};

/* Round 0 and 1 of a device gradient g into device bits; *emax on host. */
int	hc_cuda_bitmap(const float *g, size_t n, uint8_t *bits, int *emax,
	    void *stream);
/* The layout from the merged bitmap, in device memory. */
int	hc_cuda_layout_new(const struct hc_params *, const uint8_t *union_bits,
	    struct hc_cuda_layout **, void *stream);
void	hc_cuda_layout_free(struct hc_cuda_layout *);
void	hc_cuda_layout_info(const struct hc_cuda_layout *,
	    struct hc_cuda_layout_info *);
size_t	hc_cuda_layout_payload(const struct hc_cuda_layout *);
/* C, ascending, into a host array of core_count coordinates. */
int	hc_cuda_layout_core(const struct hc_cuda_layout *, uint64_t *core);
/* The rows of every block, nblocks * k, into a host array. */
int	hc_cuda_layout_rows(const struct hc_cuda_layout *, uint32_t *rows);

int	hc_cuda_encode(const struct hc_cuda_layout *, const float *g, int s,
	    void *payload, void *stream);
/* Both peel sum in place: it is spent. */
int	hc_cuda_decode(const struct hc_cuda_layout *, void *sum, int s,
	    float *out, void *stream);
int	hc_cuda_decode_fixed(const struct hc_cuda_layout *, void *sum,
	    void *fixed, void *stream);
/* The wrapping sum of in into acc, ncells cells, on the device. */
int	hc_cuda_merge_sum(void *acc, const void *in, size_t ncells,
	    int cell_bits, void *stream);

/* Free the device buffers kept for reuse (all devices); thread-safe. */
void	hc_cuda_trim(void);

/* The last CUDA error's text, for messages. */
const char *hc_cuda_error(void);

#ifdef __cplusplus
}
#endif

#endif
