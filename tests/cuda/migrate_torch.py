#!/usr/bin/env python3
"""migrate_torch [steps [ms]]: a small MLP trained on the GPU with PyTorch,
deterministic, for moving it to another server mid-run and comparing its
output with a local run's byte for byte (tests/gpu/run's migrate-gpu).
Inputs from a seeded CPU generator; TF32 off, deterministic algorithms on
(cuBLAS with CUBLAS_WORKSPACE_CONFIG=:4096:8).  Each step: forward,
backward, an Adam step; it prints the loss's bits in hex, then sleeps ms
(default 20) so that a move lands mid-run.  Ends with the SHA-256 of the
weights and "migrate_torch: done"."""

import os

# Before torch is imported: cuBLAS reads it when its handle is created.
os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"

import hashlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    ms = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    if not torch.cuda.is_available():
        print("migrate_torch: no CUDA")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True)
    g = torch.Generator().manual_seed(1234)
    dev = torch.device("cuda")
    x = torch.randn(512, 64, generator=g).to(dev)
    w = torch.randn(64, 8, generator=g)
    y = (torch.tanh(x.cpu() @ w) + 0.1 * torch.randn(512, 8, generator=g)).to(dev)
    torch.manual_seed(1234)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.GELU(),
        torch.nn.Linear(256, 256), torch.nn.GELU(),
        torch.nn.Linear(256, 8)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(steps):
        # A fresh batch tensor each step: memory allocated after the move
        # too.
        idx = torch.arange(step % 4 * 128, step % 4 * 128 + 128,
                           device=dev)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item().hex()}", flush=True)
        if ms > 0:
            time.sleep(ms / 1000)
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(bytes(p.detach().cpu().contiguous().view(-1)
                       .view(torch.uint8).tolist()))
    print(f"weights sha256 {h.hexdigest()}")
    print("migrate_torch: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
