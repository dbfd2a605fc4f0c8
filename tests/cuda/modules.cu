// modules: modules and libraries loaded from files.  The program's own fat
// binary (its .nv_fatbin section) and the sm_90 cubin inside it are
// written to temporary files and loaded with cuModuleLoad and
// cuLibraryLoadFromFile; PTX text the same way (the host backend, with
// no JIT compiler, answers 221).  Then: the codes for a missing file and
// for a file that is no image; functions counted and enumerated (mk_*
// names); the global g_bias by cuModuleGetGlobal and cuLibraryGetGlobal;
// every attribute of the three mk_ kernels by cuFuncGetAttribute and
// cuKernelGetAttribute; mk_add run from each load (p[i] += g_bias + i).
// cuModuleLoadDataEx and cuLibraryLoadData with log options: the fat
// binary (run), and broken PTX: its code and whether the error log the
// driver wrote into the program's buffer says something (host backend:
// skipped, 221).  cuLibraryGetModule: mk_add and g_bias through the
// library's module; cuKernelGetFunction's function and its module.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME "modules"
#define N 512

__device__ unsigned g_bias = 7;

extern "C" __global__ void mk_add(unsigned *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] += g_bias + (unsigned)i;
}

extern "C" __global__ void __launch_bounds__(128) mk_scale(unsigned *p,
    unsigned k, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] *= k;
}

extern "C" __global__ void mk_smem(unsigned *p)
{
	__shared__ unsigned s[1024];

	s[threadIdx.x] = p[threadIdx.x];
	__syncthreads();
	p[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}

static const char ptx[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    ".visible .entry mk_ptx(\n"
    "	.param .u64 mk_ptx_param_0\n"
    ")\n"
    "{\n"
    "	.reg .b32 %r<2>;\n"
    "	.reg .b64 %rd<3>;\n"
    "	ld.param.u64 %rd1, [mk_ptx_param_0];\n"
    "	cvta.to.global.u64 %rd2, %rd1;\n"
    "	mov.u32 %r1, 42;\n"
    "	st.global.u32 [%rd2], %r1;\n"
    "	ret;\n"
    "}\n";

static const char ptx_bad[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    ".visible .entry mk_broken()\n"
    "{\n"
    "	this is not an instruction;\n"
    "}\n";

static int fails;

#define TESTUTIL	(TU_CKDRV)
#include "testutil.h"

// The whole of a file, malloc'd.
static unsigned char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || (p = (unsigned char *)malloc(n)) ==
	    NULL || fread(p, 1, n, f) != (size_t)n) {
		printf(NAME ": FAIL cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

// Writes bytes to a new temporary file; its name into path.
static void
spill(char *path, const void *p, size_t n)
{
	int fd;

	strcpy(path, "/tmp/modules-XXXXXX");
	if ((fd = mkstemp(path)) == -1 || write(fd, p, n) != (ssize_t)n ||
	    close(fd) == -1) {
		printf(NAME ": FAIL cannot write %s\n", path);
		exit(1);
	}
}

// The fat binary of this program's kernels in its .nv_fatbin section
// (which holds others: cudart's own, say).
static const unsigned char *
own_fatbin(const unsigned char *e, size_t *n)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)e;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(e + eh->e_shoff);
	const char *names = (const char *)e + sh[eh->e_shstrndx].sh_offset;
	unsigned short hsz;
	unsigned long long body;
	unsigned magic;
	size_t off, len;
	int i;

	for (i = 0; i < eh->e_shnum; i++) {
		if (strcmp(names + sh[i].sh_name, ".nv_fatbin") != 0)
			continue;
		for (off = 0; off + 16 <= sh[i].sh_size; off = (off + len +
		    7) & ~(size_t)7) {
			const unsigned char *p = e + sh[i].sh_offset + off;

			memcpy(&magic, p, 4);
			if (magic != 0xba55ed50u)
				break;
			memcpy(&hsz, p + 6, 2);
			memcpy(&body, p + 8, 8);
			len = hsz + body;
			if (memmem(p, len, "mk_add", 6) != NULL) {
				*n = len;
				return p;
			}
		}
	}
	printf(NAME ": FAIL no fat binary of mk_add in .nv_fatbin\n");
	exit(1);
}

// The first ELF cubin inside a fat binary, and its length.
static const unsigned char *
cubin_of(const unsigned char *fb, size_t n, size_t *len)
{
	size_t i;

	for (i = 0; i + sizeof(Elf64_Ehdr) < n; i++) {
		if (memcmp(fb + i, ELFMAG, SELFMAG) != 0)
			continue;
		const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(fb + i);
		const Elf64_Shdr *sh;
		size_t end = eh->e_shoff + (size_t)eh->e_shnum * sizeof *sh;
		int k;

		if (eh->e_phoff + (size_t)eh->e_phnum * eh->e_phentsize > end)
			end = eh->e_phoff + (size_t)eh->e_phnum *
			    eh->e_phentsize;
		sh = (const Elf64_Shdr *)(fb + i + eh->e_shoff);
		for (k = 0; k < eh->e_shnum; k++)
			if (sh[k].sh_type != SHT_NOBITS &&
			    sh[k].sh_offset + sh[k].sh_size > end)
				end = sh[k].sh_offset + sh[k].sh_size;
		*len = end;
		return fb + i;
	}
	return NULL;
}

static void
attrs(const char *what, void *h, int kernel)
{
	int a, v;
	CUresult rc;

	printf("%s:", what);
	for (a = 0; a < CU_FUNC_ATTRIBUTE_MAX; a++) {
		v = -1;
		rc = kernel ? cuKernelGetAttribute(&v, (CUfunction_attribute)a,
		    (CUkernel)h, 0) : cuFuncGetAttribute(&v,
		    (CUfunction_attribute)a, (CUfunction)h);
		if (rc == CUDA_SUCCESS)
			printf(" %d", v);
		else
			printf(" e%d", (int)rc);
	}
	printf("\n");
}

// mk_add from this load over p, checked.
static void
run_add(const char *what, CUfunction f, CUdeviceptr d)
{
	unsigned h[N];
	int n = N, i, bad = 0;
	void *args[] = { &d, &n };

	for (i = 0; i < N; i++)
		h[i] = (unsigned)i * 3u;
	CK(cuMemcpyHtoD(d, h, sizeof h));
	CK(cuLaunchKernel(f, N / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
	CK(cuMemcpyDtoH(h, d, sizeof h));
	for (i = 0; i < N; i++)
		if (h[i] != (unsigned)i * 4u + 7u)
			bad++;
	printf("%s mk_add: %d wrong\n", what, bad);
	fails += bad != 0;
}

// cuFFT's private driver table (6e163fbe) and its slot 7, which gives a
// module's functions to a callback and answers their count
// (lib/client/export-tables.md): what cuFFT uses for a module whose
// kernel it does not name.
static CUfunction fft_seen[4096];
static unsigned fft_nseen;

static void
fft_collect(void *arg, CUfunction f)
{
	(void)arg;
	if (fft_nseen < 4096)
		fft_seen[fft_nseen++] = f;
}

static void
fft_slot7(const char *what, CUmodule m, const CUfunction *fs, unsigned n)
{
	static const CUuuid id = { { (char)0x6e, 0x16, 0x3f, (char)0xbe,
	    (char)0xb9, 0x58, 0x44, 0x4d, (char)0x83, 0x5c, (char)0xe1,
	    (char)0x82, (char)0xaf, (char)0xf1, (char)0x99, 0x1e } };
	typedef int (*slot7)(CUcontext, CUmodule, void (*)(void *, CUfunction),
	    void *);
	const void *t = NULL;
	CUcontext c = NULL;
	unsigned i, j, known = 0;
	int r;

	CK(cuCtxGetCurrent(&c));
	if (cuGetExportTable(&t, &id) != CUDA_SUCCESS || t == NULL) {
		printf("%s: cuFFT's table: refused\n", what);
		fails++;
		return;
	}
	fft_nseen = 0;
	r = ((slot7)((void *const *)t)[7])(c, m, fft_collect, NULL);
	for (i = 0; i < fft_nseen; i++)
		for (j = 0; j < n; j++)
			if (fft_seen[i] == fs[j]) {
				known++;
				break;
			}
	printf("%s: cuFFT's table: size word %zu, [7] answers the count %d, "
	    "gave each once %d\n", what, (size_t)((const uintptr_t *)t)[0],
	    r == (int)n, fft_nseen == n && known == n);
}

// What a module shows of itself.
static void
show_module(const char *what, CUmodule m, CUdeviceptr d)
{
	unsigned n = 0, i, mk = 0;
	CUfunction fs[4096], f;
	CUdeviceptr g;
	size_t gsz;
	unsigned gv = 0;
	const char *name;
	char buf[128];

	CK(cuModuleGetFunctionCount(&n, m));
	if (n > 4096)
		n = 4096;
	CK(cuModuleEnumerateFunctions(fs, n, m));
	fft_slot7(what, m, fs, n);
	for (i = 0; i < n; i++) {
		CK(cuFuncGetName(&name, fs[i]));
		mk += strncmp(name, "mk_", 3) == 0;
	}
	printf("%s: mk_ functions enumerated %u\n", what, mk);
	CK(cuModuleGetGlobal(&g, &gsz, m, "g_bias"));
	CK(cuMemcpyDtoH(&gv, g, sizeof gv));
	printf("%s: g_bias %zu bytes, %u\n", what, gsz, gv);
	printf("%s: missing global: error %d\n", what,
	    (int)cuModuleGetGlobal(&g, &gsz, m, "g_nope"));
	printf("%s: missing function: error %d\n", what,
	    (int)cuModuleGetFunction(&f, m, "mk_nope"));
	CK(cuModuleGetFunction(&f, m, "mk_add"));
	snprintf(buf, sizeof buf, "%s mk_add attributes", what);
	attrs(buf, f, 0);
	run_add(what, f, d);
	CK(cuModuleGetFunction(&f, m, "mk_scale"));
	snprintf(buf, sizeof buf, "%s mk_scale attributes", what);
	attrs(buf, f, 0);
	CK(cuModuleGetFunction(&f, m, "mk_smem"));
	snprintf(buf, sizeof buf, "%s mk_smem attributes", what);
	attrs(buf, f, 0);
}

// A load with log options: the code, and whether the logs say something.
static void
load_ex(const char *what, const void *img, int library, CUdeviceptr d)
{
	static char info[8192], err[8192];
	CUjit_option o[5] = { CU_JIT_INFO_LOG_BUFFER,
	    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
	    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE };
	void *v[5];
	CUmodule m = NULL;
	CUlibrary l = NULL;
	CUfunction f;
	CUkernel k;
	CUresult rc;

	info[0] = err[0] = '\0';
	v[0] = info;
	v[1] = (void *)(uintptr_t)sizeof info;
	v[2] = err;
	v[3] = (void *)(uintptr_t)sizeof err;
	v[4] = (void *)(uintptr_t)1;
	rc = library ? cuLibraryLoadData(&l, img, o, v, 5, NULL, NULL, 0) :
	    cuModuleLoadDataEx(&m, img, 5, o, v);
	if (rc == CUDA_ERROR_JIT_COMPILER_NOT_FOUND) {
		printf("%s: skipped, no JIT compiler (error %d)\n", what,
		    (int)rc);
		return;
	}
	printf("%s: load %d, error log nonempty %d, error size <= buffer "
	    "%d\n", what, (int)rc, err[0] != '\0',
	    (size_t)(uintptr_t)v[3] <= sizeof err);
	if (rc != CUDA_SUCCESS)
		return;
	if (library) {
		// The H200's driver (580) loads a library lazily: broken
		// PTX loads, and its kernel is what fails.
		rc = cuLibraryGetKernel(&k, l, "mk_add");
		if (rc != CUDA_SUCCESS) {
			printf("%s: kernel: error %d\n", what, (int)rc);
			CK(cuLibraryUnload(l));
			return;
		}
		CK(cuKernelGetFunction(&f, k));
	} else
		CK(cuModuleGetFunction(&f, m, "mk_add"));
	run_add(what, f, d);
	if (library)
		CK(cuLibraryUnload(l));
	else
		CK(cuModuleUnload(m));
}

int
main(void)
{
	CUmodule lm, fm;
	unsigned char *exe;
	const unsigned char *fb, *cb;
	size_t exelen, fblen, cblen, gsz;
	char fbpath[64], cbpath[64], ptxpath[64], junkpath[64];
	CUmodule m;
	CUlibrary l;
	CUkernel k, ks[4096];
	CUfunction f;
	CUdeviceptr d, g;
	unsigned n, i, mk, gv;
	const char *name;
	CUresult rc;
	void *p;

	if (cudaMalloc(&p, N * sizeof(unsigned)) != cudaSuccess) {
		printf(NAME ": no device\n");
		return 2;
	}
	d = (CUdeviceptr)p;
	exe = slurp("/proc/self/exe", &exelen);
	fb = own_fatbin(exe, &fblen);
	spill(fbpath, fb, fblen);
	if ((cb = cubin_of(fb, fblen, &cblen)) == NULL) {
		printf(NAME ": FAIL no cubin in the fat binary\n");
		return 1;
	}
	spill(cbpath, cb, cblen);
	spill(ptxpath, ptx, strlen(ptx));
	spill(junkpath, "this is not an image\n", 21);

	printf("missing file: error %d\n",
	    (int)cuModuleLoad(&m, "/nonexistent/modules.cubin"));
	printf("not an image: error %d\n", (int)cuModuleLoad(&m, junkpath));
	printf("library from a missing file: error %d\n",
	    (int)cuLibraryLoadFromFile(&l, "/nonexistent/modules.fatbin",
	    NULL, NULL, 0, NULL, NULL, 0));

	CK(cuModuleLoad(&m, fbpath));
	show_module("fatbin", m, d);
	CK(cuModuleUnload(m));
	CK(cuModuleLoad(&m, cbpath));
	show_module("cubin", m, d);
	CK(cuModuleUnload(m));

	rc = cuModuleLoad(&m, ptxpath);
	printf("ptx: load %d\n", (int)rc);
	if (rc == CUDA_SUCCESS) {
		unsigned v = 0;
		void *args[] = { &d };

		CK(cuModuleGetFunction(&f, m, "mk_ptx"));
		CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
		CK(cuMemcpyDtoH(&v, d, sizeof v));
		printf("ptx: mk_ptx wrote %u\n", v);
		attrs("ptx mk_ptx attributes", f, 0);
		CK(cuModuleUnload(m));
	}

	load_ex("ex fatbin", fb, 0, d);
	load_ex("ex broken ptx", ptx_bad, 0, d);
	load_ex("library ex fatbin", fb, 1, d);
	load_ex("library ex broken ptx", ptx_bad, 1, d);

	CK(cuLibraryLoadFromFile(&l, fbpath, NULL, NULL, 0, NULL, NULL, 0));
	CK(cuLibraryGetKernelCount(&n, l));
	if (n > 4096)
		n = 4096;
	CK(cuLibraryEnumerateKernels(ks, n, l));
	for (i = mk = 0; i < n; i++) {
		CK(cuKernelGetName(&name, ks[i]));
		mk += strncmp(name, "mk_", 3) == 0;
	}
	printf("library: mk_ kernels enumerated %u\n", mk);
	CK(cuLibraryGetGlobal(&g, &gsz, l, "g_bias"));
	gv = 0;
	CK(cuMemcpyDtoH(&gv, g, sizeof gv));
	printf("library: g_bias %zu bytes, %u\n", gsz, gv);
	CK(cuLibraryGetKernel(&k, l, "mk_add"));
	attrs("library mk_add attributes", k, 1);
	CK(cuLibraryGetKernel(&k, l, "mk_scale"));
	attrs("library mk_scale attributes", k, 1);
	CK(cuLibraryGetKernel(&k, l, "mk_smem"));
	attrs("library mk_smem attributes", k, 1);
	CK(cuLibraryGetKernel(&k, l, "mk_add"));
	CK(cuKernelGetFunction(&f, k));
	run_add("library", f, d);
	// The library's module, and the module of a kernel's function.
	rc = cuLibraryGetModule(&lm, l);
	printf("library module: %d\n", (int)rc);
	if (rc == CUDA_SUCCESS) {
		CK(cuModuleGetFunction(&f, lm, "mk_add"));
		run_add("library module", f, d);
		CK(cuModuleGetGlobal(&g, &gsz, lm, "g_bias"));
		gv = 0;
		CK(cuMemcpyDtoH(&gv, g, sizeof gv));
		printf("library module: g_bias %zu bytes, %u\n", gsz, gv);
		printf("library module: missing function: error %d\n",
		    (int)cuModuleGetFunction(&f, lm, "mk_nope"));
		CK(cuKernelGetFunction(&f, k));
		rc = cuFuncGetModule(&fm, f);
		printf("kernel's function: module %d, the library's %d\n",
		    (int)rc, rc == CUDA_SUCCESS && fm == lm);
		CK(cuFuncGetName(&name, f));
		printf("kernel's function: name %s\n", name);
	}
	CK(cuLibraryUnload(l));

	unlink(fbpath);
	unlink(cbpath);
	unlink(ptxpath);
	unlink(junkpath);
	free(exe);
	cudaFree(p);
	if (fails) {
		printf(NAME ": FAIL %d\n", fails);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
