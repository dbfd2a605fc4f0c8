/*
 * Copies and memsets: cut into frames the server accepts, pipelined,
 * one-way where the memory is known; large ones by name (the weight
 * cache, wcache.h) or over the bulk lanes (lanes.h).
 */
#include <sys/mman.h>

#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "io.h"
#include "lanes.h"
#include "mapped.h"
#include "progress.h"
#include "readahead.h"
#include "wcache.h"
#include "log.h"

/*
 * Is [p, p + n) inside device memory this client allocated?  Then stream-
 * ordered work on it cannot fail for its address and goes one-way; other
 * addresses (a module's globals, say) wait for the server's answer.
 */
static int
dev_range_known(CUdeviceptr p, size_t n)
{
	size_t base, size;

	return mem_is_device(p, &base, &size) && p - base <= size &&
	    n <= size - (p - base);
}

/*
 * Copies go in pieces of this size, pipelined.  Host-to-device pieces are
 * smaller: the first leaves once it is queued, so a copy of a few MiB (a
 * batch of inputs) is on the wire while the rest is still being queued,
 * and the server copies one piece to the device while the next arrives.
 */
#define BULK_CHUNK	(4u << 20)
#define HTOD_CHUNK	(1u << 20)

static CUresult	copy_dtod(struct gctx *, uint64_t, int, CUdeviceptr,
		    CUdeviceptr, size_t);

/*
 * What [*p, *p + n), named where a device address is asked for, is.
 * With unified addressing a program may name host memory so: a mapped
 * buffer's host address becomes its device side here (*p changed), and
 * page-locked host memory (XLA zeroes and reads its small pinned
 * buffers so) is set and copied on the host.
 */
#define AT_UNKNOWN	0	/* the server judges it */
#define AT_DEVICE	1	/* device memory this library knows */
#define AT_PINNED	2	/* page-locked host memory, not mapped */

static int
dev_where(CUdeviceptr *p, size_t n)
{
	struct alloc a;
	CUdeviceptr hd;

	if (dev_range_known(*p, n))
		return AT_DEVICE;
	if (n == 0)
		return AT_UNKNOWN;
	if (mapped_alias((const void *)(uintptr_t)*p, n, &hd)) {
		*p = hd;
		return dev_range_known(hd, n) ? AT_DEVICE : AT_UNKNOWN;
	}
	if (mem_lookup(*p, &a) == 0 && a.host != 0 && n <= a.size &&
	    *p - a.base <= a.size - n)
		return AT_PINNED;
	return AT_UNKNOWN;
}

/*
 * Are the pages of [p, p + n) mapped here?  A copy to an address this
 * client does not know reads its source before the server has said
 * whether the destination is device memory: a wrong destination or size
 * (a host pointer, a size too large) must come back as the driver's
 * CUDA_ERROR_INVALID_VALUE, not as a fault in the library reading far
 * past the program's buffer.
 */
static int
host_mapped(const void *p, size_t n)
{
	static long pgsz;
	unsigned char vec[256];
	uintptr_t a, end;
	size_t chunk;

	if (n == 0)
		return 1;
	if (pgsz == 0)
		pgsz = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
	a = (uintptr_t)p & ~(uintptr_t)(pgsz - 1);
	if ((uintptr_t)p + n < (uintptr_t)p)
		return 0;
	end = (uintptr_t)p + n;
	for (; a < end; a += chunk) {
		chunk = sizeof vec * (size_t)pgsz;
		if (chunk > end - a)
			chunk = end - a;
		if (mincore((void *)a, chunk, vec) == -1 && errno == ENOMEM)
			return 0;
	}
	return 1;
}

/* The work queued on stream sid done (a copy on the host follows it). */
static CUresult
sid_wait(struct gctx *c, uint64_t sid)
{
	struct rpc_val in[2], out[1];
	void *keep;
	CUresult rc;

	if (capture_busy(sid))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	in[0].u = gobj_id(c);
	in[1].u = sid;
	rc = remote_call(R_STREAM_SYNC, in, out, &keep);
	free(keep);
	return rc;
}

static CUresult
copy_htod(struct gctx *c, uint64_t sid, int async, CUdeviceptr dst,
    const void *src, size_t n)
{
	struct rpc_val in[5], out[1];
	size_t max = io_max_payload(), k;
	int where, known, pg;
	void *keep;
	CUresult rc = CUDA_SUCCESS;
	CUdeviceptr hd;

	/* No host buffer: the driver's answer, not a fault here. */
	if (src == NULL && n > 0)
		return CUDA_ERROR_INVALID_VALUE;
	where = dev_where(&dst, n);
	known = where == AT_DEVICE;
	/* From mapped memory: from its device side (mapped.c). */
	if (mapped_alias(src, n, &hd))
		return copy_dtod(c, sid, async, dst, hd, n);
	if (where == AT_PINNED) {
		if ((rc = sid_wait(c, sid)) == CUDA_SUCCESS)
			memmove((void *)(uintptr_t)dst, src, n);
		return rc;
	}
	if ((rc = capture_work(c, sid, 1)) != CUDA_SUCCESS)
		return rc;
	if (!known && !host_mapped(src, n))
		return CUDA_ERROR_INVALID_VALUE;
	mapped_host_write(dst, src, n);
	/* Large copies by name first: the weight cache (wcache.c). */
	if (wcache_htod(c, sid, async, dst, src, n, &rc))
		return rc;
	/* Large ones over the bulk lanes, where there are any. */
	k = 0;
	if (known && lanes_htod(gobj_id(c), sid, async, dst, src, n, &rc, &k))
		return rc;
	/* What the lanes did not take (the session moved): the main way. */
	dst += k;
	src = (const char *)src + k;
	n -= k;
	if (max > HTOD_CHUNK)
		max = HTOD_CHUNK;
	pg = progress_add(n);
	while (n > 0) {
		k = n < max ? n : max;
		in[0].u = gobj_id(c);
		in[1].u = sid;
		in[2].u = (uint64_t)async;
		in[3].u = dst;
		in[4].p = src;
		in[4].len = (uint32_t)k;
		/* The bytes are copied into the queue: src is free again. */
		if (known)
			rc = rpost(R_MEM_HTOD, in, RP_BULK | RP_KEEPIDLE);
		else {
			rc = remote_call(R_MEM_HTOD, in, out, &keep);
			free(keep);
		}
		if (rc != CUDA_SUCCESS) {
			if (pg)
				progress_drop(n);
			return rc;
		}
		if (pg)
			progress_sent(k, known ? PG_QUEUED : PG_WIRE);
		dst += k;
		src = (const char *)src + k;
		n -= k;
	}
	return rc;
}

/* Device-to-host pieces asked for ahead of the one being received. */
#define DTOH_AHEAD	8
#define DTOH_SPLIT	4		/* pieces of a copy at least */
#define DTOH_PIECE_MIN	(256u << 10)	/* bytes: no smaller pieces */

/*
 * An asynchronous copy into pinned memory, as on a GPU, returns at once:
 * each piece's reply lands in the buffer when it comes, ahead of the reply
 * to any later synchronization (one connection keeps the order).
 */
static CUresult
copy_dtoh_pinned(struct gctx *c, uint64_t sid, void *dst, CUdeviceptr src,
    size_t n)
{
	struct rpc_val in[5];
	size_t max = io_max_payload(), k;
	CUresult rc;

	if (max > BULK_CHUNK)
		max = BULK_CHUNK;
	while (n > 0) {
		k = n < max ? n : max;
		in[0].u = gobj_id(c);
		in[1].u = sid;
		in[2].u = 1;
		in[3].u = src;
		in[4].u = k;
		if ((rc = rsend_detached(R_MEM_DTOH, in, dst, k)) !=
		    CUDA_SUCCESS)
			return rc;
		dst = (char *)dst + k;
		src += k;
		n -= k;
	}
	return CUDA_SUCCESS;
}

/*
 * The end of a device-to-host copy whose last piece's reply was queued at
 * last: mapped memory pulled (mp, if the copy began a pull), and the
 * stream marked idle.  The stream was done with everything before the
 * last piece: the server waited for it (an async copy) or the copy did (a
 * sync one, in the NULL or per-thread stream, as a GPU's does).
 */
static CUresult
dtoh_finish(struct gctx *c, uint64_t sid, CUresult rc, struct mpull *mp,
    uint64_t last)
{
	uint64_t mark = last;

	if (mp != NULL)
		client_mapped_pull_end(mp, rc == CUDA_SUCCESS, last, &mark);
	if (rc == CUDA_SUCCESS && mark != 0)
		ridle_set(gobj_id(c), sid, mark);
	return rc;
}

/*
 * A large copy out of known device memory over the bulk lanes (lanes.h),
 * held by the caller: each piece's call, then its stripes, then its
 * reply; mapped memory and the stream's idle mark as for copy_dtoh.
 * *done is the bytes that came: all of them, or those before the piece
 * in hand when the session moved (its stripes stayed with the old
 * server), which the caller gets the main way.
 */
static CUresult
copy_dtoh_lanes(struct gctx *c, uint64_t sid, int async, void *dst,
    CUdeviceptr src, size_t n, size_t *done)
{
	struct rpc_val in[5], out[1];
	struct rwait w;
	struct mpull mp;
	uint64_t last = 0, mark;
	size_t k, off;
	int pull = 0, e;
	void *keep;
	CUresult rc = CUDA_SUCCESS, rc2;

	*done = n;
	for (off = 0; off < n && rc == CUDA_SUCCESS; off += k) {
		k = n - off < LANES_PIECE_MAX ? n - off : LANES_PIECE_MAX;
		memset(in, 0, sizeof in);
		in[0].u = gobj_id(c);
		in[1].u = sid;
		in[2].u = (uint64_t)async;
		in[3].u = src + off;
		in[4].u = k;
		memset(&w, 0, sizeof w);
		/* One wait for the program, as for the pieces of copy_dtoh. */
		w.beside = off > 0;
		if ((rc = rsend(R_MEM_DTOH_LANES, in, 0, &w)) != CUDA_SUCCESS)
			break;
		if (off + k == n)
			pull = client_mapped_pull_begin(&mp, 0, NULL);
		if ((e = lanes_in((char *)dst + off, k)) != 0)
			rc = CUDA_ERROR_DEVICE_UNAVAILABLE;
		keep = NULL;
		rc2 = rwait(&w, out, &keep);
		free(keep);
		if (e == ESTALE) {
			/*
			 * The session moved: the new server answered the call
			 * RPC_LANES_GONE, or the old one sent stripes that did
			 * not all come.  This piece and the rest: the main way.
			 */
			if (pull)
				client_mapped_pull_end(&mp, 0, last, &mark);
			log_debug("lanes: the session moved amid a copy back: "
			    "%zu bytes the main way", n - off);
			*done = off;
			return CUDA_SUCCESS;
		}
		if (rc == CUDA_SUCCESS)
			rc = rc2 == RPC_LANES_GONE ?
			    CUDA_ERROR_DEVICE_UNAVAILABLE : rc2;
		last = w.qend;
	}
	return dtoh_finish(c, sid, rc, pull ? &mp : NULL, last);
}

static CUresult
copy_dtoh(struct gctx *c, uint64_t sid, int async, void *dst,
    CUdeviceptr src, size_t n)
{
	struct rwait w[DTOH_AHEAD];
	size_t len[DTOH_AHEAD];
	char *at[DTOH_AHEAD];
	struct rpc_val in[5], out[1];
	size_t max = io_max_payload();
	unsigned head = 0, tail = 0;	/* sent, received */
	CUresult rc = CUDA_SUCCESS, rc2;
	uint64_t last = 0;
	struct mpull mp;
	int pull = 0;
	void *keep;
	CUdeviceptr hd;
	int where;

	/* No host buffer: the driver's answer, not a fault here. */
	if (dst == NULL && n > 0)
		return CUDA_ERROR_INVALID_VALUE;
	where = dev_where(&src, n);
	/*
	 * Into mapped memory: into its device side (mapped.c), then, for a
	 * copy that waits, the wait, so that the host sees the device's
	 * writes as after a copy to the host.
	 */
	if (mapped_alias(dst, n, &hd)) {
		if ((rc = copy_dtod(c, sid, async, hd, src, n)) !=
		    CUDA_SUCCESS || async)
			return rc;
		return sid_wait(c, sid);
	}
	if (where == AT_PINNED) {
		if ((rc = sid_wait(c, sid)) == CUDA_SUCCESS)
			memmove(dst, (const void *)(uintptr_t)src, n);
		return rc;
	}
	if ((rc = capture_work(c, sid, 1)) != CUDA_SUCCESS)
		return rc;
	/*
	 * Read beside the synchronization before it (readahead.c)?  On a
	 * non-blocking stream: another's (the legacy stream's work, or the
	 * blocking streams' for it) would wait for work that its own idle
	 * mark does not cover.
	 */
	if (where == AT_DEVICE && stream_nonblocking(sid) && !capture_any() &&
	    rahead_copy(gobj_id(c), sid, dst, src, n))
		return CUDA_SUCCESS;

	if (async && !rsync_mode() && n > 0 && where == AT_DEVICE) {
		struct alloc a;

		if (mem_lookup((uintptr_t)dst, &a) == 0 && a.host &&
		    (uintptr_t)dst - a.base <= a.size &&
		    n <= a.size - ((uintptr_t)dst - a.base))
			return copy_dtoh_pinned(c, sid, dst, src, n);
	}
	/* Large ones over the bulk lanes, where there are any. */
	if (!rsync_mode() && n > 0 && where == AT_DEVICE &&
	    lanes_hold(n, 1)) {
		size_t k;

		rc = copy_dtoh_lanes(c, sid, async, dst, src, n, &k);
		lanes_release();
		if (rc != CUDA_SUCCESS || k == n)
			return rc;
		dst = (char *)dst + k;
		src += k;
		n -= k;
	}
	if (max > BULK_CHUNK)
		max = BULK_CHUNK;
	/*
	 * A copy of a few MiB (a step's outputs) in four pieces at least:
	 * the server copies a piece off the device while the link carries
	 * another (which the I/O thread receives straight into dst).
	 */
	if (n / DTOH_SPLIT < max)
		max = n / DTOH_SPLIT < DTOH_PIECE_MIN ? DTOH_PIECE_MIN :
		    (n / DTOH_SPLIT + 4095) & ~(size_t)4095;
	while (tail < head || n > 0) {
		/* Keep several pieces in flight: the link stays busy. */
		while (n > 0 && head - tail < DTOH_AHEAD &&
		    rc == CUDA_SUCCESS) {
			size_t k = n < max ? n : max;
			unsigned i = head % DTOH_AHEAD;

			in[0].u = gobj_id(c);
			in[1].u = sid;
			in[2].u = (uint64_t)async;
			in[3].u = src;
			in[4].u = k;
			memset(&w[i], 0, sizeof w[i]);
			w[i].dst = dst;
			w[i].dstlen = k;
			/* One wait for the program, one round trip in the
			 * statistics: the later pieces stream in behind. */
			w[i].beside = head > 0;
			if ((rc = rsend(R_MEM_DTOH, in, 0, &w[i])) !=
			    CUDA_SUCCESS)
				break;
			len[i] = k;
			at[i] = dst;
			head++;
			dst = (char *)dst + k;
			src += k;
			n -= k;
			/* The host will have waited: mapped memory comes back
			 * with the last piece. */
			if (n == 0)
				pull = client_mapped_pull_begin(&mp, 0, NULL);
		}
		if (tail == head)
			break;
		{
			unsigned i = tail % DTOH_AHEAD;

			rc2 = rwait(&w[i], out, &keep);
			if (rc2 == CUDA_SUCCESS && out[0].len != len[i])
				rc2 = CUDA_ERROR_UNKNOWN;
			if (rc2 == CUDA_SUCCESS && out[0].p != at[i])
				memcpy(at[i], out[0].p, len[i]);
			free(keep);
			if (rc == CUDA_SUCCESS)
				rc = rc2;
			last = w[i].qend;
			tail++;
		}
		if (rc != CUDA_SUCCESS)
			n = 0;	/* collect what is in flight, then fail */
	}
	return dtoh_finish(c, sid, rc, pull ? &mp : NULL, last);
}

static CUresult
copy_dtod(struct gctx *c, uint64_t sid, int async, CUdeviceptr dst,
    CUdeviceptr src, size_t n)
{
	struct rpc_val in[6], out[1];
	void *keep;
	CUresult rc;
	int wd, ws;

	if ((rc = capture_work(c, sid, 0)) != CUDA_SUCCESS)
		return rc;
	if (n == 0)
		return CUDA_SUCCESS;
	wd = dev_where(&dst, n);
	ws = dev_where(&src, n);
	/* A side in page-locked host memory: a copy to or from the host,
	 * after the stream's work (both there: on the host). */
	if (wd == AT_PINNED || ws == AT_PINNED) {
		if ((rc = sid_wait(c, sid)) != CUDA_SUCCESS)
			return rc;
		if (wd == AT_PINNED && ws == AT_PINNED) {
			memmove((void *)(uintptr_t)dst,
			    (const void *)(uintptr_t)src, n);
			return CUDA_SUCCESS;
		}
		if (ws == AT_PINNED)
			return copy_htod(c, sid, 0, dst,
			    (const void *)(uintptr_t)src, n);
		return copy_dtoh(c, sid, 0, (void *)(uintptr_t)dst, src, n);
	}
	in[0].u = gobj_id(c);
	in[1].u = sid;
	in[2].u = (uint64_t)async;
	in[3].u = dst;
	in[4].u = src;
	in[5].u = n;
	if (wd == AT_DEVICE && ws == AT_DEVICE)
		return rpost(R_MEM_DTOD, in, 0);
	rc = remote_call(R_MEM_DTOD, in, out, &keep);
	free(keep);
	return rc;
}

/* The context and stream id of a copy. */
static CUresult
copy_prep(CUstream s, int ptsz, struct gctx **c, uint64_t *sid)
{
	CUresult rc;

	if ((rc = ctx_need_stream(s, c)) != CUDA_SUCCESS)
		return rc;
	return stream_id(s, ptsz, sid);
}

#define COPY_FNS(suffix, ptsz)						\
CUresult								\
cuMemcpyHtoD##suffix(CUdeviceptr dst, const void *src, size_t n)	\
{									\
	struct gctx *c; uint64_t sid; CUresult rc;			\
	if ((rc = copy_prep(NULL, ptsz, &c, &sid)) != CUDA_SUCCESS)	\
		return rc;						\
	return copy_htod(c, sid, 0, dst, src, n);			\
}									\
CUresult								\
cuMemcpyDtoH##suffix(void *dst, CUdeviceptr src, size_t n)		\
{									\
	struct gctx *c; uint64_t sid; CUresult rc;			\
	if ((rc = copy_prep(NULL, ptsz, &c, &sid)) != CUDA_SUCCESS)	\
		return rc;						\
	return copy_dtoh(c, sid, 0, dst, src, n);			\
}									\
CUresult								\
cuMemcpyDtoD##suffix(CUdeviceptr dst, CUdeviceptr src, size_t n)	\
{									\
	struct gctx *c; uint64_t sid; CUresult rc;			\
	if ((rc = copy_prep(NULL, ptsz, &c, &sid)) != CUDA_SUCCESS)	\
		return rc;						\
	return copy_dtod(c, sid, 0, dst, src, n);			\
}
COPY_FNS(_v2, 0)
COPY_FNS(_v2_ptds, 1)

#define ACOPY_FNS(suffix, ptsz)						\
CUresult								\
cuMemcpyHtoDAsync##suffix(CUdeviceptr dst, const void *src, size_t n,	\
    CUstream s)								\
{									\
	struct gctx *c; uint64_t sid; CUresult rc;			\
	if ((rc = copy_prep(s, ptsz, &c, &sid)) != CUDA_SUCCESS)	\
		return rc;						\
	return copy_htod(c, sid, 1, dst, src, n);			\
}									\
CUresult								\
cuMemcpyDtoHAsync##suffix(void *dst, CUdeviceptr src, size_t n,		\
    CUstream s)								\
{									\
	struct gctx *c; uint64_t sid; CUresult rc;			\
	if ((rc = copy_prep(s, ptsz, &c, &sid)) != CUDA_SUCCESS)	\
		return rc;						\
	return copy_dtoh(c, sid, 1, dst, src, n);			\
}									\
CUresult								\
cuMemcpyDtoDAsync##suffix(CUdeviceptr dst, CUdeviceptr src, size_t n,	\
    CUstream s)								\
{									\
	struct gctx *c; uint64_t sid; CUresult rc;			\
	if ((rc = copy_prep(s, ptsz, &c, &sid)) != CUDA_SUCCESS)	\
		return rc;						\
	return copy_dtod(c, sid, 1, dst, src, n);			\
}
ACOPY_FNS(_v2, 0)
ACOPY_FNS(_v2_ptsz, 1)

/* cuMemcpy: the direction from the addresses, as unified addressing does. */
static CUresult
copy_unified(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s,
    int async, int ptsz)
{
	struct gctx *c;
	uint64_t sid;
	int dd, sd;
	CUresult rc;

	if ((rc = copy_prep(s, ptsz, &c, &sid)) != CUDA_SUCCESS)
		return rc;
	dd = mem_is_device(dst, NULL, NULL);
	sd = mem_is_device(src, NULL, NULL);
	if (dd && sd)
		return copy_dtod(c, sid, async, dst, src, n);
	if (dd)
		return copy_htod(c, sid, async, dst, (const void *)src, n);
	if (sd)
		return copy_dtoh(c, sid, async, (void *)dst, src, n);
	/* Host to host: the stream's earlier work cannot touch it. */
	if (async && sid != 0) {
		/* Order after earlier work on the stream, as the driver does. */
		struct rpc_val in[2], out[1];
		void *keep;

		in[0].u = gobj_id(c);
		in[1].u = sid;
		rc = remote_call(R_STREAM_SYNC, in, out, &keep);
		free(keep);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	if (n == 0)
		return CUDA_SUCCESS;
	/* Addresses that are no memory here: an error, not a fault. */
	if (!host_mapped((const void *)src, n) ||
	    !host_mapped((const void *)dst, n))
		return CUDA_ERROR_INVALID_VALUE;
	memmove((void *)dst, (const void *)src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy_unified(d, s, n, NULL, 0, 0); }
CUresult cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy_unified(d, s, n, NULL, 0, 1); }
CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return copy_unified(d, s, n, st, 1, 0); }
CUresult cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return copy_unified(d, s, n, st, 1, 1); }

/*
 * 2D and 3D copies.  Host sides travel packed (rows of WidthInBytes, no
 * pitch), in batches of whole rows that fit a frame; the server sees a
 * descriptor whose host side starts at offset 0 of the frame's blob.
 */
struct side {
	int		 dev;		/* device memory or an array */
	int		 arr;		/* an array: dptr is its id */
	uint64_t	 dptr;		/* device: base */
	char		*hptr;		/* host: base */
	size_t		 x, y, z, pitch, height;
};

static CUresult
side_of(CUmemorytype t, CUdeviceptr d, const void *h, CUarray a, size_t x,
    size_t y, size_t z, size_t pitch, size_t height, struct side *s)
{
	memset(s, 0, sizeof *s);
	s->x = x;
	s->y = y;
	s->z = z;
	s->pitch = pitch;
	s->height = height;
	switch (t) {
	case CU_MEMORYTYPE_HOST:
		/* No host buffer: the driver's answer, not a fault here. */
		if (h == NULL)
			return CUDA_ERROR_INVALID_VALUE;
		s->hptr = (char *)(uintptr_t)h;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_DEVICE:
		s->dev = 1;
		s->dptr = d;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_UNIFIED:
		if (mem_is_device(d, NULL, NULL)) {
			s->dev = 1;
			s->dptr = d;
		} else if (d == 0)
			return CUDA_ERROR_INVALID_VALUE;
		else
			s->hptr = (char *)(uintptr_t)d;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_ARRAY:
		if (gobj_check(a, GK_ARRAY) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		s->dev = s->arr = 1;
		s->dptr = gobj_id(a);
		s->pitch = s->height = 0;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

/*
 * An array side's extent against the array's, as the driver checks it
 * (its format's layout known: else the server's driver judges).
 */
static CUresult
side_fits(const struct side *s, const CUDA_MEMCPY3D *m, CUarray a)
{
	const struct garray *g = (const struct garray *)a;
	size_t wb, rows, slices;

	if (!s->arr || g->el == 0)
		return CUDA_SUCCESS;
	array_extent(g, &wb, &rows, &slices);
	if (s->x > wb || m->WidthInBytes > wb - s->x || s->y > rows ||
	    m->Height > rows - s->y || s->z > slices ||
	    m->Depth > slices - s->z)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* Host address of row (y, z) of a side, at its x offset. */
static char *
side_row(const struct side *s, size_t y, size_t z)
{
	return s->hptr + ((s->z + z) * s->height + s->y + y) * s->pitch + s->x;
}

/* One call: rows [y0, y0+rows) of slice z, or the whole copy if no host. */
static CUresult
copy3d_call(struct gctx *c, uint64_t sid, int async, const struct side *src,
    const struct side *dst, size_t w, size_t h, size_t d, size_t z,
    size_t y0, size_t rows, size_t x0, size_t cols)
{
	struct rpc_val in[5], out[1];
	uint64_t f[20];
	struct pw desc;
	char *blob = NULL;
	void *keep;
	size_t i, n;
	CUresult rc;
	int whole = src->dev && dst->dev;

	memset(f, 0, sizeof f);
	if (whole) {
		rows = h;
		cols = w;
	}
	/* Source. */
	f[0] = src->arr ? CU_MEMORYTYPE_ARRAY : src->dev ?
	    CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
	if (src->dev) {
		f[1] = src->x + x0; f[2] = src->y + y0; f[3] = src->z + z;
		f[4] = src->dptr; f[5] = src->pitch; f[6] = src->height;
	} else {
		f[5] = cols;
		f[6] = rows;
	}
	f[7] = dst->arr ? CU_MEMORYTYPE_ARRAY : dst->dev ?
	    CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
	if (dst->dev) {
		f[8] = dst->x + x0; f[9] = dst->y + y0; f[10] = dst->z + z;
		f[11] = dst->dptr; f[12] = dst->pitch; f[13] = dst->height;
	} else {
		f[12] = cols;
		f[13] = rows;
	}
	f[14] = cols;
	f[15] = rows;
	f[16] = whole ? d : 1;
	n = rows * cols;
	if (!src->dev) {
		if ((blob = malloc(n ? n : 1)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		for (i = 0; i < rows; i++)
			memcpy(blob + i * cols, side_row(src, y0 + i, z) + x0,
			    cols);
	}
	pw_init(&desc);
	for (i = 0; i < 20; i++)
		pw_u64(&desc, f[i]);
	in[0].u = gobj_id(c);
	in[1].u = sid;
	in[2].u = (uint64_t)async;
	in[3].p = desc.p;
	in[3].len = (uint32_t)desc.len;
	in[4].p = blob;
	in[4].len = src->dev ? 0 : (uint32_t)n;
	rc = remote_call(R_MEM_3D, in, out, &keep);
	pw_free(&desc);
	free(blob);
	if (rc == CUDA_SUCCESS && !dst->dev) {
		if (out[0].len != n)
			rc = CUDA_ERROR_UNKNOWN;
		else
			for (i = 0; i < rows; i++)
				memcpy(side_row(dst, y0 + i, z) + x0,
				    (const char *)out[0].p + i * cols, cols);
	}
	free(keep);
	return rc;
}

static CUresult
copy3d(const struct side *src, const struct side *dst, size_t w, size_t h,
    size_t d, CUstream s, int async, int ptsz)
{
	struct gctx *c;
	uint64_t sid;
	size_t max = io_max_payload(), z, y, rows, x, cols;
	CUresult rc;

	if ((rc = copy_prep(s, ptsz, &c, &sid)) != CUDA_SUCCESS)
		return rc;
	if ((rc = capture_work(c, sid, !(src->dev && dst->dev))) !=
	    CUDA_SUCCESS)
		return rc;
	if (w == 0 || h == 0 || d == 0)
		return CUDA_SUCCESS;
	if (!src->dev && !dst->dev) {
		for (z = 0; z < d; z++)
			for (y = 0; y < h; y++)
				memmove(side_row(dst, y, z), side_row(src, y,
				    z), w);
		return CUDA_SUCCESS;
	}
	if (src->dev && dst->dev)
		return copy3d_call(c, sid, async, src, dst, w, h, d, 0, 0, h,
		    0, w);
	for (z = 0; z < d; z++) {
		if (w > max) {
			/* Rows wider than a frame: a row at a time, in pieces. */
			for (y = 0; y < h; y++)
				for (x = 0; x < w; x += cols) {
					cols = w - x < max ? w - x : max;
					rc = copy3d_call(c, sid, async, src,
					    dst, w, h, d, z, y, 1, x, cols);
					if (rc != CUDA_SUCCESS)
						return rc;
				}
			continue;
		}
		for (y = 0; y < h; y += rows) {
			rows = max / w;
			if (rows > h - y)
				rows = h - y;
			rc = copy3d_call(c, sid, async, src, dst, w, h, d, z, y,
			    rows, 0, w);
			if (rc != CUDA_SUCCESS)
				return rc;
		}
	}
	return CUDA_SUCCESS;
}

static CUresult
copy_desc3d(const CUDA_MEMCPY3D *m, CUstream s, int async, int ptsz)
{
	struct side src, dst;
	CUresult rc;

	if (m == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = side_of(m->srcMemoryType, m->srcDevice, m->srcHost,
	    m->srcArray, m->srcXInBytes, m->srcY, m->srcZ, m->srcPitch,
	    m->srcHeight, &src)) != CUDA_SUCCESS)
		return rc;
	if ((rc = side_of(m->dstMemoryType, m->dstDevice, m->dstHost,
	    m->dstArray, m->dstXInBytes, m->dstY, m->dstZ, m->dstPitch,
	    m->dstHeight, &dst)) != CUDA_SUCCESS)
		return rc;
	if ((m->Height > 1 || m->Depth > 1) && ((!src.arr &&
	    src.pitch < m->WidthInBytes) || (!dst.arr &&
	    dst.pitch < m->WidthInBytes)))
		return CUDA_ERROR_INVALID_VALUE;
	if (m->Depth > 1 && ((!src.arr && src.height < m->Height) ||
	    (!dst.arr && dst.height < m->Height)))
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = side_fits(&src, m, m->srcArray)) != CUDA_SUCCESS ||
	    (rc = side_fits(&dst, m, m->dstArray)) != CUDA_SUCCESS)
		return rc;
	return copy3d(&src, &dst, m->WidthInBytes, m->Height, m->Depth, s,
	    async, ptsz);
}

static CUresult
copy_desc2d(const CUDA_MEMCPY2D *m, CUstream s, int async, int ptsz)
{
	CUDA_MEMCPY3D d;

	if (m == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&d, 0, sizeof d);
	d.srcXInBytes = m->srcXInBytes; d.srcY = m->srcY;
	d.srcMemoryType = m->srcMemoryType; d.srcHost = m->srcHost;
	d.srcDevice = m->srcDevice; d.srcArray = m->srcArray;
	d.srcPitch = m->srcPitch; d.srcHeight = m->srcY + m->Height;
	d.dstXInBytes = m->dstXInBytes; d.dstY = m->dstY;
	d.dstMemoryType = m->dstMemoryType; d.dstHost = m->dstHost;
	d.dstDevice = m->dstDevice; d.dstArray = m->dstArray;
	d.dstPitch = m->dstPitch; d.dstHeight = m->dstY + m->Height;
	d.WidthInBytes = m->WidthInBytes;
	d.Height = m->Height;
	d.Depth = 1;
	if (m->Height > 1 && ((m->srcMemoryType != CU_MEMORYTYPE_ARRAY &&
	    m->srcPitch < m->WidthInBytes) ||
	    (m->dstMemoryType != CU_MEMORYTYPE_ARRAY &&
	    m->dstPitch < m->WidthInBytes)))
		return CUDA_ERROR_INVALID_VALUE;
	return copy_desc3d(&d, s, async, ptsz);
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *m) { return copy_desc2d(m, NULL, 0, 0); }
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *m) { return copy_desc2d(m, NULL, 0, 1); }
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *m) { return copy_desc2d(m, NULL, 0, 0); }
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *m) { return copy_desc2d(m, NULL, 0, 1); }
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *m, CUstream s) { return copy_desc2d(m, s, 1, 0); }
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *m, CUstream s) { return copy_desc2d(m, s, 1, 1); }
CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *m) { return copy_desc3d(m, NULL, 0, 0); }
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *m) { return copy_desc3d(m, NULL, 0, 1); }
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *m, CUstream s) { return copy_desc3d(m, s, 1, 0); }
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *m, CUstream s) { return copy_desc3d(m, s, 1, 1); }

/*
 * Copies that name an array by a byte offset (cuMemcpyHtoA & co.): the
 * array's bytes taken as its rows one after another, each row's piece a
 * 3D copy of one row.  Either side may be an array; the other is host
 * (h) or device (d) memory.
 */
struct lside {
	CUarray		 a;		/* or */
	CUdeviceptr	 d;		/* or */
	char		*h;
	size_t		 off;
};

static CUresult
lside_rows(const struct lside *l, size_t n, size_t *wb)
{
	const struct garray *g;
	size_t rows, slices;

	*wb = 0;
	if (l->a == NULL)
		return CUDA_SUCCESS;
	if ((g = gobj_check(l->a, GK_ARRAY)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (g->el == 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	array_extent(g, wb, &rows, &slices);
	if (l->off > *wb * rows * slices || n > *wb * rows * slices - l->off)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static void
lside_at(const struct lside *l, size_t wb, size_t at, CUmemorytype *t,
    CUarray *a, CUdeviceptr *d, void **h, size_t *x, size_t *y)
{
	*a = NULL;
	*d = 0;
	*h = NULL;
	*x = *y = 0;
	if (l->a != NULL) {
		*t = CU_MEMORYTYPE_ARRAY;
		*a = l->a;
		*x = (l->off + at) % wb;
		*y = (l->off + at) / wb;
	} else if (l->h != NULL) {
		*t = CU_MEMORYTYPE_HOST;
		*h = l->h + at;
	} else {
		*t = CU_MEMORYTYPE_DEVICE;
		*d = l->d + at;
	}
}

static CUresult
copy_linear(const struct lside *dst, const struct lside *src, size_t n,
    CUstream s, int async, int ptsz)
{
	CUDA_MEMCPY3D m;
	size_t dwb, swb, at, k, dy, sy;
	void *h;
	CUresult rc;

	/* Before cuInit even a copy of nothing is refused (the driver). */
	if ((rc = client_initialized()) != CUDA_SUCCESS ||
	    (rc = lside_rows(dst, n, &dwb)) != CUDA_SUCCESS ||
	    (rc = lside_rows(src, n, &swb)) != CUDA_SUCCESS)
		return rc;
	for (at = 0; at < n; at += k) {
		k = n - at;
		if (dwb != 0 && k > dwb - (dst->off + at) % dwb)
			k = dwb - (dst->off + at) % dwb;
		if (swb != 0 && k > swb - (src->off + at) % swb)
			k = swb - (src->off + at) % swb;
		memset(&m, 0, sizeof m);
		lside_at(dst, dwb, at, &m.dstMemoryType, &m.dstArray,
		    &m.dstDevice, &m.dstHost, &m.dstXInBytes, &dy);
		lside_at(src, swb, at, &m.srcMemoryType, &m.srcArray,
		    &m.srcDevice, &h, &m.srcXInBytes, &sy);
		m.srcHost = h;
		/* A row index beyond the height is the next slice's. */
		if (dst->a != NULL) {
			const struct garray *g = (const void *)dst->a;
			size_t rows = g->d.Height ? g->d.Height : 1;

			m.dstY = dy % rows;
			m.dstZ = dy / rows;
		}
		if (src->a != NULL) {
			const struct garray *g = (const void *)src->a;
			size_t rows = g->d.Height ? g->d.Height : 1;

			m.srcY = sy % rows;
			m.srcZ = sy / rows;
		}
		/* One row: a pointer side's pitch is the row. */
		if (dst->a == NULL)
			m.dstPitch = k;
		if (src->a == NULL)
			m.srcPitch = k;
		m.WidthInBytes = k;
		m.Height = m.Depth = 1;
		if ((rc = copy_desc3d(&m, s, async, ptsz)) != CUDA_SUCCESS)
			return rc;
	}
	return CUDA_SUCCESS;
}

#define ACOPY(name, dstfill, srcfill, args, async, ptsz, stream)	\
CUresult name args							\
{									\
	struct lside d_, s_;						\
	memset(&d_, 0, sizeof d_);					\
	memset(&s_, 0, sizeof s_);					\
	dstfill; srcfill;						\
	return copy_linear(&d_, &s_, n, stream, async, ptsz);		\
}
#define AHTOA(sfx, ptsz) ACOPY(cuMemcpyHtoA##sfx, (d_.a = a, d_.off = off), \
    s_.h = (char *)(uintptr_t)p, (CUarray a, size_t off, const void *p,	\
    size_t n), 0, ptsz, NULL)						\
ACOPY(cuMemcpyAtoH##sfx, d_.h = p, (s_.a = a, s_.off = off),		\
    (void *p, CUarray a, size_t off, size_t n), 0, ptsz, NULL)		\
ACOPY(cuMemcpyDtoA##sfx, (d_.a = a, d_.off = off), s_.d = dp,		\
    (CUarray a, size_t off, CUdeviceptr dp, size_t n), 0, ptsz, NULL)	\
ACOPY(cuMemcpyAtoD##sfx, d_.d = dp, (s_.a = a, s_.off = off),		\
    (CUdeviceptr dp, CUarray a, size_t off, size_t n), 0, ptsz, NULL)	\
ACOPY(cuMemcpyAtoA##sfx, (d_.a = a, d_.off = off), (s_.a = b,		\
    s_.off = boff), (CUarray a, size_t off, CUarray b, size_t boff,	\
    size_t n), 0, ptsz, NULL)
AHTOA(_v2, 0)
AHTOA(_v2_ptds, 1)
#define AHTOA_ASYNC(sfx, ptsz) ACOPY(cuMemcpyHtoAAsync##sfx, (d_.a = a, \
    d_.off = off), s_.h = (char *)(uintptr_t)p, (CUarray a, size_t off,	\
    const void *p, size_t n, CUstream st), 1, ptsz, st)			\
ACOPY(cuMemcpyAtoHAsync##sfx, d_.h = p, (s_.a = a, s_.off = off),	\
    (void *p, CUarray a, size_t off, size_t n, CUstream st), 1, ptsz, st)
AHTOA_ASYNC(_v2, 0)
AHTOA_ASYNC(_v2_ptsz, 1)

/* ---- memset ------------------------------------------------------------ */

/*
 * A memset into page-locked host memory (cuMemHostAlloc's without
 * CU_MEMHOSTALLOC_DEVICEMAP, or registered memory): with unified
 * addressing the driver sets it from the device (XLA zeroes its small
 * host buffers so).  Here it is set on the host once the work queued
 * before it on the stream is done (dev_where judged [p, p + span)).
 */
static CUresult
mset_host(struct gctx *c, uint64_t sid, CUdeviceptr p, size_t pitch,
    unsigned v, unsigned el, size_t w, size_t h)
{
	uint8_t *row;
	size_t i, j;
	CUresult rc;

	if ((rc = sid_wait(c, sid)) != CUDA_SUCCESS)
		return rc;
	for (i = 0; i < h; i++) {
		row = (uint8_t *)(uintptr_t)p + i * pitch;
		if (el == 1)
			memset(row, (int)(v & 0xff), w);
		else
			for (j = 0; j < w; j++)
				memcpy(row + j * el, &v, el);
	}
	return CUDA_SUCCESS;
}

static CUresult
mset(CUdeviceptr p, size_t pitch, unsigned v, unsigned el, size_t w,
    size_t h, CUstream s, int async, int ptsz)
{
	struct rpc_val in[9], out[1];
	struct gctx *c;
	uint64_t sid, span;
	void *keep;
	CUresult rc;
	int where = AT_UNKNOWN;

	if ((rc = copy_prep(s, ptsz, &c, &sid)) != CUDA_SUCCESS)
		return rc;
	if ((rc = capture_work(c, sid, 0)) != CUDA_SUCCESS)
		return rc;
	/* The bytes it reaches: (height - 1) * pitch + width * element. */
	if (w > 0 && h > 0 && el > 0 && (h == 1 || pitch >= w * el) &&
	    !__builtin_mul_overflow((uint64_t)(h - 1), (uint64_t)pitch, &span) &&
	    !__builtin_add_overflow(span, (uint64_t)w * el, &span))
		where = dev_where(&p, span);
	if (where == AT_PINNED && !capture_busy(sid))
		return mset_host(c, sid, p, pitch, v, el, w, h);
	in[0].u = gobj_id(c);
	in[1].u = sid;
	in[2].u = (uint64_t)async;
	in[3].u = p;
	in[4].u = pitch;
	in[5].u = v;
	in[6].u = el;
	in[7].u = w;
	in[8].u = h;
	if (where == AT_DEVICE)
		return rpost(R_MEMSET, in, 0);
	rc = remote_call(R_MEMSET, in, out, &keep);
	free(keep);
	return rc;
}

CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) { return mset(p, 0, v, 1, n, 1, NULL, 0, 0); }
CUresult cuMemsetD16_v2(CUdeviceptr p, unsigned short v, size_t n) { return mset(p, 0, v, 2, n, 1, NULL, 0, 0); }
CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned int v, size_t n) { return mset(p, 0, v, 4, n, 1, NULL, 0, 0); }
CUresult cuMemsetD8_v2_ptds(CUdeviceptr p, unsigned char v, size_t n) { return mset(p, 0, v, 1, n, 1, NULL, 0, 1); }
CUresult cuMemsetD16_v2_ptds(CUdeviceptr p, unsigned short v, size_t n) { return mset(p, 0, v, 2, n, 1, NULL, 0, 1); }
CUresult cuMemsetD32_v2_ptds(CUdeviceptr p, unsigned int v, size_t n) { return mset(p, 0, v, 4, n, 1, NULL, 0, 1); }
CUresult cuMemsetD2D8_v2(CUdeviceptr p, size_t pitch, unsigned char v, size_t w, size_t h) { return mset(p, pitch, v, 1, w, h, NULL, 0, 0); }
CUresult cuMemsetD2D16_v2(CUdeviceptr p, size_t pitch, unsigned short v, size_t w, size_t h) { return mset(p, pitch, v, 2, w, h, NULL, 0, 0); }
CUresult cuMemsetD2D32_v2(CUdeviceptr p, size_t pitch, unsigned int v, size_t w, size_t h) { return mset(p, pitch, v, 4, w, h, NULL, 0, 0); }
CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr p, size_t pitch, unsigned char v, size_t w, size_t h) { return mset(p, pitch, v, 1, w, h, NULL, 0, 1); }
CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr p, size_t pitch, unsigned short v, size_t w, size_t h) { return mset(p, pitch, v, 2, w, h, NULL, 0, 1); }
CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr p, size_t pitch, unsigned int v, size_t w, size_t h) { return mset(p, pitch, v, 4, w, h, NULL, 0, 1); }
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) { return mset(p, 0, v, 1, n, 1, s, 1, 0); }
CUresult cuMemsetD16Async(CUdeviceptr p, unsigned short v, size_t n, CUstream s) { return mset(p, 0, v, 2, n, 1, s, 1, 0); }
CUresult cuMemsetD32Async(CUdeviceptr p, unsigned int v, size_t n, CUstream s) { return mset(p, 0, v, 4, n, 1, s, 1, 0); }
CUresult cuMemsetD8Async_ptsz(CUdeviceptr p, unsigned char v, size_t n, CUstream s) { return mset(p, 0, v, 1, n, 1, s, 1, 1); }
CUresult cuMemsetD16Async_ptsz(CUdeviceptr p, unsigned short v, size_t n, CUstream s) { return mset(p, 0, v, 2, n, 1, s, 1, 1); }
CUresult cuMemsetD32Async_ptsz(CUdeviceptr p, unsigned int v, size_t n, CUstream s) { return mset(p, 0, v, 4, n, 1, s, 1, 1); }
CUresult cuMemsetD2D8Async(CUdeviceptr p, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) { return mset(p, pitch, v, 1, w, h, s, 1, 0); }
CUresult cuMemsetD2D16Async(CUdeviceptr p, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) { return mset(p, pitch, v, 2, w, h, s, 1, 0); }
CUresult cuMemsetD2D32Async(CUdeviceptr p, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s) { return mset(p, pitch, v, 4, w, h, s, 1, 0); }
CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr p, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) { return mset(p, pitch, v, 1, w, h, s, 1, 1); }
CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr p, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) { return mset(p, pitch, v, 2, w, h, s, 1, 1); }
CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr p, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s) { return mset(p, pitch, v, 4, w, h, s, 1, 1); }
