/*
 * libFuzzer target: status_parse, the client's reader of the YAML a server
 * answers to STATUS.  What parses is written back with status_write (as
 * gleam-probe -o yaml does) and must parse again to the same status.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)

static void
same(const struct server_status *a, const struct server_status *b)
{
	int i;

	ENSURE(strcmp(a->host, b->host) == 0);
	ENSURE(strcmp(a->version, b->version) == 0);
	ENSURE(a->protocol == b->protocol);
	ENSURE(strcmp(a->backend, b->backend) == 0);
	ENSURE(strcmp(a->gpu_source, b->gpu_source) == 0);
	ENSURE(a->auth == b->auth);
	ENSURE(a->max_clients == b->max_clients);
	ENSURE(a->ngpus == b->ngpus);
	for (i = 0; i < a->ngpus; i++) {
		ENSURE(a->gpus[i].index == b->gpus[i].index);
		ENSURE(strcmp(a->gpus[i].name, b->gpus[i].name) == 0);
		ENSURE(a->gpus[i].memory_total == b->gpus[i].memory_total);
		ENSURE(a->gpus[i].memory_free == b->gpus[i].memory_free);
		ENSURE(a->gpus[i].utilization == b->gpus[i].utilization);
	}
	ENSURE(a->nclients == b->nclients);
	for (i = 0; i < a->nclients; i++) {
		ENSURE(strcmp(a->clients[i].address, b->clients[i].address) == 0);
		ENSURE(strcmp(a->clients[i].name, b->clients[i].name) == 0);
		ENSURE(a->clients[i].bytes_in == b->clients[i].bytes_in);
		ENSURE(a->clients[i].bytes_out == b->clients[i].bytes_out);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct server_status s, t;
	struct yerr err;
	struct yw *w;
	const char *text;
	size_t len;

	if (status_parse("fuzz", data, size, &s, &err) == -1) {
		ENSURE(s.clients == NULL);
		ENSURE(memchr(err.msg, '\0', sizeof err.msg) != NULL);
		return 0;
	}
	ENSURE(s.ngpus >= 0 && s.ngpus <= STATUS_MAX_GPUS);
	ENSURE(s.nclients >= 0 && s.nclients <= STATUS_MAX_CLIENTS);
	ENSURE((s.nclients == 0) == (s.clients == NULL));
	w = yw_new();
	ENSURE(w != NULL);
	status_write(w, &s);
	text = yw_finish(w, &len);
	ENSURE(text != NULL);
	ENSURE(status_parse("again", text, len, &t, &err) == 0);
	same(&s, &t);
	status_free(&t);
	yw_free(w);
	status_free(&s);
	return 0;
}
