"""What the PyTorch workloads of bench/infer share: the command line, the
timing loop and the report, as YAML keys on standard output, the same keys
as bench/workloads/infer.cu prints."""

import argparse
import hashlib
import os
import resource
import statistics
import sys
import time


def parse_args(name, batch, seq=None):
    p = argparse.ArgumentParser(
        prog=name,
        description="Seeded %s inference: the state dict is written to MODEL "
        "if it does not exist, then loaded from it, moved to the device and "
        "run STEPS times; prints YAML keys on standard output." % name)
    p.add_argument("-b", type=int, default=batch, metavar="batch",
                   help="inputs per step (default %d)" % batch)
    p.add_argument("-D", action="store_true",
                   help="warn on standard error, with the Python stack, at "
                   "each operation of the timed steps that synchronizes "
                   "with the device (torch.cuda.set_sync_debug_mode)")
    p.add_argument("-d", default="cuda", metavar="device",
                   help="torch device (default cuda)")
    p.add_argument("-n", type=int, default=20, metavar="steps",
                   help="timed steps (default 20)")
    if seq is not None:
        p.add_argument("-q", type=int, default=seq, metavar="seqlen",
                       help="tokens per sequence (default %d)" % seq)
    p.add_argument("-I", type=int, default=None, metavar="salt",
                   help="the timed steps' inputs from seed+1+salt, fresh "
                   "for each salt; the checksum then covers the warm-up "
                   "steps only (default: every input from the seed, all "
                   "steps in the checksum)")
    p.add_argument("-S", type=int, default=1, metavar="seed",
                   help="seed of the weights and inputs (default 1)")
    p.add_argument("-w", type=int, default=2, metavar="warmup",
                   help="untimed steps first (default 2)")
    p.add_argument("model", help="the state dict file")
    a = p.parse_args()
    for opt, lo in (("b", 1), ("n", 0), ("w", 0), ("S", 0), ("I", 0)) + (
            (("q", 1),) if seq is not None else ()):
        if getattr(a, opt) is not None and getattr(a, opt) < lo:
            p.error("-%s: at least %d" % (opt, lo))
    return a


def sync(device):
    import torch
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def tensor_bytes(t):
    """The bytes of a CPU tensor, for the checksum."""
    t = t.contiguous()
    try:
        return t.numpy().tobytes()
    except (ImportError, RuntimeError):
        import torch
        return bytes(t.view(torch.uint8).flatten().tolist())


def usage():
    """The process's resource usage (every thread's) and the calling
    thread's: where a phase's time went besides its wall clock."""
    return (resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(getattr(resource, "RUSAGE_THREAD",
                                       resource.RUSAGE_SELF)))


def run(name, variant, build, make_input, args, item):
    """build() makes the model on the CPU, seeded; make_input(gen) one
    step's input on the CPU; the output is copied back every step."""
    import torch

    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    t0 = time.perf_counter()
    device = torch.device(args.d)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            sys.exit("%s: no CUDA device" % name)
        torch.cuda.init()
        torch.zeros(1, device=device)
        devname = torch.cuda.get_device_name(device)
    else:
        devname = str(device)
    t1 = time.perf_counter()

    if not os.path.exists(args.model):
        torch.manual_seed(args.S)
        tmp = args.model + ".tmp"
        torch.save(build().state_dict(), tmp)
        os.replace(tmp, args.model)

    # The load: read the file into a model made beforehand (its random
    # initialisation is not the load's), then every tensor to the device.
    model = build()
    u2, m2 = usage()
    t2 = time.perf_counter()
    sd = torch.load(args.model, map_location="cpu", weights_only=True)
    t2b = time.perf_counter()
    model.load_state_dict(sd)
    model.eval()
    t3 = time.perf_counter()
    u3, m3 = usage()
    model.to(device)
    sync(device)
    t4 = time.perf_counter()

    # With -I the timed steps get inputs no earlier run had (a server's
    # weight cache would otherwise hold a rerun's inputs and skip their
    # transfer); only the warm-up's outputs, from the seed, are then
    # comparable between runs, so only they go into the checksum.
    gen = torch.Generator().manual_seed(args.S)
    h = hashlib.sha256()
    lat = []
    in_bytes = out_bytes = 0
    with torch.inference_mode():
        for i in range(args.w + args.n):
            if i == args.w and args.I is not None:
                gen = torch.Generator().manual_seed(args.S + 1 + args.I)
            if i == args.w and args.D and device.type == "cuda":
                torch.cuda.set_sync_debug_mode("warn")
            x = make_input(gen)
            ts = time.perf_counter()
            y = model(x.to(device)).cpu()
            lat.append(time.perf_counter() - ts)
            if i < args.w or args.I is None:
                h.update(tensor_bytes(y))
            in_bytes = x.numel() * x.element_size()
            out_bytes = y.numel() * y.element_size()

    timed = lat[args.w:]
    out = [
        ("workload", name),
        ("item", item),
        ("model", variant),
        ("device", '"%s"' % devname),
        ("model_bytes", os.path.getsize(args.model)),
        ("params", sum(p.numel() for p in model.parameters())),
        ("batch", args.b),
    ]
    if hasattr(args, "q"):
        out.append(("seq_len", args.q))
    out += [
        ("steps", args.n),
        ("warmup", args.w),
        ("input_bytes", in_bytes),
        ("output_bytes", out_bytes),
        ("init_s", "%.6f" % (t1 - t0)),
        ("load_read_s", "%.6f" % (t3 - t2)),
        ("load_file_s", "%.6f" % (t2b - t2)),
        ("load_read_cpu_s", "%.6f" % (
            u3.ru_utime + u3.ru_stime - u2.ru_utime - u2.ru_stime)),
        ("load_read_main_cpu_s", "%.6f" % (
            m3.ru_utime + m3.ru_stime - m2.ru_utime - m2.ru_stime)),
        ("load_read_faults", u3.ru_minflt - u2.ru_minflt),
        ("load_read_switches", u3.ru_nvcsw + u3.ru_nivcsw - u2.ru_nvcsw -
         u2.ru_nivcsw),
        ("threads", len(os.listdir("/proc/self/task"))),
        ("load_upload_s", "%.6f" % (t4 - t3)),
        ("load_s", "%.6f" % (t4 - t2)),
    ]
    if lat:
        out.append(("first_step_ms", "%.3f" % (lat[0] * 1e3)))
    if timed:
        out += [
            ("step_ms", "%.3f" % (statistics.median(timed) * 1e3)),
            ("step_ms_mean", "%.3f" % (statistics.mean(timed) * 1e3)),
            ("step_ms_min", "%.3f" % (min(timed) * 1e3)),
            ("step_ms_max", "%.3f" % (max(timed) * 1e3)),
            ("items_per_s", "%.2f" % (args.b * len(timed) / sum(timed))),
        ]
        if hasattr(args, "q"):
            out.append(("tokens_per_s", "%.1f" % (
                args.b * args.q * len(timed) / sum(timed))))
    out.append(("checksum", '"%s"' % h.hexdigest()[:16]))
    for k, v in out:
        print("%s: %s" % (k, v))
    sys.stdout.flush()
