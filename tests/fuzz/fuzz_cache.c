/*
 * libFuzzer target: the weight cache's readers of its directory, which
 * gleam-serve and gleam-cache trust no more than the network (a disk can
 * rot, another program can write there).  The first byte picks the
 * reader: 0 an entry file (cstore_decode), 1 the counters file, 2 the
 * pins file.  A decoded entry must hash to its name and survive a round
 * trip through cstore_encode.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cstore.h"
#include "log.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)

static void
pin(void *arg, const char *tenant, const uint8_t *hash)
{
	ENSURE(cstore_tenant_valid(tenant));
	(*(int *)arg)++;
}

static void
entry(const uint8_t *p, size_t n)
{
	uint8_t h[CSTORE_HASH_LEN];
	char why[256];
	void *out, *enc, *again;
	size_t len, elen, alen;

	int naming;

	if (cstore_decode(p, n, 0, NULL, &out, &len, why, sizeof why) == -1) {
		ENSURE(out == NULL && why[0] != '\0');
		return;
	}
	ENSURE(n >= CSTORE_HDR2_LEN);
	/* Of one naming exactly (version 2: weak; 3: the header's). */
	naming = cstore_decode(p, n, CN_WEAK, NULL, &again, &alen, why,
	    sizeof why) == 0 ? CN_WEAK : CN_STRONG;
	free(again);
	if (naming == CN_STRONG) {
		ENSURE(cstore_decode(p, n, CN_STRONG, NULL, &again, &alen, why,
		    sizeof why) == 0);
		free(again);
	}
	cstore_hash(naming, out, len, h);
	/* The name the header gives is the one that must match. */
	ENSURE(cstore_decode(p, n, naming, h, &again, &alen, why,
	    sizeof why) == 0);
	free(again);
	ENSURE(cstore_encode(out, len, naming, h, 0, &enc, &elen) == 0);
	ENSURE(cstore_decode(enc, elen, naming, h, &again, &alen, why,
	    sizeof why) == 0 && alen == len && memcmp(again, out, len) == 0);
	free(again);
	free(enc);
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *p, size_t n)
{
	struct cstore_counters c;
	int count = 0;

	if (n == 0)
		return 0;
	log_init("fuzz_cache", LL_QUIET);
	switch (p[0] % 3) {
	case 0:
		entry(p + 1, n - 1);
		break;
	case 1:
		cstore_parse_counters(p + 1, n - 1, &c);
		break;
	case 2:
		ENSURE(cstore_parse_pins((const char *)p + 1, n - 1, pin,
		    &count, 0) == count);
		break;
	}
	return 0;
}
