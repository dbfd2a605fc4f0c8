/*
 * libFuzzer target: the decoders of gleam-sched's PLACE request and reply
 * (lib/schedwire.c), which the daemon and gleam-run read from the
 * network.  What decodes is encoded again and must decode to the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schedwire.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct place_req q, q2;
	struct place_rep r, r2;
	char err[1024], *doc;
	size_t len;

	if (place_req_dec(data, size, &q, err, sizeof err) == 0) {
		ENSURE(q.client[0] != '\0' && q.task[0] != '\0');
		doc = place_req_enc(&q, &len);
		ENSURE(doc != NULL);
		ENSURE(place_req_dec(doc, len, &q2, err, sizeof err) == 0);
		ENSURE(strcmp(q.client, q2.client) == 0);
		ENSURE(strcmp(q.task, q2.task) == 0);
		ENSURE(q.movable == q2.movable);
		free(doc);
	} else
		ENSURE(memchr(err, '\0', sizeof err) != NULL);
	if (place_rep_dec(data, size, &r, err, sizeof err) == 0) {
		ENSURE(r.task[0] != '\0' && r.client[0] != '\0');
		ENSURE(r.error[0] != '\0' || (r.server[0] != '\0' &&
		    r.address[0] != '\0' && r.latency_ms >= 0));
		doc = place_rep_enc(&r, &len);
		ENSURE(doc != NULL);
		ENSURE(place_rep_dec(doc, len, &r2, err, sizeof err) == 0);
		ENSURE(strcmp(r.task, r2.task) == 0);
		ENSURE(strcmp(r.client, r2.client) == 0);
		ENSURE(strcmp(r.server, r2.server) == 0);
		ENSURE(strcmp(r.address, r2.address) == 0);
		ENSURE(strcmp(r.error, r2.error) == 0);
		ENSURE(strcmp(r.reason, r2.reason) == 0);
		free(doc);
	} else
		ENSURE(memchr(err, '\0', sizeof err) != NULL);
	return 0;
}
