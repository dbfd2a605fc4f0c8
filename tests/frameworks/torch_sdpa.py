#!/usr/bin/env python3
"""Scaled dot-product attention: the flash and memory-efficient kernels in
bf16 and fp16, causal, forward and backward."""
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

from fwcommon import done, part  # noqa: E402

dev = "cuda"
g = torch.Generator(device=dev).manual_seed(21)


def attn(backend, dt):
    q, k, v = (torch.randn(2, 8, 128, 64, device=dev, dtype=dt, generator=g)
               .requires_grad_() for _ in range(3))
    with sdpa_kernel(backend):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    o.float().square().mean().backward()
    return [o, q.grad, k.grad, v.grad]


for b, bn in ((SDPBackend.FLASH_ATTENTION, "flash"),
              (SDPBackend.EFFICIENT_ATTENTION, "efficient"),
              (SDPBackend.MATH, "math")):
    for dt in (torch.bfloat16, torch.float16):
        part("sdpa.%s.%s" % (bn, str(dt).split(".")[1]),
             lambda b=b, dt=dt: attn(b, dt))
done("torch_sdpa")
