#!/usr/bin/env python3
"""JAX on the GPU: jit, grad, lax.scan, FFT, and a loop XLA turns into
command buffers (CUDA graphs)."""
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# XLA's autotuner picks among kernels by timing them, so that two machines,
# or a GPU reached through Gleam, may pick others where timings are close,
# each as right, the sums a few ulps apart.  FW_XLA_AUTOTUNE names a file
# (tests/frameworks/run: the case's): the first run writes its choices
# there, later runs take them, so that the runs compare bit for bit.  The
# case jax_autotune leaves it unset: the autotuner runs in every run (as
# a user's), and its sums compare within a tolerance (FW_RTOL).
_at = os.environ.get("FW_XLA_AUTOTUNE")
if _at:
    if os.path.exists(_at) and os.path.getsize(_at) > 0:
        _flag = "--xla_gpu_load_autotune_results_from=" + _at
    else:
        _flag = "--xla_gpu_dump_autotune_results_to=" + _at
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " +
                               _flag).strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from fwcommon import done, part  # noqa: E402

assert jax.devices()[0].platform == "gpu", jax.devices()
key = jax.random.PRNGKey(0)
k1, k2, k3 = jax.random.split(key, 3)
x = jax.random.normal(k1, (256, 256))
w = jax.random.normal(k2, (256, 64)) * 0.1


@jax.jit
def mlp(w, x):
    return jnp.tanh(x @ w).sum(axis=1)


def loss(w, x):
    return jnp.mean(mlp(w, x) ** 2)


part("jax.random", lambda: jax.random.uniform(k3, (1000,)))
part("jax.jit", lambda: mlp(w, x))
part("jax.grad", lambda: jax.jit(jax.grad(loss))(w, x))
part("jax.scan", lambda: jax.jit(lambda: jax.lax.scan(
    lambda c, xi: (jnp.tanh(c * 0.9 + xi), jnp.sum(c)), jnp.zeros(256), x))())
part("jax.fft", lambda: jnp.fft.fft(x[0] + 1j * x[1]))
part("jax.rfft2", lambda: jnp.fft.rfft2(x))
part("jax.fori_loop", lambda: jax.jit(lambda v: jax.lax.fori_loop(
    0, 50, lambda i, v: jnp.sin(v) + 0.01 * i, v))(x))
done("jax_basic")
