/*
 * The client's error log (diag.c), which cuLogsDumpToMemory and the
 * cuLogs callbacks read: a line for a call that failed at the server or
 * an entry point that is not supported.
 */
#ifndef GLEAM_CLIENT_DIAG_H
#define GLEAM_CLIENT_DIAG_H

/* Adds a line, an error's or (warning) a warning's, and tells the
 * callbacks. */
void	 diag_log(int warning, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

#endif
