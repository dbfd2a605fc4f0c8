/*
 * nullsweep [-cgp] [-j JOBS] [-t PROTOS] [NAMES]: driver functions called
 * with bad arguments, each call in a child process of its own; a line a
 * call: its code, or the signal that ended it, or "exit N" where it
 * ended without a code, or "hang" after 10 s.
 * Bad input must give an error code, never a crash or a hang (the
 * library's; a driver may crash on what it does not check):
 * tests/gpu/run sets the lines against the driver's, remote.bats checks
 * that the client neither crashes nor hangs on any.
 *
 * NAMES lists the functions, one a line, '#' comments
 * (lib/client/ref/libcuda-exports.txt, the 580 driver's exports, by
 * default); each is called with every argument zero (NULL pointers,
 * handle 0, size 0), or with -p the address of 64 KiB of zeros (as
 * pointers valid memory holding zeroed structures, as handles a value the
 * library never gave, as sizes a huge one).  -c makes the primary context
 * of device 0 current first (else nothing is initialised).
 *
 * -t PROTOS (lib/client/gen/entry-points.h) calls instead each function
 * whose prototype it gives, with typed arguments, after -c's context: a
 * stream, an event, a graph with an empty node and its exec, 64 KiB of
 * device memory, an array and the device's default memory pool made
 * first.  Each function is called with pointers to zeroed memory, handles
 * of those objects (0 for other kinds), integers 0 ("NAME: CODE"), then
 * with integers 16 ("NAME ints: CODE"), then so with each pointer NULL in
 * turn ("NAME null#I"); -g adds each handle a value the library never
 * gave, in turn ("NAME junk#I": for the library only, as a driver follows
 * what it is given).  Function pointers are always NULL; functions that take
 * floating-point or large structures by value are left out.
 *
 * Never called: cuMulticast* (NVLink multicast can put a shared GPU out of
 * service), cuCheckpoint* (they act on processes by id) and the debugger's
 * cudbg* symbols (some are variables).  Functions the library does not
 * have print "absent".
 *
 * Every argument is passed as an integer, which is how the x86-64 and
 * AArch64 calling conventions pass a pointer, a handle and a size alike;
 * small structures passed by value (CUmemLocation) go in a register too.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#define NAME		"nullsweep"
#define HANG_S		10
#define NAMES_DEFAULT	"lib/client/ref/libcuda-exports.txt"
#define NARG		12

typedef int (*zfn)(long, long, long, long, long, long, long, long, long,
    long, long, long);

/* What an argument is given. */
enum {
	A_ZERO,		/* 0 */
	A_PAGE,		/* the address of zeroed memory */
	A_OBJ,		/* an object of its kind (0 where none is made) */
	A_JUNK,		/* a handle the library never gave */
	A_INT16		/* 16 */
};

/* The kinds of handle the child makes. */
enum {
	K_NONE, K_CTX, K_STREAM, K_EVENT, K_GRAPH, K_NODE, K_EXEC, K_DPTR,
	K_ARRAY, K_POOL, K_NKINDS
};

struct job {
	char		*name;
	char		*label;		/* what the line says */
	unsigned char	 arg[NARG];	/* A_* */
	unsigned char	 kind[NARG];	/* K_* */
	pid_t		 pid;
	int		 fd;		/* the child's code, as text */
	char		 out[64];
	size_t		 len;
	time_t		 start;
	char		 res[64];
};

static struct job	*jobs;
static size_t		 njobs, cap;

static void
usage(void)
{
	fprintf(stderr, "usage: " NAME
	    " [-cgp] [-j jobs] [-t protos] [names]\n");
	exit(2);
}

static int
skipped(const char *n)
{
	return strncmp(n, "cu", 2) != 0 || !(n[2] >= 'A' && n[2] <= 'Z') ||
	    strncmp(n, "cuMulticast", 11) == 0 ||
	    strncmp(n, "cuCheckpoint", 12) == 0;
}

static struct job *
job_add(const char *name, const char *label)
{
	struct job *j;

	if (njobs == cap) {
		cap = cap ? 2 * cap : 256;
		if ((jobs = (struct job *)realloc(jobs, cap * sizeof *jobs)) ==
		    NULL) {
			fprintf(stderr, NAME ": out of memory\n");
			exit(2);
		}
	}
	j = &jobs[njobs++];
	memset(j, 0, sizeof *j);
	if ((j->name = strdup(name)) == NULL ||
	    (j->label = strdup(label)) == NULL) {
		fprintf(stderr, NAME ": out of memory\n");
		exit(2);
	}
	return j;
}

/* The kind of handle a parameter's type names (K_NONE: an integer). */
static int
handle_kind(const char *t)
{
	static const struct {
		const char	*type;
		int		 kind;
	} k[] = {
		{ "CUcontext", K_CTX }, { "CUstream", K_STREAM },
		{ "CUevent", K_EVENT }, { "CUgraph", K_GRAPH },
		{ "CUgraphNode", K_NODE }, { "CUgraphExec", K_EXEC },
		{ "CUdeviceptr", K_DPTR }, { "CUdeviceptr_v1", K_DPTR },
		{ "CUdeviceptr_v2", K_DPTR }, { "CUarray", K_ARRAY },
		{ "CUmemoryPool", K_POOL },
	};
	size_t i;

	for (i = 0; i < sizeof k / sizeof k[0]; i++)
		if (strcmp(t, k[i].type) == 0)
			return k[i].kind;
	return K_NONE;
}

/*
 * One prototype, "CUresult NAME(TYPE ARG, ...);": its jobs.  0 where the
 * function is left out.
 */
static int
proto_jobs(char *line, int junk)
{
	char *name, *args, *a, *save = NULL, label[1100];
	unsigned char arg[NARG] = { 0 }, kind[NARG] = { 0 };
	int n = 0, i, ptr[NARG], fnp[NARG];
	struct job *j;

	if (strncmp(line, "CUresult ", 9) != 0)
		return 0;
	name = line + 9;
	if ((args = strchr(name, '(')) == NULL)
		return 0;
	*args++ = '\0';
	args[strcspn(args, ")")] = '\0';
	if (skipped(name))
		return 0;
	if (strcmp(args, "void") != 0) {
		for (a = strtok_r(args, ",", &save); a != NULL;
		    a = strtok_r(NULL, ",", &save)) {
			char type[96], *sp;

			if (n == NARG)
				return 0;
			while (*a == ' ')
				a++;
			snprintf(type, sizeof type, "%s", a);
			/* The type: all but the parameter's name. */
			if ((sp = strrchr(type, ' ')) == NULL)
				return 0;
			*sp = '\0';
			if (strncmp(type, "const ", 6) == 0)
				memmove(type, type + 6, strlen(type + 6) + 1);
			ptr[n] = strchr(a, '*') != NULL;
			if (!ptr[n] && (strstr(type, "float") != NULL ||
			    strstr(type, "double") != NULL ||
			    strncmp(type, "CUipc", 5) == 0 ||
			    strncmp(type, "CUeglFrame", 10) == 0 ||
			    strstr(type, "Params") != NULL ||
			    strcmp(type, "CUtensorMap") == 0))
				return 0;	/* by value, not an integer */
			kind[n] = (unsigned char)(ptr[n] ? (int)K_NONE :
			    handle_kind(type));
			/* Function pointers: always NULL. */
			fnp[n] = !ptr[n] && (strcmp(type, "CUhostFn") == 0 ||
			    strcmp(type, "CUstreamCallback") == 0 ||
			    strcmp(type, "CUoccupancyB2DSize") == 0 ||
			    strcmp(type, "CUasyncCallback") == 0 ||
			    strcmp(type, "CUlogsCallback") == 0);
			if (fnp[n])
				arg[n] = A_ZERO;
			else if (ptr[n])
				arg[n] = A_PAGE;
			else if (kind[n] != K_NONE)
				arg[n] = A_OBJ;
			else
				arg[n] = A_ZERO;
			n++;
		}
	}
	j = job_add(name, name);
	memcpy(j->arg, arg, sizeof arg);
	memcpy(j->kind, kind, sizeof kind);
	/* From here on integers are 16: sizes that reach memory. */
	for (i = 0; i < n; i++)
		if (!ptr[i] && !fnp[i] && kind[i] == K_NONE)
			arg[i] = A_INT16;
	snprintf(label, sizeof label, "%s ints", name);
	j = job_add(name, label);
	memcpy(j->arg, arg, sizeof arg);
	memcpy(j->kind, kind, sizeof kind);
	for (i = 0; i < n; i++) {
		if (ptr[i]) {
			snprintf(label, sizeof label, "%s null#%d", name, i);
			j = job_add(name, label);
			memcpy(j->arg, arg, sizeof arg);
			memcpy(j->kind, kind, sizeof kind);
			j->arg[i] = A_ZERO;
		} else if (junk && kind[i] != K_NONE) {
			snprintf(label, sizeof label, "%s junk#%d", name, i);
			j = job_add(name, label);
			memcpy(j->arg, arg, sizeof arg);
			memcpy(j->kind, kind, sizeof kind);
			j->arg[i] = A_JUNK;
		}
	}
	return 1;
}

/* 64 KiB of zeros, page-aligned: what pointers point to. */
static long	 zpage[8192] __attribute__((aligned(4096)));
static long	 zjunk[64];

/* In the child: the objects handles name. */
static int
objects(uintptr_t obj[K_NKINDS])
{
	CUDA_ARRAY_DESCRIPTOR ad;
	CUcontext c;
	CUstream s;
	CUevent e;
	CUgraph g;
	CUgraphNode nd;
	CUgraphExec x;
	CUdeviceptr p;
	CUarray a;
	CUmemoryPool mp;

	memset(obj, 0, K_NKINDS * sizeof obj[0]);
	if (cuCtxGetCurrent(&c) != CUDA_SUCCESS ||
	    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
	    cuEventCreate(&e, 0) != CUDA_SUCCESS ||
	    cuGraphCreate(&g, 0) != CUDA_SUCCESS ||
	    cuGraphAddEmptyNode(&nd, g, NULL, 0) != CUDA_SUCCESS ||
	    cuGraphInstantiate(&x, g, 0) != CUDA_SUCCESS ||
	    cuMemAlloc(&p, sizeof zpage) != CUDA_SUCCESS ||
	    cuMemsetD8(p, 0, sizeof zpage) != CUDA_SUCCESS)
		return -1;
	obj[K_CTX] = (uintptr_t)c;
	obj[K_STREAM] = (uintptr_t)s;
	obj[K_EVENT] = (uintptr_t)e;
	obj[K_GRAPH] = (uintptr_t)g;
	obj[K_NODE] = (uintptr_t)nd;
	obj[K_EXEC] = (uintptr_t)x;
	obj[K_DPTR] = (uintptr_t)p;
	memset(&ad, 0, sizeof ad);
	ad.Width = 64;
	ad.Height = 64;
	ad.Format = CU_AD_FORMAT_FLOAT;
	ad.NumChannels = 1;
	if (cuArrayCreate(&a, &ad) == CUDA_SUCCESS)
		obj[K_ARRAY] = (uintptr_t)a;
	if (cuDeviceGetDefaultMemPool(&mp, 0) == CUDA_SUCCESS)
		obj[K_POOL] = (uintptr_t)mp;
	return 0;
}

static void
say(int fd, const char *s)
{
	(void)!write(fd, s, strlen(s));
}

/* In the child: the call, its code written to fd. */
static void
child(void *lib, const struct job *j, int ctx, int fd)
{
	uintptr_t obj[K_NKINDS];
	long v[NARG];
	char buf[32];
	CUdevice d;
	CUcontext c;
	zfn f;
	int i;

	if (ctx && (cuInit(0) != CUDA_SUCCESS ||
	    cuDeviceGet(&d, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&c, d) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(c) != CUDA_SUCCESS)) {
		say(fd, "no context");
		exit(0);
	}
	memset(obj, 0, sizeof obj);
	for (i = 0; i < NARG; i++)
		if (j->arg[i] == A_OBJ || j->arg[i] == A_JUNK)
			break;
	if (i < NARG && objects(obj) == -1) {
		say(fd, "no objects");
		exit(0);
	}
	if ((f = (zfn)dlsym(lib, j->name)) == NULL) {
		say(fd, "absent");
		exit(0);
	}
	for (i = 0; i < NARG; i++) {
		switch (j->arg[i]) {
		case A_PAGE:
			v[i] = (long)zpage;
			break;
		case A_OBJ:
			v[i] = (long)obj[j->kind[i]];
			break;
		case A_JUNK:
			v[i] = (long)zjunk;
			break;
		case A_INT16:
			v[i] = 16;
			break;
		default:
			v[i] = 0;
		}
	}
	snprintf(buf, sizeof buf, "%d", f(v[0], v[1], v[2], v[3], v[4], v[5],
	    v[6], v[7], v[8], v[9], v[10], v[11]));
	say(fd, buf);
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
		child(lib, j, ctx, p[1]);
	}
	close(p[1]);
	j->fd = p[0];
	j->len = 0;
	j->start = time(NULL);
	return 0;
}

/* The child's end: its result in j->res.  0 while it runs. */
static int
reap(struct job *j)
{
	int st;
	ssize_t r;
	pid_t w;

	w = waitpid(j->pid, &st, WNOHANG);
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

static FILE *
open_or_die(const char *path)
{
	FILE *f;

	if ((f = fopen(path, "r")) == NULL) {
		fprintf(stderr, NAME ": %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return f;
}

int
main(int argc, char **argv)
{
	size_t next = 0, done = 0, i;
	int ctx = 0, page = 0, junk = 0, par = 4, o, running = 0, bad = 0;
	const char *names, *protos = NULL;
	char line[1024];
	void *lib;
	FILE *f;

	while ((o = getopt(argc, argv, "cgj:pt:h")) != -1) {
		switch (o) {
		case 'c':
			ctx = 1;
			break;
		case 'g':
			junk = 1;
			break;
		case 'j':
			par = atoi(optarg);
			if (par < 1 || par > 64)
				usage();
			break;
		case 'p':
			page = 1;
			break;
		case 't':
			protos = optarg;
			break;
		default:
			usage();
		}
	}
	if (argc - optind > 1 || (protos != NULL && argc > optind))
		usage();
	if (protos != NULL) {
		ctx = 1;
		f = open_or_die(protos);
		while (fgets(line, sizeof line, f) != NULL) {
			line[strcspn(line, "\n")] = '\0';
			proto_jobs(line, junk);
		}
		fclose(f);
	} else {
		names = argc > optind ? argv[optind] : NAMES_DEFAULT;
		f = open_or_die(names);
		while (fgets(line, sizeof line, f) != NULL) {
			struct job *j;

			line[strcspn(line, " \t\r\n")] = '\0';
			if (line[0] == '\0' || line[0] == '#' ||
			    skipped(line))
				continue;
			j = job_add(line, line);
			memset(j->arg, page ? A_PAGE : A_ZERO, sizeof j->arg);
		}
		fclose(f);
	}
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
			    reap(&jobs[i])) {
				running--;
				done++;
				reaped = 1;
			}
		}
		if (!reaped)
			usleep(2000);
	}
	for (i = 0; i < njobs; i++) {
		printf("%s: %s\n", jobs[i].label, jobs[i].res);
		/* A child that ended without its code: the library ended
		 * it (a sanitizer's report, a fatal error). */
		if (strncmp(jobs[i].res, "signal", 6) == 0 ||
		    strncmp(jobs[i].res, "exit", 4) == 0 ||
		    strcmp(jobs[i].res, "hang") == 0)
			bad++;
		free(jobs[i].name);
		free(jobs[i].label);
	}
	free(jobs);
	printf(NAME ": %zu %s%s%s, %d crashed or hung\n", njobs,
	    protos ? "calls" : "functions", ctx ? " with a context" : "",
	    protos ? ", typed arguments" : page ? ", arguments in memory" : "",
	    bad);
	return bad ? 1 : 0;
}
