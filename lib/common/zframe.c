/* zstd payloads of frames: bounded on both ends; see zframe.h. */
#include <pthread.h>
#include <stdlib.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "zframe.h"

/*
 * One context per thread: the I/O thread, a server's client thread, a
 * program's threads that probe.  Freed when the thread exits (a thread
 * key's destructor: the thread's own variables are still there then).
 */
static _Thread_local ZSTD_CCtx *zf_cctx;
static _Thread_local ZSTD_DCtx *zf_dctx;
static pthread_once_t	 zf_once = PTHREAD_ONCE_INIT;
static pthread_key_t	 zf_key;
static int		 zf_keyed;

static void
zf_thread_end(void *arg)
{
	(void)arg;
	ZSTD_freeCCtx(zf_cctx);
	zf_cctx = NULL;
	ZSTD_freeDCtx(zf_dctx);
	zf_dctx = NULL;
}

static void
zf_key_init(void)
{
	zf_keyed = pthread_key_create(&zf_key, zf_thread_end) == 0;
}

/* This thread has a context now: free it when the thread ends. */
static void
zf_own(void)
{
	pthread_once(&zf_once, zf_key_init);
	if (zf_keyed)
		(void)pthread_setspecific(zf_key, &zf_key);
}

long
zf_compress(struct pw *w, const void *src, size_t len, int level)
{
	size_t bound = ZSTD_compressBound(len), n;
	uint8_t *room;

	if (zf_cctx == NULL) {
		if ((zf_cctx = ZSTD_createCCtx()) == NULL)
			return -1;
		zf_own();
	}
	if ((room = pw_room(w, bound)) == NULL)
		return -1;
	/* Only worth a frame flag if it saves something. */
	n = ZSTD_compressCCtx(zf_cctx, room, len - len / 32, src, len, level);
	if (ZSTD_isError(n)) {
		w->len -= bound;
		return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ?
		    0 : -1;
	}
	w->len -= bound - n;
	return (long)n;
}

int
zf_decompress(const void *src, size_t len, size_t max, uint8_t **out,
    size_t *outlen, const char **why)
{
	unsigned long long size;
	size_t n;

	*out = NULL;
	*outlen = 0;
	size = ZSTD_getFrameContentSize(src, len);
	if (size == ZSTD_CONTENTSIZE_ERROR) {
		*why = "not a zstd frame";
		return -1;
	}
	if (size == ZSTD_CONTENTSIZE_UNKNOWN) {
		*why = "zstd frame without its content size";
		return -1;
	}
	if (size > max) {
		*why = "zstd frame inflates past the frame limit";
		return -1;
	}
	if (ZSTD_findFrameCompressedSize(src, len) != len) {
		*why = "bytes after the zstd frame";
		return -1;
	}
	if (zf_dctx == NULL) {
		if ((zf_dctx = ZSTD_createDCtx()) == NULL) {
			*why = "out of memory";
			return -1;
		}
		zf_own();
	}
	/* malloc(0) may be NULL: keep one byte for an empty frame. */
	if ((*out = malloc(size ? (size_t)size : 1)) == NULL) {
		*why = "out of memory";
		return -1;
	}
	n = ZSTD_decompressDCtx(zf_dctx, *out, (size_t)size, src, len);
	if (ZSTD_isError(n) || n != size) {
		free(*out);
		*out = NULL;
		*why = ZSTD_isError(n) ? ZSTD_getErrorName(n) :
		    "zstd frame shorter than it declared";
		return -1;
	}
	*outlen = n;
	return 0;
}
