/* gleam-reduce bench -g has no GPU in this build: see gpu.cu. */
#include <stddef.h>

#include "bench.h"

const struct bench_gpu *const bench_gpu = NULL;
