/*
 * driver-dump: what a driver's cuGetProcAddress_v2 answers.  Run against
 * the real libcuda.so.1 on a GPU host (tests/gpu/driver-truth), it writes
 * the ground truth that the client library is checked against; run with
 * -c against the client library (make unit), it compares.
 *
 *	driver-dump [-l lib] version ... <names	  write the truth
 *	driver-dump [-l lib] -c truth.tsv		  check lib against it
 *
 * The truth is a "# versions" line with the CUDA versions asked at, then
 * for each name and each flags value (0 default, 1 legacy stream, 2
 * per-thread) one line each time the answer changes as the version grows:
 *
 *	name<TAB>flags<TAB>version<TAB>answer
 *
 * answer: the exported symbol the pointer is (dladdr, exact); "~sym+off"
 * for a pointer into the library that no export names; without a pointer
 * "rc=R,st=S", the CUresult and the symbol status (-1: left unset).  A
 * check holds where the answers agree: the same rc and status, and for
 * an exported symbol the same pointer as dlsym of that name in the
 * library checked (exports may alias one another).
 *
 *	cc -D_GNU_SOURCE -o driver-dump driver-dump.c -ldl
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*getproc_fn)(const char *, void **, int, unsigned long long,
    int *);

#define VERSIONS_MAX	256

static getproc_fn	 gp;
static void		*lib;

/* The answer to one lookup; *pp gets the pointer. */
static void
answer(const char *name, int version, int flags, char *out, size_t len,
    void **pp)
{
	void *p = NULL;
	int st = -1, rc;
	Dl_info di;

	rc = gp(name, &p, version, (unsigned long long)flags, &st);
	*pp = rc == 0 ? p : NULL;
	if (rc != 0 || p == NULL)
		snprintf(out, len, "rc=%d,st=%d", rc, st);
	else if (dladdr(p, &di) == 0 || di.dli_sname == NULL)
		snprintf(out, len, "~?");
	else if (di.dli_saddr == p)
		snprintf(out, len, "%s", di.dli_sname);
	else
		snprintf(out, len, "~%s+%lx", di.dli_sname,
		    (unsigned long)((uintptr_t)p - (uintptr_t)di.dli_saddr));
}

static int
dump(int nv, const int *v)
{
	char name[256], prev[300], cur[300];
	void *p;
	int i, f;

	printf("# versions");
	for (i = 0; i < nv; i++)
		printf("%c%d", i ? ' ' : '\t', v[i]);
	printf("\n");
	while (fgets(name, sizeof name, stdin) != NULL) {
		name[strcspn(name, "\r\n")] = '\0';
		if (name[0] == '\0' || name[0] == '#')
			continue;
		for (f = 0; f <= 2; f++) {
			prev[0] = '\0';
			for (i = 0; i < nv; i++) {
				answer(name, v[i], f, cur, sizeof cur, &p);
				if (strcmp(cur, prev) != 0)
					printf("%s\t%d\t%d\t%s\n", name, f,
					    v[i], cur);
				snprintf(prev, sizeof prev, "%s", cur);
			}
		}
	}
	return 0;
}

/* Does our answer (s, p) agree with the truth's (want)? */
static int
agrees(const char *want, const char *s, void *p)
{
	if (want[0] == '~')
		return p != NULL;
	if (strncmp(want, "rc=", 3) == 0)
		return strcmp(want, s) == 0;
	return p != NULL && p == dlsym(lib, want);
}

/* Each line's answer holds from its version up to the next line's. */
static int
check(const char *path)
{
	FILE *fp;
	char line[512], name[256] = "", want[300], s[300], *t;
	int v[VERSIONS_MAX], nv = 0, f = -1, from = 0, i, pass = 0, fail = 0;
	int lf, lv;
	void *p;

	if ((fp = fopen(path, "r")) == NULL) {
		perror(path);
		return 1;
	}
	if (fgets(line, sizeof line, fp) == NULL ||
	    strncmp(line, "# versions\t", 11) != 0) {
		fprintf(stderr, "driver-dump: %s: no versions line\n", path);
		return 1;
	}
	for (t = strtok(line + 11, " \n"); t != NULL && nv < VERSIONS_MAX;
	    t = strtok(NULL, " \n"))
		v[nv++] = atoi(t);
	for (;;) {
		char ln[256], la[300];
		int more = fgets(line, sizeof line, fp) != NULL;

		if (more && sscanf(line, "%255[^\t]\t%d\t%d\t%299[^\n]", ln,
		    &lf, &lv, la) != 4) {
			fprintf(stderr, "driver-dump: bad line: %s", line);
			fail++;
			continue;
		}
		/* Check the previous line's answer over its versions. */
		if (name[0] != '\0') {
			for (i = 0; i < nv; i++) {
				if (v[i] < from)
					continue;
				if (more && strcmp(ln, name) == 0 && lf == f &&
				    v[i] >= lv)
					break;
				answer(name, v[i], f, s, sizeof s, &p);
				if (agrees(want, s, p))
					pass++;
				else {
					fail++;
					printf("driver-truth: %s flags %d "
					    "version %d: driver %s, ours %s\n",
					    name, f, v[i], want, s);
				}
			}
		}
		if (!more)
			break;
		snprintf(name, sizeof name, "%s", ln);
		snprintf(want, sizeof want, "%s", la);
		f = lf;
		from = lv;
	}
	fclose(fp);
	printf("driver-truth: %d passed, %d failed\n", pass, fail);
	return fail != 0;
}

int
main(int argc, char **argv)
{
	const char *path = "libcuda.so.1", *truth = NULL;
	int c, i, nv, v[VERSIONS_MAX];

	while ((c = getopt(argc, argv, "c:l:")) != -1)
		switch (c) {
		case 'c':
			truth = optarg;
			break;
		case 'l':
			path = optarg;
			break;
		default:
			goto usage;
		}
	argc -= optind;
	argv += optind;
	if ((truth == NULL) == (argc < 1) || argc > VERSIONS_MAX)
		goto usage;
	if ((lib = dlopen(path, RTLD_NOW)) == NULL) {
		fprintf(stderr, "driver-dump: %s\n", dlerror());
		return 1;
	}
	if ((gp = (getproc_fn)dlsym(lib, "cuGetProcAddress_v2")) == NULL) {
		fprintf(stderr, "driver-dump: %s: no cuGetProcAddress_v2\n",
		    path);
		return 1;
	}
	if (truth != NULL)
		return check(truth);
	for (nv = 0; nv < argc; nv++)
		v[nv] = atoi(argv[nv]);
	for (i = 1; i < nv; i++)
		if (v[i] <= v[i - 1])
			goto usage;
	return dump(nv, v);
usage:
	fprintf(stderr, "usage: driver-dump [-l lib] version ... <names\n"
	    "       driver-dump [-l lib] -c truth.tsv\n");
	return 2;
}
