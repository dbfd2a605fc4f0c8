#!/usr/bin/env python3
# cuda-hello.py: a CUDA driver program with no CUDA toolkit, for trying
# Gleam on a machine without a GPU: it loads libcuda.so.1 (under gleam-run,
# Gleam's client library), names the device, and copies 1 MiB to it and
# back.  Exits 0 if the bytes came back, 1 if not.
import ctypes
import os
import sys

cu = ctypes.CDLL("libcuda.so.1")


def check(what, rc):
    if rc != 0:
        name = ctypes.c_char_p()
        cu.cuGetErrorName(rc, ctypes.byref(name))
        sys.exit("cuda-hello: %s: %s" % (what, (name.value or b"?").decode()))


check("cuInit", cu.cuInit(0))
dev = ctypes.c_int()
check("cuDeviceGet", cu.cuDeviceGet(ctypes.byref(dev), 0))
name = ctypes.create_string_buffer(256)
check("cuDeviceGetName", cu.cuDeviceGetName(name, len(name), dev))
ctx = ctypes.c_void_p()
check("cuCtxCreate", cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev))
n = 1 << 20
ptr = ctypes.c_uint64()
check("cuMemAlloc", cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(n)))
out = (ctypes.c_ubyte * n)(*(i * 7 & 0xff for i in range(n)))
back = (ctypes.c_ubyte * n)()
check("cuMemcpyHtoD", cu.cuMemcpyHtoD_v2(ptr, out, ctypes.c_size_t(n)))
check("cuMemcpyDtoH", cu.cuMemcpyDtoH_v2(back, ptr, ctypes.c_size_t(n)))
check("cuMemFree", cu.cuMemFree_v2(ptr))
check("cuCtxDestroy", cu.cuCtxDestroy_v2(ctx))
same = bytes(out) == bytes(back)
print("cuda-hello: %s on %s: 1 MiB there and back %s" % (
    name.value.decode(), os.environ.get("GLEAM_SERVER", "this host"),
    "intact" if same else "CHANGED"))
sys.exit(0 if same else 1)
