#!/usr/bin/env python3
"""PyTorch training on the GPU: a small CNN, a few SGD steps in fp32, with
bf16 autocast, and with fp16 autocast and a GradScaler."""
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from fwcommon import done, part  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = False
torch.use_deterministic_algorithms(True)
dev = "cuda"


def model():
    torch.manual_seed(7)
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)).to(dev)


def train(amp=None, steps=6):
    m = model()
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=amp == torch.float16)
    gen = torch.Generator().manual_seed(3)
    losses = []
    for _ in range(steps):
        x = torch.randn(16, 3, 32, 32, generator=gen).to(dev)
        y = torch.randint(0, 10, (16,), generator=gen).to(dev)
        with torch.autocast("cuda", dtype=amp or torch.float32,
                            enabled=amp is not None):
            loss = nn.functional.cross_entropy(m(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.detach().float())
    return [torch.stack(losses)] + [p.detach() for p in m.parameters()]


part("train.fp32", train)
part("train.bf16_autocast", lambda: train(torch.bfloat16))
part("train.fp16_gradscaler", lambda: train(torch.float16))
done("torch_train")
