/*
 * Modules, libraries, functions and kernels.  An image is sent whole with
 * its load; the reply describes every function in it (name, parameter
 * layout, attributes), so that later lookups of attributes and parameter
 * layouts, and the packing of launch arguments, need no round trip.
 */
#include <elf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "memo.h"
#include "io.h"
#include "client.h"
#include "log.h"
#include "hooks.h"
#include "wcache.h"

#define FATBIN_MAGIC		0xba55ed50u
#define FATBIN_WRAPPER_MAGIC	0x466243b1u
#define IMAGE_MAX		(1ull << 31)

/*
 * The size of an image the driver API passes by pointer alone: a fat
 * binary (or cudart's wrapper around one), an ELF cubin, or PTX text.
 * 0 if it is none of these.
 */
static size_t
image_size(const void **image)
{
	const uint8_t *p = *image;
	uint32_t magic;

	memcpy(&magic, p, sizeof magic);
	if (magic == FATBIN_WRAPPER_MAGIC) {
		/* { int magic; int version; const void *data; void *unused } */
		const void *inner;

		memcpy(&inner, p + 8, sizeof inner);
		if (inner == NULL)
			return 0;
		*image = inner;
		p = inner;
		memcpy(&magic, p, sizeof magic);
	}
	if (magic == FATBIN_MAGIC) {
		/* { u32 magic; u16 version; u16 header size; u64 body size } */
		uint16_t hsz;
		uint64_t body;

		memcpy(&hsz, p + 6, sizeof hsz);
		memcpy(&body, p + 8, sizeof body);
		if (body > IMAGE_MAX)
			return 0;
		return (size_t)hsz + (size_t)body;
	}
	if (memcmp(p, ELFMAG, SELFMAG) == 0 && p[EI_CLASS] == ELFCLASS64) {
		Elf64_Ehdr eh;
		Elf64_Shdr sh;
		uint64_t end, e;
		unsigned i;

		memcpy(&eh, p, sizeof eh);
		end = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
		e = eh.e_phoff + (uint64_t)eh.e_phnum * eh.e_phentsize;
		if (e > end)
			end = e;
		for (i = 0; i < eh.e_shnum && eh.e_shentsize == sizeof sh;
		    i++) {
			memcpy(&sh, p + eh.e_shoff + (uint64_t)i * sizeof sh,
			    sizeof sh);
			if (sh.sh_type != SHT_NOBITS &&
			    sh.sh_offset + sh.sh_size > end)
				end = sh.sh_offset + sh.sh_size;
		}
		return end > IMAGE_MAX ? 0 : (size_t)end;
	}
	/* PTX: text, NUL-terminated. */
	return strlen((const char *)p) + 1;
}

static void
module_free(struct gmodule *m)
{
	struct gfunc *f;

	/* Its functions and kernels go with it, as the driver's do. */
	while ((f = m->made) != NULL) {
		m->made = f->next;
		rpc_ftab_free(f->own, f->nown);
		free(f->legacy);
		f->o.magic = 0;
		free(f);
	}
	texref_forget(m);
	rpc_ftab_free(m->funcs, m->nfunc);
	free(m->enumed);
	while (m->nglobals > 0)
		mem_del(m->globals[--m->nglobals], 0);
	free(m->globals);
	m->o.magic = 0;
	free(m);
}

/* Sends an image too large for one frame ahead of its load. */
static CUresult
module_stage(uint64_t id, const void *image, size_t n)
{
	struct rpc_val in[3], rep[1];
	size_t off, k, max = io_max_payload();
	void *keep;
	CUresult rc;

	for (off = 0; off < n; off += k) {
		k = n - off < max ? n - off : max;
		in[0].u = id;
		in[1].u = off;
		in[2].p = (const char *)image + off;
		in[2].len = (uint32_t)k;
		rc = remote_call(R_STAGE_PUT, in, rep, &keep);
		free(keep);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	return CUDA_SUCCESS;
}

/*
 * Function tables of images loaded before, kept across runs: with one at
 * hand a load need not wait for the server's table (it goes one-way, its
 * error, if any, reported by the next call that waits), which saves a
 * round trip per module.  One file per table under
 * $XDG_CACHE_HOME/gleam/ftab (or ~/.cache/gleam/ftab), named by the
 * XXH3-128 of the image's XXH3-128 (the weight cache's name for it, so
 * that a load hashes its image once) seeded with what a table depends on:
 * the device's name and attributes, the server's driver version, module
 * or library.
 * A file holds "GLFTAB1", its table's length and XXH3-128, then the
 * table; one that does not check out is ignored and replaced.
 * GLEAM_CACHE=0 turns it off with the weight cache.
 */
#define FTAB_MAGIC	"GLFTAB1"
#define FTAB_MAX	(64u << 20)

static int
ftab_path(const uint8_t ih[16], int library, int dev, char *buf, size_t len)
{
	const struct client_device *d = client_device(dev);
	XXH64_hash_t seed;
	XXH128_hash_t h;
	uint32_t drv = client_server_driver();
	char dir[1024];

	if (d == NULL || memo_dir("ftab", dir, sizeof dir) == -1)
		return -1;
	seed = XXH3_64bits_withSeed(d, sizeof *d,
	    ((uint64_t)drv << 1 | (library != 0)) ^ 0x67746162u);
	h = XXH3_128bits_withSeed(ih, 16, seed);
	return (size_t)snprintf(buf, len, "%s/%016llx%016llx", dir,
	    (unsigned long long)h.high64, (unsigned long long)h.low64) >=
	    len ? -1 : 0;
}

/* The table in the file, malloc'd; NULL if none checks out. */
static void *
ftab_read(const char *path, size_t *len)
{
	uint8_t hdr[8 + 8 + 16], want[16];
	XXH128_canonical_t c;
	uint64_t n;
	void *blob = NULL;
	FILE *f;

	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr ||
	    memcmp(hdr, FTAB_MAGIC, 8) != 0)
		goto out;
	memcpy(&n, hdr + 8, 8);
	if (n == 0 || n > FTAB_MAX || (blob = malloc(n)) == NULL)
		goto out;
	if (fread(blob, 1, n, f) != n || fgetc(f) != EOF)
		goto bad;
	XXH128_canonicalFromHash(&c, XXH3_128bits(blob, n));
	memcpy(want, c.digest, sizeof want);
	if (memcmp(want, hdr + 16, 16) != 0)
		goto bad;
	*len = n;
	fclose(f);
	return blob;
bad:
	free(blob);
	blob = NULL;
out:
	fclose(f);
	return NULL;
}

/* Keeps the table for the next run: written whole, then renamed. */
static void
ftab_write(const char *path, const void *blob, size_t len)
{
	uint8_t hdr[8 + 8 + 16];
	XXH128_canonical_t c;
	uint64_t n = len;

	if (len == 0 || len > FTAB_MAX)
		return;
	memcpy(hdr, FTAB_MAGIC, 8);
	memcpy(hdr + 8, &n, 8);
	XXH128_canonicalFromHash(&c, XXH3_128bits(blob, len));
	memcpy(hdr + 16, c.digest, 16);
	(void)memo_write(path, hdr, sizeof hdr, blob, len);
}

/*
 * Loads an image.  With JIT options (cuModuleLoadDataEx, cuLibraryLoadData)
 * the load waits for R_MODULE_LOAD_EX's reply, whose outputs (logs, wall
 * time) go into the program's arrays whether the load worked or not: a
 * PTX compile's error log is most wanted when it failed.
 */
static CUresult
module_load(struct gmodule **out, const void *image, int library,
    unsigned nj, CUjit_option *jo, void **jv)
{
	struct rpc_val in[5], rep[3];
	size_t *logsz = NULL;
	struct pw w;
	struct gmodule *m;
	struct gctx *c;
	void *keep, *blob;
	size_t n, blen;
	char path[1200];
	uint8_t ih[16] = { 0 };
	const char *off = getenv("GLEAM_CACHE");
	int have = 0, known = 0;
	CUresult rc;

	if (out == NULL || image == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	/*
	 * A library is the process's, not a context's: the driver loads one
	 * on a thread with no current context (cudart does, on a thread's
	 * first launch, before it makes the primary context current).  The
	 * server is told of an active primary context to load it in.
	 */
	if (library && ctx_current() == NULL &&
	    (c = ctx_primary_live(-1)) != NULL)
		rc = CUDA_SUCCESS;
	else if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((n = image_size(&image)) == 0)
		return CUDA_ERROR_INVALID_IMAGE;
	pw_init(&w);
	if (nj > 0) {
		/* jit_enc's bound, before a table of that many is made. */
		if (nj > RPC_JIT_OPTS_MAX) {
			pw_free(&w);
			return CUDA_ERROR_INVALID_VALUE;
		}
		if ((logsz = calloc(nj, sizeof *logsz)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		if ((rc = jit_enc(&w, nj, jo, jv, logsz)) != CUDA_SUCCESS) {
			pw_free(&w);
			free(logsz);
			return rc;
		}
	}
	if ((m = calloc(1, sizeof *m)) == NULL) {
		pw_free(&w);
		free(logsz);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->o.kind = library ? GK_LIBRARY : GK_MODULE;
	m->ctx = c;
	m->library = library;
	in[0].u = gobj_id(c);
	in[1].u = gobj_id(m);
	in[2].p = image;
	in[2].len = (uint32_t)n;
	/* The image's name, for the function table and the weight cache. */
	if (off == NULL || strcmp(off, "0") != 0) {
		wcache_name(image, n, ih);
		known = ftab_path(ih, library, c->device, path, sizeof path) ==
		    0;
	}
	if (known && nj == 0 && (blob = ftab_read(path, &blen)) != NULL) {
		have = rpc_ftab_dec(blob, blen, &m->funcs, &m->nfunc) == 0;
		free(blob);
	}
	if (wcache_image(gobj_id(m), image, n, ih, &rc)) {
		/* The weight cache readied it for the load that names m. */
		if (rc != CUDA_SUCCESS)
			goto fail;
		in[2].len = 0;
	} else if (n > io_max_payload()) {
		/* Ahead in pieces; the load then names it by the module's id. */
		if ((rc = module_stage(gobj_id(m), image, n)) != CUDA_SUCCESS)
			goto fail;
		in[2].len = 0;
	}
	if (nj > 0) {
		/* Options: their outputs come back, success or not. */
		in[3].u = (uint64_t)library;
		in[4].p = w.p;
		in[4].len = (uint32_t)w.len;
		rc = remote_call(R_MODULE_LOAD_EX, in, rep, &keep);
		if (rc == CUDA_SUCCESS) {
			jit_dec(&rep[2], nj, jo, jv, logsz);
			rc = (CUresult)rep[0].u;
		}
		if (rc == CUDA_SUCCESS && rpc_ftab_dec(rep[1].p, rep[1].len,
		    &m->funcs, &m->nfunc) == -1)
			rc = CUDA_ERROR_UNKNOWN;
		if (rc == CUDA_SUCCESS && known)
			ftab_write(path, rep[1].p, rep[1].len);
	} else if (have) {
		/* The table of an earlier run: nothing to wait for. */
		rc = rpost(library ? R_LIBRARY_LOAD : R_MODULE_LOAD, in, 0);
		keep = NULL;
	} else {
		rc = remote_call(library ? R_LIBRARY_LOAD : R_MODULE_LOAD, in, rep,
		    &keep);
		if (rc == CUDA_SUCCESS && rpc_ftab_dec(rep[0].p, rep[0].len,
		    &m->funcs, &m->nfunc) == -1)
			rc = CUDA_ERROR_UNKNOWN;
		if (rc == CUDA_SUCCESS && known)
			ftab_write(path, rep[0].p, rep[0].len);
	}
	free(keep);
	if (rc != CUDA_SUCCESS)
		goto fail;
	pw_free(&w);
	free(logsz);
	gobj_publish(m);
	*out = m;
	return CUDA_SUCCESS;
fail:
	pw_free(&w);
	free(logsz);
	module_free(m);
	return rc;
}

CUresult
cuModuleLoadData(CUmodule *mod, const void *image)
{
	return module_load((struct gmodule **)mod, image, 0, 0, NULL, NULL);
}

CUresult
cuModuleLoadDataEx(CUmodule *mod, const void *image, unsigned int n,
    CUjit_option *opts, void **vals)
{
	return module_load((struct gmodule **)mod, image, 0, n, opts, vals);
}

CUresult
cuModuleLoadFatBinary(CUmodule *mod, const void *fatbin)
{
	return module_load((struct gmodule **)mod, fatbin, 0, 0, NULL, NULL);
}

CUresult
cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jo,
    void **jv, unsigned int nj, CUlibraryOption *lo, void **lv,
    unsigned int nl)
{
	/* The library options (lazy loading, ...) are the server's affair. */
	return module_load((struct gmodule **)lib, code, 1, nj, jo, jv);
}

static CUresult
module_unload(void *h, int library)
{
	struct gmodule *m = gobj_check(h, library ? GK_LIBRARY : GK_MODULE);
	struct rpc_val in[1], out[1];
	void *keep;
	CUresult rc;

	/* A library's module goes with the library, not alone. */
	if (m == NULL || m->lib != NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (m->mod != NULL)
		module_free(m->mod);
	in[0].u = gobj_id(m);
	rc = remote_call(library ? R_LIBRARY_UNLOAD : R_MODULE_UNLOAD, in, out,
	    &keep);
	free(keep);
	/* Function handles of the module die with it, as with the driver;
	 * their structs stay allocated so a stale handle is caught, not used. */
	module_free(m);
	return rc;
}

CUresult cuModuleUnload(CUmodule m) { return module_unload(m, 0); }
CUresult cuLibraryUnload(CUlibrary l) { return module_unload(l, 1); }

static const struct gfinfo *
module_find(const struct gmodule *m, const char *name)
{
	uint32_t i;

	for (i = 0; i < m->nfunc; i++)
		if (strcmp(m->funcs[i].name, name) == 0)
			return &m->funcs[i];
	return NULL;
}

/*
 * A function of a library's module (cuLibraryGetModule) is the library's
 * kernel on the server, asked for under the function's id: launched,
 * queried and set like any function there.
 */
static CUresult
module_get_func(void **out, void *h, const char *name, int library)
{
	struct gmodule *m = gobj_check(h, library ? GK_LIBRARY : GK_MODULE);
	struct rpc_val in[3], rep[1];
	const struct gfinfo *fi;
	struct gmodule *t;
	struct gfunc *f;
	void *keep;
	CUresult rc;

	/* A module's: the driver initialised and the module before the
	 * rest (a library's: the arguments first), as the driver checks. */
	if (!library) {
		if ((rc = client_initialized()) != CUDA_SUCCESS)
			return rc;
		if (m == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
	}
	if (out == NULL || name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (m == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	t = m->lib != NULL ? m->lib : m;
	if (m->lib != NULL)
		library = 1;
	fi = module_find(t, name);
	if ((f = calloc(1, sizeof *f)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	f->o.kind = library && m->lib == NULL ? GK_KERNEL : GK_FUNC;
	f->mod = m;
	f->fi = fi;
	in[0].u = gobj_id(t);
	in[1].u = gobj_id(f);
	in[2].p = name;
	in[2].len = (uint32_t)strlen(name);
	if (fi != NULL) {
		/* The load's table has it: nothing to wait for. */
		rc = rpost(library ? R_LIBRARY_GET_KERNEL : R_MODULE_GET_FUNC,
		    in, 0);
		keep = NULL;
	} else
		rc = remote_call(library ? R_LIBRARY_GET_KERNEL : R_MODULE_GET_FUNC,
		    in, rep, &keep);
	if (rc == CUDA_SUCCESS && fi == NULL) {
		/* Not in the load's table: the reply's own entry. */
		if (rep[0].len == 0 || rpc_ftab_dec(rep[0].p, rep[0].len,
		    &f->own, &f->nown) == -1 || f->nown != 1)
			rc = CUDA_ERROR_NOT_FOUND;
		else
			fi = &f->own[0];
	}
	free(keep);
	if (rc != CUDA_SUCCESS) {
		log_debug("%s %s: %d", library ? "cuLibraryGetKernel" :
		    "cuModuleGetFunction", name, (int)rc);
		rpc_ftab_free(f->own, f->nown);
		free(f);
		return rc;
	}
	f->fi = fi;
	/* Threads may ask for functions of one module at once. */
	f->next = __atomic_load_n(&m->made, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&m->made, &f->next, f, 0,
	    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	gobj_publish(f);
	*out = f;
	return CUDA_SUCCESS;
}

CUresult
cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	return module_get_func((void **)f, m, name, 0);
}

CUresult
cuLibraryGetKernel(CUkernel *k, CUlibrary l, const char *name)
{
	return module_get_func((void **)k, l, name, 1);
}

/* A function or kernel handle: either kind is launched the same way. */
static struct gfunc *
func_of(const void *h)
{
	struct gfunc *f = gobj_check(h, GK_FUNC);

	return f != NULL ? f : gobj_check(h, GK_KERNEL);
}

const struct gfinfo *func_info(const void *h, uint64_t *id);

/*
 * One id for a function whichever handle names it: a library's kernel
 * and the function cuKernelGetFunction gave for it are one (the
 * kernel's id); 0 for a handle this process does not know.
 */
uint64_t
func_canon(const void *h)
{
	struct gfunc *f = func_of(h);

	if (f == NULL)
		return 0;
	return gobj_id(f->askernel != NULL ? f->askernel : f);
}

const struct gfinfo *
func_info(const void *h, uint64_t *id)
{
	struct gfunc *f = func_of(h);

	if (f == NULL)
		return NULL;
	*id = gobj_id(f);
	return f->fi;
}

/*
 * A library's module: a client handle standing for it, made on first ask
 * (one per library, whichever context asks), its functions and globals
 * the library's kernels and globals.
 */
CUresult
cuLibraryGetModule(CUmodule *pm, CUlibrary h)
{
	struct gmodule *l = gobj_check(h, GK_LIBRARY), *m;
	struct gctx *c;
	CUresult rc;

	if (pm == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (l == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if (l->mod == NULL) {
		if ((m = calloc(1, sizeof *m)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		m->o.kind = GK_MODULE;
		m->ctx = c;
		m->lib = l;
		gobj_publish(m);
		l->mod = m;
	}
	*pm = (CUmodule)l->mod;
	return CUDA_SUCCESS;
}

/* The kernel's function in its library's module, made once. */
CUresult
cuKernelGetFunction(CUfunction *pf, CUkernel h)
{
	struct gfunc *k = gobj_check(h, GK_KERNEL);
	CUmodule lm;
	void *f;
	CUresult rc;

	if (pf == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (k == NULL || gobj_check(k->mod, GK_LIBRARY) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (k->asfunc == NULL) {
		if ((rc = cuLibraryGetModule(&lm, (CUlibrary)k->mod)) !=
		    CUDA_SUCCESS || (rc = module_get_func(&f, lm, k->fi->name,
		    0)) != CUDA_SUCCESS)
			return rc;
		k->asfunc = f;
		k->asfunc->askernel = k;
	}
	*pf = (CUfunction)k->asfunc;
	return CUDA_SUCCESS;
}

CUresult
cuKernelGetLibrary(CUlibrary *pl, CUkernel k)
{
	struct gfunc *f = gobj_check(k, GK_KERNEL);

	if (pl == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	*pl = (CUlibrary)f->mod;
	return CUDA_SUCCESS;
}

static pthread_mutex_t	 global_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * A global's memory into the allocation registry, once, as device memory
 * of m's until m goes: pointer queries answer for it as the driver's do
 * (XLA asks the device of its constants, which are globals), and copies
 * into it need not wait for the server's reply.
 */
static void
global_known(struct gmodule *m, struct gctx *c, uint64_t base, uint64_t size)
{
	struct alloc a;
	uint64_t *v;

	if (base == 0 || size == 0 || c == NULL)
		return;
	pthread_mutex_lock(&global_lock);
	if (mem_lookup(base, &a) == -1 &&
	    (v = realloc(m->globals, (m->nglobals + 1) * sizeof *v)) != NULL) {
		m->globals = v;
		if (mem_add(base, size, c, 0, MEM_F_GLOBAL) == 0)
			m->globals[m->nglobals++] = base;
	}
	pthread_mutex_unlock(&global_lock);
}

static CUresult
global_get(CUdeviceptr *dptr, size_t *bytes, void *h, const char *name,
    int library)
{
	struct gmodule *m = gobj_check(h, library ? GK_LIBRARY : GK_MODULE);
	struct rpc_val in[3], rep[2];
	struct gctx *c = NULL;
	void *keep;
	CUresult rc;

	/* A module's: the driver initialised and the module first. */
	if (!library) {
		if ((rc = client_initialized()) != CUDA_SUCCESS)
			return rc;
		if (m == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
	}
	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (m == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (m->lib != NULL) {
		/* A library's module: the library's globals. */
		m = m->lib;
		library = 1;
	}
	if (library) {
		if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
			return rc;
		in[0].u = gobj_id(c);
		in[1].u = gobj_id(m);
		in[2].p = name;
		in[2].len = (uint32_t)strlen(name);
		rc = remote_call(R_LIBRARY_GET_GLOBAL, in, rep, &keep);
	} else {
		in[0].u = gobj_id(m);
		in[1].p = name;
		in[1].len = (uint32_t)strlen(name);
		rc = remote_call(R_MODULE_GET_GLOBAL, in, rep, &keep);
	}
	free(keep);
	if (rc != CUDA_SUCCESS)
		return rc;
	global_known(m, library ? c : m->ctx, rep[0].u, rep[1].u);
	if (dptr != NULL)
		*dptr = rep[0].u;
	if (bytes != NULL)
		*bytes = (size_t)rep[1].u;
	return CUDA_SUCCESS;
}

CUresult
cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule m,
    const char *name)
{
	return global_get(dptr, bytes, m, name, 0);
}

CUresult
cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary l,
    const char *name)
{
	return global_get(dptr, bytes, l, name, 1);
}

/* Attributes and parameters: from the load's function table. */
CUresult
cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction h)
{
	struct gfunc *f = func_of(h);

	if (v == NULL || (unsigned)a >= CU_FUNC_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	*v = f->fi->attr[a];
	return CUDA_SUCCESS;
}

CUresult
cuKernelGetAttribute(int *v, CUfunction_attribute a, CUkernel k,
    CUdevice dev)
{
	/* The kernel first (cuFuncGetAttribute checks v first): the
	 * driver's order. */
	if (func_of(k) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return cuFuncGetAttribute(v, a, (CUfunction)k);
}

/*
 * Is setting attribute a to v certain to succeed?  The dynamic shared
 * memory bound and the carveout percentage are checked against the
 * device's limits here, as the driver checks them.
 */
static int
func_attr_checked(const struct gfunc *f, CUfunction_attribute a, int v)
{
	const struct client_device *d;
	struct gctx *c = f->mod != NULL ? f->mod->ctx : NULL;

	if (a == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT)
		return v >= -1 && v <= 100;
	if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || c == NULL ||
	    (d = client_device(c->device)) == NULL)
		return 0;
	return v >= 0 && (long long)v + f->fi->attr[
	    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES] <= d->attr[
	    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN];
}

/* Forwarded, and remembered where it changes what the table says. */
static CUresult
func_set_attr(void *h, CUfunction_attribute a, int v)
{
	struct gfunc *f = func_of(h);
	struct rpc_val in[3], rep[1];
	void *keep;
	CUresult rc;

	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((unsigned)a >= CU_FUNC_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	in[0].u = gobj_id(f);
	in[1].u = (uint64_t)a;
	in[2].u = (uint64_t)(int64_t)v;
	/*
	 * Libraries set the same value before every launch: what the table
	 * already says needs no call.  The two attributes checkable here go
	 * one-way; the others wait for the driver's verdict.
	 */
	if ((a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ||
	    a == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) &&
	    f->fi->attr[a] == v)
		return CUDA_SUCCESS;
	occ_forget();
	if (func_attr_checked(f, a, v)) {
		rc = rpost(R_FUNC_SET_ATTR, in, 0);
		keep = NULL;
	} else {
		rc = remote_call(R_FUNC_SET_ATTR, in, rep, &keep);
		free(keep);
	}
	if (rc == CUDA_SUCCESS)
		((struct gfinfo *)(uintptr_t)f->fi)->attr[a] = v;
	return rc;
}

CUresult
cuFuncSetAttribute(CUfunction h, CUfunction_attribute a, int v)
{
	return func_set_attr(h, a, v);
}

CUresult
cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice dev)
{
	return func_set_attr(k, a, v);
}

static CUresult
func_set_cache(void *h, CUfunc_cache config)
{
	struct gfunc *f = func_of(h);
	struct rpc_val in[2], rep[1];
	void *keep;
	CUresult rc;

	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	in[0].u = gobj_id(f);
	in[1].u = (uint64_t)config;
	occ_forget();
	rc = remote_call(R_FUNC_SET_CACHE, in, rep, &keep);
	free(keep);
	return rc;
}

CUresult cuFuncSetCacheConfig(CUfunction h, CUfunc_cache c) { return func_set_cache(h, c); }
CUresult cuKernelSetCacheConfig(CUkernel k, CUfunc_cache c, CUdevice d) { return func_set_cache(k, c); }

CUresult
cuFuncGetName(const char **name, CUfunction h)
{
	struct gfunc *f = func_of(h);

	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	*name = f->fi->name;
	return CUDA_SUCCESS;
}

CUresult
cuKernelGetName(const char **name, CUkernel k)
{
	return cuFuncGetName(name, (CUfunction)k);
}

CUresult
cuFuncGetParamInfo(CUfunction h, size_t i, size_t *off, size_t *size)
{
	struct gfunc *f = func_of(h);

	/* The offset is asked for (the size is optional): checked first,
	 * as the driver does. */
	if (off == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (i >= f->fi->nparams)
		return CUDA_ERROR_INVALID_VALUE;
	*off = f->fi->offset[i];
	if (size != NULL)
		*size = f->fi->size[i];
	return CUDA_SUCCESS;
}

CUresult
cuKernelGetParamInfo(CUkernel k, size_t i, size_t *off, size_t *size)
{
	return cuFuncGetParamInfo((CUfunction)k, i, off, size);
}

CUresult
cuFuncGetModule(CUmodule *pm, CUfunction h)
{
	struct gfunc *f = gobj_check(h, GK_FUNC);

	if (pm == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	*pm = (CUmodule)f->mod;
	return CUDA_SUCCESS;
}

CUresult
cuModuleGetFunctionCount(unsigned int *n, CUmodule h)
{
	struct gmodule *m = gobj_check(h, GK_MODULE);

	if (n == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (m == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	*n = m->lib != NULL ? m->lib->nfunc : m->nfunc;
	return CUDA_SUCCESS;
}

CUresult
cuLibraryGetKernelCount(unsigned int *n, CUlibrary h)
{
	struct gmodule *m = gobj_check(h, GK_LIBRARY);

	if (n == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (m == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	*n = m->nfunc;
	return CUDA_SUCCESS;
}

/*
 * An image from a file, read here (the server never sees the client's
 * files), NUL-terminated as PTX text must be and padded so that
 * image_size never reads past the buffer's end.  Checked to hold what its
 * header claims; the driver judges the rest.
 */
#define FILE_PAD	256

static CUresult
module_file(const char *path, void **out)
{
	uint8_t *buf = NULL, *nb;
	size_t len = 0, cap = 0, n;
	const void *img;
	uint32_t n32;
	FILE *f;

	if ((f = fopen(path, "rb")) == NULL)
		return CUDA_ERROR_FILE_NOT_FOUND;
	for (;;) {
		if (cap - len < 65536 + FILE_PAD) {
			cap = cap ? cap * 2 : 65536 + FILE_PAD;
			if (cap > IMAGE_MAX + FILE_PAD ||
			    (nb = realloc(buf, cap)) == NULL) {
				free(buf);
				fclose(f);
				return cap > IMAGE_MAX + FILE_PAD ?
				    CUDA_ERROR_INVALID_IMAGE :
				    CUDA_ERROR_OUT_OF_MEMORY;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len - FILE_PAD, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return CUDA_ERROR_FILE_NOT_FOUND;
	}
	fclose(f);
	memset(buf + len, 0, cap - len);
	img = buf;
	/* cudart's wrapper holds a pointer: no file holds one. */
	memcpy(&n32, buf, sizeof n32);
	if (n32 == FATBIN_WRAPPER_MAGIC) {
		free(buf);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	/* An ELF file must hold its headers before image_size reads them. */
	if (len >= SELFMAG && memcmp(buf, ELFMAG, SELFMAG) == 0) {
		Elf64_Ehdr eh;

		memcpy(&eh, buf, sizeof eh);
		if (len < sizeof eh || buf[EI_CLASS] != ELFCLASS64 ||
		    eh.e_shoff > len || (uint64_t)eh.e_shnum *
		    eh.e_shentsize > len - eh.e_shoff) {
			free(buf);
			return CUDA_ERROR_INVALID_IMAGE;
		}
	}
	n = image_size(&img);
	if (img != buf || n == 0 || n > len + 1) {
		free(buf);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	*out = buf;
	return CUDA_SUCCESS;
}

CUresult
cuModuleLoad(CUmodule *mod, const char *path)
{
	struct gctx *c;
	void *img;
	CUresult rc;

	if (mod == NULL || path == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = module_file(path, &img)) != CUDA_SUCCESS)
		return rc;
	rc = module_load((struct gmodule **)mod, img, 0, 0, NULL, NULL);
	free(img);
	return rc;
}

CUresult
cuLibraryLoadFromFile(CUlibrary *lib, const char *path, CUjit_option *jo,
    void **jv, unsigned int nj, CUlibraryOption *lo, void **lv,
    unsigned int nl)
{
	void *img;
	CUresult rc;

	if (lib == NULL || path == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((rc = module_file(path, &img)) != CUDA_SUCCESS)
		return rc;
	rc = module_load((struct gmodule **)lib, img, 1, nj, jo, jv);
	free(img);
	return rc;
}

/*
 * Handles for the functions of a load's table, in its order (the
 * driver's enumeration order); made once per module and kept.
 */
static CUresult
module_enum(void **out, unsigned n, void *h, int library)
{
	struct gmodule *m = gobj_check(h, library ? GK_LIBRARY : GK_MODULE);
	const struct gmodule *t;
	unsigned i;
	CUresult rc;

	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (m == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	t = m->lib != NULL ? m->lib : m;
	if (n > t->nfunc)
		n = t->nfunc;
	if (m->enumed == NULL && n > 0 &&
	    (m->enumed = calloc(t->nfunc, sizeof *m->enumed)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (i = 0; i < n; i++) {
		if (m->enumed[i] == NULL && (rc = module_get_func(
		    &m->enumed[i], m, t->funcs[i].name, library)) !=
		    CUDA_SUCCESS)
			return rc;
		out[i] = m->enumed[i];
	}
	return CUDA_SUCCESS;
}

CUresult
cuModuleEnumerateFunctions(CUfunction *fs, unsigned int n, CUmodule m)
{
	return module_enum((void **)fs, n, m, 0);
}

CUresult
cuLibraryEnumerateKernels(CUkernel *ks, unsigned int n, CUlibrary l)
{
	return module_enum((void **)ks, n, l, 1);
}

/*
 * Loading: the server's load of a module or library brings back every
 * function's table entry, so a function handle here is always one the
 * server has loaded.
 */
CUresult
cuFuncLoad(CUfunction h)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	return func_of(h) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult
cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction h)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (state == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (func_of(h) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	*state = CU_FUNCTION_LOADING_STATE_LOADED;
	return CUDA_SUCCESS;
}

/*
 * A library's __managed__ variable lives in the server's managed memory,
 * with no host side here for the program to read and write (mapped.c
 * makes one only for cuMemAllocManaged): refused once found.
 */
CUresult
cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary l,
    const char *name)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((rc = global_get(NULL, NULL, l, name, 1)) != CUDA_SUCCESS)
		return rc;
	(void)dptr;
	(void)bytes;
	return CUDA_ERROR_NOT_SUPPORTED;
}

/*
 * Unified functions (device functions the host calls through a pointer)
 * would run in the server's address space; none is found here, which is
 * the driver's answer for the libraries nvcc builds without them.
 */
CUresult
cuLibraryGetUnifiedFunction(void **fptr, CUlibrary l, const char *symbol)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (fptr == NULL || symbol == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (gobj_check(l, GK_LIBRARY) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_ERROR_NOT_FOUND;
}

/* A module's texture and surface references (texref.c). */
CUresult
cuModuleGetTexRef(CUtexref *ref, CUmodule m, const char *name)
{
	return texref_module((void **)ref, m, name, 0);
}

CUresult
cuModuleGetSurfRef(CUsurfref *ref, CUmodule m, const char *name)
{
	return texref_module((void **)ref, m, name, 1);
}
