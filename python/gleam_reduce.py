"""PyTorch DDP communication hooks over Gleam's lossless homomorphic
gradient compression (gleam-hcodec(3), gleam-hreduce(3), gleam-reduce(1)).

Three hooks, each for ``DistributedDataParallel.register_comm_hook``:

``aggregator_hook`` with an ``AggregatorState``
    Each bucket goes to a gleam-reduce aggregator through
    ``hr_allreduce``: the aggregator ORs the bitmaps and sums the sketches
    without decoding, every rank decodes the same exact sum.  A bucket in
    GPU memory, with the library built with CUDA
    (``build/reduce-cuda/libgleam-hreduce-cuda.so`` from
    ``bench/reduce-cuda-build``), stays there: ``hr_allreduce_cuda`` runs
    the codec on the GPU, on the current stream, and only the compressed
    rounds cross to the host.

``engine_hook`` with an ``EngineState``
    The same codec, but the compressed form goes through
    torch.distributed's own collectives: the exponent by a MAX allreduce,
    the bitmap by an allgather ORed locally (NCCL has no OR), the sketch
    and 2-core by a SUM allreduce of integer cells, which wraps and is
    exact.  Gloo on CPU.  With NCCL and the CUDA build's library the
    whole round stays on the bucket's GPU: the codec's CUDA kernels
    (hcodec_cuda.h) on the current stream, the collectives on GPU
    tensors, only the exponent and the sizes crossing to the host; with
    the plain library the codec runs on the host, the bucket copied there
    and back.

``fixed_dense_hook`` with an ``EngineState``
    The reference: every value in the same fixed point (the same scale
    from the same MAX of exponents), summed densely by an integer
    allreduce.  The two hooks above give bit for bit the sums this one
    gives, so training ends with the same parameters.

All three divide the sum by the world size, as DDP's default hook does.
A bucket with NaN or Inf anywhere makes every rank raise
``NonFiniteGradient`` at the same step (the exponent tells them all).

The library is ``build/libgleam-hreduce.so`` (``python/build-lib``
links it after ``make``), or the path in ``GLEAM_HREDUCE_LIB`` (the CUDA
build's, for GPU buckets without a copy to the host).
"""
import ctypes
import os

import torch
import torch.distributed as dist

HC_EXP_NONFINITE = 128
HC_ENONFINITE = -3
HR_ENONFINITE = -6

_here = os.path.dirname(os.path.abspath(__file__))


class NonFiniteGradient(RuntimeError):
    """NaN or Inf in some rank's gradient: every rank skips the step."""


class _Params(ctypes.Structure):
    _fields_ = [("n", ctypes.c_size_t), ("block", ctypes.c_uint),
                ("k", ctypes.c_uint), ("cell_bits", ctypes.c_int),
                ("seed", ctypes.c_uint64), ("impl", ctypes.c_int)]


def load(path=None):
    """The C library, its functions typed."""
    path = path or os.environ.get("GLEAM_HREDUCE_LIB") or os.path.join(
        _here, "..", "build", "libgleam-hreduce.so")
    lib = ctypes.CDLL(path)
    vp, sz, i, u8p = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, \
        ctypes.c_char_p
    sigs = {
        "hc_params_init": (None, [ctypes.POINTER(_Params), sz, i]),
        "hc_strerror": (ctypes.c_char_p, [i]),
        "hc_bitmap_bytes": (sz, [sz]),
        "hc_bitmap": (i, [vp, sz, vp, ctypes.POINTER(i)]),
        "hc_scale": (i, [i, i, i, ctypes.POINTER(i)]),
        "hc_layout_new": (i, [ctypes.POINTER(_Params), vp,
                              ctypes.POINTER(vp)]),
        "hc_layout_free": (None, [vp]),
        "hc_layout_payload": (sz, [vp]),
        "hc_encode": (i, [vp, vp, i, vp]),
        "hc_decode": (i, [vp, vp, i, vp]),
        "hc_dense_fixed": (i, [ctypes.POINTER(vp), i, sz, i, i, vp]),
        "hc_fixed_to_float": (i, [vp, sz, i, i, vp]),
        "hr_open_addr": (i, [u8p, u8p, i, i, i, ctypes.POINTER(vp), u8p,
                             sz]),
        "hr_close": (None, [vp]),
        "hr_rejoin": (None, [vp]),
        "hr_allreduce": (i, [vp, vp, sz]),
        "hr_errmsg": (ctypes.c_char_p, [vp]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    # Only in the CUDA build: gradients reduced where they lie.
    if hasattr(lib, "hr_allreduce_cuda"):
        lib.hr_allreduce_cuda.restype = i
        lib.hr_allreduce_cuda.argtypes = [vp, vp, sz, vp]
        cuda_sigs = {
            "hc_cuda_bitmap": (i, [vp, sz, vp, ctypes.POINTER(i), vp]),
            "hc_cuda_layout_new": (i, [ctypes.POINTER(_Params), vp,
                                       ctypes.POINTER(vp), vp]),
            "hc_cuda_layout_free": (None, [vp]),
            "hc_cuda_layout_payload": (sz, [vp]),
            "hc_cuda_encode": (i, [vp, vp, i, vp, vp]),
            "hc_cuda_decode": (i, [vp, vp, i, vp, vp]),
            "hc_cuda_error": (ctypes.c_char_p, []),
        }
        for name, (res, args) in cuda_sigs.items():
            f = getattr(lib, name)
            f.restype = res
            f.argtypes = args
    return lib


def has_cuda(lib):
    """Whether lib reduces GPU buffers in place (the CUDA build)."""
    return hasattr(lib, "hr_allreduce_cuda")


def _check(lib, rc, what):
    if rc == HC_ENONFINITE:
        raise NonFiniteGradient(what)
    if rc != 0:
        raise RuntimeError("%s: %s" % (what, lib.hc_strerror(rc).decode()))


def _ptr(t):
    return ctypes.c_void_p(t.data_ptr())


def _host(buf):
    """A contiguous float32 CPU tensor with buf's values."""
    t = buf.detach()
    if t.device.type != "cpu" or t.dtype != torch.float32 or \
            not t.is_contiguous():
        t = t.to("cpu", torch.float32).contiguous()
    return t


def _done(bucket_buffer, result):
    fut = torch.futures.Future()
    fut.set_result(result.to(bucket_buffer.device, bucket_buffer.dtype))
    return fut


class AggregatorState:
    """A connection to a gleam-reduce aggregator, for aggregator_hook."""

    def __init__(self, addr, world, rank, keyfile=None, lib=None):
        self.lib = lib or load()
        self.world = world
        ctx = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        rc = self.lib.hr_open_addr(addr.encode(), keyfile.encode()
                                   if keyfile else None, world, rank, 0,
                                   ctypes.byref(ctx), err, len(err))
        if rc != 0:
            raise ConnectionError("gleam-reduce %s: %s" %
                                  (addr, err.value.decode()))
        self.ctx = ctx

    def rejoin(self):
        """After a lost worker, once every rank is at the same step."""
        self.lib.hr_rejoin(self.ctx)

    def close(self):
        if self.ctx:
            self.lib.hr_close(self.ctx)
            self.ctx = None


def aggregator_hook(state, bucket):
    buf = bucket.buffer()
    if buf.device.type == "cuda" and has_cuda(state.lib) and \
            buf.dtype == torch.float32:
        # On the GPU, on the current stream, after the backward's kernels.
        t = buf.detach().contiguous().clone()
        with torch.cuda.device(t.device):
            stream = torch.cuda.current_stream(t.device).cuda_stream
            rc = state.lib.hr_allreduce_cuda(state.ctx, _ptr(t),
                                             t.numel(),
                                             ctypes.c_void_p(stream))
    else:
        t = _host(buf).clone()
        rc = state.lib.hr_allreduce(state.ctx, _ptr(t), t.numel())
    if rc == HR_ENONFINITE:
        raise NonFiniteGradient(state.lib.hr_errmsg(state.ctx).decode())
    if rc != 0:
        raise RuntimeError("gleam-reduce: %s" %
                           state.lib.hr_errmsg(state.ctx).decode())
    return _done(buf, t.div_(state.world))


class EngineState:
    """What engine_hook and fixed_dense_hook share: the codec's settings."""

    def __init__(self, cell_bits=32, seed=0, group=None, lib=None):
        self.lib = lib or load()
        self.cell_bits = cell_bits
        self.seed = seed
        self.group = group
        self.itype = torch.int32 if cell_bits == 32 else torch.int64


def _dev(state, buf):
    """Where the collectives run: NCCL takes only GPU tensors."""
    if dist.get_backend(state.group) == "nccl":
        return buf.device
    return torch.device("cpu")


def _all_reduce(t, op, state, dev):
    """An allreduce of a host tensor, on dev; the result on the host."""
    if dev.type == "cpu":
        dist.all_reduce(t, op=op, group=state.group)
        return t
    d = t.to(dev)
    dist.all_reduce(d, op=op, group=state.group)
    return d.cpu()


def _scale(state, t, dev):
    """Round 0: the bitmap, the exponent merged by MAX, the scale."""
    lib = state.lib
    n = t.numel()
    bits = torch.zeros(lib.hc_bitmap_bytes(n) + 1, dtype=torch.uint8)
    e = ctypes.c_int()
    lib.hc_bitmap(_ptr(t), n, _ptr(bits), ctypes.byref(e))
    s, world = _merged_scale(state, e.value, dev)
    return bits[:lib.hc_bitmap_bytes(n)], s, world


def _merged_scale(state, e, dev):
    """The MAX of every rank's exponent e, on dev; the scale and world."""
    emax = _all_reduce(torch.tensor([e], dtype=torch.int32),
                       dist.ReduceOp.MAX, state, dev)
    world = dist.get_world_size(state.group)
    if emax.item() == HC_EXP_NONFINITE:
        raise NonFiniteGradient("NaN or Inf in some rank's gradient")
    s = ctypes.c_int()
    _check(state.lib, state.lib.hc_scale(int(emax.item()), world,
                                         state.cell_bits, ctypes.byref(s)),
           "hc_scale")
    return s.value, world


def _cuda_check(lib, rc, what):
    if rc == HC_ENONFINITE:
        raise NonFiniteGradient(what)
    if rc != 0:
        raise RuntimeError("%s: %s (%s)" % (what, lib.hc_strerror(rc).decode(),
                                            lib.hc_cuda_error().decode()))


def _engine_cuda(state, buf):
    """engine_hook's round on the GPU: CUDA codec, NCCL collectives."""
    lib = state.lib
    t = buf.detach()
    if t.dtype != torch.float32 or not t.is_contiguous():
        t = t.to(torch.float32).contiguous()
    n = t.numel()
    dev = t.device
    with torch.cuda.device(dev):
        st = ctypes.c_void_p(torch.cuda.current_stream(dev).cuda_stream)
        nb = lib.hc_bitmap_bytes(n)
        bits = torch.zeros(nb + 8, dtype=torch.uint8, device=dev)
        e = ctypes.c_int()
        rc = lib.hc_cuda_bitmap(_ptr(t), n, _ptr(bits), ctypes.byref(e), st)
        if rc not in (0, HC_ENONFINITE):
            _cuda_check(lib, rc, "hc_cuda_bitmap")
        # Round 0 and 1: MAX of the exponents, OR of the bitmaps.
        s, world = _merged_scale(state, e.value, dev)
        mine = bits[:nb]
        every = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(every, mine, group=state.group)
        union = torch.zeros(nb + 8, dtype=torch.uint8, device=dev)
        for b in every:
            union[:nb].bitwise_or_(b)
        # The layout from the union alone, then round 2 by a SUM.
        p = _Params()
        lib.hc_params_init(ctypes.byref(p), n, state.cell_bits)
        p.seed = state.seed
        layout = ctypes.c_void_p()
        _cuda_check(lib, lib.hc_cuda_layout_new(ctypes.byref(p), _ptr(union),
                                                ctypes.byref(layout), st),
                    "hc_cuda_layout_new")
        try:
            payload = torch.zeros(lib.hc_cuda_layout_payload(layout) + 1,
                                  dtype=state.itype, device=dev)
            _cuda_check(lib, lib.hc_cuda_encode(layout, _ptr(t), s,
                                                _ptr(payload), st),
                        "hc_cuda_encode")
            dist.all_reduce(payload, op=dist.ReduceOp.SUM, group=state.group)
            out = torch.empty(n, dtype=torch.float32, device=dev)
            _cuda_check(lib, lib.hc_cuda_decode(layout, _ptr(payload),
                                                s, _ptr(out), st),
                        "hc_cuda_decode")
        finally:
            lib.hc_cuda_layout_free(layout)
    return out, world


def engine_hook(state, bucket):
    lib = state.lib
    buf = bucket.buffer()
    if buf.device.type == "cuda" and has_cuda(lib) and \
            dist.get_backend(state.group) == "nccl":
        out, world = _engine_cuda(state, buf)
        return _done(buf, out.div_(world))
    t = _host(buf)
    n = t.numel()
    dev = _dev(state, buf)
    bits, s, world = _scale(state, t, dev)
    # Round 1: OR of the bitmaps, by allgather (no engine ORs for us).
    mine = bits.to(dev)
    every = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(every, mine, group=state.group)
    union = every[0].clone()
    for b in every[1:]:
        union.bitwise_or_(b)
    union = union.cpu()
    # The layout from the union alone, then round 2 by a SUM allreduce.
    p = _Params()
    lib.hc_params_init(ctypes.byref(p), n, state.cell_bits)
    p.seed = state.seed
    layout = ctypes.c_void_p()
    _check(lib, lib.hc_layout_new(ctypes.byref(p), _ptr(union),
                                  ctypes.byref(layout)), "hc_layout_new")
    try:
        payload = torch.zeros(lib.hc_layout_payload(layout) + 1,
                              dtype=state.itype)
        _check(lib, lib.hc_encode(layout, _ptr(t), s, _ptr(payload)),
               "hc_encode")
        payload = _all_reduce(payload, dist.ReduceOp.SUM, state, dev)
        out = torch.empty(n, dtype=torch.float32)
        _check(lib, lib.hc_decode(layout, _ptr(payload), s, _ptr(out)),
               "hc_decode")
    finally:
        lib.hc_layout_free(layout)
    return _done(buf, out.div_(world))


def fixed_dense_hook(state, bucket):
    lib = state.lib
    buf = bucket.buffer()
    t = _host(buf)
    n = t.numel()
    dev = _dev(state, buf)
    _, s, world = _scale(state, t, dev)
    fixed = torch.zeros(n + 1, dtype=state.itype)
    g = (ctypes.c_void_p * 1)(t.data_ptr())
    _check(lib, lib.hc_dense_fixed(g, 1, n, s, state.cell_bits,
                                   _ptr(fixed)), "hc_dense_fixed")
    fixed = _all_reduce(fixed, dist.ReduceOp.SUM, state, dev)
    out = torch.empty(n, dtype=torch.float32)
    _check(lib, lib.hc_fixed_to_float(_ptr(fixed), n, state.cell_bits, s,
                                      _ptr(out)), "hc_fixed_to_float")
    return _done(buf, out.div_(world))
