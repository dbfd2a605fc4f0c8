/* Buffers another process can map: see cbuf.h. */
#include <sys/mman.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "cbuf.h"
#include "htab.h"

struct cbuf {
	size_t		 len;
	int		 fd;		/* -1: a mapping of another's memfd */
};

static pthread_mutex_t	 cb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t	 cb_once = PTHREAD_ONCE_INIT;
static struct htab	 cb_tab;	/* address -> struct cbuf */

/* A fork waits for the lock: the child (a gleam-serve worker) gets the
 * table whole, never one another thread was changing.  The store, which
 * frees buffers under its own lock, registers this first (cbuf.h). */
static void cb_prepare(void) { pthread_mutex_lock(&cb_lock); }
static void cb_done(void) { pthread_mutex_unlock(&cb_lock); }
static void cb_atfork(void) { pthread_atfork(cb_prepare, cb_done, cb_done); }

void
cbuf_atfork_init(void)
{
	pthread_once(&cb_once, cb_atfork);
}

static int
cb_add(void *p, size_t len, int fd)
{
	struct cbuf *b;
	int rc;

	pthread_mutex_lock(&cb_lock);
	if ((b = malloc(sizeof *b)) == NULL) {
		pthread_mutex_unlock(&cb_lock);
		return -1;
	}
	b->len = len;
	b->fd = fd;
	if ((rc = htab_put(&cb_tab, (uint64_t)(uintptr_t)p, b)) == -1)
		free(b);
	pthread_mutex_unlock(&cb_lock);
	return rc;
}

void *
cbuf_alloc(size_t len)
{
	void *p;
	int fd;

	if (len < CBUF_MIN)
		return malloc(len ? len : 1);
	if ((fd = memfd_create("gleam-cache", MFD_CLOEXEC)) == -1)
		return malloc(len);
	if (ftruncate(fd, (off_t)len) == -1 ||
	    (p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
	    MAP_FAILED) {
		close(fd);
		return malloc(len);
	}
	if (cb_add(p, len, fd) == -1) {
		munmap(p, len);
		close(fd);
		return malloc(len);
	}
	return p;
}

void *
cbuf_map(int fd, size_t len)
{
	void *p;

	if (len == 0) {
		errno = EINVAL;
		return NULL;
	}
	/* Populated now: one walk, not a fault per page as it is read. */
	if ((p = mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd,
	    0)) == MAP_FAILED)
		return NULL;
	if (cb_add(p, len, -1) == -1) {
		munmap(p, len);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void
cbuf_free(void *p)
{
	struct cbuf *b;

	if (p == NULL)
		return;
	pthread_mutex_lock(&cb_lock);
	b = htab_del(&cb_tab, (uint64_t)(uintptr_t)p);
	pthread_mutex_unlock(&cb_lock);
	if (b == NULL) {
		free(p);
		return;
	}
	munmap(p, b->len);
	if (b->fd >= 0)
		close(b->fd);
	free(b);
}

int
cbuf_fd(const void *p, size_t len)
{
	struct cbuf *b;
	int fd = -1;

	pthread_mutex_lock(&cb_lock);
	b = htab_get(&cb_tab, (uint64_t)(uintptr_t)p);
	if (b != NULL && b->len == len)
		fd = b->fd;
	pthread_mutex_unlock(&cb_lock);
	return fd;
}
