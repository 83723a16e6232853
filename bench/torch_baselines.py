#!/usr/bin/env python3
"""PyTorch baselines for kiln's side-by-side benchmark (DESIGN.md, "Performance").

For each zoo config the module that models/make_zoo.py exports is built again (same builder, same
seed, so the same random weights as the ONNX file), cast to fp16 (``.half()`` semantics: integer
buffers stay integer; ``--dtype fp32``/``tf32`` keep fp32 with TF32 off/on for matmul and cuDNN
alike), moved to CUDA in eval mode under ``torch.inference_mode()``, fed
make_zoo.example_inputs at the config's batch (float inputs cast to fp16), and timed in five modes:
eager, eager_cuda_graph (captured once after a side-stream warm-up, replayed),
compile_default, compile_reduce_overhead and compile_max_autotune (``torch.compile`` modes).

Timing (the method of tests/gpu/kiln_gpu_check.cpp): ``--warmup`` calls (>= 10; the first one
compiles / captures and is reported as compile_s), then ``--iterations`` runs, each bracketed by
two CUDA events and synchronized; median = sorted[n//2], p90 = sorted[n*9//10], min. One fixed
input set is reused for every call (as kiln's check does); cudnn.benchmark is on unless
``--no-cudnn-benchmark``. Each (config, mode) runs in its own child process (this script with
``--single``) in its own process group, killed after ``--mode-timeout`` s; a failure is recorded
and the run goes on. Work is done mode by mode (all eager first, max-autotune last), so a spent
``--time-budget`` skips the slowest modes. The JSON (``--out``) is rewritten after every mode.

On the GPU host (from the repo root; one device command is limited to 10 minutes, so the default
budget is 540 s; rerun with --resume to go on where a run stopped, keeping ok/failed records):

    python3 bench/torch_baselines.py --out $OUT/torch_baselines.json
    python3 bench/torch_baselines.py --out $OUT/torch_baselines.json --resume   # next call
    python3 bench/torch_baselines.py --configs resnet50,gpt2_small_s512 --modes eager,compile_default

Local check without a GPU (torch >= 1.13 CPU, tiny shapes, eager only, perf_counter timing; bf16,
as CPU fp16 kernels are missing there, which still exercises the dtype casts below). ViT is left
out of the default smoke set: it only takes 224x224 images, ~20-30 s a call on a slow CPU (add it
with --configs). About a minute on two cores:

    /usr/bin/python3 bench/torch_baselines.py --cpu-smoke --out /tmp/smoke.json

Model adaptations, applied through forward pre-hooks (the model code is make_zoo's): BERT's
additive mask is computed in fp32 and is cast to the hidden dtype before each layer (as HF does;
otherwise fp16 matmul with fp32 probabilities fails); GPT-2's position_ids are made with
torch.arange on the default (CPU) device and are re-made on the model's device.
"""

import argparse
import dataclasses
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "models"))

import torch  # noqa: E402
import make_zoo as mz  # noqa: E402

CONFIGS = ["resnet50", "resnet50_b32", "mobilenetv2_b32", "vit_b16_b32",
           "bert_base_b32_s128", "gpt2_small_s512"]
MODES = ["eager", "eager_cuda_graph", "compile_default", "compile_reduce_overhead",
         "compile_max_autotune"]
COMPILE_MODES = {"compile_default": None, "compile_reduce_overhead": "reduce-overhead",
                 "compile_max_autotune": "max-autotune"}
SHORT = {"eager": "eager", "eager_cuda_graph": "eager+graph", "compile_default": "compile",
         "compile_reduce_overhead": "c.reduce-ovh", "compile_max_autotune": "c.max-autot"}
SMOKE_IMAGE, SMOKE_SEQ = 64, 16


# ------------------------------------------------------------------ child: one (config, mode)

def smoke_entry(entry):
    """Tiny CPU variant: batch 1, 64x64 images (ViT needs its 224x224), sequence 16."""
    inputs = []
    for name, shape, dt, high in entry.inputs:
        if len(shape) == 3 and entry.builder is not mz.build_vit_b16:
            shape = (shape[0], SMOKE_IMAGE, SMOKE_IMAGE)
        elif len(shape) == 1:
            shape = (SMOKE_SEQ,)
        inputs.append((name, shape, dt, high))
    return dataclasses.replace(entry, inputs=inputs, batch=1)


def _mask_to_hidden_dtype(module, args):
    return (args[0], args[1].to(args[0].dtype)) + tuple(args[2:])


def _positions_on_device(module, args):
    return (torch.arange(args[0].size(-1), device=module.weight.device).unsqueeze(0),)


def build(entry, device, dtype):
    torch.manual_seed(mz.SEED)                      # exactly as make_zoo.export
    model = entry.builder().eval()
    for m in model.modules():
        if isinstance(m, mz.BertLayer):
            m.register_forward_pre_hook(_mask_to_hidden_dtype)
        elif isinstance(m, mz.GPT2LMHead):
            m.wpe.register_forward_pre_hook(_positions_on_device)
    model = model.to(device=device, dtype=dtype)    # floating params/buffers only, like .half()
    inputs = tuple(x.to(device=device, dtype=dtype) if x.is_floating_point() else x.to(device)
                   for x in mz.example_inputs(entry, entry.batch))
    return model, inputs


def prepare(mode, model, inputs):
    """Returns (callable, before_each_call or None)."""
    if mode == "eager":
        return (lambda: model(*inputs)), None
    if mode == "eager_cuda_graph":                  # torch.cuda.graphs docs: warm up on a side stream
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(*inputs)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = model(*inputs)
        return (lambda: (graph.replay(), static_out)[1]), None
    compiled = torch.compile(model, mode=COMPILE_MODES[mode])
    step = None
    if mode != "compile_default":                   # CUDA-graph modes: each call is a new step
        step = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
    return (lambda: compiled(*inputs)), step


def summarize_output(out):
    o = out[0] if isinstance(out, (tuple, list)) else out
    f = o.detach().float().flatten().cpu()
    return {"shape": list(o.shape), "dtype": str(o.dtype).replace("torch.", ""),
            "first8": [round(v, 6) for v in f[:8].tolist()],
            "l2": float(f.double().norm()), "finite": bool(torch.isfinite(f).all())}


def run_single(a, cfg, mode):
    rec = {"config": cfg, "mode": mode, "status": "failed"}
    try:
        cuda = not a.cpu_smoke
        if cuda and not torch.cuda.is_available():
            raise RuntimeError("CUDA is not available")
        device = torch.device("cuda" if cuda else "cpu")
        entry = mz.ZOO_BY_NAME[cfg]
        dtype = (torch.float16 if a.dtype == "fp16" else torch.float32) if cuda else torch.bfloat16  # no CPU fp16 in torch 1.13
        if a.cpu_smoke:
            entry = smoke_entry(entry)
            torch.set_num_threads(1)                # be gentle with a shared build machine
        if cuda:
            torch.backends.cudnn.benchmark = not a.no_cudnn_benchmark
            # fp32: exact fp32 products and convolutions (PyTorch's default has cuDNN on TF32);
            # tf32: both on TF32 tensor cores (kiln's gemm.tf32=on).
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = a.dtype == "tf32"
        sync = torch.cuda.synchronize if cuda else (lambda: None)
        rec.update(device=torch.cuda.get_device_name() if cuda else "cpu",
                   dtype=str(dtype).replace("torch.", ""), batch=entry.batch,
                   inputs={n: [entry.batch, *s] for n, s, _, _ in entry.inputs})
        t0 = time.perf_counter()
        model, inputs = build(entry, device, dtype)
        sync()
        rec["setup_s"] = round(time.perf_counter() - t0, 3)
        with torch.inference_mode():
            t0 = time.perf_counter()
            fn, step = prepare(mode, model, inputs)
            for i in range(a.warmup):               # the first call compiles / the graph is captured
                if step:
                    step()
                out = fn()
                if i == 0:
                    sync()
                    rec["compile_s"] = round(time.perf_counter() - t0, 3)
            sync()
            rec["warmup_s"] = round(time.perf_counter() - t0, 3)
            ms = []
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for _ in range(a.iterations):
                if step:
                    step()
                if cuda:
                    start.record()
                    out = fn()
                    end.record()
                    end.synchronize()
                    ms.append(start.elapsed_time(end))
                else:
                    t = time.perf_counter()
                    out = fn()
                    ms.append((time.perf_counter() - t) * 1e3)
            if a.check_outputs:
                rec["output"] = summarize_output(out)
        ms.sort()
        rec.update(status="ok", median_ms=round(ms[len(ms) // 2], 4), min_ms=round(ms[0], 4),
                   p90_ms=round(ms[len(ms) * 9 // 10], 4), iterations=len(ms), warmup=a.warmup,
                   timer="cuda_events" if cuda else "perf_counter")
        if cuda:
            rec["peak_mem_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    except Exception as e:                          # noqa: BLE001 - record and go on
        traceback.print_exc()
        rec["error"] = f"{type(e).__name__}: {e}"[:2000]
    with open(a.record, "w") as f:
        json.dump(rec, f)
    return 0


# ------------------------------------------------------------------ parent: schedule, guard, report

def run_child(a, cfg, mode, timeout, log_path):
    rec_path = log_path[:-4] + ".record.json"
    if os.path.exists(rec_path):
        os.remove(rec_path)
    cmd = [sys.executable, os.path.abspath(__file__), "--single", cfg, mode, "--record", rec_path,
           "--iterations", str(a.iterations), "--warmup", str(a.warmup), "--dtype", a.dtype]
    cmd += [flag for flag, on in (("--cpu-smoke", a.cpu_smoke), ("--check-outputs", a.check_outputs),
                                  ("--no-cudnn-benchmark", a.no_cudnn_benchmark)) if on]
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                             env=dict(os.environ, PYTHONUNBUFFERED="1"))
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)        # the child and its compile workers
            p.wait()
            rc = None
    wall = round(time.perf_counter() - t0, 2)
    with open(log_path, errors="replace") as f:
        tail = f.read()[-1500:]
    if rc is None:
        return {"config": cfg, "mode": mode, "status": "timeout", "wall_s": wall,
                "error": f"killed after {timeout:.0f} s (--mode-timeout / --time-budget); "
                         f"log tail: {tail[-500:]}"}
    try:
        with open(rec_path) as f:
            rec = json.load(f)
        os.remove(rec_path)
    except (OSError, ValueError):
        rec = {"config": cfg, "mode": mode, "status": "failed",
               "error": f"child exited with rc={rc} and no record; log tail: {tail}"}
    rec["wall_s"] = wall
    return rec


def static_skip(mode, cpu_smoke, has_cuda):
    if mode.startswith("compile") and not hasattr(torch, "compile"):
        return f"no torch.compile (torch {torch.__version__})"
    if cpu_smoke and mode != "eager":
        return "no CUDA (--cpu-smoke runs eager only)"
    if not cpu_smoke and not has_cuda:
        return "no CUDA"
    return None


def host_info(a):
    info = {"date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "hostname": platform.node(), "platform": platform.platform(),
            "python": platform.python_version(), "torch": torch.__version__,
            "torch_cuda": torch.version.cuda, "cudnn": None, "gpu_name": None, "driver": None}
    try:
        info["cudnn"] = torch.backends.cudnn.version()   # loads the library, no CUDA context
    except Exception:                                    # noqa: BLE001
        pass
    for key, cmd in (("nvidia_smi", ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,"
                                     "clocks.max.sm,clocks.mem", "--format=csv,noheader"]),
                     ("git_commit", ["git", "-C", REPO, "rev-parse", "HEAD"])):
        try:
            info[key] = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                                       check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            info[key] = None
    if info["nvidia_smi"]:
        info["driver"] = info["nvidia_smi"].splitlines()[0].split(", ")[1]
    return info


def finish(a, doc, records):
    doc["records"] = [records[k] for k in sorted(records, key=lambda k: (
        CONFIGS.index(k[0]) if k[0] in CONFIGS else 99, MODES.index(k[1])))]
    gpu = [r["device"] for r in doc["records"] if r.get("device") not in (None, "cpu")]
    doc["host"]["gpu_name"] = gpu[0] if gpu else doc["host"]["gpu_name"]
    doc["output_checks"] = {r["config"]: r["output"] for r in doc["records"]
                            if r["mode"] == "eager" and "output" in r}
    doc["best"] = {}
    for r in doc["records"]:
        b = doc["best"].get(r["config"])
        if r["status"] == "ok" and (b is None or r["median_ms"] < b["median_ms"]):
            doc["best"][r["config"]] = {"mode": r["mode"], "median_ms": r["median_ms"]}
    tmp = a.out + ".partial"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, a.out)


def print_table(doc, configs, modes):
    cell = {(r["config"], r["mode"]): r for r in doc["records"]}
    print(f"\nmedian ms ({doc['settings']['dtype']}, {doc['host']['gpu_name'] or 'cpu'})")
    print(f"{'config':20s}" + "".join(f"{SHORT[m]:>13s}" for m in modes) + "   best")
    for c in configs:
        row = f"{c:20s}"
        for m in modes:
            r = cell.get((c, m), {})
            row += f"{r['median_ms']:13.3f}" if r.get("status") == "ok" else f"{r.get('status', '-'):>13s}"
        b = doc["best"].get(c)
        print(row + (f"   {b['mode']} {b['median_ms']:.3f}" if b else "   -"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp"), "torch_baselines.json"),
                    help="JSON output path (default $OUT/ or /tmp/torch_baselines.json)")
    ap.add_argument("--configs", default=None,
                    help="comma-separated zoo names (default: all six; smoke: all but ViT)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ",".join(MODES))
    ap.add_argument("--iterations", type=int, default=None, help="timed runs (default 100; smoke 3)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up calls (default/min 10; smoke 2)")
    ap.add_argument("--mode-timeout", type=float, default=240, help="seconds per (config, mode)")
    ap.add_argument("--time-budget", type=float, default=540,
                    help="seconds for the whole run; later modes are skipped (default 540)")
    ap.add_argument("--inductor-cache", default="/tmp/kiln-inductor-cache",
                    help="TORCHINDUCTOR_CACHE_DIR, reused across runs")
    ap.add_argument("--log-dir", default=None, help="child logs (default: <out>_logs)")
    ap.add_argument("--resume", action="store_true",
                    help="keep ok/failed records of an existing --out, run the rest")
    ap.add_argument("--check-outputs", action="store_true",
                    help="store the output's first 8 values and L2 norm per record")
    ap.add_argument("--no-cudnn-benchmark", action="store_true")
    ap.add_argument("--dtype", choices=("fp16", "fp32", "tf32"), default="fp16",
                    help="fp16 (default); fp32 with TF32 off for matmul and cuDNN; tf32: fp32 with both on")
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny CPU eager-only check")
    ap.add_argument("--single", nargs=2, metavar=("CONFIG", "MODE"), help=argparse.SUPPRESS)
    ap.add_argument("--record", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.iterations = a.iterations or (3 if a.cpu_smoke else 100)
    a.warmup = a.warmup or (2 if a.cpu_smoke else 10)
    if a.single:
        return run_single(a, *a.single)

    if a.configs is None:
        a.configs = ",".join(c for c in CONFIGS if not (a.cpu_smoke and c.startswith("vit")))
    configs = [c for c in a.configs.split(",") if c]
    modes = [m for m in a.modes.split(",") if m]
    bad = [c for c in configs if c not in mz.ZOO_BY_NAME] + [m for m in modes if m not in MODES]
    if bad:
        ap.error(f"unknown config(s)/mode(s): {', '.join(bad)}")
    if not a.cpu_smoke and a.warmup < 10:
        ap.error("--warmup must be >= 10 on the GPU")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = a.inductor_cache
    os.makedirs(a.inductor_cache, exist_ok=True)
    a.log_dir = a.log_dir or os.path.splitext(a.out)[0] + "_logs"
    os.makedirs(a.log_dir, exist_ok=True)
    has_cuda = torch.cuda.is_available()

    records = {}
    if a.resume and os.path.exists(a.out):
        with open(a.out) as f:
            records = {(r["config"], r["mode"]): r for r in json.load(f)["records"]}
    doc = {"schema": "kiln-torch-baselines/1", "host": host_info(a),
           "settings": {"dtype": "bfloat16 (cpu smoke)" if a.cpu_smoke else
                        {"fp16": "float16", "fp32": "float32 (TF32 off)", "tf32": "float32 (TF32 on)"}[a.dtype],
                        "cpu_smoke": a.cpu_smoke, "iterations": a.iterations, "warmup": a.warmup,
                        "mode_timeout_s": a.mode_timeout, "time_budget_s": a.time_budget,
                        "cudnn_benchmark": not a.no_cudnn_benchmark and not a.cpu_smoke,
                        "inductor_cache": a.inductor_cache, "inputs": "one fixed set (make_zoo seed)",
                        "timing": "per run: event, call, event, synchronize; median=s[n//2], "
                                  "p90=s[n*9//10]"}}
    t_start = time.perf_counter()
    for mode in modes:                              # cheap modes first, max-autotune last
        for cfg in configs:
            old = records.get((cfg, mode))
            if old and old["status"] in ("ok", "failed"):
                continue
            left = a.time_budget - (time.perf_counter() - t_start)
            reason = static_skip(mode, a.cpu_smoke, has_cuda)
            if reason is None and left <= 0:
                reason = f"time budget ({a.time_budget:.0f} s) spent"
            if reason:
                rec = {"config": cfg, "mode": mode, "status": "skipped", "reason": reason}
            else:
                print(f"[{time.perf_counter() - t_start:6.0f} s] {cfg} {mode} ...", flush=True)
                rec = run_child(a, cfg, mode, min(a.mode_timeout, left),
                                os.path.join(a.log_dir, f"{cfg}.{mode}.log"))
                print(f"    {rec['status']} " + (f"median {rec['median_ms']:.3f} ms, first call "
                      f"{rec['compile_s']:.1f} s" if rec["status"] == "ok" else rec["error"][:300])
                      + f" (wall {rec['wall_s']:.0f} s)", flush=True)
            records[(cfg, mode)] = rec
            finish(a, doc, records)
    finish(a, doc, records)
    print_table(doc, configs, modes)
    print(f"\nwrote {a.out} ({time.perf_counter() - t_start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
