#!/usr/bin/env python3
"""pytorch_smoke: PyTorch on the GPU, deterministic, for comparing a local
run with a remote one byte for byte.  Inputs come from a seeded CPU
generator; TF32 is off and deterministic algorithms are on (cuBLAS with
CUBLAS_WORKSPACE_CONFIG=:4096:8, cuDNN without benchmarking).  It covers an
FP32 matmul, softmax, a cuDNN conv2d, an FP16 linear layer, and a small
nn.Sequential forward, backward and SGD step.  It prints the SHA-256 of
each result's bytes (moved to the CPU) and a few values in hex, then
"pytorch_smoke: done".  Exit status 1 when CUDA is not available."""

import os

# Before torch is imported: cuBLAS reads it when its handle is created.
os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"

import hashlib  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

NAME = "pytorch_smoke"


def digest(t):
    """SHA-256 of the tensor's bytes, in row-major order, on the CPU."""
    c = t.detach().to("cpu").contiguous().reshape(-1)
    if c.dtype == torch.bool:
        c = c.to(torch.uint8)
    return hashlib.sha256(bytes(c.view(torch.uint8).tolist())).hexdigest()


def show(name, t):
    flat = t.detach().to("cpu").float().reshape(-1)
    idx = sorted({0, min(1, flat.numel() - 1), flat.numel() - 1})
    samples = " ".join(float(flat[i]).hex() for i in idx)
    print(f"{name} {tuple(t.shape)} {str(t.dtype).replace('torch.', '')} "
          f"sha256 {digest(t)} [{samples}]")


def rand(g, *shape, dtype=torch.float32):
    """Uniform in [-1, 1) from the CPU generator, then on the GPU."""
    return (torch.rand(*shape, generator=g) * 2 - 1).to(dtype).to("cuda")


def main():
    if not torch.cuda.is_available():
        print(f"{NAME}: FAIL CUDA is not available")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.enabled = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True)
    g = torch.Generator().manual_seed(1234)

    a = rand(g, 256, 256)
    b = rand(g, 256, 256)
    mm = a @ b
    show("matmul", mm)
    show("softmax", torch.softmax(mm, dim=1))

    x = rand(g, 8, 3, 32, 32)
    w = rand(g, 16, 3, 3, 3)
    bias = rand(g, 16)
    show("conv2d", F.conv2d(x, w, bias, stride=1, padding=1))

    lin = torch.nn.Linear(128, 64).to("cuda").half()
    with torch.no_grad():
        lin.weight.copy_(rand(g, 64, 128, dtype=torch.float16))
        lin.bias.copy_(rand(g, 64, dtype=torch.float16))
    show("linear_fp16", lin(rand(g, 32, 128, dtype=torch.float16)))

    net = torch.nn.Sequential(
        torch.nn.Linear(64, 128),
        torch.nn.ReLU(),
        torch.nn.Linear(128, 10),
    ).to("cuda")
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(rand(g, *p.shape) * 0.1)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    inp = rand(g, 16, 64)
    target = torch.randint(0, 10, (16,), generator=g).to("cuda")
    out = net(inp)
    loss = F.cross_entropy(out, target)
    opt.zero_grad()
    loss.backward()
    show("seq_forward", out)
    show("seq_loss", loss)
    for i, p in enumerate(net.parameters()):
        show(f"seq_grad{i}", p.grad)
    opt.step()
    for i, p in enumerate(net.parameters()):
        show(f"seq_param{i}", p)

    torch.cuda.synchronize()
    print(f"{NAME}: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
