/*
 * Progress of large host-to-device transfers (progress.c): a line on the
 * program's stderr while they take long (gleam-client(7),
 * GLEAM_PROGRESS).  progress_add counts a transfer in, or says 0 when it
 * is not counted (progress off, or the transfer small): then its caller
 * calls nothing else for it.  Every byte counted in is then either sent
 * (progress_sent) or dropped (progress_drop), or the line never ends.
 * None of these may be called with the transport's lock held.
 */
#ifndef GLEAM_CLIENT_PROGRESS_H
#define GLEAM_CLIENT_PROGRESS_H

#include <stdint.h>

/* Transfers smaller than this are not counted. */
#define PROGRESS_MIN	(256u << 10)

/* progress_sent's ways. */
#define PG_WIRE		0	/* the server has them (or the socket) */
#define PG_QUEUED	1	/* in the send queue, on their way */

/* Reads GLEAM_PROGRESS, once the connection is up (io_start). */
void	progress_init(void);
int	progress_add(uint64_t n);
void	progress_sent(uint64_t n, int how);
void	progress_drop(uint64_t n);
/* At exit, after the last bytes went: the line ends. */
void	progress_end(void);
/* The I/O thread, after sending: the queue drains, the line moves. */
void	progress_tick(void);

#endif
