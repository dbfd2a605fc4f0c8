#!/usr/bin/env python3
"""PyTorch eager on the GPU: RNG on the device, fp32/fp16/bf16 matmul,
F.linear and bmm (cuBLAS/cuBLASLt), cuDNN conv2d forward and backward
under deterministic algorithms, sorts, scatter/gather, nonzero and other
host syncs."""
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from fwcommon import done, part  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = False
torch.use_deterministic_algorithms(True)
assert torch.cuda.is_available(), "CUDA not available"
dev = "cuda"
torch.manual_seed(0)    # dropout draws from the default generator
g = torch.Generator(device=dev).manual_seed(1234)


def rnd(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=dev, generator=g, dtype=dtype)


part("rng.randn", lambda: rnd(1000))
part("rng.rand_int", lambda: torch.randint(0, 100, (1000,), device=dev,
                                           generator=g))
part("rng.dropout", lambda: F.dropout(torch.ones(4096, device=dev), 0.5,
                                      training=True))
for dt in (torch.float32, torch.float16, torch.bfloat16):
    n = str(dt).split(".")[1]
    a, b = rnd(256, 384, dtype=dt), rnd(384, 128, dtype=dt)
    part("matmul." + n, lambda: a @ b)
    w, x = rnd(64, 384, dtype=dt), rnd(32, 384, dtype=dt)
    bias = rnd(64, dtype=dt)
    part("linear." + n, lambda: F.linear(x, w, bias))
    p, q = rnd(8, 64, 96, dtype=dt), rnd(8, 96, 48, dtype=dt)
    part("bmm." + n, lambda: torch.bmm(p, q))


def conv():
    x = rnd(4, 3, 32, 32).requires_grad_()
    c = torch.nn.Conv2d(3, 16, 3, padding=1).to(dev)
    with torch.no_grad():
        c.weight.copy_(rnd(*c.weight.shape) * 0.1)
        c.bias.copy_(rnd(16) * 0.1)
    y = F.relu(c(x))
    loss = y.square().mean()
    loss.backward()
    return [y, loss, x.grad, c.weight.grad, c.bias.grad]


part("cudnn.conv2d_fwd_bwd", conv)


def conv_bf16():
    x = rnd(2, 8, 16, 16, dtype=torch.bfloat16)
    w = rnd(8, 8, 3, 3, dtype=torch.bfloat16) * 0.1
    return F.conv2d(x, w, padding=1)


part("cudnn.conv2d_bf16", conv_bf16)
v = rnd(5000)
part("sort", lambda: torch.sort(v))
part("topk", lambda: torch.topk(v, 17))
part("argsort_int", lambda: torch.argsort(torch.randint(0, 50, (3000,),
                                          device=dev, generator=g),
                                          stable=True))
idx = torch.randint(0, 100, (1000,), device=dev, generator=g)
part("gather", lambda: torch.gather(v[:100], 0, idx))
part("scatter", lambda: torch.zeros(100, device=dev).scatter(
    0, torch.arange(100, device=dev), v[:100]))
part("index_select", lambda: v.index_select(0, idx))
part("nonzero", lambda: torch.nonzero(v > 1.0))
part("masked_select", lambda: torch.masked_select(v, v < -1.5))
part("unique", lambda: torch.unique(idx))
part("item_sync", lambda: [torch.tensor(float(v.sum().item()))])
part("cumsum", lambda: torch.cumsum(v.double(), 0))
part("softmax", lambda: F.softmax(rnd(64, 1000), dim=-1))
part("layer_norm", lambda: F.layer_norm(rnd(64, 512), (512,)))
done("torch_eager")
