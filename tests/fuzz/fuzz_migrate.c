/*
 * libFuzzer target: what a target server reads of a migrated session
 * (gleam-protocol(5), Migration).  The first input byte picks the decoder:
 *	0	the state (MIG_STATE's bytes, joined): the host backend's
 *		mig_load into a fresh client, whose every range must then
 *		be writable, and which is freed as a worker frees it
 *	1	MIG_END's payload (msg_mig_end_dec)
 *	2	REDIRECT's payload (msg_redirect_dec)
 * The rest is the input.  The backend has no kernel library and a device
 * of 64 MiB, so that a state cannot ask for much.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "host.h"
#include "log.h"
#include "proto.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)

static void
fuzz_state(const uint8_t *d, size_t n)
{
	struct rclient cl;
	struct pr r;
	char why[300];
	size_t i = 0;
	uint64_t k;
	void *v;
	uint8_t b = 0x5a;

	memset(&cl, 0, sizeof cl);
	htab_init(&cl.objs);
	ENSURE(backend_host.client_new(&cl) == 0);
	pr_init(&r, d, n);
	if (backend_host.mig_load(&cl, &r, why, sizeof why) == 0) {
		/* What it says is the client's memory is memory. */
		for (i = 0; i < cl.nranges; i++) {
			ENSURE(cl.ranges[i].size > 0);
			backend_host.mig_write(&cl, cl.ranges[i].base, &b, 1);
			backend_host.mig_write(&cl, cl.ranges[i].base +
			    cl.ranges[i].size - 1, &b, 1);
		}
	} else
		ENSURE(why[0] != '\0');
	backend_host.client_free(&cl);
	for (i = 0; htab_next(&cl.objs, &i, &k, &v);)
		robj_free(v);
	htab_free(&cl.objs);
	free(cl.ranges);
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static int ready;
	struct msg_mig_end e;
	struct msg_redirect rd;
	char err[256];

	if (!ready) {
		log_init("fuzz_migrate", LL_ERROR);
		host_backend_configure("", 64u << 20);
		ENSURE(backend_host.init(err, sizeof err) == 0);
		ready = 1;
	}
	if (n == 0)
		return 0;
	switch (d[0]) {
	case 0:
		fuzz_state(d + 1, n - 1);
		break;
	case 1:
		if (msg_mig_end_dec(d + 1, n - 1, &e) == 0) {
			ENSURE(e.keep_base <= e.tx_bytes);
			ENSURE(e.acked <= e.rx_bytes);
			ENSURE(e.tx_bytes - e.keep_base <= n);
			ENSURE(e.npending <= n);
		}
		break;
	case 2:
		if (msg_redirect_dec(d + 1, n - 1, &rd) == 0)
			ENSURE(rd.host[0] != '\0' && rd.port != 0 &&
			    rd.session != 0);
		break;
	}
	return 0;
}
