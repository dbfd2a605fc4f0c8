/*
 * The exit codes of every Gleam program.  This table is the one definition;
 * each man page's EXIT STATUS repeats it (gleam(7) has it whole).
 */
#ifndef GLEAM_EXITCODE_H
#define GLEAM_EXITCODE_H

enum gl_exit {
	EXIT_OK = 0,		/* success */
	EXIT_FAIL = 1,		/* ran, but the answer is "no" (e.g. corrupt entries found) */
	EXIT_USAGE = 2,		/* bad flags, arguments or numbers on the command line */
	EXIT_CONFIG = 3,	/* unreadable or invalid configuration or YAML input */
	EXIT_NET = 4,		/* a server unreachable, an address in use, a dropped link */
	EXIT_AUTH = 5,		/* the peer refused us: wrong key, no common protocol version */
	EXIT_IO = 6,		/* a local file or system resource failed */
	EXIT_SOFTWARE = 70,	/* an internal error (a bug): please report it */
	EXIT_NOSERVER = 125,	/* gleam-run: the server could not be used
				 * (unreachable, refused the key, timed
				 * out): the program did not run */
	EXIT_NOEXEC = 126,	/* gleam-run: the program was found but could not be run */
	EXIT_NOTFOUND = 127,	/* gleam-run: the program was not found */
	EXIT_SIGBASE = 128	/* gleam-run: the program was killed by signal N: 128+N */
};

#endif
