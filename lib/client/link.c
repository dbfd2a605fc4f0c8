/*
 * The JIT linker.  A link state lives on the server, its inputs sent as
 * data (a file read here: the server never sees the client's files).  The
 * driver writes option outputs (log text, wall time, sizes) into the
 * arrays the program passed, the create's at every later call for as long
 * as the state lives: the server's driver writes into arrays of the
 * server's, and each reply carries what it left there, copied here into
 * the program's.  The linked cubin is the state's until cuLinkDestroy: a
 * copy kept here, so the pointer the program gets is its own memory's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "client.h"
#include "log.h"

struct glink {
	struct gobj	 o;
	unsigned	 n;		/* the create's options */
	CUjit_option	*opts;
	void		**vals;
	size_t		*logsz;		/* a log buffer's size, by option */
	void		*cubin;
	size_t		 cubinlen;
};

static void
link_free(struct glink *l)
{
	l->o.magic = 0;
	free(l->cubin);
	free(l->logsz);
	free(l);
}

CUresult
cuLinkCreate_v2(unsigned int n, CUjit_option *opts, void **vals,
    CUlinkState *out)
{
	struct rpc_val in[3], rep[1];
	struct glink *l;
	struct gctx *c;
	struct pw w;
	void *keep;
	CUresult rc;

	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	/* jit_enc's bound, before a table of that many is made. */
	if (n > RPC_JIT_OPTS_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if ((l = calloc(1, sizeof *l)) == NULL || (l->logsz = calloc(n + 1,
	    sizeof *l->logsz)) == NULL) {
		free(l);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	l->o.kind = GK_LINK;
	l->n = n;
	l->opts = opts;
	l->vals = vals;
	pw_init(&w);
	if ((rc = jit_enc(&w, n, opts, vals, l->logsz)) != CUDA_SUCCESS) {
		pw_free(&w);
		link_free(l);
		return rc;
	}
	in[0].u = gobj_id(c);
	in[1].u = gobj_id(l);
	in[2].p = w.p;
	in[2].len = (uint32_t)w.len;
	rc = remote_call(R_LINK_CREATE, in, rep, &keep);
	free(keep);
	pw_free(&w);
	if (rc != CUDA_SUCCESS) {
		link_free(l);
		return rc;
	}
	gobj_publish(l);
	*out = (CUlinkState)l;
	return CUDA_SUCCESS;
}

CUresult
cuLinkCreate(unsigned int n, CUjit_option *opts, void **vals,
    CUlinkState *out)
{
	return cuLinkCreate_v2(n, opts, vals, out);
}

/* An input too large for one frame goes ahead in pieces. */
static CUresult
link_stage(uint64_t id, const void *data, size_t n)
{
	struct rpc_val in[3], rep[1];
	size_t off, k, max = io_max_payload();
	void *keep;
	CUresult rc;

	for (off = 0; off < n; off += k) {
		k = n - off < max ? n - off : max;
		in[0].u = id;
		in[1].u = off;
		in[2].p = (const char *)data + off;
		in[2].len = (uint32_t)k;
		rc = remote_call(R_STAGE_PUT, in, rep, &keep);
		free(keep);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	return CUDA_SUCCESS;
}

CUresult
cuLinkAddData_v2(CUlinkState h, CUjitInputType type, void *data,
    size_t size, const char *name, unsigned int n, CUjit_option *opts,
    void **vals)
{
	struct glink *l = gobj_check(h, GK_LINK);
	struct rpc_val in[5], rep[3];
	size_t *logsz;
	struct pw w;
	void *keep;
	CUresult rc;

	if (l == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (data == NULL || size == 0 || (unsigned)type >=
	    CU_JIT_NUM_INPUT_TYPES || size > (1ull << 31))
		return CUDA_ERROR_INVALID_VALUE;
	if (name == NULL)
		name = "";
	if (strlen(name) > RPC_STRING_MAX)
		name += strlen(name) - RPC_STRING_MAX;
	if (n > RPC_JIT_OPTS_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if ((logsz = calloc(n + 1, sizeof *logsz)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pw_init(&w);
	if ((rc = jit_enc(&w, n, opts, vals, logsz)) != CUDA_SUCCESS)
		goto out;
	in[0].u = gobj_id(l);
	in[1].u = (uint64_t)type;
	in[2].p = data;
	in[2].len = (uint32_t)size;
	in[3].p = name;
	in[3].len = (uint32_t)strlen(name);
	in[4].p = w.p;
	in[4].len = (uint32_t)w.len;
	if (size + w.len + in[3].len > io_max_payload()) {
		if ((rc = link_stage(gobj_id(l), data, size)) != CUDA_SUCCESS)
			goto out;
		in[2].len = 0;
	}
	rc = remote_call(R_LINK_ADD, in, rep, &keep);
	if (rc == CUDA_SUCCESS) {
		jit_dec(&rep[1], l->n, l->opts, l->vals, l->logsz);
		jit_dec(&rep[2], n, opts, vals, logsz);
		rc = (CUresult)rep[0].u;
	}
	free(keep);
out:
	pw_free(&w);
	free(logsz);
	return rc;
}

CUresult
cuLinkAddData(CUlinkState h, CUjitInputType type, void *data, size_t size,
    const char *name, unsigned int n, CUjit_option *opts, void **vals)
{
	return cuLinkAddData_v2(h, type, data, size, name, n, opts, vals);
}

CUresult
cuLinkAddFile_v2(CUlinkState h, CUjitInputType type, const char *path,
    unsigned int n, CUjit_option *opts, void **vals)
{
	uint8_t *buf = NULL, *nb;
	size_t len = 0, cap = 0, k;
	CUresult rc;
	FILE *f;

	if (gobj_check(h, GK_LINK) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (path == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((f = fopen(path, "rb")) == NULL)
		return CUDA_ERROR_FILE_NOT_FOUND;
	for (;;) {
		if (cap - len < 65536 + 1) {
			cap = cap ? cap * 2 : 65536 + 1;
			if (cap > (1ull << 31) || (nb = realloc(buf, cap)) ==
			    NULL) {
				free(buf);
				fclose(f);
				return cap > (1ull << 31) ?
				    CUDA_ERROR_INVALID_VALUE :
				    CUDA_ERROR_OUT_OF_MEMORY;
			}
			buf = nb;
		}
		if ((k = fread(buf + len, 1, cap - len - 1, f)) == 0)
			break;
		len += k;
	}
	if (ferror(f)) {
		fclose(f);
		free(buf);
		return CUDA_ERROR_FILE_NOT_FOUND;
	}
	fclose(f);
	/* PTX text goes NUL-terminated, as the driver reads it. */
	buf[len] = '\0';
	if (type == CU_JIT_INPUT_PTX)
		len++;
	rc = cuLinkAddData_v2(h, type, buf, len, path, n, opts, vals);
	free(buf);
	return rc;
}

CUresult
cuLinkAddFile(CUlinkState h, CUjitInputType type, const char *path,
    unsigned int n, CUjit_option *opts, void **vals)
{
	return cuLinkAddFile_v2(h, type, path, n, opts, vals);
}

CUresult
cuLinkComplete(CUlinkState h, void **cubin, size_t *size)
{
	struct glink *l = gobj_check(h, GK_LINK);
	struct rpc_val in[1], rep[3];
	void *keep, *copy;
	CUresult rc;

	if (l == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (cubin == NULL || size == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	in[0].u = gobj_id(l);
	rc = remote_call(R_LINK_COMPLETE, in, rep, &keep);
	if (rc == CUDA_SUCCESS) {
		jit_dec(&rep[2], l->n, l->opts, l->vals, l->logsz);
		rc = (CUresult)rep[0].u;
	}
	if (rc == CUDA_SUCCESS) {
		if ((copy = malloc(rep[1].len ? rep[1].len : 1)) == NULL)
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		else {
			memcpy(copy, rep[1].p, rep[1].len);
			free(l->cubin);
			l->cubin = copy;
			l->cubinlen = rep[1].len;
			*cubin = copy;
			*size = l->cubinlen;
		}
	}
	free(keep);
	return rc;
}

CUresult
cuLinkDestroy(CUlinkState h)
{
	struct glink *l = gobj_check(h, GK_LINK);
	struct rpc_val in[1];
	CUresult rc;

	if (l == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	in[0].u = gobj_id(l);
	rc = rpost(R_LINK_DESTROY, in, 0);
	link_free(l);
	return rc;
}
