/*
 * nvmltrace's test against a fake NVML (fake-nvml.c), no GPU needed:
 * linked against libnvidia-ml.so.1 as nvidia-smi is, run with the
 * tracer first in the library path,
 *	TABLETRACE_NVML_REAL=fake.so TABLETRACE_LOG=log nvml-test fake.so
 * Checks that public calls forward (a string, a pointer result, a
 * function the fake lacks), that tables come back as copies whose slots
 * reach the real ones, that a table longer than the driver's is copied
 * whole and one whose end cannot be known is served as it is.  bats
 * (tests/bats/tabletrace.bats) then reads the log.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct nvmlDevice_st;

/* As nvml.h declares them, less the types. */
int		 nvmlInit_v2(void);
int		 nvmlShutdown(void);
int		 nvmlDeviceGetCount_v2(unsigned *);
int		 nvmlDeviceGetHandleByIndex_v2(unsigned, struct nvmlDevice_st **);
int		 nvmlDeviceGetName(struct nvmlDevice_st *, char *, unsigned);
int		 nvmlDeviceGetPowerUsage(struct nvmlDevice_st *, unsigned *);
int		 nvmlSystemGetDriverVersion(char *, unsigned);
const char	*nvmlErrorString(int);
int		 nvmlInternalGetExportTable(const void **, const uint8_t *);

typedef int (*export_fn)(const void **, const uint8_t *);

static int failed, n;

static void
check(int ok, const char *what)
{
	printf("%s %d %s\n", ok ? "ok" : "not ok", ++n, what);
	if (!ok)
		failed = 1;
}

static const uint8_t uuid_long[16] = { 0xf0, 0x0d, 0x01, 0x02, 0x03, 0x04,
    0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e };
static const uint8_t uuid_endless[16] = { 0xf0, 0x0d, 0xee };
static const uint8_t uuid_none[16] = { 0xc4, 0xfe };

int
main(int argc, char **argv)
{
	void *fake, *p;
	void *const *t, *const *t2, *const *rt, *const *e, *const *re;
	int (*inited)(void);
	export_fn fexp;
	struct nvmlDevice_st *dev;
	unsigned cnt = 0, v = 0;
	char buf[64];

	if (argc != 2) {
		fprintf(stderr, "usage: nvml-test fake.so\n");
		return 2;
	}
	if ((fake = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD)) == NULL) {
		fprintf(stderr, "nvml-test: %s: not loaded: %s\n", argv[1],
		    dlerror());
		return 1;
	}
	inited = (int (*)(void))dlsym(fake, "fake_nvml_inited");
	fexp = (export_fn)dlsym(fake, "nvmlInternalGetExportTable");
	if (inited == NULL || fexp == NULL) {
		fprintf(stderr, "nvml-test: a symbol is missing\n");
		return 1;
	}
	check((void *)nvmlInit_v2 != dlsym(fake, "nvmlInit_v2"),
	    "nvmlInit_v2 is the tracer's");
	check(nvmlDeviceGetCount_v2(&cnt) == 1, "before nvmlInit: the fake's 1");
	check(nvmlInit_v2() == 0 && inited() == 1, "nvmlInit_v2 forwards");
	check(nvmlDeviceGetCount_v2(&cnt) == 0 && cnt == 2, "count: 2");
	check(nvmlDeviceGetHandleByIndex_v2(1, &dev) == 0 &&
	    nvmlDeviceGetName(dev, buf, sizeof buf) == 0 &&
	    strcmp(buf, "Fake GPU 1") == 0, "a handle, a name");
	check(nvmlSystemGetDriverVersion(buf, sizeof buf) == 0 &&
	    strcmp(buf, "999.99") == 0, "driver version");
	check(strcmp(nvmlErrorString(3), "Not Supported") == 0,
	    "a pointer result");
	check(nvmlDeviceGetPowerUsage(dev, &v) == 13,
	    "a function the fake lacks: NVML_ERROR_FUNCTION_NOT_FOUND");

	check(nvmlInternalGetExportTable((const void **)&t, uuid_long) == 0,
	    "the long table returned");
	check(fexp((const void **)&rt, uuid_long) == 0 && t != rt, "as a copy");
	check(t[0] == rt[0] && (uintptr_t)t[0] == 300 * 8 &&
	    t[3] == (void *)0x1234 && t[4] == NULL, "size and data words kept");
	check(t[1] != rt[1] && t[299] != rt[299], "slots replaced");
	check(nvmlInternalGetExportTable((const void **)&t2, uuid_long) == 0 &&
	    t2 == t, "the same copy a second time");
	check(((int (*)(unsigned *, char *, unsigned))t[1])(&v, buf,
	    sizeof buf) == 0 && v == 12 && strcmp(buf, "fake-nvml 12.0") == 0,
	    "slot 1: out-pointers written");
	check(((long (*)(long, long))t[2])(40, 2) == 42, "slot 2");
	check(((int (*)(void))t[299])() == 299, "slot 299, past 256 words");

	check(nvmlInternalGetExportTable((const void **)&e, uuid_endless) == 0 &&
	    fexp((const void **)&re, uuid_endless) == 0 && e == re,
	    "a table with no end: the real one");
	check(nvmlInternalGetExportTable((const void **)&p, uuid_none) == 3 &&
	    p == NULL, "unknown UUID: the real answer");
	check(nvmlShutdown() == 0 && inited() == 0, "nvmlShutdown forwards");
	printf("1..%d\n", n);
	return failed;
}
