/*
 * nullsweep [-cp] [-j JOBS] [NAMES]: every driver function NAMES lists (one
 * a line, '#' comments; lib/client/ref/libcuda-exports.txt, the 580
 * driver's exports, by default), called with all its arguments zero (NULL
 * pointers, handle 0, size 0), each in a child process of its own: its
 * code, or the signal that ended it, or "hang" after 10 s.  -c makes the
 * primary context of device 0 current first (else nothing is initialised).
 * Bad input of this kind must give an error code, never a crash or a
 * hang; tests/gpu/run sets the lines against the driver's, remote.bats
 * checks that the client neither crashes nor hangs on any.
 *
 * Never called: cuMulticast* (NVLink multicast can put a shared GPU out of
 * service), cuCheckpoint* (they act on processes by id) and the debugger's
 * cudbg* symbols (some are variables).  Functions the library does not
 * have print "absent".
 *
 * Every argument is passed as a zero integer, which is how the x86-64
 * and AArch64 calling conventions pass a NULL pointer, a 0 handle and a 0
 * size alike; the driver API takes no floating-point argument, and its few
 * small structures passed by value (CUmemLocation) go in a register too.
 * -p passes instead the address of 64 KiB of zeros as every argument: as
 * pointers it is valid memory holding zeroed structures, as handles a
 * value the library never gave, as sizes a huge one.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#define NAME		"nullsweep"
#define HANG_S		10
#define NAMES_DEFAULT	"lib/client/ref/libcuda-exports.txt"

typedef int (*zfn)(long, long, long, long, long, long, long, long, long,
    long, long, long);

struct job {
	char	*name;
	pid_t	 pid;
	int	 fd;		/* the child's code, as text */
	char	 out[64];
	size_t	 len;
	time_t	 start;
	char	 res[64];
};

static void
usage(void)
{
	fprintf(stderr, "usage: " NAME " [-cp] [-j jobs] [names]\n");
	exit(2);
}

static int
skipped(const char *n)
{
	return strncmp(n, "cu", 2) != 0 || !(n[2] >= 'A' && n[2] <= 'Z') ||
	    strncmp(n, "cuMulticast", 11) == 0 ||
	    strncmp(n, "cuCheckpoint", 12) == 0;
}

/* In the child: the call, its code written to fd. */
static int	 page;

static void
child(void *lib, const char *name, int ctx, int fd)
{
	char buf[32];
	CUdevice d;
	CUcontext c;
	zfn f;
	int rc, n;

	if (ctx && (cuInit(0) != CUDA_SUCCESS ||
	    cuDeviceGet(&d, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&c, d) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(c) != CUDA_SUCCESS)) {
		n = snprintf(buf, sizeof buf, "no context");
		(void)!write(fd, buf, (size_t)n);
		_exit(0);
	}
	if ((f = (zfn)dlsym(lib, name)) == NULL) {
		n = snprintf(buf, sizeof buf, "absent");
		(void)!write(fd, buf, (size_t)n);
		exit(0);
	}
	if (page) {
		/* Every argument the address of zeroed memory. */
		static long pg[8192];
		long a = (long)pg;

		rc = f(a, a, a, a, a, a, a, a, a, a, a, a);
	} else
		rc = f(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
	n = snprintf(buf, sizeof buf, "%d", rc);
	(void)!write(fd, buf, (size_t)n);
	/* An ordinary exit: Gleam's client says goodbye to its server (a
	 * session left without a word is held for its resume window). */
	exit(0);
}

static int
start(struct job *j, void *lib, int ctx)
{
	int p[2];

	if (pipe(p) == -1)
		return -1;
	fflush(stdout);
	if ((j->pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (j->pid == 0) {
		close(p[0]);
		child(lib, j->name, ctx, p[1]);
	}
	close(p[1]);
	j->fd = p[0];
	j->len = 0;
	j->start = time(NULL);
	return 0;
}

/* The child's end: its result in j->res.  0 while it runs. */
static int
reap(struct job *j, int hang)
{
	int st;
	ssize_t r;
	pid_t w;

	w = waitpid(j->pid, &st, hang ? 0 : WNOHANG);
	if (w == 0) {
		if (time(NULL) - j->start < HANG_S)
			return 0;
		kill(j->pid, SIGKILL);
		waitpid(j->pid, &st, 0);
		close(j->fd);
		snprintf(j->res, sizeof j->res, "hang");
		return 1;
	}
	while (j->len < sizeof j->out - 1 && (r = read(j->fd, j->out + j->len,
	    sizeof j->out - 1 - j->len)) > 0)
		j->len += (size_t)r;
	j->out[j->len] = '\0';
	close(j->fd);
	if (w == -1)
		snprintf(j->res, sizeof j->res, "lost (%s)", strerror(errno));
	else if (WIFSIGNALED(st))
		snprintf(j->res, sizeof j->res, "signal %s",
		    strsignal(WTERMSIG(st)));
	else if (j->len == 0)
		snprintf(j->res, sizeof j->res, "exit %d", WEXITSTATUS(st));
	else
		snprintf(j->res, sizeof j->res, "%s", j->out);
	return 1;
}

int
main(int argc, char **argv)
{
	struct job *jobs = NULL;
	size_t njobs = 0, cap = 0, next = 0, done = 0, i;
	int ctx = 0, par = 4, o, running = 0, bad = 0;
	const char *names;
	char line[256];
	void *lib;
	FILE *f;

	while ((o = getopt(argc, argv, "cj:ph")) != -1) {
		switch (o) {
		case 'c':
			ctx = 1;
			break;
		case 'p':
			page = 1;
			break;
		case 'j':
			par = atoi(optarg);
			if (par < 1 || par > 64)
				usage();
			break;
		default:
			usage();
		}
	}
	if (argc - optind > 1)
		usage();
	names = argc > optind ? argv[optind] : NAMES_DEFAULT;
	if ((f = fopen(names, "r")) == NULL) {
		fprintf(stderr, NAME ": %s: %s\n", names, strerror(errno));
		return 2;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, " \t\r\n")] = '\0';
		if (line[0] == '\0' || line[0] == '#' || skipped(line))
			continue;
		if (njobs == cap) {
			cap = cap ? 2 * cap : 256;
			if ((jobs = (struct job *)realloc(jobs,
			    cap * sizeof *jobs)) == NULL)
				return 2;
		}
		memset(&jobs[njobs], 0, sizeof jobs[njobs]);
		jobs[njobs++].name = strdup(line);
	}
	fclose(f);
	/* The library the program would get: the driver, or Gleam's. */
	if ((lib = dlopen("libcuda.so.1", RTLD_NOW)) == NULL) {
		fprintf(stderr, NAME ": %s\n", dlerror());
		return 2;
	}
	while (done < njobs) {
		int reaped = 0;

		while (running < par && next < njobs) {
			if (start(&jobs[next], lib, ctx) == -1) {
				snprintf(jobs[next].res, sizeof jobs[next].res,
				    "not started (%s)", strerror(errno));
				done++;
			} else
				running++;
			next++;
		}
		for (i = 0; i < next; i++) {
			if (jobs[i].pid > 0 && jobs[i].res[0] == '\0' &&
			    reap(&jobs[i], 0)) {
				running--;
				done++;
				reaped = 1;
			}
		}
		if (!reaped)
			usleep(2000);
	}
	for (i = 0; i < njobs; i++) {
		printf("%s: %s\n", jobs[i].name, jobs[i].res);
		if (strncmp(jobs[i].res, "signal", 6) == 0 ||
		    strcmp(jobs[i].res, "hang") == 0)
			bad++;
		free(jobs[i].name);
	}
	free(jobs);
	printf(NAME ": %zu functions%s%s, %d crashed or hung\n", njobs,
	    ctx ? " with a context" : "", page ? ", arguments in memory" :
	    "", bad);
	return bad ? 1 : 0;
}
