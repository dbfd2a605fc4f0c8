#!/usr/bin/env python3
"""refresh.py GPUS_FILE: through ctypes, as pynvml calls the library: reads
GPU 0's temperature, rewrites the file the server reports from
(GLEAM_TEST_GPUS) with another, and reads it again after more than a
second, when the library fetches the server's status anew.  Prints the
two readings."""
import ctypes
import sys
import time

nvml = ctypes.CDLL("libnvidia-ml.so.1")
path = sys.argv[1]


def temperature():
    dev = ctypes.c_void_p()
    t = ctypes.c_uint()
    assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
    assert nvml.nvmlDeviceGetTemperature(dev, 0, ctypes.byref(t)) == 0
    return t.value


assert nvml.nvmlInit_v2() == 0
before = temperature()
with open(path) as f:
    text = f.read()
with open(path, "w") as f:
    f.write(text.replace("temperature_c: 41", "temperature_c: 77"))
# Within the second: the same answer, no new fetch.
same = temperature()
time.sleep(1.3)
after = temperature()
assert nvml.nvmlShutdown() == 0
print(before, same, after)
