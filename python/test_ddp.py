"""Trains a small embedding model with DistributedDataParallel on W CPU
ranks (Gloo) for a few steps, three times from the same start: with
gleam_reduce's aggregator hook (through a gleam-reduce daemon this test
starts), with its engine hook (torch.distributed collectives), and with
the dense fixed-point reference hook.  The embedding's gradient is
naturally sparse (only the rows a batch looks up).  All three must end
with the same parameters, bit for bit, and near those of plain float
DDP.  Then a NaN in one rank's gradient must stop every rank at the
same step.

usage: python3 python/test_ddp.py [GLEAM_BIN]   (default: bin)
Prints "test_ddp: N passed, N failed"; exits 77 (skipped) where torch is
not installed.

GLEAM_DDP_DEVICE=cuda puts each rank's model on a GPU (rank r on GPU
r mod the GPUs there are): with a GPU a rank, NCCL is the process
group's backend (the engine hook's collectives run on the GPU), else
Gloo; GLEAM_DDP_WORLD sets the ranks (default 2).  With
GLEAM_HREDUCE_LIB naming the CUDA build's library
(build/reduce-cuda/libgleam-hreduce-cuda.so) the aggregator hook reduces
the GPU buckets in place with hr_allreduce_cuda.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.nn.parallel import DistributedDataParallel as DDP
except ImportError:
    print("test_ddp: skipped: torch is not installed for %s" % sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gleam_reduce  # noqa: E402

WORLD = int(os.environ.get("GLEAM_DDP_WORLD", "2"))
DEVICE = os.environ.get("GLEAM_DDP_DEVICE", "cpu")
STEPS = 6
VOCAB, DIM, CLASSES, BATCH = 4000, 16, 4, 24


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.EmbeddingBag(VOCAB, DIM, mode="sum")
        self.fc = torch.nn.Linear(DIM, CLASSES)

    def forward(self, idx, offsets):
        return self.fc(self.emb(idx, offsets))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    idx = torch.randint(0, VOCAB, (BATCH * 3,), generator=g)
    offsets = torch.arange(0, BATCH * 3, 3)
    y = torch.randint(0, CLASSES, (BATCH,), generator=g)
    return idx, offsets, y


def device(rank):
    if DEVICE != "cuda":
        return torch.device("cpu")
    return torch.device("cuda", rank % torch.cuda.device_count())


def train(rank, hook, state, nan_at=None):
    torch.manual_seed(0)
    dev = device(rank)
    if dev.type == "cuda":
        model = DDP(Model().to(dev), device_ids=[dev.index],
                    bucket_cap_mb=0.05)
    else:
        model = DDP(Model(), bucket_cap_mb=0.05)
    if hook is not None:
        model.register_comm_hook(state, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    sparsity = []
    for step in range(STEPS):
        idx, offsets, y = (t.to(dev) for t in batch(rank, step))
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(idx, offsets), y)
        if nan_at == step and rank == min(1, WORLD - 1):
            loss = loss * float("nan")
        loss.backward()
        g = model.module.emb.weight.grad
        sparsity.append(float((g != 0).sum()) / g.numel())
        opt.step()
    return torch.cat([p.detach().flatten().cpu()
                      for p in model.parameters()]), sparsity


def worker(rank, port, addr, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    backend = "gloo"
    if DEVICE == "cuda":
        torch.cuda.set_device(device(rank))
        if torch.cuda.device_count() >= WORLD:
            backend = "nccl"
    dist.init_process_group(backend, rank=rank, world_size=WORLD)
    torch.set_num_threads(1)
    results = []
    agg = gleam_reduce.AggregatorState(addr, WORLD, rank)
    eng = gleam_reduce.EngineState()
    ref, sp = train(rank, gleam_reduce.fixed_dense_hook, eng)
    via_agg, _ = train(rank, gleam_reduce.aggregator_hook, agg)
    via_eng, _ = train(rank, gleam_reduce.engine_hook, eng)
    plain, _ = train(rank, None, None)
    torch.manual_seed(0)
    start = torch.cat([p.detach().flatten() for p in Model().parameters()])
    results.append(("aggregator hook equals the fixed-point reference",
                    torch.equal(via_agg, ref)))
    results.append(("engine hook equals the fixed-point reference",
                    torch.equal(via_eng, ref)))
    results.append(("training moved the parameters",
                    not torch.equal(ref, start)))
    results.append(("fixed point is near float DDP",
                    torch.allclose(ref, plain, rtol=1e-4, atol=1e-5)))
    results.append(("embedding gradients are sparse (%.2f%% nonzero)" %
                    (100 * max(sp)), max(sp) < 0.1))
    info = "ranks on %s, backend %s, GPU buckets %s" % (
        device(rank), backend,
        "in place" if DEVICE == "cuda" and gleam_reduce.has_cuda(agg.lib)
        else "through the host")
    for hook, state in ((gleam_reduce.aggregator_hook, agg),
                        (gleam_reduce.engine_hook, eng)):
        try:
            train(rank, hook, state, nan_at=2)
            ok = False
        except Exception as e:     # DDP wraps what the hook raised
            ok = "NaN" in str(e) or "NonFinite" in repr(e)
        results.append(("NaN stops every rank (%s)" % hook.__name__, ok))
    agg.close()
    dist.destroy_process_group()
    with open("%s.%d" % (out, rank), "w") as f:
        f.write("info %s\n" % info)
        for what, ok in results:
            f.write("%s %s\n" % ("ok" if ok else "FAIL", what))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    gbin = sys.argv[1] if len(sys.argv) > 1 else "bin"
    tmp = tempfile.mkdtemp()
    log = open(os.path.join(tmp, "reduce.log"), "w+")
    d = subprocess.Popen([os.path.join(gbin, "gleam-reduce"), "-D", "-w",
                          str(WORLD), "-l", "127.0.0.1:0"], stderr=log)
    port = None
    try:
        for _ in range(200):
            log.seek(0)
            for line in log:
                if "listening on" in line:
                    port = line.strip().rsplit(":", 1)[1]
            if port:
                break
            if d.poll() is not None:
                break
            time.sleep(0.05)
        if not port:
            print("test_ddp: gleam-reduce did not start")
            return 1
        out = os.path.join(tmp, "result")
        mp.spawn(worker, args=(free_port(), "127.0.0.1:" + port, out),
                 nprocs=WORLD, join=True)
        npass = nfail = 0
        for r in range(WORLD):
            for line in open("%s.%d" % (out, r)):
                if line.startswith("info "):
                    if r == 0:
                        sys.stderr.write("test_ddp: " + line[5:])
                    continue
                ok = line.startswith("ok ")
                npass += ok
                nfail += not ok
                if not ok:
                    sys.stderr.write("rank %d: %s" % (r, line))
        print("test_ddp: %d passed, %d failed" % (npass, nfail))
        return 1 if nfail else 0
    finally:
        d.terminate()
        d.wait()


if __name__ == "__main__":
    sys.exit(main())
