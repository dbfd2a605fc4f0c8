/*
 * What the client library keeps across runs, under $XDG_CACHE_HOME/gleam
 * (or ~/.cache/gleam): function tables (module.c), the names of the last
 * run's copies (wcache.c) and its pool's peak (pool.c).  Every file is
 * written whole and renamed into place, so a reader sees the old file or
 * the new one; each reader checks what it reads and ignores a file that
 * does not check out.
 */
#ifndef GLEAM_CLIENT_MEMO_H
#define GLEAM_CLIENT_MEMO_H

#include <stddef.h>

/* The directory for sub ("" for the top) into buf; -1 without one. */
int	memo_dir(const char *sub, char *buf, size_t len);

/*
 * The file of kind for this program against this server (GLEAM_SERVER's
 * host, so that a server restarted on another port keeps it): -1 where
 * there is none.
 */
int	memo_program(const char *kind, char *buf, size_t len);

/*
 * Writes a then b (either may be empty) as path: its directories made
 * first, the bytes written to a temporary file, then renamed.  -1 on
 * failure, with nothing left behind.  Unlike file_write_atomic (util.h)
 * nothing is synced: these files only save round trips, and a program's
 * exit should not wait for the disk.
 */
int	memo_write(const char *path, const void *a, size_t alen,
	    const void *b, size_t blen);

#endif
