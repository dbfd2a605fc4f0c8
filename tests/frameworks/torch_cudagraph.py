#!/usr/bin/env python3
"""torch.cuda.CUDAGraph: capture an MLP's forward on a side stream, replay
it with new inputs copied into the static buffer; and graphed callables
(torch.cuda.make_graphed_callables) forward and backward."""
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from fwcommon import done, part  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
torch.manual_seed(5)
mlp = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256)).to(dev)
static_in = torch.randn(32, 256, device=dev)


def capture_replay():
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3):      # warm-up, as the docs ask
            mlp(static_in)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        static_out = mlp(static_in)
    gen = torch.Generator().manual_seed(9)
    outs = []
    for _ in range(5):
        static_in.copy_(torch.randn(32, 256, generator=gen))
        g.replay()
        outs.append(static_out.clone())
    return outs


def graphed_callables():
    m = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8)).to(dev)
    x = torch.randn(16, 64, device=dev, requires_grad=True)
    gm = torch.cuda.make_graphed_callables(m, (x,))
    y = gm(x)
    y.sum().backward()
    return [y, x.grad] + [p.grad for p in m.parameters()]


part("cudagraph.capture_replay", capture_replay)
part("cudagraph.graphed_callables", graphed_callables)
done("torch_cudagraph")
