/*
 * Unit tests for the client library's initialization and device queries,
 * through its local half (GLEAM_LIBCUDA_LOCAL, default
 * build/default/client-local/libcuda.so.1), which answers from the local
 * defaults of the remoting hooks: one placeholder device, no server.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"

struct uuid {
	unsigned char	 b[16];
};

static void	*lib;

static void *
sym(const char *name)
{
	void *p = dlsym(lib, name);

	CHECK(p != NULL);
	return p;
}

int
main(void)
{
	int (*init)(unsigned int), (*version)(int *), (*count)(int *);
	int (*get)(int *, int), (*name)(char *, int, int);
	int (*totalmem)(size_t *, int), (*attr)(int *, int, int);
	int (*uuid)(struct uuid *, int), (*uuid2)(struct uuid *, int);
	int (*loading)(int *);
	struct uuid u1, u2;
	const char *path;
	char buf[300];
	size_t mem;
	int n, dev, v;

	if ((path = getenv("GLEAM_LIBCUDA_LOCAL")) == NULL)
		path = "build/default/client-local/libcuda.so.1";
	if ((lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		CHECK(lib != NULL);
		return t_done("client_device");
	}
	init = (int (*)(unsigned int))sym("cuInit");
	version = (int (*)(int *))sym("cuDriverGetVersion");
	count = (int (*)(int *))sym("cuDeviceGetCount");
	get = (int (*)(int *, int))sym("cuDeviceGet");
	name = (int (*)(char *, int, int))sym("cuDeviceGetName");
	totalmem = (int (*)(size_t *, int))sym("cuDeviceTotalMem_v2");
	attr = (int (*)(int *, int, int))sym("cuDeviceGetAttribute");
	uuid = (int (*)(struct uuid *, int))sym("cuDeviceGetUuid");
	uuid2 = (int (*)(struct uuid *, int))sym("cuDeviceGetUuid_v2");
	loading = (int (*)(int *))sym("cuModuleGetLoadingMode");
	if (t_fail != 0)
		return t_done("client_device");

	/* The version needs no cuInit; everything else does. */
	v = 0;
	CHECK(version(&v) == 0 && v == 13000);
	CHECK(version(NULL) == 1);
	n = -1;
	CHECK(count(&n) == 3 && n == -1);
	CHECK(get(&dev, 0) == 3);
	CHECK(attr(&v, 1, 0) == 3);
	CHECK(loading(&v) == 3);

	CHECK(init(2) == 1);
	CHECK(count(&n) == 3);
	CHECK(init(0) == 0);
	CHECK(init(0) == 0);

	CHECK(count(&n) == 0 && n == 1);
	CHECK(count(NULL) == 1);
	dev = -1;
	CHECK(get(&dev, 0) == 0 && dev == 0);
	CHECK(get(&dev, 1) == 101);
	CHECK(get(&dev, -1) == 101);
	CHECK(get(NULL, 0) == 1);

	memset(buf, 'x', sizeof buf);
	CHECK(name(buf, sizeof buf, 0) == 0);
	CHECK_STR(buf, "Gleam placeholder (no server)");
	CHECK(name(buf, 6, 0) == 0);
	CHECK_STR(buf, "Gleam");
	CHECK(name(buf, 0, 0) == 1);
	CHECK(name(NULL, 10, 0) == 1);
	CHECK(name(buf, sizeof buf, 1) == 101);

	mem = 1;
	CHECK(totalmem(&mem, 0) == 0 && mem == 0);
	CHECK(totalmem(&mem, 3) == 101);

	/* Every attribute of the placeholder is 0; bad ones are refused. */
	v = -1;
	CHECK(attr(&v, 75, 0) == 0 && v == 0);		/* CC major */
	CHECK(attr(&v, 50, 0) == 0 && v == 0);		/* PCI domain */
	CHECK(attr(&v, 0, 0) == 1);
	CHECK(attr(&v, -5, 0) == 1);
	CHECK(attr(&v, 100000, 0) == 1);
	CHECK(attr(NULL, 1, 0) == 1);
	CHECK(attr(&v, 1, 1) == 101);

	CHECK(uuid(&u1, 0) == 0 && uuid2(&u2, 0) == 0);
	CHECK(memcmp(u1.b, u2.b, 16) == 0);
	CHECK(memcmp(u1.b, "gleam-no-server", 16) == 0);
	CHECK(uuid(&u1, 1) == 101 && uuid(NULL, 0) == 1);

	/* CU_MODULE_LAZY_LOADING, CUDA_MODULE_LOADING being unset. */
	CHECK(getenv("CUDA_MODULE_LOADING") != NULL ||
	    (loading(&v) == 0 && v == 2));
	CHECK(loading(NULL) == 1);
	return t_done("client_device");
}
