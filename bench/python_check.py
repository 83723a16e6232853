"""The Python package on the GPU (bench/gpu_suite.sh python): for each model, one engine file
compiled through kiln.compile, run from Python with torch CUDA tensors (zero-copy, the current
stream) and with numpy arrays, and by `kiln run` on the same inputs: outputs must be equal (same
engine, same kernels), and the latency of ctx.run (CUDA events, median of 200 after 10 warm-up)
is printed beside the CLI's, with run()'s own host time, the time per run when 10 are queued back
to back, and enqueue() alone on tensors bound once with bind().
    python3 bench/python_check.py MODEL.onnx[txt]... (PYTHONPATH=runtime/python, KILN_BIN, KILN_RUNTIME_LIB)"""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import kiln

ok = True
for model in sys.argv[1:]:
    name = os.path.basename(model).split(".")[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name + ".kiln")
        engine = kiln.compile(model, output=path, precision="fp16")
        rng = np.random.default_rng(1)
        feeds = {}
        for t in engine.inputs:
            if t.dtype.startswith("float"):
                feeds[t.name] = rng.uniform(-1, 1, t.shape).astype(t.dtype)
            else:
                feeds[t.name] = rng.integers(0, 2, t.shape).astype(t.dtype)
        np.savez(os.path.join(tmp, "in.npz"), **feeds)
        cli = subprocess.run([os.environ.get("KILN_BIN", "kiln"), "run", path, "--inputs", os.path.join(tmp, "in.npz"),
                              "--outputs", os.path.join(tmp, "out.npz"), "--iterations", "200"],
                             capture_output=True, text=True, check=True)
        ref = np.load(os.path.join(tmp, "out.npz"))
        ctx = engine.context()
        out_torch = ctx.run({k: torch.from_numpy(v).cuda() for k, v in feeds.items()})
        torch.cuda.synchronize()
        out_numpy = ctx.run(feeds)
        for t in engine.outputs:
            a, b, c = ref[t.name], out_torch[t.name].cpu().numpy(), out_numpy[t.name]
            same = np.array_equal(a, b) and np.array_equal(a, c)
            ok &= same
            print(f"{name} {t.name}: torch {'equal' if np.array_equal(a, b) else 'DIFFERS'}, "
                  f"numpy {'equal' if np.array_equal(a, c) else 'DIFFERS'} to kiln run (max |d| "
                  f"{float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max()):.3g})")
        dev = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
        outs = {t.name: torch.empty(t.shape, dtype=getattr(torch, t.dtype), device="cuda") for t in engine.outputs}
        for _ in range(10):
            ctx.run(dev, outputs=outs)
        times = []
        for _ in range(200):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            ctx.run(dev, outputs=outs)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        times.sort()
        host = []  # the CPU time of run() itself (binding, enqueue): what Python adds to the CLI
        for _ in range(200):
            t0 = time.perf_counter()
            ctx.run(dev, outputs=outs)
            host.append((time.perf_counter() - t0) * 1e3)
            torch.cuda.synchronize()
        host.sort()
        # bind() once, then enqueue() alone per run (TensorRT's set_tensor_address + enqueueV3).
        ctx.bind(dev, outs)
        bound = []
        for _ in range(200):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            ctx.enqueue()
            e.record()
            e.synchronize()
            bound.append(s.elapsed_time(e))
        bound.sort()
        for t in engine.outputs:
            same = np.array_equal(ref[t.name], outs[t.name].cpu().numpy())
            ok &= same
            print(f"{name} {t.name}: bind() + enqueue() {'equal' if same else 'DIFFERS'} to kiln run")
        # Runs queued back to back (no wait between them, as a serving loop runs): the device
        # time per run, the host work of each run() overlapped with the previous run.
        queued = []
        for _ in range(20):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(10):
                ctx.run(dev, outputs=outs)
            e.record()
            e.synchronize()
            queued.append(s.elapsed_time(e) / 10)
        queued.sort()
        m = re.search(r"median ([0-9.]+) ms", cli.stdout + cli.stderr)
        print(f"{name}: latency from Python median {times[100]:.3f} ms (min {times[0]:.3f}, p90 {times[180]:.3f}); "
              f"kiln run median {m.group(1) if m else '?'} ms; run() on the host median {host[100]:.3f} ms; "
              f"queued 10 at a time median {queued[10]:.3f} ms per run; bind() once, enqueue() median {bound[100]:.3f} ms")
sys.exit(0 if ok else 1)
