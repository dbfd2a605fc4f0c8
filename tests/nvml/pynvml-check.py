#!/usr/bin/env python3
"""pynvml-check.py: what a monitoring script asks through pynvml (the
nvidia-ml-py package), one line per GPU."""
import os

import pynvml

pynvml.nvmlInit()
print("driver", pynvml.nvmlSystemGetDriverVersion())
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    mem = pynvml.nvmlDeviceGetMemoryInfo(h)
    procs = pynvml.nvmlDeviceGetComputeRunningProcesses(h)
    try:
        temp = pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
    except pynvml.NVMLError_NotSupported:
        temp = "n/a"
    print(i, pynvml.nvmlDeviceGetName(h), mem.total, mem.free, temp,
          [p.pid == os.getpid() for p in procs])
pynvml.nvmlShutdown()
