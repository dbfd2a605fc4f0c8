#!/usr/bin/env python3
"""torch.compile (Inductor: Triton kernels) of a transformer block, in the
mode given as the argument: default, reduce-overhead (CUDA graphs) or
max-autotune-no-cudagraphs; forward and backward."""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from fwcommon import done, part  # noqa: E402

mode = sys.argv[1] if len(sys.argv) > 1 else "default"
torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
torch.manual_seed(11)
block = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256,
                                   dropout=0.0, batch_first=True).to(dev)
x = torch.randn(4, 32, 128, device=dev)
fn = torch.compile(block, mode=None if mode == "default" else mode)


def fwd():
    outs = []
    for _ in range(3):          # the first compiles; graphs replay after
        with torch.no_grad():
            outs.append(fn(x).clone())
    return outs


def fwd_bwd():
    xi = x.clone().requires_grad_()
    y = fn(xi)
    y.square().mean().backward()
    return [y, xi.grad] + [p.grad for p in block.parameters()]


part("compile.%s.forward" % mode, fwd)
part("compile.%s.backward" % mode, fwd_bwd)
done("torch_compile")
