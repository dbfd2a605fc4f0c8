/*
 * libFuzzer target: gleam-serve.yaml through config_parse, that is cfgtab
 * with gleam-serve's table of keys.  What loads must hold only values in
 * the ranges gleam-serve(8) relies on; what fails must say why in a
 * terminated message that names the file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "proto.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)

/* A string field is terminated inside its buffer. */
#define TERMINATED(f)	ENSURE(memchr((f), '\0', sizeof (f)) != NULL)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c;
	char err[1024];

	config_defaults(&c);
	memset(err, 'x', sizeof err);
	if (config_parse(&c, "fuzz.yaml", data, size, err, sizeof err) == -1) {
		ENSURE(memchr(err, '\0', sizeof err) != NULL);
		ENSURE(strncmp(err, "fuzz.yaml", 9) == 0);
		return 0;
	}
	TERMINATED(c.listen_host);
	TERMINATED(c.name);
	TERMINATED(c.key_file);
	TERMINATED(c.backend);
	TERMINATED(c.host_kernels);
	TERMINATED(c.cache_dir);
	ENSURE(c.listen_port >= 0 && c.listen_port <= 65535);
	ENSURE(c.max_clients >= 1 && c.max_clients <= 65536);
	ENSURE(c.max_frame >= PROTO_MAX_FRAME_MIN &&
	    c.max_frame <= PROTO_MAX_FRAME_LIMIT);
	ENSURE(c.handshake_timeout > 0);
	ENSURE(c.drain_timeout >= 0);
	ENSURE(strcmp(c.backend, "auto") == 0 || strcmp(c.backend, "cuda") == 0
	    || strcmp(c.backend, "host") == 0 || strcmp(c.backend, "none") == 0);
	ENSURE(c.isolation == ISO_PROCESS || c.isolation == ISO_THREAD);
	ENSURE(c.cache_level >= 0 && c.cache_level <= 19);
	ENSURE(c.spin >= 0 && c.spin <= 0.1);
	ENSURE(c.lanes >= 0 && c.lanes <= PROTO_LANES_MAX);
	ENSURE(c.port_rate >= 0);
	return 0;
}
