/*
 * Unit tests for the client library's cuGetProcAddress (dark-api.md §1.2),
 * through the built lib/libcuda.so.1 as cudart sees it: dlopen, dlsym,
 * lookups.  GLEAM_LIBCUDA names another build of the library.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t.h"
#include "test_client_rows.h"

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

typedef int	(*getproc2_fn)(const char *, void **, int, uint64_t, int *);
typedef int	(*getproc_fn)(const char *, void **, int, uint64_t);

static void		*lib;
static getproc2_fn	 getproc2;
static getproc_fn	 getproc;

/* A value no lookup returns, to see whether one wrote its outputs. */
static char		 sentinel;
#define UNTOUCHED	((void *)&sentinel)

static void *
sym(const char *name)
{
	return dlsym(lib, name);
}

/* cuGetProcAddress_v2, returning *pfn; rc and status through pointers. */
static void *
lookup(const char *name, int version, uint64_t flags, int *rc, int *status)
{
	void *fn = UNTOUCHED;

	*status = 77;
	*rc = getproc2(name, &fn, version, flags, status);
	return fn;
}

/* A lookup that must succeed with status 0 and give the function "want". */
static int
finds(const char *name, int version, uint64_t flags, const char *want)
{
	void *fn, *w;
	int rc, st;

	fn = lookup(name, version, flags, &rc, &st);
	w = sym(want);
	if (rc != 0 || st != 0 || fn == NULL || fn != w) {
		fprintf(stderr, "%s@%d/%llu: rc %d status %d, %p; "
		    "%s is at %p\n", name, version, (unsigned long long)flags,
		    rc, st, fn, want, w);
		return 0;
	}
	return 1;
}

/* A lookup that must answer rc 0, *pfn NULL and the given status. */
static int
misses(const char *name, int version, uint64_t flags, int want)
{
	void *fn;
	int rc, st;

	fn = lookup(name, version, flags, &rc, &st);
	if (rc != 0 || fn != NULL || st != want) {
		fprintf(stderr, "%s@%d/%llu: rc %d status %d fn %p\n", name,
		    version, (unsigned long long)flags, rc, st, fn);
		return 0;
	}
	return 1;
}

/* A lookup that must fail with INVALID_VALUE, leaving its outputs alone. */
static int
refuses(const char *name, int version, uint64_t flags)
{
	void *fn;
	int rc, st;

	fn = lookup(name, version, flags, &rc, &st);
	return rc == 1 && fn == UNTOUCHED && st == 77;
}

/* The examples of §1.2, each as the document states it. */
static void
test_examples(void)
{
	void *fn;
	int rc;

	/* The empty probe, with and without a status. */
	CHECK(misses("", 0, 0, 1));
	fn = UNTOUCHED;
	CHECK(getproc2("", &fn, 0, 0, NULL) == 0 && fn == NULL);

	/* Unknown names, and suffixed names, are not found. */
	CHECK(misses("cuNoSuchFunction", 13000, 0, 1));
	CHECK(misses("cuMemAlloc_v2", 13000, 0, 1));
	CHECK(misses("cuMemcpyAsync_ptsz", 13000, 2, 1));
	CHECK(misses("cumemalloc", 13000, 0, 1));
	CHECK(misses("cuMemAlloc ", 13000, 0, 1));

	/* Known, but introduced after the version asked for. */
	CHECK(misses("cuDeviceGetHostAtomicCapabilities", 12000, 0, 2));
	CHECK(misses("cuMemAlloc", 1000, 0, 2));
	CHECK(misses("cuMemAlloc", 0, 0, 2));
	CHECK(misses("cuMemAlloc", -1, 0, 2));

	/* A version above the driver's, or bad flags: nothing written. */
	CHECK(refuses("cuMemAlloc", 13010, 0));
	CHECK(refuses("cuMemAlloc", 13001, 0));
	CHECK(refuses("", 13010, 0));
	CHECK(refuses("cuMemAlloc", 13000, 3));
	CHECK(refuses("cuMemAlloc", 13000, 4));
	CHECK(refuses("cuMemAlloc", 13000, ~(uint64_t)0));
	CHECK(refuses("cuNoSuchFunction", 13000, 8));

	/* Missing arguments fail cleanly. */
	CHECK(getproc2(NULL, &fn, 13000, 0, NULL) == 1);
	CHECK(getproc2("cuMemAlloc", NULL, 13000, 0, NULL) == 1);

	/* Version selection. */
	CHECK(finds("cuMemAlloc", 2000, 0, "cuMemAlloc"));
	CHECK(finds("cuMemAlloc", 3010, 0, "cuMemAlloc"));
	CHECK(finds("cuMemAlloc", 3020, 0, "cuMemAlloc_v2"));
	CHECK(finds("cuMemAlloc", 13000, 0, "cuMemAlloc_v2"));
	CHECK(finds("cuCtxCreate", 13000, 0, "cuCtxCreate_v4"));
	CHECK(finds("cuCtxCreate", 11040, 0, "cuCtxCreate_v3"));
	CHECK(finds("cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2"));
	CHECK(finds("cuCtxGetDevice", 12090, 0, "cuCtxGetDevice"));
	CHECK(finds("cuStreamWaitValue32", 8000, 0, "cuStreamWaitValue32"));
	CHECK(finds("cuStreamWaitValue32", 11070, 0,
	    "cuStreamWaitValue32_v2"));

	/* Flags: 0 and 1 legacy stream, 2 per-thread where it exists. */
	CHECK(finds("cuMemcpyAsync", 7000, 0, "cuMemcpyAsync"));
	CHECK(finds("cuMemcpyAsync", 7000, 1, "cuMemcpyAsync"));
	CHECK(finds("cuMemcpyAsync", 7000, 2, "cuMemcpyAsync_ptsz"));
	CHECK(misses("cuMemcpyAsync", 4000, 2, 2));
	CHECK(misses("cuMemcpyAsync", 6050, 2, 2));
	CHECK(finds("cuMemcpyHtoD", 7000, 2, "cuMemcpyHtoD_v2_ptds"));
	CHECK(finds("cuMemcpyHtoD", 3020, 1, "cuMemcpyHtoD_v2"));
	CHECK(finds("cuStreamWaitValue32", 11070, 2,
	    "cuStreamWaitValue32_v2_ptsz"));
	CHECK(finds("cuMemAlloc", 3020, 2, "cuMemAlloc_v2"));
	CHECK(finds("cuMemAlloc", 2000, 2, "cuMemAlloc"));
	CHECK(finds("cuLaunchKernel", 13000, 2, "cuLaunchKernel_ptsz"));
	CHECK(finds("cuLaunchKernel", 13000, 0, "cuLaunchKernel"));

	/* The lookup functions themselves come back to us. */
	CHECK(finds("cuGetProcAddress", 11030, 0, "cuGetProcAddress"));
	CHECK(finds("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"));
	CHECK(finds("cuGetExportTable", 3000, 0, "cuGetExportTable"));
	CHECK(misses("cuGetExportTable", 2000, 0, 2));

	/* The 4-argument ABI: not found is error 500. */
	fn = UNTOUCHED;
	CHECK(getproc("cuNoSuchFunction", &fn, 13000, 0) == 500 && fn == NULL);
	fn = UNTOUCHED;
	CHECK(getproc("", &fn, 0, 0) == 500 && fn == NULL);
	fn = UNTOUCHED;
	CHECK(getproc("cuMemAlloc", &fn, 13000, 0) == 0 &&
	    fn == sym("cuMemAlloc_v2"));
	fn = UNTOUCHED;
	CHECK(getproc("cuMemcpyAsync", &fn, 13000, 2) == 0 &&
	    fn == sym("cuMemcpyAsync_ptsz"));
	fn = UNTOUCHED;
	CHECK(getproc("cuMemAlloc", &fn, 13010, 0) == 1 && fn == UNTOUCHED);
	CHECK(getproc("cuMemAlloc", &fn, 13000, 3) == 1 && fn == UNTOUCHED);
	rc = getproc(NULL, &fn, 13000, 0);
	CHECK(rc == 1);
}

/*
 * Every row of the TSV answers what the real driver answered, every name
 * a library dlsyms is exported, and so is every symbol of the table.
 */
static void
test_rows(void)
{
	const struct tsv_row *r;
	const char *want;
	size_t i, bad = 0, n = 0;

	for (i = 0; i < nitems(tsv_rows); i++) {
		r = &tsv_rows[i];
		want = r->resolves_to;
		/* §1.2: @12000 is the 5-argument _v2; the TSV's column
		 * names the unsuffixed function there. */
		if (strcmp(r->name, "cuGetProcAddress") == 0 &&
		    r->version >= 12000)
			want = "cuGetProcAddress_v2";
		if (want == NULL ? !misses(r->name, r->version, r->flags, 1) :
		    !finds(r->name, r->version, r->flags, want))
			bad++;
		n++;
	}
	CHECK(n == 460);	/* §4: 460 distinct lookups */
	CHECK(bad == 0);

	for (i = bad = 0; i < nitems(tsv_dlsym); i++)
		if (sym(tsv_dlsym[i]) == NULL) {
			fprintf(stderr, "dlsym %s: not exported\n",
			    tsv_dlsym[i]);
			bad++;
		}
	CHECK(nitems(tsv_dlsym) == 92);
	CHECK(bad == 0);

	for (i = bad = 0; i < nitems(client_exports); i++)
		if (sym(client_exports[i]) == NULL) {
			fprintf(stderr, "%s: not exported\n",
			    client_exports[i]);
			bad++;
		}
	CHECK(bad == 0);
}

/*
 * An unimplemented entry point is a real function that fails with 801
 * and says so on stderr, once.  Graphics interop stays unimplemented in a
 * library whose GPU is elsewhere.
 */
static void
test_stubs(void)
{
	int (*glinit)(void);
	int (*vdpau)(void **, uint32_t, unsigned int);
	char buf[512];
	FILE *f;
	int saved, rc1, rc2, rc3, n;
	void *res = NULL;

	glinit = (int (*)(void))sym("cuGLInit");
	vdpau = (int (*)(void **, uint32_t, unsigned int))
	    sym("cuGraphicsVDPAURegisterVideoSurface");
	CHECK(glinit != NULL && vdpau != NULL);
	if (glinit == NULL || vdpau == NULL)
		return;

	fflush(stderr);
	saved = dup(2);
	if ((f = tmpfile()) == NULL || saved == -1)
		return;
	dup2(fileno(f), 2);
	rc1 = glinit();
	rc2 = glinit();
	rc3 = vdpau(&res, 1, 0);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);

	CHECK(rc1 == 801 && rc2 == 801 && rc3 == 801);
	CHECK(res == NULL);
	rewind(f);
	n = 0;
	while (fgets(buf, sizeof buf, f) != NULL) {
		if (strstr(buf, "cuGLInit: not supported") != NULL)
			n++;
		else
			CHECK(strstr(buf, "cuGraphicsVDPAURegisterVideoSurface:"
			    " not supported") != NULL);
	}
	CHECK(n == 1);
	fclose(f);
}

int
main(void)
{
	const char *path;

	if ((path = getenv("GLEAM_LIBCUDA")) == NULL)
		path = "lib/libcuda.so.1";
	if ((lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		CHECK(lib != NULL);
		return t_done("client_procaddr");
	}
	getproc2 = (getproc2_fn)sym("cuGetProcAddress_v2");
	getproc = (getproc_fn)sym("cuGetProcAddress");
	CHECK(getproc2 != NULL && getproc != NULL);
	if (getproc2 != NULL && getproc != NULL) {
		test_examples();
		test_rows();
		test_stubs();
	}
	return t_done("client_procaddr");
}
