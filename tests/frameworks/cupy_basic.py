#!/usr/bin/env python3
"""CuPy: ufuncs and reductions, an NVRTC RawKernel, cuFFT, cuSOLVER,
cuRAND, cuSPARSE, and CUB-backed sort and scan."""
import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

from fwcommon import done, part  # noqa: E402

rs = np.random.RandomState(4)
a = cp.asarray(rs.randn(512, 512).astype(np.float32))
b = cp.asarray(rs.randn(512).astype(np.float32))

add = cp.RawKernel(r'''
extern "C" __global__ void axpy(const float *x, float *y, float a, int n) {
	int i = blockDim.x * blockIdx.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}''', "axpy")


def raw():
    y = cp.ones(1000, dtype=cp.float32)
    x = cp.arange(1000, dtype=cp.float32)
    add((4,), (256,), (x, y, cp.float32(2.5), cp.int32(1000)))
    return y


def sparse():
    import cupyx.scipy.sparse as sp
    m = sp.random(300, 300, density=0.05, format="csr", dtype=cp.float32,
                  random_state=1)
    return m @ cp.ones(300, dtype=cp.float32)


part("cupy.ufunc", lambda: cp.exp(cp.sin(a)) * 2 + cp.sqrt(cp.abs(a)))
part("cupy.reduce", lambda: [a.sum(axis=0), a.max(), a.argmin()])
part("cupy.matmul", lambda: a @ a)
part("cupy.rawkernel", raw)
part("cupy.fft", lambda: cp.fft.fft(a[0]))
part("cupy.fft2", lambda: cp.fft.rfft2(a))
part("cupy.solve", lambda: cp.linalg.solve(a + 512 * cp.eye(512,
                                           dtype=cp.float32), b))
part("cupy.eigh", lambda: cp.linalg.eigvalsh(a @ a.T))
part("cupy.curand", lambda: cp.random.RandomState(8).standard_normal(1000,
                                                                   dtype=cp.float32))
part("cupy.cusparse", sparse)
part("cupy.sort", lambda: cp.sort(a[0]))
part("cupy.cumsum", lambda: cp.cumsum(cp.arange(10000, dtype=cp.int64)))
done("cupy_basic")
