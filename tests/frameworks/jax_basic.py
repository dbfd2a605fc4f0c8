#!/usr/bin/env python3
"""JAX on the GPU: jit, grad, lax.scan, FFT, and a loop XLA turns into
command buffers (CUDA graphs)."""
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

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
