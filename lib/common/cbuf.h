/*
 * Buffers another process can map: the weight cache's entries, which
 * gleam-serve's store shares with its worker processes by passing a file
 * descriptor (SCM_RIGHTS) instead of copying the bytes down a socket.  A
 * cbuf of CBUF_MIN bytes or more lives in a memfd mapped shared; smaller
 * ones, or any when memfd fails, come from malloc.  cbuf_free frees
 * either, and anything else from malloc.
 */
#ifndef GLEAM_CBUF_H
#define GLEAM_CBUF_H

#include <stddef.h>

#define CBUF_MIN	(256u << 10)

void	*cbuf_alloc(size_t);
void	 cbuf_free(void *);
/* The memfd behind [p, p + len) when p is a cbuf of exactly len; -1 if not. */
int	 cbuf_fd(const void *p, size_t len);
/*
 * Maps len bytes of the memfd fd read-only (fd stays the caller's); NULL
 * with errno set.  cbuf_free unmaps it.
 */
void	*cbuf_map(int fd, size_t len);
/*
 * Makes a fork wait until no thread is in the middle of the table.  A
 * handler registered earlier runs later before a fork (pthread_atfork):
 * whoever frees cbufs under a lock of its own (the store, whose threads
 * share cbufs with forked workers) calls this before registering its
 * handler for that lock, so that its lock is taken first, as in its code.
 */
void	 cbuf_atfork_init(void);

#endif
