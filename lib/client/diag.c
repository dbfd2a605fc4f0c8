/*
 * Diagnostics: the error log of CUDA 12.9 (cuLogs*), GPU coredump
 * settings and process checkpointing.
 *
 * The driver's log holds its own messages, whose text is not documented;
 * this log holds the client's: a call that failed at the server, an entry
 * point that is not supported.  A line is "[CUDA][E] name: message", its
 * level's letter E or W.  The buffer is the driver's size, oldest lines
 * dropped first, and an iterator counts lines since the start.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "diag.h"

#define LOG_LINES	128
#define LOG_LINE_MAX	200	/* 128 of them: the driver's 25600 bytes */
#define LOG_CB_MAX	16
#define LOG_TRUNCATED	"[CUDA][W] log truncated: older messages lost\n"

struct logcb {
	CUlogsCallback	 fn;
	void		*data;
};

static pthread_mutex_t	 log_lock = PTHREAD_MUTEX_INITIALIZER;
static char		 log_ring[LOG_LINES][LOG_LINE_MAX];
static unsigned		 log_next;	/* lines written since the start */
static struct logcb	*log_cb[LOG_CB_MAX];

void
diag_log(int warning, const char *fmt, ...)
{
	struct logcb cb[LOG_CB_MAX];
	char line[LOG_LINE_MAX];
	va_list ap;
	int n, i, ncb = 0;

	n = snprintf(line, sizeof line, "[CUDA][%c] ", warning ? 'W' : 'E');
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	pthread_mutex_lock(&log_lock);
	memcpy(log_ring[log_next % LOG_LINES], line, sizeof line);
	log_next++;
	for (i = 0; i < LOG_CB_MAX; i++)
		if (log_cb[i] != NULL)
			cb[ncb++] = *log_cb[i];
	pthread_mutex_unlock(&log_lock);
	/* Outside the lock: a callback may call the driver. */
	for (i = 0; i < ncb; i++)
		cb[i].fn(cb[i].data, warning ? CU_LOG_LEVEL_WARNING :
		    CU_LOG_LEVEL_ERROR, line, strlen(line));
}

CUresult
cuLogsRegisterCallback(CUlogsCallback fn, void *data,
    CUlogsCallbackHandle *out)
{
	struct logcb *c;
	int i;

	if (fn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((c = malloc(sizeof *c)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->fn = fn;
	c->data = data;
	pthread_mutex_lock(&log_lock);
	for (i = 0; i < LOG_CB_MAX && log_cb[i] != NULL; i++)
		;
	if (i < LOG_CB_MAX)
		log_cb[i] = c;
	pthread_mutex_unlock(&log_lock);
	if (i == LOG_CB_MAX) {
		free(c);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (out != NULL)
		*out = (CUlogsCallbackHandle)c;
	return CUDA_SUCCESS;
}

CUresult
cuLogsUnregisterCallback(CUlogsCallbackHandle h)
{
	int i;

	pthread_mutex_lock(&log_lock);
	for (i = 0; i < LOG_CB_MAX; i++)
		if (h != NULL && log_cb[i] == (struct logcb *)h) {
			log_cb[i] = NULL;
			break;
		}
	pthread_mutex_unlock(&log_lock);
	if (i == LOG_CB_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	free(h);
	return CUDA_SUCCESS;
}

CUresult
cuLogsCurrent(CUlogIterator *it, unsigned int flags)
{
	/* The driver 580 takes flags it does not know (1 answered 0). */
	(void)flags;
	if (it == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&log_lock);
	*it = log_next;
	pthread_mutex_unlock(&log_lock);
	return CUDA_SUCCESS;
}

/*
 * The lines from *it (all kept, for NULL) into buf of cap bytes: all of
 * them if they fit and none was lost, else the most recent that fit after
 * a line saying that some are missing.  The bytes written (0: no line),
 * -1 if not even the last fits.  With log_lock held.
 */
static long
log_text(const CUlogIterator *it, char *buf, size_t cap, unsigned *end)
{
	unsigned first = log_next > LOG_LINES ? log_next - LOG_LINES : 0;
	unsigned from = it != NULL ? *it : first, i;
	size_t len = 0, head = 0, n;

	*end = log_next;
	if (from > log_next)
		from = log_next;
	if (from < first) {
		from = first;
		head = sizeof LOG_TRUNCATED - 1;
	}
	if (from == log_next) {
		buf[0] = '\0';
		return 0;
	}
	for (i = from; i < log_next; i++)
		len += strlen(log_ring[i % LOG_LINES]);
	if (head + len + 1 > cap) {
		/* The newest lines that fit after the notice. */
		head = sizeof LOG_TRUNCATED - 1;
		for (len = 0, i = log_next; i > from; i--) {
			n = strlen(log_ring[(i - 1) % LOG_LINES]);
			if (head + len + n + 1 > cap)
				break;
			len += n;
		}
		if (i == log_next)
			return -1;
		from = i;
	}
	memcpy(buf, LOG_TRUNCATED, head);
	for (len = head, i = from; i < log_next; i++) {
		n = strlen(log_ring[i % LOG_LINES]);
		memcpy(buf + len, log_ring[i % LOG_LINES], n);
		len += n;
	}
	buf[len] = '\0';
	return (long)len;
}

CUresult
cuLogsDumpToMemory(CUlogIterator *it, char *buf, size_t *size,
    unsigned int flags)
{
	unsigned end;
	long n;

	if (buf == NULL || size == NULL || *size == 0 || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&log_lock);
	n = log_text(it, buf, *size, &end);
	pthread_mutex_unlock(&log_lock);
	if (n < 0) {
		buf[0] = '\0';
		*size = 0;
		return CUDA_ERROR_INVALID_VALUE;
	}
	*size = (size_t)n;
	if (it != NULL)
		*it = end;
	return CUDA_SUCCESS;
}

CUresult
cuLogsDumpToFile(CUlogIterator *it, const char *path, unsigned int flags)
{
	static char buf[LOG_LINES * LOG_LINE_MAX + sizeof LOG_TRUNCATED];
	unsigned end;
	FILE *fp;
	long n;
	int bad;

	if (path == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((fp = fopen(path, "w")) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&log_lock);
	n = log_text(it, buf, sizeof buf, &end);
	bad = n > 0 && fwrite(buf, 1, (size_t)n, fp) != (size_t)n;
	pthread_mutex_unlock(&log_lock);
	if (fclose(fp) != 0 || bad)
		return CUDA_ERROR_INVALID_VALUE;
	if (it != NULL)
		*it = end;
	return CUDA_SUCCESS;
}

/* ---- coredumps ------------------------------------------------------- */

/*
 * A GPU coredump would be written by the server's driver on the server's
 * disk, for a process that is not the program: so coredumps stay off,
 * and asking for them is refused.  The other settings are kept and read
 * back, process-wide (a context's are the process's).
 */
#define CORE_PATH_MAX	1024
static struct {
	bool		 host, light;
	int		 genflags;
	char		 file[CORE_PATH_MAX], pipe[CORE_PATH_MAX];
} core = { true, false, 0, "", "" };

static CUresult
core_get(CUcoredumpSettings a, void *v, size_t *size)
{
	const char *s = NULL;
	bool b = false;
	size_t n;

	if (v == NULL || size == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&log_lock);
	switch (a) {
	case CU_COREDUMP_ENABLE_ON_EXCEPTION:
	case CU_COREDUMP_ENABLE_USER_TRIGGER:
		break;
	case CU_COREDUMP_TRIGGER_HOST:
		b = core.host;
		break;
	case CU_COREDUMP_LIGHTWEIGHT:
		b = core.light;
		break;
	case CU_COREDUMP_FILE:
		s = core.file;
		break;
	case CU_COREDUMP_PIPE:
		s = core.pipe;
		break;
	case CU_COREDUMP_GENERATION_FLAGS:
		if (*size < sizeof(int)) {
			pthread_mutex_unlock(&log_lock);
			return CUDA_ERROR_INVALID_VALUE;
		}
		*(int *)v = core.genflags;
		*size = sizeof(int);
		pthread_mutex_unlock(&log_lock);
		return CUDA_SUCCESS;
	default:
		pthread_mutex_unlock(&log_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (s != NULL && *s == '\0' && *size == 0) {
		/* Never set: the real driver (580) answers 0 to a size of
		 * 0 (and no "core.cuda.HOST.PID" it would write to). */
	} else if (s != NULL) {
		if ((n = strlen(s) + 1) > *size) {
			pthread_mutex_unlock(&log_lock);
			return CUDA_ERROR_INVALID_VALUE;
		}
		memcpy(v, s, n);
		*size = n;
	} else {
		if (*size < sizeof b) {
			pthread_mutex_unlock(&log_lock);
			return CUDA_ERROR_INVALID_VALUE;
		}
		*(bool *)v = b;
		*size = sizeof b;
	}
	pthread_mutex_unlock(&log_lock);
	return CUDA_SUCCESS;
}

static CUresult
core_set(CUcoredumpSettings a, void *v, size_t *size)
{
	CUresult rc = CUDA_SUCCESS;
	size_t n;

	if (v == NULL || size == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&log_lock);
	switch (a) {
	case CU_COREDUMP_ENABLE_ON_EXCEPTION:
	case CU_COREDUMP_ENABLE_USER_TRIGGER:
	case CU_COREDUMP_TRIGGER_HOST:
	case CU_COREDUMP_LIGHTWEIGHT:
		if (*size != sizeof(bool))
			rc = CUDA_ERROR_INVALID_VALUE;
		else if (a == CU_COREDUMP_TRIGGER_HOST)
			core.host = *(bool *)v;
		else if (a == CU_COREDUMP_LIGHTWEIGHT)
			core.light = *(bool *)v;
		else if (*(bool *)v)
			rc = CUDA_ERROR_NOT_SUPPORTED;
		break;
	case CU_COREDUMP_FILE:
	case CU_COREDUMP_PIPE:
		n = strnlen(v, *size);
		if (n == *size || n >= CORE_PATH_MAX)
			rc = CUDA_ERROR_INVALID_VALUE;
		else
			memcpy(a == CU_COREDUMP_FILE ? core.file : core.pipe, v,
			    n + 1);
		break;
	case CU_COREDUMP_GENERATION_FLAGS:
		if (*size != sizeof(int) || (*(int *)v & ~0x3f) != 0)
			rc = CUDA_ERROR_INVALID_VALUE;
		else
			core.genflags = *(int *)v;
		break;
	default:
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&log_lock);
	return rc;
}

/*
 * The coredump attribute calls: the process's settings once cuInit has
 * run (global), or through the current context, the same settings.
 */
static CUresult
core_attr(int global, int set, CUcoredumpSettings a, void *v, size_t *size)
{
	struct gctx *c;
	CUresult rc;

	if (global)
		rc = client_initialized();
	else
		rc = ctx_need(&c);
	if (rc != CUDA_SUCCESS)
		return rc;
	/* The driver 580 answers the user trigger only globally. */
	if (!set && !global && a == CU_COREDUMP_ENABLE_USER_TRIGGER)
		return CUDA_ERROR_INVALID_VALUE;
	if (!set)
		return core_get(a, v, size);
	/* The driver takes the pipe's name only globally. */
	if (!global &&
	    (a == CU_COREDUMP_PIPE || a == CU_COREDUMP_ENABLE_USER_TRIGGER))
		return CUDA_ERROR_NOT_PERMITTED;
	return core_set(a, v, size);
}

CUresult cuCoredumpGetAttributeGlobal(CUcoredumpSettings a, void *v, size_t *size) { return core_attr(1, 0, a, v, size); }
CUresult cuCoredumpSetAttributeGlobal(CUcoredumpSettings a, void *v, size_t *size) { return core_attr(1, 1, a, v, size); }
CUresult cuCoredumpGetAttribute(CUcoredumpSettings a, void *v, size_t *size) { return core_attr(0, 0, a, v, size); }
CUresult cuCoredumpSetAttribute(CUcoredumpSettings a, void *v, size_t *size) { return core_attr(0, 1, a, v, size); }

/* ---- checkpointing ---------------------------------------------------- */

/*
 * cuCheckpointProcess* save a process's GPU state into its own host
 * memory and bring it back, through the driver of the machine it runs
 * on.  A client's GPU state is in gleam-serve on another machine, with
 * other clients': there is nothing here to lock, save or restore (a move
 * to another server is Gleam's own migration, gleam-client(7)).
 */
CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *a) { (void)pid; (void)a; return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *a) { (void)pid; (void)a; return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *a) { (void)pid; (void)a; return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *a) { (void)pid; (void)a; return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuCheckpointProcessGetState(int pid, CUprocessState *s) { (void)pid; (void)s; return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int *tid) { (void)pid; (void)tid; return CUDA_ERROR_NOT_SUPPORTED; }
