/*
 * A worker's own stdout and stderr, captured for its one client (isolation:
 * process): what the CUDA driver prints there, device printf on stdout
 * and assert messages on stderr, goes to the client in MSG_OUTPUT frames
 * (gleam-protocol(5)) just before the reply of the call that printed it,
 * so that the program sees it before that call returns, as in a local run.
 *
 * Lifecycle: output_capture once in the worker, before the backend starts;
 * then output_collect before every reply (remote.c).  A reader thread keeps
 * the pipes drained meanwhile, so that the driver never blocks on a full
 * pipe while the serving thread is inside it.  Without output_capture
 * (isolation: thread), output_collect does nothing: the driver's output
 * goes to the server's stdout and stderr.
 */
#ifndef SERVE_OUTPUT_H
#define SERVE_OUTPUT_H

#include "proto.h"

/*
 * Points descriptors 1 and 2 at pipes read by this process; the log keeps
 * the old stderr.  -1 (and nothing changed) if it could not.
 */
int	output_capture(void);
/* Appends what was printed since the last call as MSG_OUTPUT frames. */
void	output_collect(struct pw *out);

#endif
