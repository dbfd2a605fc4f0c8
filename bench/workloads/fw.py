#!/usr/bin/env python3
"""Framework workloads for bench/frameworks: each a training or inference
step of the kind people run, timed over a fixed number of steps after a
warm-up, so that a local and a remote run do the same work.

    fw.py [-lS] [-s scale] GROUP [workload ...]

GROUP is torch (PyTorch eager, AMP training, torch.compile in three
modes, torch.cuda.CUDAGraph, SDPA, transformers' generate, a Triton
kernel), misc (JAX, CuPy, numba-cuda) or c (tests/cuda/ggml.cu's decode,
as llama.cpp's CUDA backend drives the driver).  -l lists the group's workloads
and exits.  -s multiplies every workload's timed steps (default 1).  -S
also runs the timed steps once more, untimed, under PyTorch's
synchronization debug mode, and adds sync_sites: per step, where the
program waited for the GPU (its two innermost frames outside torch,
"file:line function < caller"), by PyTorch's own count; null for a
workload without PyTorch.
Prints one YAML list item per workload:

    - name: torch_infer
      steps: 200            # timed steps
      seconds: 1.234        # their wall time
      bytes_per_step: 652288    # bytes that must cross host <-> GPU
      syncs_per_step: 1     # times a step waits for the GPU
      error: null           # or why it could not run

bytes_per_step and syncs_per_step are what the step itself must move and
wait for (inputs from the host, results back, reads of a value), from
which bench/frameworks computes a link's bound.  A workload whose module
is missing or which fails prints its error and the others still run.
"""

import os
import sys
import time
import traceback

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

SCALE = 1.0
SITES = False       # -S: where a PyTorch step waits for the GPU


class Work:
    """A workload: setup() makes the state, step() runs one step."""
    steps = 100
    warmup = 5
    bytes_per_step = 0
    syncs_per_step = 1

    def setup(self):
        pass

    def step(self):
        raise NotImplementedError


# ---- PyTorch -------------------------------------------------------------

def _mlp(torch, nn, width, out):
    return nn.Sequential(nn.Linear(width, width), nn.GELU(),
                         nn.Linear(width, width), nn.GELU(),
                         nn.Linear(width, out))


class TorchInfer(Work):
    """An fp16 MLP's forward: a batch from pinned host memory in, the
    logits back."""
    steps, B, D, O = 200, 64, 4096, 1000

    def setup(self):
        import torch
        from torch import nn
        self.t = torch
        torch.manual_seed(0)
        self.m = _mlp(torch, nn, self.D, self.O).cuda().half().eval()
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(self.B, self.D, generator=g).half().pin_memory()
        self.bytes_per_step = self.B * self.D * 2 + self.B * self.O * 2

    def step(self):
        with self.t.no_grad():
            return self.m(self.x.to("cuda", non_blocking=True)).cpu()


class TorchCudaGraph(TorchInfer):
    """The same forward captured once as a torch.cuda.CUDAGraph and
    replayed: the input copied into the static buffer, the output back."""

    def setup(self):
        super().setup()
        t = self.t
        self.sin = t.zeros(self.B, self.D, device="cuda", dtype=t.half)
        s = t.cuda.Stream()
        s.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(s), t.no_grad():
            for _ in range(3):
                self.m(self.sin)
        t.cuda.current_stream().wait_stream(s)
        self.g = t.cuda.CUDAGraph()
        with t.no_grad(), t.cuda.graph(self.g):
            self.sout = self.m(self.sin)

    def step(self):
        self.sin.copy_(self.x, non_blocking=True)
        self.g.replay()
        return self.sout.cpu()


class TorchTrainAmp(Work):
    """A small CNN's training step under bf16 autocast with SGD: images and
    labels from pinned host memory, the loss read back."""
    steps, B = 60, 64

    def setup(self):
        import torch
        from torch import nn
        self.t = torch
        torch.manual_seed(0)
        c = lambda i, o, s: [nn.Conv2d(i, o, 3, s, 1, bias=False),  # noqa
                             nn.BatchNorm2d(o), nn.ReLU()]
        self.m = nn.Sequential(*c(3, 64, 1), *c(64, 128, 2), *c(128, 256, 2),
                               *c(256, 256, 2), nn.AdaptiveAvgPool2d(1),
                               nn.Flatten(), nn.Linear(256, 10)).cuda()
        self.opt = torch.optim.SGD(self.m.parameters(), lr=0.01,
                                   momentum=0.9)
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(self.B, 3, 64, 64, generator=g).pin_memory()
        self.y = torch.randint(0, 10, (self.B,), generator=g).pin_memory()
        self.lossf = nn.CrossEntropyLoss()
        self.bytes_per_step = self.B * 3 * 64 * 64 * 4 + self.B * 8 + 4

    def train(self):
        """One step queued: the batch in, forward, backward, SGD; the
        loss tensor, not read."""
        t = self.t
        x = self.x.to("cuda", non_blocking=True)
        y = self.y.to("cuda", non_blocking=True)
        with t.autocast("cuda", dtype=t.bfloat16):
            loss = self.lossf(self.m(x), y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss

    def step(self):
        return self.train().item()


class TorchTrainPipe(TorchTrainAmp):
    """The same training step as a loop that does not wait for each one:
    the batch copied in asynchronously while the GPU still runs the step
    before, the loss read every tenth step (as a training loop logs it)."""
    steps, EVERY = 60, 10
    syncs_per_step = 0.1

    def setup(self):
        super().setup()
        self.n = 0
        self.bytes_per_step = (self.B * 3 * 64 * 64 * 4 + self.B * 8 +
                               4 / self.EVERY)

    def step(self):
        loss = self.train()
        self.n += 1
        if self.n % self.EVERY == 0:
            return loss.item()
        return None


class TorchCompile(Work):
    """torch.compile of a transformer block, forward and backward, and an
    SGD step; the input lives on the GPU, the loss is read back."""
    steps, warmup, mode = 100, 3, "default"
    B, T, D, H = 16, 128, 512, 8

    def setup(self):
        import torch
        from torch import nn
        from torch.nn import functional as F
        self.t = torch
        torch.manual_seed(0)
        D, H = self.D, self.H

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.n1 = nn.LayerNorm(D)
                self.qkv = nn.Linear(D, 3 * D)
                self.proj = nn.Linear(D, D)
                self.n2 = nn.LayerNorm(D)
                self.up = nn.Linear(D, 4 * D)
                self.down = nn.Linear(4 * D, D)

            def forward(self, x):
                b, t, c = x.shape
                q, k, v = self.qkv(self.n1(x)).split(c, dim=2)
                q, k, v = (z.view(b, t, H, c // H).transpose(1, 2)
                           for z in (q, k, v))
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
                return x + self.down(F.gelu(self.up(self.n2(x))))

        self.m = Block().cuda()
        self.f = torch.compile(self.m, mode=self.mode)
        self.opt = torch.optim.SGD(self.m.parameters(), lr=1e-3)
        self.x = torch.randn(self.B, self.T, D, device="cuda")
        self.bytes_per_step = 4

    def step(self):
        t = self.t
        if self.mode == "reduce-overhead":
            t.compiler.cudagraph_mark_step_begin()
        loss = self.f(self.x).square().mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss.item()


class CompileReduceOverhead(TorchCompile):
    mode = "reduce-overhead"


class CompileMaxAutotune(TorchCompile):
    mode = "max-autotune-no-cudagraphs"


class TorchSdpa(Work):
    """Flash attention (SDPA, bf16, causal) forward and backward on the
    GPU; the step waits for it."""
    steps = 50
    syncs_per_step = 1

    def setup(self):
        import torch
        self.t = torch
        torch.manual_seed(0)
        shape = (8, 16, 1024, 64)
        self.q, self.k, self.v = (
            torch.randn(shape, device="cuda", dtype=torch.bfloat16,
                        requires_grad=True) for _ in range(3))

    def step(self):
        t = self.t
        o = t.nn.functional.scaled_dot_product_attention(
            self.q, self.k, self.v, is_causal=True)
        o.sum().backward()
        t.cuda.synchronize()


class HfGenerate(Work):
    """transformers' greedy generate of a small seeded Llama: a step is a
    token (each waits for the GPU's choice)."""
    steps, warmup, NEW = 4, 1, 32
    # Two waits a token, by PyTorch's own account (fw.py -S, session 39,
    # H100: 2.19 synchronizing calls a token, 70 in a generate of 32, all
    # inside generate): each a round trip through Gleam.
    syncs_per_step = 2

    def setup(self):
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
        self.t = torch
        torch.manual_seed(0)
        cfg = LlamaConfig(vocab_size=32000, hidden_size=512,
                          intermediate_size=1376, num_hidden_layers=4,
                          num_attention_heads=8, num_key_value_heads=8,
                          max_position_embeddings=512)
        self.m = LlamaForCausalLM(cfg).cuda().half().eval()
        g = torch.Generator().manual_seed(1)
        self.ids = torch.randint(0, 32000, (1, 16), generator=g)
        # Per token: the ids' growth and the stop test's read.
        self.bytes_per_step = 8
        self.per = self.NEW

    def step(self):
        with self.t.no_grad():
            out = self.m.generate(self.ids.cuda(), max_new_tokens=self.NEW,
                                  min_new_tokens=self.NEW, do_sample=False,
                                  pad_token_id=0)
        return out.cpu()


class TritonSoftmax(Work):
    """A triton.jit row softmax over a 4096 x 1024 fp32 matrix on the GPU;
    the step waits for it."""
    steps = 300

    def setup(self):
        import torch
        import triton
        import triton.language as tl
        self.t = torch

        @triton.jit
        def softmax(out, inp, stride, n, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            cols = tl.arange(0, BLOCK)
            x = tl.load(inp + row * stride + cols, mask=cols < n,
                        other=-float("inf"))
            x = x - tl.max(x, axis=0)
            e = tl.exp(x)
            tl.store(out + row * stride + cols, e / tl.sum(e, axis=0),
                     mask=cols < n)

        self.k = softmax
        torch.manual_seed(0)
        self.x = torch.randn(4096, 1024, device="cuda")
        self.y = torch.empty_like(self.x)

    def step(self):
        self.k[(4096,)](self.y, self.x, 1024, 1024, BLOCK=1024)
        self.t.cuda.synchronize()


# ---- JAX, CuPy, numba ----------------------------------------------------

class JaxTrain(Work):
    """A jitted MLP training step (value_and_grad, SGD): the batch from
    host memory each step, the loss read back."""
    steps, B, D = 200, 256, 1024

    def setup(self):
        import jax
        import jax.numpy as jnp
        import numpy as np
        self.jax = jax
        k1, k2 = jax.random.split(jax.random.PRNGKey(0))
        params = {"w1": jax.random.normal(k1, (self.D, self.D)) * 0.02,
                  "w2": jax.random.normal(k2, (self.D, 10)) * 0.02}

        def loss(p, x, y):
            h = jax.nn.gelu(x @ p["w1"])
            lo = jax.nn.log_softmax(h @ p["w2"])
            return -jnp.mean(jnp.take_along_axis(lo, y[:, None], axis=1))

        @jax.jit
        def train(p, x, y):
            v, g = jax.value_and_grad(loss)(p, x, y)
            return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p,
                                          g), v

        self.train, self.p = train, params
        r = np.random.RandomState(1)
        self.x = r.randn(self.B, self.D).astype(np.float32)
        self.y = r.randint(0, 10, self.B).astype(np.int32)
        self.bytes_per_step = self.B * self.D * 4 + self.B * 4 + 4

    def step(self):
        self.p, v = self.train(self.p, self.x, self.y)
        return float(v)


class JaxFft(Work):
    """jnp.fft.fft2 of a 2048 x 2048 complex64 array on the GPU and a
    reduction, read back."""
    steps = 200

    def setup(self):
        import jax
        import jax.numpy as jnp
        x = jax.random.normal(jax.random.PRNGKey(0), (2048, 2048))
        self.x = x.astype(jnp.complex64)
        self.f = jax.jit(lambda a: jnp.abs(jnp.fft.fft2(a)).sum())
        self.bytes_per_step = 4

    def step(self):
        return float(self.f(self.x))


class CupyFft(Work):
    """CuPy: cupy.fft.fft2 of a 2048 x 2048 complex64 array and a
    reduction, read back."""
    steps = 200

    def setup(self):
        import cupy as cp
        self.cp = cp
        self.x = cp.random.RandomState(0).standard_normal(
            (2048, 2048)).astype(cp.complex64)
        self.bytes_per_step = 8

    def step(self):
        return float(self.cp.abs(self.cp.fft.fft2(self.x)).sum())


class CupyRaw(Work):
    """CuPy: an NVRTC RawKernel (saxpy) over 16 Mi floats and a sum read
    back."""
    steps = 300

    def setup(self):
        import cupy as cp
        self.cp = cp
        self.k = cp.RawKernel(r'''
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}''', "saxpy")
        self.n = 1 << 24
        r = cp.random.RandomState(0)
        self.x = r.standard_normal(self.n, dtype=cp.float32)
        self.y = r.standard_normal(self.n, dtype=cp.float32)
        self.bytes_per_step = 4

    def step(self):
        cp = self.cp
        self.k(((self.n + 255) // 256,), (256,),
               (cp.float32(0.5), self.x, self.y, cp.int32(self.n)))
        return float(self.y[:1024].sum())


class NumbaKernel(Work):
    """numba-cuda: a cuda.jit saxpy over 16 Mi floats; the step waits."""
    steps = 300

    def setup(self):
        import numpy as np
        # numba-cuda as installed on the GPU machine still calls
        # np.row_stack, which numpy 2.4 removed (tests/frameworks too).
        if not hasattr(np, "row_stack"):
            np.row_stack = np.vstack
        from numba import cuda
        self.cuda = cuda

        @cuda.jit
        def saxpy(a, x, y):
            i = cuda.grid(1)
            if i < x.size:
                y[i] = a * x[i] + y[i]

        self.k = saxpy
        n = 1 << 24
        r = np.random.RandomState(0)
        self.x = cuda.to_device(r.standard_normal(n).astype(np.float32))
        self.y = cuda.to_device(r.standard_normal(n).astype(np.float32))
        self.grid = ((n + 255) // 256, 256)
        self.a = np.float32(0.5)

    def step(self):
        self.k[self.grid](self.a, self.x, self.y)
        self.cuda.synchronize()


class GgmlDecode(Work):
    """tests/cuda/ggml.cu's bench mode: a ggml-like greedy decode, a CUDA
    graph per token (VMM pool, cuBLAS); a step is a token, timed by the
    program itself (FW_GGML names the binary, default build/cuda/shared/
    ggml from the repository)."""
    steps = 300
    bytes_per_step = 4
    syncs_per_step = 1
    flags = []

    def measure(self, steps):
        import subprocess
        root = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))))
        exe = os.environ.get("FW_GGML", os.path.join(
            root, "build", "cuda", "shared", "ggml"))
        if not os.access(exe, os.X_OK):
            raise FileNotFoundError("%s: not built (tests/cuda/build)" % exe)
        # Through gleam-run -O only the first process writes the
        # statistics (gleam-run(1)), and this one made no CUDA call: the
        # program gets a file of its own beside it, named for the
        # workload so that a group's second does not overwrite its first
        # (bench/fw-steps reads it).
        env = None
        if os.environ.get("GLEAM_STATS"):
            env = dict(os.environ)
            env["GLEAM_STATS"] = "%s.%s.child" % (
                os.environ["GLEAM_STATS"], self.name)
            env.pop("GLEAM_STATS_PID", None)
        r = subprocess.run([exe] + self.flags + ["-b", str(steps)],
                           stdout=subprocess.PIPE, env=env,
                           stderr=subprocess.PIPE, text=True, timeout=600)
        if r.returncode != 0:
            tail = (r.stderr.strip().splitlines() or
                    r.stdout.strip().splitlines() or ["?"])[-1]
            raise RuntimeError("ggml exit %d: %s" % (r.returncode, tail))
        ms = [float(x.split()[1]) for x in r.stdout.splitlines()
              if x.startswith("ms_per_token:")]
        if not ms:
            raise RuntimeError("ggml printed no ms_per_token")
        return steps * ms[0] / 1e3


class GgmlReplay(GgmlDecode):
    """The same decode with its graph reused (ggml -R), as llama.cpp runs
    a steady single-sequence decode: each token its position copied in
    (4 bytes), one graph launch, the token read back."""
    bytes_per_step = 8
    flags = ["-R"]


GROUPS = {
    "torch": [("torch_infer", TorchInfer), ("torch_train_amp", TorchTrainAmp),
              ("torch_train_pipe", TorchTrainPipe),
              ("compile_default", TorchCompile),
              ("compile_reduce_overhead", CompileReduceOverhead),
              ("compile_max_autotune", CompileMaxAutotune),
              ("torch_cudagraph", TorchCudaGraph), ("torch_sdpa", TorchSdpa),
              ("hf_generate", HfGenerate), ("triton_softmax", TritonSoftmax)],
    "misc": [("jax_train", JaxTrain), ("jax_fft", JaxFft),
             ("cupy_fft", CupyFft), ("cupy_raw", CupyRaw),
             ("numba_kernel", NumbaKernel)],
    "c": [("ggml_decode", GgmlDecode), ("ggml_replay", GgmlReplay)],
}


def run(name, cls):
    w = cls()
    w.name = name
    steps = max(1, int(round(w.steps * SCALE)))
    item = {"name": name, "steps": 0, "seconds": 0.0, "bytes_per_step": 0,
            "syncs_per_step": w.syncs_per_step, "error": None}
    try:
        if hasattr(w, "measure"):       # a program that times itself
            item.update(steps=steps, seconds=w.measure(steps),
                        bytes_per_step=w.bytes_per_step)
            return item
        w.setup()
        for _ in range(w.warmup):
            w.step()
        sync(w)
        if SITES:
            item["sync_sites"] = sync_sites(w, steps)
        t0 = time.perf_counter()
        for _ in range(steps):
            w.step()
        sync(w)
        dt = time.perf_counter() - t0
        per = getattr(w, "per", 1)      # a step of several units (tokens)
        item.update(steps=steps * per, seconds=dt,
                    bytes_per_step=w.bytes_per_step)
    except Exception as e:  # noqa: BLE001 - every failure is reported
        msg = (str(e).strip().splitlines() or [""])[0][:200]
        item["error"] = "%s: %s" % (type(e).__name__, msg)
        if os.environ.get("FW_TRACE"):
            traceback.print_exc()
    return item


def sync_sites(w, steps):
    """Where the steps wait for the GPU, by PyTorch's own account
    (torch.cuda.set_sync_debug_mode: a warning at each synchronizing
    call): per step, the program's innermost two frames outside torch at
    each such call, counted.  Only PyTorch's waits: a workload without
    torch gives none.  Not timed (warnings are slow)."""
    import traceback
    import warnings
    t = getattr(w, "t", None)
    if t is None:
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    # torch's own frames, by where torch is (not by "/torch/" in a path:
    # a Python installed under such a directory hid every frame).
    tdir = os.path.dirname(os.path.abspath(t.__file__)) + os.sep
    sites = {}

    def where(fr):
        f = fr.filename
        if f.startswith(here):
            f = os.path.basename(f)
        elif "/site-packages/" in f:
            f = f.split("/site-packages/", 1)[1]
        elif "/dist-packages/" in f:
            f = f.split("/dist-packages/", 1)[1]
        return "%s:%d %s" % (f, fr.lineno, fr.name)

    def note(message, category, filename, lineno, file=None, line=None):
        if "synchroniz" not in str(message):
            return
        own = [fr for fr in traceback.extract_stack()[:-1]
               if not os.path.abspath(fr.filename).startswith(tdir) and
               not fr.filename.endswith("warnings.py")]
        key = " < ".join(where(fr) for fr in reversed(own[-2:])) or "?"
        sites[key] = sites.get(key, 0) + 1

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = note
        t.cuda.set_sync_debug_mode(1)
        try:
            for _ in range(steps):
                w.step()
        finally:
            t.cuda.set_sync_debug_mode(0)
    sync(w)
    per = steps * getattr(w, "per", 1)
    return {k: v / per for k, v in sites.items()}


def sync(w):
    """Nothing left running on the GPU: the step's own wait did it."""
    t = getattr(w, "t", None)
    if t is not None:
        t.cuda.synchronize()


def emit(item):
    def q(v):
        if v is None:
            return "null"
        if isinstance(v, str):
            return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')
        if isinstance(v, float):
            return "%.6f" % v
        return str(v)
    keys = ("name", "steps", "seconds", "bytes_per_step", "syncs_per_step",
            "error")
    text = "- " + "\n  ".join("%s: %s" % (k, q(item[k])) for k in keys)
    if "sync_sites" in item:
        sites = item["sync_sites"]
        if sites is None:
            text += "\n  sync_sites: null"
        else:
            text += "\n  sync_sites:%s" % ("" if sites else " {}")
            for k, v in sorted(sites.items(), key=lambda kv: -kv[1]):
                text += "\n    %s: %s" % (q(k), q(float(v)))
    print(text, flush=True)


def main(argv):
    global SCALE, SITES
    args = list(argv)
    listing = False
    while args and args[0].startswith("-"):
        a = args.pop(0)
        if a == "-l":
            listing = True
        elif a == "-S":
            SITES = True
        elif a == "-s" and args:
            try:
                SCALE = float(args.pop(0))
            except ValueError:
                SCALE = -1
            if not 0 < SCALE <= 100:
                sys.exit("fw.py: -s: a number from 0 to 100")
        else:
            sys.exit("usage: fw.py [-lS] [-s scale] GROUP [workload ...]")
    if not args or args[0] not in GROUPS:
        sys.exit("usage: fw.py [-lS] [-s scale] GROUP [workload ...]"
                 " (groups: %s)" % ", ".join(GROUPS))
    group = GROUPS[args[0]]
    names = [n for n, _ in group]
    for n in args[1:]:
        if n not in names:
            sys.exit("fw.py: %s: not in %s (%s)" % (n, args[0],
                                                     ", ".join(names)))
    if listing:
        print("\n".join(names))
        return
    for n, cls in group:
        if len(args) == 1 or n in args[1:]:
            emit(run(n, cls))


if __name__ == "__main__":
    main(sys.argv[1:])
