/*
 * gleam-reduce bench: forks an aggregator (unless one is named) and W
 * worker processes that allreduce synthetic sparse gradients through
 * hreduce, then reports the aggregation throughput: dense gradient bytes
 * per second, 4 n T over the median time of a step of T tensors, a step
 * lasting from the earliest start to the latest end among the workers.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "exitcode.h"
#include "hcodec.h"
#include "hreduce.h"
#include "hreduce_wire.h"
#include "log.h"
#include "parse.h"
#include "server.h"
#include "util.h"

/* What a worker tells the parent, then its step start and end times. */
struct wres {
	int		rc;
	char		err[400];
	uint64_t	bytes_sent, bytes_received;
	uint64_t	union_count, core_count, payload_bytes;
	uint64_t	mismatches;	/* with -V */
	double		max_err;	/* with -V: vs the float64 sum */
};

#define mix splitmix64_at

void
bench_gradient(float *g, size_t n, double density, double overlap,
    uint64_t seed, int w, int tensor)
{
	uint64_t shared = mix(seed ^ mix((uint64_t)tensor + 1));
	uint64_t own = mix(shared ^ mix((uint64_t)w + 0x1000));
	uint64_t th_shared, th_own, x;
	double ps = density * overlap, po = density * (1 - overlap);
	size_t i;

	/* Two independent draws per value: in the shared part, or own. */
	th_shared = (uint64_t)(ps * 18446744073709551615.0);
	th_own = (uint64_t)(po * 18446744073709551615.0);
	for (i = 0; i < n; i++) {
		x = mix(own + i);
		if ((ps > 0 && mix(shared + i) < th_shared) ||
		    (po > 0 && x < th_own)) {
			x = mix(x);
			/* (-1, 1) without 0: 24 random bits and an odd one. */
			g[i] = (float)(((double)(x >> 40) + 0.5) / 16777216.0 *
			    2.0 - 1.0);
		} else
			g[i] = 0;
	}
}

/*
 * Every worker's gradients again, to check the sum this one got: bit for
 * bit against the dense fixed-point sum for HOMO, within a relative 1e-5
 * of the float64 sum for the others; the float64 sum is made value by
 * value, so that checking a large tensor costs W copies of it and no more.
 */
static void
verify(const struct bench_opts *o, float *const *res, struct wres *r)
{
	float **g = NULL, *exp32 = NULL;
	void *fixed = NULL;
	double sum, e;
	int w, t, emax, ew, s, homo = o->scheme == HR_SCHEME_HOMO;
	size_t i;

	if ((g = calloc((size_t)o->workers, sizeof *g)) == NULL ||
	    (homo && ((exp32 = malloc(o->n * sizeof *exp32 + 1)) == NULL ||
	    (fixed = malloc(o->n * (size_t)(o->cell_bits / 8) + 1)) == NULL)))
		goto nomem;
	for (w = 0; w < o->workers; w++)
		if ((g[w] = malloc(o->n * sizeof *g[w] + 1)) == NULL)
			goto nomem;
	for (t = 0; t < o->tensors; t++) {
		emax = HC_EXP_ZERO;
		for (w = 0; w < o->workers; w++) {
			bench_gradient(g[w], o->n, o->density, o->overlap,
			    o->seed, w, t);
			hc_exponent(g[w], o->n, &ew);
			emax = ew > emax ? ew : emax;
		}
		if (homo && (hc_scale(emax, o->workers, o->cell_bits, &s) != 0 ||
		    hc_dense_fixed((const float *const *)g, o->workers, o->n, s,
		    o->cell_bits, fixed) != 0 ||
		    hc_fixed_to_float(fixed, o->n, o->cell_bits, s, exp32) !=
		    0)) {
			r->mismatches = o->n;
			goto out;
		}
		for (i = 0; i < o->n; i++) {
			for (w = 0, sum = 0; w < o->workers; w++)
				sum += g[w][i];
			e = fabs((double)res[t][i] - sum);
			r->max_err = e > r->max_err ? e : r->max_err;
			if (homo ? memcmp(&exp32[i], &res[t][i], 4) != 0 :
			    e > 1e-5 * (1 + fabs(sum)))
				r->mismatches++;
		}
	}
	goto out;
nomem:
	r->mismatches = o->n;
	snprintf(r->err, sizeof r->err, "--verify: out of memory");
out:
	if (g != NULL)
		for (w = 0; w < o->workers; w++)
			free(g[w]);
	free(g);
	free(exp32);
	free(fixed);
}

static int
read_all(int fd, void *p, size_t len)
{
	char *c = p;
	ssize_t n;

	while (len > 0) {
		if ((n = read(fd, c, len)) <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			return -1;
		}
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * A timed step: the tensors reduced where they lie.  With -g the other
 * schemes have no GPU codec: their gradients go to the host and back, as
 * such a worker's would.
 */
static int
step(const struct bench_opts *o, struct hr_ctx *x, float **g, float **d,
    size_t *ns)
{
	int t, rc;

	if (!o->gpu)
		return hr_allreduce_many(x, g, ns, (size_t)o->tensors, NULL);
	if (o->scheme == HR_SCHEME_HOMO)
		return bench_gpu->many(x, d, ns, (size_t)o->tensors);
	for (t = 0; t < o->tensors; t++)
		if ((rc = bench_gpu->get(g[t], d[t], o->n)) != 0)
			return rc;
	if ((rc = hr_allreduce_many(x, g, ns, (size_t)o->tensors, NULL)) != 0)
		return rc;
	for (t = 0; t < o->tensors; t++)
		if ((rc = bench_gpu->put(d[t], g[t], o->n)) != 0)
			return rc;
	return 0;
}

/* One worker process: its report and 2 * steps times go to fd. */
static void
worker(const struct bench_opts *o, int w, int fd)
{
	struct hr_opts ho;
	struct hr_ctx *x = NULL;
	struct hr_stats st;
	struct wres r;
	float **g, **d = NULL;
	size_t *ns;
	double *times;
	char err[512];
	int s, t, rc;

	memset(&r, 0, sizeof r);
	g = calloc((size_t)o->tensors, sizeof *g);
	ns = calloc((size_t)o->tensors, sizeof *ns);
	times = calloc(2 * (size_t)o->steps + 1, sizeof *times);
	if (g == NULL || ns == NULL || times == NULL) {
		r.rc = HR_ENOMEM;
		goto report;
	}
	for (t = 0; t < o->tensors; t++) {
		ns[t] = o->n;
		if ((g[t] = malloc(o->n * sizeof *g[t] + 1)) == NULL) {
			r.rc = HR_ENOMEM;
			goto report;
		}
	}
	/* -g: each tensor's copy in GPU memory is the one reduced. */
	if (o->gpu && (d = calloc((size_t)o->tensors, sizeof *d)) == NULL) {
		r.rc = HR_ENOMEM;
		goto report;
	}
	for (t = 0; o->gpu && t < o->tensors; t++)
		if ((rc = bench_gpu->alloc(&d[t], o->n)) != 0) {
			r.rc = rc;
			snprintf(r.err, sizeof r.err, "GPU memory: %.380s",
			    bench_gpu->error());
			goto report;
		}
	hr_opts_init(&ho);
	if (o->naddr > 1) {
		ho.host = o->addr[w % o->naddr].host;
		ho.port = o->addr[w % o->naddr].port;
	} else {
		ho.host = o->host;
		ho.port = o->port;
	}
	ho.key = o->key.set ? &o->key : NULL;
	ho.world = o->workers;
	ho.rank = w;
	ho.scheme = o->scheme;
	ho.cell_bits = o->cell_bits;
	ho.chunk = o->chunk;
	ho.seed = o->seed;
	if (o->threads > 0)
		ho.threads = o->threads;
	ho.window = o->tensors < HR_WINDOW_MAX ? o->tensors : HR_WINDOW_MAX;
	snprintf(err, sizeof err, "bench-%d", w);
	ho.name = err;
	if ((rc = hr_open(&ho, &x, err, sizeof err)) != 0) {
		r.rc = rc;
		snprintf(r.err, sizeof r.err, "%.399s", err);
		goto report;
	}
	/* Step 0, untimed, also waits for every worker to be there. */
	for (s = 0; s <= o->steps; s++) {
		for (t = 0; t < o->tensors; t++) {
			bench_gradient(g[t], o->n, o->density, o->overlap,
			    o->seed, w, t);
			if (o->gpu && (rc = bench_gpu->put(d[t], g[t],
			    o->n)) != 0) {
				r.rc = rc;
				snprintf(r.err, sizeof r.err, "to the GPU: "
				    "%.380s", bench_gpu->error());
				goto report;
			}
		}
		/* An empty tensor lines the workers up: a barrier. */
		if ((rc = hr_allreduce(x, NULL, 0)) != 0) {
			r.rc = rc;
			snprintf(r.err, sizeof r.err, "%.399s", hr_errmsg(x));
			goto report;
		}
		if (s > 0)
			times[2 * (s - 1)] = wall_s();
		if ((rc = step(o, x, g, d, ns)) != 0) {
			r.rc = rc;
			snprintf(r.err, sizeof r.err, "%.399s", hr_errmsg(x));
			goto report;
		}
		if (s > 0)
			times[2 * (s - 1) + 1] = wall_s();
		if (s == 0)
			hr_get_stats(x, &st);
	}
	{
		struct hr_stats st2;

		hr_get_stats(x, &st2);
		r.bytes_sent = (st2.bytes_sent - st.bytes_sent) /
		    (uint64_t)o->steps;
		r.bytes_received = (st2.bytes_received - st.bytes_received) /
		    (uint64_t)o->steps;
		r.union_count = st2.union_count;
		r.core_count = st2.core_count;
		r.payload_bytes = st2.payload_bytes;
	}
	for (t = 0; o->gpu && t < o->tensors; t++)
		if ((rc = bench_gpu->get(g[t], d[t], o->n)) != 0) {
			r.rc = rc;
			snprintf(r.err, sizeof r.err, "from the GPU: %.380s",
			    bench_gpu->error());
			goto report;
		}
	if (o->verify)
		verify(o, g, &r);
report:
	hr_close(x);
	for (t = 0; d != NULL && t < o->tensors; t++)
		if (d[t] != NULL)
			bench_gpu->release(d[t]);
	free(d);
	fd_write_all(fd, &r, sizeof r);
	if (times != NULL)
		fd_write_all(fd, times, 2 * (size_t)o->steps * sizeof *times);
	_exit(0);
}

static int
dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Our own aggregator, in a child; its port through a pipe. */
static pid_t
start_aggregator(const struct bench_opts *o, int *port)
{
	struct server_opts so;
	char line[32];
	int p[2];
	ssize_t n;
	pid_t pid;

	if (pipe(p) == -1)
		return -1;
	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		close(p[0]);
		memset(&so, 0, sizeof so);
		snprintf(so.host, sizeof so.host, "127.0.0.1");
		so.key = o->key;
		so.limits.world = o->workers;
		so.limits.max_frame = PROTO_MAX_FRAME_DEFAULT;
		so.limits.max_bytes = (uint64_t)4 << 30;
		so.limits.max_streams = 256;
		so.limits.timeout = 120;
		so.max_workers = o->workers + 8;
		so.foreground = 1;
		so.ready_fd = p[1];
		log_setlevel(LL_ERROR);
		/* Only the listening line: nothing else on the terminal. */
		if (freopen("/dev/null", "w", stderr) == NULL)
			_exit(EXIT_IO);
		_exit(server_run(&so));
	}
	close(p[1]);
	n = read(p[0], line, sizeof line - 1);
	close(p[0]);
	if (n <= 0)
		return -1;
	line[n] = '\0';
	*port = atoi(line);
	return pid;
}

int
bench_run(const struct bench_opts *oin)
{
	struct bench_opts o = *oin;
	struct wres *res;
	double *times, *step, med, gbytes, ubytes, tput;
	pid_t agg = -1, *pids;
	int (*fds)[2];
	int w, s, rc = EXIT_OK, status;
	uint64_t sent = 0, recvd = 0, mism = 0;
	double maxerr = 0;
	char rate[64], sz[64];

	res = calloc((size_t)o.workers, sizeof *res);
	times = calloc((size_t)o.workers * 2 * (size_t)o.steps + 1,
	    sizeof *times);
	step = calloc((size_t)o.steps + 1, sizeof *step);
	pids = calloc((size_t)o.workers, sizeof *pids);
	fds = calloc((size_t)o.workers, sizeof *fds);
	if (res == NULL || times == NULL || step == NULL || pids == NULL ||
	    fds == NULL)
		fatalx(EXIT_IO, "out of memory");
	if (o.host[0] == '\0') {
		if ((agg = start_aggregator(&o, &o.port)) == -1)
			fatal(EXIT_IO, "cannot start the aggregator");
		snprintf(o.host, sizeof o.host, "127.0.0.1");
	}
	for (w = 0; w < o.workers; w++) {
		if (pipe(fds[w]) == -1)
			fatal(EXIT_IO, "pipe");
		if ((pids[w] = fork()) == -1)
			fatal(EXIT_IO, "fork");
		if (pids[w] == 0) {
			close(fds[w][0]);
			worker(&o, w, fds[w][1]);
		}
		close(fds[w][1]);
	}
	for (w = 0; w < o.workers; w++) {
		if (read_all(fds[w][0], &res[w], sizeof res[w]) == -1) {
			res[w].rc = HR_ENET;
			snprintf(res[w].err, sizeof res[w].err, "worker %d "
			    "died", w);
		} else if (res[w].rc == 0 && read_all(fds[w][0],
		    times + (size_t)w * 2 * (size_t)o.steps,
		    2 * (size_t)o.steps * sizeof *times) == -1)
			res[w].rc = HR_ENET;
		close(fds[w][0]);
		waitpid(pids[w], &status, 0);
	}
	if (agg > 0) {
		kill(agg, SIGTERM);
		waitpid(agg, &status, 0);
	}
	for (w = 0; w < o.workers; w++) {
		if (res[w].rc != 0) {
			log_error("worker %d: %s: %s", w,
			    hr_strerror(res[w].rc), res[w].err);
			rc = EXIT_FAIL;
		}
		sent += res[w].bytes_sent;
		recvd += res[w].bytes_received;
		mism += res[w].mismatches;
		maxerr = res[w].max_err > maxerr ? res[w].max_err : maxerr;
	}
	if (rc != EXIT_OK)
		goto out;
	for (s = 0; s < o.steps; s++) {
		double a = 1e300, b = 0, *tw;

		for (w = 0; w < o.workers; w++) {
			tw = times + (size_t)w * 2 * (size_t)o.steps;
			a = tw[2 * s] < a ? tw[2 * s] : a;
			b = tw[2 * s + 1] > b ? tw[2 * s + 1] : b;
		}
		step[s] = b - a;
	}
	qsort(step, (size_t)o.steps, sizeof *step, dcmp);
	med = o.steps % 2 ? step[o.steps / 2] : (step[o.steps / 2 - 1] +
	    step[o.steps / 2]) / 2;
	gbytes = 4.0 * (double)o.n * o.tensors;
	tput = gbytes / med;
	ubytes = (double)res[0].union_count / (double)o.n;
	if (o.yaml) {
		printf("scheme: %s\nworkers: %d\nn: %zu\ntensors: %d\n"
		    "density: %g\noverlap: %g\nsteps: %d\ncell_bits: %d\n"
		    "gpu: %s\n"
		    "median_step_s: %.6f\nthroughput_Bps: %.0f\n"
		    "sent_per_worker: %.0f\nreceived_per_worker: %.0f\n"
		    "union_density: %.6f\ncore: %llu\n",
		    hr_scheme_name(o.scheme), o.workers, o.n, o.tensors,
		    o.density, o.overlap, o.steps, o.cell_bits,
		    o.gpu ? "true" : "false", med, tput,
		    (double)sent / o.workers, (double)recvd / o.workers,
		    o.scheme == HR_SCHEME_HOMO || o.scheme == HR_SCHEME_FLOAT ?
		    ubytes : 0.0, (unsigned long long)res[0].core_count);
		if (o.verify)
			printf("mismatches: %llu\nmax_abs_error: %.9g\n",
			    (unsigned long long)mism, maxerr);
	} else {
		printf("%-6s W=%-2d n=%zu x%d density %g%%: step %.3f ms, "
		    "%s of gradient, %s sent per worker",
		    hr_scheme_name(o.scheme), o.workers, o.n, o.tensors,
		    o.density * 100, med * 1e3,
		    fmt_rate(tput * 8, rate, sizeof rate),
		    fmt_size((uint64_t)((double)sent / o.workers), sz,
		    sizeof sz));
		if (o.verify)
			printf(", %llu mismatches", (unsigned long long)mism);
		printf("\n");
	}
	if (o.verify && mism > 0 && o.scheme == HR_SCHEME_HOMO)
		rc = EXIT_FAIL;
out:
	free(res);
	free(times);
	free(step);
	free(pids);
	free(fds);
	return rc;
}
