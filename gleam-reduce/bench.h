/* gleam-reduce bench: W local worker processes against an aggregator. */
#ifndef REDUCE_BENCH_H
#define REDUCE_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"

/* An address of the aggregator, perhaps a link of its own in front of it. */
struct bench_addr {
	char		 host[256];
	int		 port;
};

#define BENCH_ADDR_MAX	64

struct bench_opts {
	char		 host[256];	/* "" : start our own aggregator */
	int		 port;
	/*
	 * With -s a list: rank w connects to addr[w % naddr] (addr[0] is
	 * host and port), so that each worker can have a link of its own.
	 */
	struct bench_addr addr[BENCH_ADDR_MAX];
	int		 naddr;
	struct auth_key	 key;
	int		 workers;
	size_t		 n;		/* values per tensor */
	int		 tensors;	/* per step, pipelined */
	double		 density;	/* nonzeros per worker, 0..1 */
	double		 overlap;	/* of the support shared by all */
	int		 steps;		/* timed, after one untimed */
	int		 scheme;
	int		 cell_bits;
	uint32_t	 chunk;
	uint64_t	 seed;
	int		 verify;	/* HOMO: check against the dense sum */
	int		 threads;	/* the codec's, per worker */
	int		 yaml;
	int		 quiet;
	int		 gpu;		/* -g: gradients in GPU memory */
};

struct hr_ctx;

/*
 * -g: what the workers need of the GPU, where the program was built with
 * CUDA (gpu.cu, by bench/reduce-cuda-build); NULL in the default build
 * (nogpu.c).  Each returns 0 or an HR_E* code, error() the reason.
 */
struct bench_gpu {
	int	 (*alloc)(float **dev, size_t n);
	void	 (*release)(float *);
	int	 (*put)(float *dev, const float *host, size_t n);
	int	 (*get)(float *host, const float *dev, size_t n);
	/* hr_allreduce_many of gradients in GPU memory (HOMO). */
	int	 (*many)(struct hr_ctx *, float *const *grads,
		    const size_t *ns, size_t count);
	const char *(*error)(void);
};

extern const struct bench_gpu *const bench_gpu;

/*
 * Worker w's gradient: each value nonzero with probability density, from
 * a support drawn with seed (shared by all: a fraction overlap of the
 * nonzeros) or seed and w (the rest); values uniform in (-1, 1).
 */
void	bench_gradient(float *g, size_t n, double density, double overlap,
	    uint64_t seed, int w, int tensor);
/* Runs the benchmark and prints its report; returns an exit code. */
int	bench_run(const struct bench_opts *);

#endif
