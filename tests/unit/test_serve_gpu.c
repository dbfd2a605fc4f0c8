/*
 * Unit tests for gleam-serve/gpu.c's reading of CUDA_VISIBLE_DEVICES:
 * which of the host's GPUs a server started under it reports.  NVML is
 * not needed: the function under test is pure.
 */
#include <stdio.h>
#include <string.h>

#include "../../gleam-serve/gpu.c"

#include "t.h"

static char uuids[4][96] = {
	"GPU-8f3a0000-1111", "GPU-8f3b0000-2222", "GPU-12ab0000-3333",
	"GPU-77770000-4444"
};

int
main(void)
{
	/* Unset: every GPU where it is. */
	CHECK(gpu_visible(NULL, 0, 4, uuids) == 0);
	CHECK(gpu_visible(NULL, 3, 4, uuids) == 3);
	CHECK(gpu_visible(NULL, 4, 4, uuids) == -1);
	/* Indices, in the list's order. */
	CHECK(gpu_visible("2,0", 2, 4, uuids) == 0);
	CHECK(gpu_visible("2,0", 0, 4, uuids) == 1);
	CHECK(gpu_visible("2,0", 1, 4, uuids) == -1);
	CHECK(gpu_visible("1", 1, 4, uuids) == 0);
	CHECK(gpu_visible(" 3", 3, 4, uuids) == 0);
	/* Empty: none. */
	CHECK(gpu_visible("", 0, 4, uuids) == -1);
	/* The list ends at an entry naming no GPU, or one named before. */
	CHECK(gpu_visible("0,9,1", 0, 4, uuids) == 0);
	CHECK(gpu_visible("0,9,1", 1, 4, uuids) == -1);
	CHECK(gpu_visible("0,x,1", 1, 4, uuids) == -1);
	CHECK(gpu_visible("0,,1", 1, 4, uuids) == -1);
	CHECK(gpu_visible("1,1,2", 2, 4, uuids) == -1);
	CHECK(gpu_visible("-1", 0, 4, uuids) == -1);
	CHECK(gpu_visible("99999999999", 0, 4, uuids) == -1);
	/* UUID prefixes: unique ones only. */
	CHECK(gpu_visible("GPU-12ab", 2, 4, uuids) == 0);
	CHECK(gpu_visible("GPU-7777,GPU-8f3b", 1, 4, uuids) == 1);
	CHECK(gpu_visible("GPU-8f3", 0, 4, uuids) == -1);
	CHECK(gpu_visible("GPU-ffff", 0, 4, uuids) == -1);
	return t_done("serve_gpu");
}
