/*
 * tests/gpu/hreduce-cuda: hr_allreduce_cuda (gradients in device memory)
 * on the GPU, through a real aggregator.
 *
 *	hreduce-cuda GLEAM-REDUCE
 *
 * For each case, a gleam-reduce of its own (the program named, started
 * as GLEAM-REDUCE -d -l 127.0.0.1:0) and W worker processes on the one
 * GPU in a group at it.  Each allreduces its gradient from device memory
 * (hr_allreduce_cuda), then the same gradient from host memory
 * (hr_allreduce, the CPU codec), twice over (the second time the pools
 * are warm).  Both sums must be identical bit for bit, and equal to the
 * dense fixed-point sum of every worker's gradient at the scale the group
 * used.  A NaN in one worker's gradient must give HR_ENONFINITE at every
 * worker, and the next tensor must go through.  Rank 0 of the largest
 * case also prints the median time of each path.  The "many" cases
 * pipeline several tensors of different sizes (hr_allreduce_many_cuda)
 * in a group where the odd ranks reduce from host memory
 * (hr_allreduce_many), each sum checked against the dense one.  Prints
 * "hreduce-cuda test: N passed, N failed"; exits 1 on any failure.
 * Built by bench/reduce-cuda-build; no CUDA call is made before fork.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

extern "C" {
#include "hcodec.h"
#include "hreduce.h"
#include "util.h"
}
#include "hreduce_cuda.h"

static int port;

#define rnd splitmix64

/* Worker w's gradient of a case: independent supports. */
static void
gen(float *g, size_t n, double density, int w, uint64_t seed)
{
	uint64_t s = seed * 104729 + (uint64_t)w * 31337 + 1;
	uint64_t th = (uint64_t)(density * 18446744073709551615.0);

	for (size_t i = 0; i < n; i++)
		g[i] = rnd(&s) < th ? (float)ldexp((double)(rnd(&s) >> 40) + 1,
		    (int)(rnd(&s) % 40) - 60) * ((rnd(&s) & 1) ? 1 : -1) : 0;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v.empty() ? 0 : v[v.size() / 2];
}

struct tcase {
	size_t	 n;
	double	 density;
	int	 W, bits, nan, timed;
	uint64_t seed;
	int	 many;		/* tensors pipelined, mixed ranks */
};

#define FAIL(...) do {							\
	fprintf(stderr, "rank %d, n %zu, %d-bit: ", w, c->n, c->bits);	\
	fprintf(stderr, __VA_ARGS__);					\
	fputc('\n', stderr);						\
	_exit(1);							\
} while (0)

/* One worker; its exit status is its verdict. */
static void
worker(const struct tcase *c, int w)
{
	std::vector<std::vector<float> > g((size_t)c->W,
	    std::vector<float>(c->n + 1));
	std::vector<const float *> gp((size_t)c->W);
	std::vector<float> host(c->n + 1), back(c->n + 1), ref(c->n + 1);
	std::vector<uint8_t> fixed(c->n * 8 + 8);
	std::vector<double> tg, tc;
	struct hr_opts o;
	struct hr_ctx *x = NULL;
	char err[256];
	float *dg = NULL;
	int rc, rcc, rep, s, nan = c->nan;

	for (int v = 0; v < c->W; v++) {
		gen(g[(size_t)v].data(), c->n, c->density, v, c->seed);
		gp[(size_t)v] = g[(size_t)v].data();
	}
	if (c->nan && w == c->W - 1)
		g[(size_t)w][c->n / 2] = NAN;
	if (cudaMalloc((void **)&dg, c->n * 4 + 4) != cudaSuccess)
		FAIL("cudaMalloc");
	hr_opts_init(&o);
	o.host = "127.0.0.1";
	o.port = port;
	o.world = c->W;
	o.rank = w;
	o.cell_bits = c->bits;
	o.timeout_ms = 60000;
	o.seed = 11;
	o.name = "gpu-test";
	if ((rc = hr_open(&o, &x, err, sizeof err)) != 0)
		FAIL("hr_open: %s", err);
	for (rep = 0; rep < (c->timed ? 5 : 2); rep++) {
		double t0, t1, t2;

		cudaMemcpy(dg, gp[(size_t)w], c->n * 4, cudaMemcpyHostToDevice);
		memcpy(host.data(), gp[(size_t)w], c->n * 4);
		t0 = now();
		rc = hr_allreduce_cuda(x, dg, c->n, NULL);
		t1 = now();
		rcc = hr_allreduce(x, host.data(), c->n);
		t2 = now();
		if (rep > 0) {
			tg.push_back(t1 - t0);
			tc.push_back(t2 - t1);
		}
		if (nan) {
			if (rc != HR_ENONFINITE || rcc != HR_ENONFINITE)
				FAIL("a NaN at rank %d: %d and %d, not %d",
				    c->W - 1, rc, rcc, HR_ENONFINITE);
			/* The context goes on: the next tensors without it. */
			g[(size_t)(c->W - 1)][c->n / 2] = 0;
			nan = 0;
			continue;
		}
		if (rc != 0 || rcc != 0)
			FAIL("allreduce: cuda %d (%s), cpu %d", rc,
			    hr_strerror(rc), rcc);
		cudaMemcpy(back.data(), dg, c->n * 4, cudaMemcpyDeviceToHost);
		if (memcmp(back.data(), host.data(), c->n * 4) != 0)
			FAIL("device and host sums differ");
		s = hr_last_scale(x);
		if (hc_dense_fixed(gp.data(), c->W, c->n, s, c->bits,
		    fixed.data()) != 0 || hc_fixed_to_float(fixed.data(), c->n,
		    c->bits, s, ref.data()) != 0 ||
		    memcmp(ref.data(), host.data(), c->n * 4) != 0)
			FAIL("not the dense fixed-point sum (scale %d)", s);
	}
	if (c->timed && w == 0)
		printf("n %zu, density %g, W %d: hr_allreduce_cuda %.2f ms, "
		    "hr_allreduce %.2f ms (medians, loopback)\n", c->n,
		    c->density, c->W, median(tg) * 1e3, median(tc) * 1e3);
	fflush(stdout);
	hr_close(x);
	cudaFree(dg);
	_exit(0);
}

/* Tensor t of a "many" case: sizes n, n/2 + 1, n/3 + 2, ... */
static size_t
many_n(const struct tcase *c, int t)
{
	return c->n / (size_t)(t + 1) + (size_t)t;
}

/* A worker of a "many" case: even ranks on the GPU, odd on the host. */
static void
worker_many(const struct tcase *c, int w)
{
	std::vector<std::vector<float> > mine((size_t)c->many);
	std::vector<float *> dp((size_t)c->many), hp((size_t)c->many);
	std::vector<size_t> ns((size_t)c->many);
	std::vector<int> rcs((size_t)c->many);
	struct hr_opts o;
	struct hr_ctx *x = NULL;
	char err[256];
	int rc, gpu = w % 2 == 0;

	for (int t = 0; t < c->many; t++) {
		size_t n = many_n(c, t);

		ns[(size_t)t] = n;
		mine[(size_t)t].resize(n + 1);
		gen(mine[(size_t)t].data(), n, c->density, w, c->seed + t);
		hp[(size_t)t] = mine[(size_t)t].data();
		if (gpu && (cudaMalloc((void **)&dp[(size_t)t], n * 4 + 4) !=
		    cudaSuccess || cudaMemcpy(dp[(size_t)t], hp[(size_t)t],
		    n * 4, cudaMemcpyHostToDevice) != cudaSuccess))
			FAIL("cudaMalloc or cudaMemcpy");
	}
	hr_opts_init(&o);
	o.host = "127.0.0.1";
	o.port = port;
	o.world = c->W;
	o.rank = w;
	o.cell_bits = c->bits;
	o.timeout_ms = 60000;
	o.seed = 11;
	o.window = 4;
	o.name = "gpu-test";
	if ((rc = hr_open(&o, &x, err, sizeof err)) != 0)
		FAIL("hr_open: %s", err);
	rc = gpu ? hr_allreduce_many_cuda(x, dp.data(), ns.data(),
	    (size_t)c->many, rcs.data(), NULL) : hr_allreduce_many(x,
	    hp.data(), ns.data(), (size_t)c->many, rcs.data());
	if (rc != 0)
		FAIL("allreduce_many (%s): %s", gpu ? "GPU" : "host",
		    hr_errmsg(x));
	for (int t = 0; t < c->many; t++) {
		size_t n = ns[(size_t)t];
		std::vector<std::vector<float> > all((size_t)c->W,
		    std::vector<float>(n + 1));
		std::vector<const float *> ap((size_t)c->W);
		std::vector<float> got(n + 1), ref(n + 1);
		std::vector<uint8_t> fixed(n * 8 + 8);
		int e, emax = HC_EXP_ZERO, s;

		for (int v = 0; v < c->W; v++) {
			gen(all[(size_t)v].data(), n, c->density, v,
			    c->seed + t);
			ap[(size_t)v] = all[(size_t)v].data();
			hc_exponent(ap[(size_t)v], n, &e);
			emax = e > emax ? e : emax;
		}
		if (gpu)
			cudaMemcpy(got.data(), dp[(size_t)t], n * 4,
			    cudaMemcpyDeviceToHost);
		else
			memcpy(got.data(), hp[(size_t)t], n * 4);
		if (hc_scale(emax, c->W, c->bits, &s) != 0 ||
		    hc_dense_fixed(ap.data(), c->W, n, s, c->bits,
		    fixed.data()) != 0 || hc_fixed_to_float(fixed.data(), n,
		    c->bits, s, ref.data()) != 0 ||
		    memcmp(ref.data(), got.data(), n * 4) != 0)
			FAIL("tensor %d (n %zu) on the %s: not the dense "
			    "fixed-point sum", t, n, gpu ? "GPU" : "host");
	}
	hr_close(x);
	for (float *d : dp)
		cudaFree(d);
	_exit(0);
}

/* An aggregator on a free port: its pid, the port in *p; -1 if none. */
static pid_t
agg_start(const char *prog, int *p)
{
	int fd[2];
	pid_t pid;
	FILE *f;
	char line[512];
	const char *at;

	if (pipe(fd) == -1 || (pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		dup2(fd[1], 2);
		close(fd[0]);
		close(fd[1]);
		execl(prog, prog, "-D", "-l", "127.0.0.1:0", (char *)NULL);
		perror(prog);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	*p = 0;
	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if ((at = strstr(line, "listening on ")) != NULL &&
		    (at = strrchr(at, ':')) != NULL) {
			*p = atoi(at + 1);
			break;
		}
	/* Its later lines are read by nobody: to /dev/null from here on. */
	if (f != NULL && fork() == 0) {
		while (fgets(line, sizeof line, f) != NULL)
			;
		_exit(0);
	}
	if (f != NULL)
		fclose(f);
	if (*p <= 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

int
main(int argc, char *argv[])
{
	static const struct tcase cases[] = {
		{ 1, 1.0, 2, 32, 0, 0, 1 },
		{ 1000003, 0.01, 4, 32, 0, 0, 2 },
		{ 1000003, 0.2, 3, 64, 0, 0, 3 },
		{ 4099, 0.0, 2, 32, 0, 0, 4 },		/* all zeros */
		{ 200003, 0.05, 2, 32, 1, 0, 5 },	/* a NaN, then none */
		{ 16777216, 0.01, 8, 32, 0, 1, 6 },
		/* Pipelined, GPU and host ranks mixed. */
		{ 300007, 0.02, 4, 32, 0, 0, 7, 9 },
		{ 65537, 0.3, 3, 64, 0, 0, 8, 5 },
		{ 2097152, 0.01, 8, 32, 0, 0, 9, 8 },
	};
	int pass = 0, fail = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: hreduce-cuda gleam-reduce\n");
		return 2;
	}
	for (const struct tcase &c : cases) {
		std::vector<pid_t> pids;
		int bad = 0, st;
		pid_t agg;

		fflush(stdout);
		if ((agg = agg_start(argv[1], &port)) == -1) {
			fprintf(stderr, "%s did not start\n", argv[1]);
			return 1;
		}
		for (int w = 0; w < c.W; w++) {
			pid_t p = fork();

			if (p == 0 && c.many > 0)
				worker_many(&c, w);
			if (p == 0)
				worker(&c, w);
			if (p == -1) {
				perror("fork");
				return 1;
			}
			pids.push_back(p);
		}
		for (pid_t p : pids)
			if (waitpid(p, &st, 0) != p || !WIFEXITED(st) ||
			    WEXITSTATUS(st) != 0)
				bad = 1;
		kill(agg, SIGTERM);
		waitpid(agg, NULL, 0);
		if (bad) {
			fail++;
			fprintf(stderr, "case n %zu density %g W %d %d-bit%s%s: "
			    "FAILED\n", c.n, c.density, c.W, c.bits,
			    c.nan ? " NaN" : "", c.many ? " many" : "");
		} else
			pass++;
	}
	printf("hreduce-cuda test: %d passed, %d failed\n", pass, fail);
	return fail != 0;
}
