/*
 * Fuzz target: the remoting decoders, on both sides: every call's request
 * and reply signature (rpc_unpack), R_OPEN's device list, the function
 * table of a module load and the arguments of a tensor-map encoder.  The
 * first byte picks the decoder, and for a call or an encoder the second
 * byte which one; what decodes is encoded again and must decode to the
 * same thing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
fuzz_ftab(const uint8_t *p, size_t n)
{
	struct rpc_func *f, *g;
	uint32_t cnt, cnt2, i, j;
	struct pw w;

	if (rpc_ftab_dec(p, n, &f, &cnt) == -1)
		return;
	pw_init(&w);
	rpc_ftab_begin(&w, cnt);
	for (i = 0; i < cnt; i++)
		rpc_ftab_add(&w, f[i].name, f[i].nparams, f[i].offset,
		    f[i].size, RPC_FUNC_ATTR_MAX, f[i].attr);
	if (w.bad || rpc_ftab_dec(w.p, w.len, &g, &cnt2) == -1 || cnt2 != cnt)
		abort();
	for (i = 0; i < cnt; i++) {
		if (strcmp(f[i].name, g[i].name) != 0 ||
		    f[i].nparams != g[i].nparams ||
		    f[i].argbytes != g[i].argbytes ||
		    memcmp(f[i].attr, g[i].attr, sizeof f[i].attr) != 0)
			abort();
		for (j = 0; j < f[i].nparams; j++)
			if (f[i].offset[j] != g[i].offset[j] ||
			    f[i].size[j] != g[i].size[j])
				abort();
	}
	rpc_ftab_free(g, cnt2);
	rpc_ftab_free(f, cnt);
	pw_free(&w);
}

static void
fuzz_devices(const uint8_t *p, size_t n)
{
	struct rpc_device *d, *e;
	uint32_t cnt, cnt2, i;
	struct pw w;

	if (rpc_devices_dec(p, n, &d, &cnt) == -1)
		return;
	pw_init(&w);
	rpc_devices_begin(&w, cnt);
	for (i = 0; i < cnt; i++)
		rpc_device_enc(&w, d[i].name, d[i].uuid, d[i].totalmem,
		    RPC_DEV_ATTR_MAX, d[i].attr);
	if (w.bad || rpc_devices_dec(w.p, w.len, &e, &cnt2) == -1 ||
	    cnt2 != cnt || memcmp(d, e, cnt * sizeof *d) != 0)
		abort();
	free(e);
	free(d);
	pw_free(&w);
}

/* The encoding is canonical: what decodes encodes to the same bytes. */
static void
fuzz_tmap(uint32_t which, const uint8_t *p, size_t n)
{
	struct rpc_tmap t;
	struct pw w;

	if (rpc_tmap_dec(which, p, n, &t) == -1)
		return;
	if (t.rank > TMAP_RANK_MAX)
		abort();
	pw_init(&w);
	rpc_tmap_enc(&w, &t);
	if (w.bad || w.len != n || (n > 0 && memcmp(w.p, p, n) != 0))
		abort();
	pw_free(&w);
}

static void
fuzz_call(uint8_t sel, const uint8_t *p, size_t n)
{
	const struct rpc_desc *d = rpc_lookup((uint16_t)(R_OPEN +
	    (sel >> 1) % RPC_NCALLS));
	const char *sig = (sel & 1) ? d->rep : d->req;
	struct rpc_val v[RPC_MAX_FIELDS];
	struct pw w;

	if (rpc_unpack(p, n, sig, v) == -1)
		return;
	pw_init(&w);
	if (rpc_pack(&w, sig, v) == -1 || w.len != n ||
	    (n > 0 && memcmp(w.p, p, n) != 0))
		abort();
	pw_free(&w);
	/* As the server goes on to decode it. */
	if (d->type == R_TMAP_ENCODE && !(sel & 1))
		fuzz_tmap((uint32_t)v[1].u, v[4].p, v[4].len);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	switch (data[0] % 4) {
	case 0:
		fuzz_ftab(data + 1, size - 1);
		break;
	case 1:
		fuzz_devices(data + 1, size - 1);
		break;
	case 2:
		/* A whole byte for the call: there are more than 32. */
		if (size >= 2)
			fuzz_call(data[1], data + 2, size - 2);
		break;
	default:
		if (size >= 2)
			fuzz_tmap(data[1] % 8, data + 2, size - 2);
		break;
	}
	return 0;
}
