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

# Context.run / bind / enqueue without a GPU: the runtime's context calls answered by a stand-in
# (engine calls go to the real library) and a CuPy-like framework of __cuda_array_interface__
# objects. Checks which calls reach the runtime and when: a repeated run() is one enqueue.
import types  # noqa: E402

import kiln.engine as ke  # noqa: E402


class FakeArray:
    def __init__(self, shape, dtype="float32"):
        self.shape, self.dtype, self.ptr = tuple(shape), dtype, 4096 * (len(FakeArray.made) + 1)
        FakeArray.made.append(self)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": "<f4", "data": (self.ptr, False), "version": 3}


FakeArray.made = []
fake_cupy = types.SimpleNamespace(
    ndarray=FakeArray, empty=lambda shape, dtype: FakeArray(shape, dtype),
    cuda=types.SimpleNamespace(get_current_stream=lambda: types.SimpleNamespace(ptr=77)))


class FakeRuntime:
    def __init__(self, real, shapes):
        self.real, self.shapes, self.calls = real, shapes, []

    def __getattr__(self, name):
        return getattr(self.real, name)

    def kiln_context_create(self, engine, out):
        out._obj.value = 1234
        return 0

    def kiln_context_destroy(self, handle):
        pass

    def kiln_context_set_input_shape(self, handle, name, dims, rank):
        self.calls.append(("shape", name.decode(), tuple(dims[k] for k in range(rank))))
        return 0

    def kiln_context_get_tensor_shape(self, handle, name, dims, capacity, rank):
        shape = self.shapes[name.decode()]
        for k, d in enumerate(shape):
            dims[k] = d
        rank._obj.value = len(shape)
        self.calls.append(("get", name.decode()))
        return 0

    def kiln_context_set_tensor_address(self, handle, name, ptr):
        self.calls.append(("bind", name.decode(), ptr.value))
        return 0

    def kiln_context_enqueue(self, handle, stream):
        self.calls.append(("enqueue", stream.value))
        return 0

    def kiln_context_set_profile(self, handle, index):
        self.calls.append(("profile", index))
        return 0


real_lib, real_optional = ke._lib_handle(), dict(ke._OPTIONAL)
fake = FakeRuntime(real_lib, {"x": (2, 8), "y": (2, 4)})
ke._LIB, ke._OPTIONAL["torch"], ke._OPTIONAL["cupy"] = fake, None, fake_cupy
try:
    ctx = e.context()
    x, y = FakeArray((2, 8)), FakeArray((2, 4))
    out = ctx.run({"x": x}, outputs={"y": y})
    check(out["y"] is y and fake.calls == [("shape", "x", (2, 8)), ("get", "y"), ("bind", "x", x.ptr), ("bind", "y", y.ptr),
                                           ("enqueue", 77)], f"first run: {fake.calls}")
    fake.calls.clear()
    ctx.run({"x": x}, outputs={"y": y})
    check(fake.calls == [("enqueue", 77)], f"the same run again is one enqueue: {fake.calls}")
    fake.calls.clear()
    x2 = FakeArray((2, 8))
    ctx.run({"x": x2}, outputs={"y": y}, stream=5)
    check(fake.calls == [("bind", "x", x2.ptr), ("enqueue", 5)], f"a new input buffer is rebound: {fake.calls}")
    fake.calls.clear()
    out = ctx.bind({"x": x})
    ctx.enqueue()
    ctx.enqueue(stream=9)
    check(fake.calls[-2:] == [("enqueue", 77), ("enqueue", 9)] and ("bind", "y", out["y"].ptr) in fake.calls,
          f"bind() once (y allocated), enqueue() alone: {fake.calls}")
    ctx.set_profile(0)
    check(fake.calls[-1] == ("profile", 0) and raises(ctx.enqueue, "call bind() first"),
          "after set_profile, enqueue() asks for bind() again")
    fake.calls.clear()
    ctx.run({"x": x}, outputs={"y": y})
    check(fake.calls[0] == ("shape", "x", (2, 8)), f"after set_profile the shapes are set again: {fake.calls}")
    check(raises(lambda: ctx.run({"z": x}), "missing ['x'], unknown ['z']"), "unknown input named")
    check(raises(lambda: ctx.run({"x": FakeArray((2, 8))}, outputs={"y": FakeArray((3, 4))}), "engine takes float32 2x4"),
          "a wrong output shape is refused")
finally:
    if "ctx" in globals():
        ctx.__del__()  # (the stand-in destroys its fake handle; the real runtime must never see it)
    ke._LIB = real_lib
    ke._OPTIONAL.clear()
    ke._OPTIONAL.update(real_optional)
sys.exit(1 if failures else 0)
