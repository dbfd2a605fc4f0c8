#!/usr/bin/env python3
"""numba-cuda: a kernel compiled by numba and launched through the driver
API, with device arrays and a reduction."""
import numpy as np  # noqa: E402

# numba-cuda as installed on the GPU machine still calls np.row_stack,
# which NumPy 2 removed (its local runs failed on it): the old name back.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from numba import cuda  # noqa: E402

from fwcommon import done, part  # noqa: E402


@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def run():
    n = 5000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    dx, dy = cuda.to_device(x), cuda.to_device(y)
    out = cuda.device_array(n, dtype=np.float32)
    saxpy[(n + 255) // 256, 256](np.float32(3.0), dx, dy, out)
    return out.copy_to_host()


@cuda.reduce
def sum_reduce(a, b):
    return a + b


part("numba.saxpy", run)
part("numba.reduce", lambda: np.float64(sum_reduce(
    cuda.to_device(np.arange(1000, dtype=np.float64)))))
done("numba_kernel")
