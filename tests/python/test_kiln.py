"""The Python package's CPU side (runtime/python/kiln): compile through the CLI, engine metadata
through libkiln_runtime.so, clear errors. The GPU side (ctx.run with torch tensors against `kiln
run`) is bench/python_check.py, run by bench/gpu_suite.sh python.
    python3 tests/python/test_kiln.py   (with runtime/python on PYTHONPATH; KILN_BIN, KILN_RUNTIME_LIB)"""
import os
import sys
import tempfile

import kiln

here = os.path.dirname(os.path.abspath(__file__))
tiny = os.path.join(here, "..", "..", "models", "tiny")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def raises(fn, text):
    try:
        fn()
    except kiln.KilnError as e:
        return text in str(e)
    return False


check(kiln.version().count(".") == 2, f"version {kiln.version()}")
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "mlp.kiln")
    e = kiln.compile(os.path.join(tiny, "mlp.onnxtxt"), output=path, precision="fp16")
    check(os.path.exists(path) and e.path == path, "compile writes the engine where asked")
    check([(t.name, t.dtype, t.shape) for t in e.inputs] == [("x", "float32", (2, 8))], f"inputs {e.inputs}")
    check([(t.name, t.dtype, t.shape) for t in e.outputs] == [("y", "float32", (2, 4))], f"outputs {e.outputs}")
    check(e.arch == "sm_90" and "precision=fp16" in e.route, f"arch {e.arch}, route {e.route!r}")
    again = kiln.Engine(path)
    check(again.inputs[0].shape == (2, 8), "Engine(path) loads the file")
    check(kiln.compile(os.path.join(tiny, "shape_chain.onnxtxt"), shapes={"x": (2, 3, 4)}).outputs[0].shape == (2, 12),
          "compile with shapes as a dict")
    half = kiln.compile(os.path.join(tiny, "mlp.onnxtxt"), precision="fp16", io_dtype="fp16")
    check([t.dtype for t in half.inputs + half.outputs] == ["float16", "float16"], f"io_dtype fp16: {half.inputs}")
    check(raises(lambda: kiln.compile(b"not a model"), "not a valid ONNX protobuf"), "bad model bytes: kiln's message")
    check(raises(lambda: kiln.compile(os.path.join(tiny, "mlp.onnxtxt"), precision="fp7"), "precision"),
          "bad precision: kiln's message")
    check(raises(lambda: kiln.Engine(os.path.join(tiny, "mlp.onnxtxt")), "loading"), "a non-engine file is refused")
    check(raises(lambda: kiln.Engine(b"kiln"), "loading the engine"), "truncated engine bytes are refused")
    check(e.num_profiles == 1, "a static engine has one profile")
    two = kiln.compile(os.path.join(tiny, "dynamic.onnxtxt"),
                       args=["--min-shapes", "batch=1,seq=4", "--opt-shapes", "batch=2,seq=8", "--max-shapes",
                             "batch=2,seq=8", "--min-shapes", "batch=3,seq=8", "--opt-shapes", "batch=4,seq=8",
                             "--max-shapes", "batch=4,seq=8"])
    check(two.num_profiles == 2, f"two profiles ({two.num_profiles})")
    plan = kiln.tune(os.path.join(tiny, "mlp.onnxtxt"), "precision=fp32|fp16", args=["--dry-run"])
    check(plan.get("count") == 2, f"tune --dry-run plans 2 candidates ({plan.get('count')})")
    # Without a GPU, a context cannot be made: the runtime's message says why.
    try:
        e.context()
        check(True, "context created (a GPU is present)")
    except kiln.KilnError as err:
        check("NVIDIA driver" in str(err) or "GPU" in str(err), f"no GPU: {err}")
sys.exit(1 if failures else 0)
