#!/usr/bin/env python3
"""Triton kernels launched directly (triton.jit): a vector add and a
row-wise softmax."""
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from fwcommon import done, part  # noqa: E402


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = off < n
    tl.store(out + off, tl.load(x + off, mask=m) + tl.load(y + off, mask=m),
             mask=m)


@triton.jit
def softmax_kernel(x, out, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    off = tl.arange(0, BLOCK)
    m = off < cols
    v = tl.load(x + row * cols + off, mask=m, other=-float("inf"))
    v = v - tl.max(v, axis=0)
    e = tl.exp(v)
    tl.store(out + row * cols + off, e / tl.sum(e, axis=0), mask=m)


g = torch.Generator(device="cuda").manual_seed(2)
x = torch.randn(10000, device="cuda", generator=g)
y = torch.randn(10000, device="cuda", generator=g)


def add():
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(10000, 1024),)](x, y, out, 10000, BLOCK=1024)
    return out


def softmax():
    a = torch.randn(64, 200, device="cuda", generator=g)
    out = torch.empty_like(a)
    softmax_kernel[(64,)](a, out, 200, BLOCK=256)
    return out


part("triton.add", add)
part("triton.softmax", softmax)
done("triton_kernel")
