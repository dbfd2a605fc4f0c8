/*
 * libFuzzer target: zf_decompress, the server's decoder of FL_ZSTD
 * payloads, on hostile input with a small limit.  What inflates must be
 * within the limit, and compressing it again must inflate back to it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zframe.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)
#define LIMIT	(1u << 20)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = NULL;
	uint8_t *out, *again;
	size_t len, len2;
	struct pw w;
	long n;

	if (zf_decompress(data, size, LIMIT, &out, &len, &why) == -1) {
		ENSURE(why != NULL && out == NULL);
		return 0;
	}
	ENSURE(len <= LIMIT);
	/* Round trip: what came out goes back in, and out again the same. */
	pw_init(&w);
	n = zf_compress(&w, out, len, 1);
	ENSURE(n >= 0);
	if (n > 0) {
		ENSURE(zf_decompress(w.p, (size_t)n, LIMIT, &again, &len2,
		    &why) == 0);
		ENSURE(len2 == len && memcmp(again, out, len) == 0);
		free(again);
	}
	pw_free(&w);
	free(out);
	return 0;
}
