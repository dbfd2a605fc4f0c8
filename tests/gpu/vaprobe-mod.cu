// The module tests/gpu/vaprobe.c loads: a global and a kernel.
__device__ int g_val[4] = { 1, 2, 3, 4 };

__global__ void
vp_read(int *p)
{
	p[threadIdx.x] = g_val[threadIdx.x];
}
