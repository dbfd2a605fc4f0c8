/*
 * The host backend: for machines without a GPU.  Not written yet; it
 * refuses to start so that nobody mistakes it for one.
 */
#include <stdio.h>

#include "backend.h"

static int
host_init(char *err, size_t errlen)
{
	snprintf(err, errlen, "not implemented yet");
	return -1;
}

const struct backend backend_host = {
	.name = "host",
	.init = host_init,
};
