#!/usr/bin/env python3
"""The ONNX backend node tests on the GPU: every test that passes on kiln's CPU evaluator
(tests/conformance/passing.txt) is compiled to an fp32 engine and run with `kiln check`
against the test's expected outputs (rtol 1e-3, atol 1e-7, as ONNX's own runner). A model that
needs an input as a compile-time constant (Reshape's shape, Resize's scales, TopK's K) is
compiled again with every input but the first bound at build time (`--constant-inputs`), as the
CPU runner does; a model whose output shape depends on its first input's value too (Range,
ConstantOfShape) with every input bound, so it folds at build time. Both kinds of passes are
counted separately.

    python3 tests/conformance/gpu_conformance.py KILN [--data DIR] [--jobs 16] [--out report.txt]
    python3 tests/conformance/gpu_conformance.py KILN --compile-only   # no GPU: what compiles

DIR defaults to the onnx package's backend test data (pip's onnx ships it) or Debian's
/usr/share/libonnx-testdata/data/node. Prints both counts: passing on the CPU evaluator, and
of those, passing on the GPU; each failure with kiln's message.
"""
import argparse
import atexit
import concurrent.futures as cf
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("kiln")
ap.add_argument("--data", default="")
ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
ap.add_argument("--out", default="")
ap.add_argument("--compile-only", action="store_true",
                help="only compile (no GPU needed): list what does not compile, fail if anything does not")
ap.add_argument("--expect", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "passing.txt"))
ap.add_argument("--gaps", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_gaps.txt"),
                help="tests known not to compile for the GPU yet (NAME reason per line)")
args = ap.parse_args()

data = args.data
if not data:
    pkg = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    data = pkg if os.path.isdir(pkg) else "/usr/share/libonnx-testdata/data/node"
names = [l.strip() for l in open(args.expect) if l.strip() and not l.startswith("#")]
work = tempfile.mkdtemp(prefix="kiln-conf-")
atexit.register(shutil.rmtree, work, True)


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def prepare(name):
    """Compile the test's model and write its inputs and expected outputs as one .npz."""
    d = os.path.join(data, name)
    if not os.path.isdir(d):
        return name, "missing", "not in this onnx's test data"
    model = onnx.load(os.path.join(d, "model.onnx"))
    inits = {i.name for i in model.graph.initializer}
    ins = [i.name for i in model.graph.input if i.name not in inits]
    outs = [o.name for o in model.graph.output]
    ds = os.path.join(d, "test_data_set_0")
    arrays = {}
    for k, n in enumerate(ins):
        p = os.path.join(ds, f"input_{k}.pb")
        if os.path.exists(p):
            arrays[n] = load_pb(p)
    for k, n in enumerate(outs):
        arrays[n] = load_pb(os.path.join(ds, f"output_{k}.pb"))
    compile_cmd = [args.kiln, "compile", os.path.join(d, "model.onnx"), "-o", os.path.join(work, name + ".kiln"),
                   "--arch", "sm_90", "-j", "1"]
    const_path = os.path.join(work, name + ".const.npz")

    def compile_with(bound):
        """Compiles with the inputs `bound` as build-time constants (--constant-inputs)."""
        cmd = compile_cmd
        if bound:
            np.savez(const_path, **{n: arrays[n] for n in bound})
            cmd = compile_cmd + ["--constant-inputs", const_path]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    given = [n for n in ins if n in arrays]
    bound, status = [], "ready"
    r = compile_with(bound)
    if r.returncode != 0 and len(given) > 1:
        # As the CPU runner: inputs the model may need as constants (shapes, axes, K, scales, Clip
        # bounds) are bound at build time; the first input stays an engine input, so a kernel
        # still computes.
        bound, status = given[1:], "ready_bound"
        r = compile_with(bound)
    if r.returncode != 0 and "must be a compile-time constant" in r.stderr:
        # The output's shape depends on the first input's value too (Range, ConstantOfShape, the
        # window functions): with every input bound the whole graph folds at build time.
        bound, status = given, "ready_allbound"
        r = compile_with(bound)
    for n in bound:
        del arrays[n]
    np.savez(os.path.join(work, name + ".npz"), **arrays)
    if r.returncode != 0:
        return name, "compile", (r.stderr.strip().splitlines() or ["?"])[-1]
    return name, status, ""


results = {}
with cf.ThreadPoolExecutor(args.jobs) as ex:
    for name, status, why in ex.map(prepare, names):
        results[name] = (status, why)


def check(name):
    r = subprocess.run([args.kiln, "check", os.path.join(work, name + ".kiln"), "--reference", os.path.join(work, name + ".npz"),
                        "--atol", "1e-7", "--rtol", "1e-3", "--accuracy", "l0<=0"], capture_output=True, text=True, timeout=300)
    ok = {"ready_bound": "pass_bound", "ready_allbound": "pass_allbound"}.get(results[name][0], "pass")
    return name, (ok, "") if r.returncode == 0 else ("fail", (r.stdout + r.stderr).strip().replace("\n", " | ")[-300:])


if args.compile_only:
    gaps = {l.split()[0] for l in open(args.gaps) if l.strip() and not l.startswith("#")} if args.gaps else set()
    names_ok = [n for n in names if results[n][0].startswith("ready")]
    print(f"{len(names_ok)} of {len(names)} compile for sm_90 ({len(gaps)} known gaps: {args.gaps})")
    unexpected = 0
    for name in names:
        if results[name][0] == "compile":
            known = name in gaps
            unexpected += not known
            print(f"  compile  {name}: {results[name][1]}{' (known gap)' if known else ''}")
        elif name in gaps and results[name][0].startswith("ready"):
            unexpected += 1
            print(f"  compiles now, listed as a gap: {name} (delete its line in {args.gaps})")
    sys.exit(0 if unexpected == 0 else 1)

# Several checks share the GPU at once (each is a small engine; correctness only, no timing).
with cf.ThreadPoolExecutor(min(args.jobs, 8)) as ex:
    for name, res in ex.map(check, [n for n in names if results[n][0].startswith("ready")]):
        results[name] = res

count = lambda s: sum(1 for v in results.values() if v[0] == s)  # noqa: E731
lines = [f"ONNX node tests passing on kiln's CPU evaluator: {len(names)} (in this test data: {len(names) - count('missing')})",
         f"  on the GPU (fp32 engines): {count('pass') + count('pass_bound') + count('pass_allbound')} pass "
         f"({count('pass_bound')} of them with inputs after the first bound as build-time constants, "
         f"{count('pass_allbound')} with every input bound: computed at build time), {count('fail')} fail, "
         f"{count('compile')} do not compile (no GPU kernel)"]
for name in names:
    s, why = results[name]
    if s in ("fail", "compile"):
        lines.append(f"  {s:8} {name}: {why}")
text = "\n".join(lines)
print(text)
if args.out:
    open(args.out, "w").write(text + "\n")
sys.exit(0 if count("fail") == 0 else 1)
