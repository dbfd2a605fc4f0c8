"""fwcommon: what every framework case prints, so that a local run and a
remote one compare line by line (tests/frameworks/compare).

A case calls part(name, fn) for each thing it checks: fn returns an array
(anything numpy.asarray takes) or a tuple/list/dict of them.  Each part
prints one line:

	name sha=<SHA-256 of the bytes> sum=<float64 sum> n=<elements>

or "name ERROR <exception type>: <message>" if fn raised, so that one
failure does not hide the others.  Bitwise identical local runs make the
sha binding; otherwise sum is compared within the spread of two local
runs."""

import hashlib
import os
import sys
import time
import traceback

import numpy as np

T0 = time.time()


def _flat(x):
    if isinstance(x, dict):
        return [a for k in sorted(x) for a in _flat(x[k])]
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in _flat(v)]
    if hasattr(x, "detach"):            # torch
        x = x.detach()
        if x.dtype.is_floating_point and x.element_size() < 4:
            x = x.float()
        x = x.cpu().numpy()
    elif type(x).__module__.split(".")[0] == "cupy" and hasattr(x, "get"):
        x = x.get()                     # CuPy refuses np.asarray
    return [np.ascontiguousarray(np.asarray(x))]


_SAID_LIBS = set()


def _said_libs():
    """On standard error, each driver library this process has mapped, once
    (through gleam-run only Gleam's should be there: a framework that opened
    the machine's own by its path would be using the local GPU)."""
    try:
        with open("/proc/self/maps") as f:
            libs = {l.split()[-1] for l in f
                    if "libcuda.so" in l or "libnvidia-ml.so" in l}
    except OSError:
        return
    for lib in sorted(libs - _SAID_LIBS):
        print("fw: driver library mapped: %s" % lib, file=sys.stderr,
              flush=True)
    _SAID_LIBS.update(libs)


def part(name, fn):
    """Run fn and print its line."""
    _said_libs()
    try:
        arrs = _flat(fn())
        h = hashlib.sha256()
        s, n = 0.0, 0
        for a in arrs:
            if a.dtype == np.bool_:
                a = a.astype(np.uint8)
            h.update(str(a.dtype).encode() + str(a.shape).encode())
            h.update(a.tobytes())
            if a.dtype.kind in "fc":
                s += float(np.abs(a.astype(np.complex128)).sum())
            else:
                s += float(a.astype(np.float64).sum())
            n += a.size
        print("%s sha=%s sum=%.17g n=%d" % (name, h.hexdigest()[:24], s, n),
              flush=True)
    except Exception as e:  # noqa: BLE001 - every failure is reported
        msg = str(e).strip().splitlines()
        print("%s ERROR %s: %s" % (name, type(e).__name__,
              msg[0][:200] if msg else ""), flush=True)
        if os.environ.get("FW_TRACE"):
            traceback.print_exc()


def done(name):
    """The last line: the case ran to its end, and how long it took."""
    _said_libs()
    print("%s: done" % name, flush=True)
    print("%s: %.2f s" % (name, time.time() - T0), file=sys.stderr)
