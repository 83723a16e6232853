"""Engines, contexts and the compile/tune front ends (see the package docstring)."""
import ctypes
import importlib
import json
import os
import shutil
import subprocess
import tempfile

from . import _lib

_LIB = None
_LIB_PATH = None

# ONNX dtype codes (kiln_dtype) and the one name kiln uses for each (numpy's; ml_dtypes' for
# bfloat16 and float8_e4m3fn), and the __cuda_array_interface__ type strings.
_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
           10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16", 17: "float8_e4m3fn"}
_TYPESTR = {"<f4": "float32", "|u1": "uint8", "|i1": "int8", "<u2": "uint16", "<i2": "int16", "<i4": "int32",
            "<i8": "int64", "|b1": "bool", "<f2": "float16", "<f8": "float64", "<u4": "uint32", "<u8": "uint64"}


class KilnError(RuntimeError):
    """A kiln runtime call or CLI command failed; the message is kiln's."""


def _lib_handle():
    global _LIB, _LIB_PATH
    if _LIB is None:
        _LIB, _LIB_PATH = _lib.load()
    return _LIB


def _check(status, what):
    if status != 0:
        raise KilnError(f"{what}: {_lib_handle().kiln_status_message(status).decode()}")


def version():
    """The runtime library's version string."""
    return _lib_handle().kiln_version().decode()


class TensorInfo:
    """One engine input or output: name, dtype (numpy's name), shape."""

    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, dtype, tuple(shape)

    def __repr__(self):
        return f"TensorInfo({self.name!r}, {self.dtype}, {'x'.join(map(str, self.shape)) or 'scalar'})"


class Engine:
    """A kiln engine file loaded and verified by the runtime (no GPU needed to load one)."""

    def __init__(self, path_or_bytes):
        lib = _lib_handle()
        handle = ctypes.c_void_p()
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            data = bytes(path_or_bytes)
            _check(lib.kiln_engine_load_from_memory(data, len(data), ctypes.byref(handle)), "loading the engine")
            self.path = None
        else:
            self.path = os.fspath(path_or_bytes)
            _check(lib.kiln_engine_load(self.path.encode(), ctypes.byref(handle)), f"loading {self.path}")
        self._handle = handle
        self.inputs, self.outputs = [], []
        for i in range(lib.kiln_engine_num_io(handle)):
            rank = lib.kiln_engine_io_rank(handle, i)
            dims = lib.kiln_engine_io_shape(handle, i)
            code = lib.kiln_engine_io_dtype(handle, i)
            info = TensorInfo(lib.kiln_engine_io_name(handle, i).decode(), _DTYPES.get(code, f"dtype {code}"),
                              [dims[k] for k in range(rank)])
            (self.inputs if lib.kiln_engine_io_is_input(handle, i) else self.outputs).append(info)
        self.num_profiles = lib.kiln_engine_num_profiles(handle)  # (kiln compile --min/--opt/--max-shapes repeated)
        self.arch = lib.kiln_engine_target_arch(handle).decode()
        self.route = lib.kiln_engine_route(handle).decode()

    def context(self):
        """An execution context on the current CUDA context (weights shared with the engine's other
        contexts there)."""
        return Context(self)

    def __del__(self):
        if getattr(self, "_handle", None) and _LIB is not None:
            _LIB.kiln_engine_destroy(self._handle)
            self._handle = None

    def __repr__(self):
        return f"Engine({self.path or '<bytes>'}, {self.arch}, inputs={self.inputs}, outputs={self.outputs})"


_OPTIONAL = {}


def _optional(name):
    """The module, or None when it is not installed; asked once (a failed import is not cached by
    Python and searched for again on every call: ~70 us each, on every run())."""
    if name not in _OPTIONAL:
        try:
            _OPTIONAL[name] = importlib.import_module(name)
        except ImportError:
            _OPTIONAL[name] = None
    return _OPTIONAL[name]


def _torch():
    return _optional("torch")


def _torch_stream(torch):
    """The current torch stream's handle on the current device: the raw query where torch has it
    (no Stream object made per run), else the public one."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(torch.cuda.current_device()) if raw else torch.cuda.current_stream().cuda_stream


def _cupy():
    return _optional("cupy")


class Context:
    """Runs an engine: ctx.run({name: tensor}) returns {output name: tensor}."""

    def __init__(self, engine):
        lib = _lib_handle()
        handle = ctypes.c_void_p()
        _check(lib.kiln_context_create(engine._handle, ctypes.byref(handle)), "creating a context")
        self.engine, self._handle = engine, handle
        # What run() needs on every call, made once (its host time is what Python adds to each
        # run): inputs by name, encoded names, and what the runtime already holds, so that
        # unchanged shapes, output shapes and bindings cost no call into the runtime.
        self._want = {t.name: t for t in engine.inputs}
        self._names = {t.name: t.name.encode() for t in engine.inputs + engine.outputs}
        self._forget()

    def _forget(self):
        self._set_dims, self._bound, self._out_shapes, self._bound_framework = {}, {}, None, None

    def __del__(self):
        if getattr(self, "_handle", None) and _LIB is not None:
            _LIB.kiln_context_destroy(self._handle)
            self._handle = None

    def set_profile(self, index):
        """Selects the engine's optimization profile `index` (0 until set): the shape ranges and
        specialisations the next runs use."""
        _check(_lib_handle().kiln_context_set_profile(self._handle, int(index)), f"profile {index}")
        self._forget()  # (the runtime reset the input shapes to the profile's opt)

    def run(self, inputs, outputs=None, stream=None):
        """Enqueues one execution on `stream` (default: the caller's current torch/CuPy stream)
        and returns the outputs. CUDA tensors (torch, CuPy: anything with
        __cuda_array_interface__) are bound zero-copy and must be contiguous with the engine's
        dtype and shape (any shape inside the profile of an engine built with dynamic shapes; the
        outputs then have the shapes that follow); `outputs` may give preallocated ones. numpy arrays are copied to the GPU
        (through torch or CuPy) and the outputs come back as numpy after the stream is synchronized.
        """
        numpy_only = all(type(v).__module__ == "numpy" for v in inputs.values())
        result, framework, torch, cupy = self._prepare(inputs, outputs)
        self._enqueue(stream, framework, torch, cupy)
        if numpy_only:
            if framework == "torch":
                torch.cuda.synchronize()
                return {k: v.cpu().numpy() for k, v in result.items()}
            cupy.cuda.get_current_stream().synchronize()
            return {k: cupy.asnumpy(v) for k, v in result.items()}
        return result

    def bind(self, inputs, outputs=None):
        """Binds inputs and outputs as run() does (shapes set, addresses bound; outputs not given
        are allocated) without running, and returns the outputs; enqueue() then runs on them,
        TensorRT's set_tensor_address + enqueueV3 idiom for a serving loop whose tensors stay put.
        The tensors must stay alive and in place while bound."""
        if any(type(v).__module__ == "numpy" for v in inputs.values()):
            raise KilnError("bind() takes CUDA tensors (a numpy array would be a copy made per call)")
        return self._prepare(inputs, outputs)[0]

    def enqueue(self, stream=None):
        """One execution on the tensors of the last bind() (or run()), on `stream` (default: the
        current torch/CuPy stream); returns without waiting."""
        framework = self._bound_framework
        if framework is None:
            raise KilnError("enqueue() runs on bound tensors: call bind() first")
        self._enqueue(stream, framework, _torch(), _cupy())

    def _prepare(self, inputs, outputs):
        """Sets the inputs' shapes and binds every tensor (copying numpy inputs to the GPU and
        allocating the outputs not given); returns the outputs, the framework and its modules."""
        lib = _lib_handle()
        want = self._want
        if len(inputs) != len(want) or any(n not in want for n in inputs):
            missing = [n for n in want if n not in inputs]
            unknown = [n for n in inputs if n not in want]
            raise KilnError(f"inputs: missing {missing}, unknown {unknown}; the engine takes "
                            f"{[t.name for t in self.engine.inputs]}")
        torch, cupy = _torch(), _cupy()
        framework = None
        for v in inputs.values():
            if torch is not None and isinstance(v, torch.Tensor):
                framework = "torch"
                break
            if cupy is not None and isinstance(v, cupy.ndarray):
                framework = "cupy"
                break
        if framework is None:
            framework = "torch" if torch is not None else "cupy" if cupy is not None else None
        if framework is None:
            raise KilnError("running an engine needs torch or cupy for device memory")
        keep = []  # device tensors that must live until the stream is done
        changed = False
        for name, value in inputs.items():
            dims = tuple(int(d) for d in value.shape)
            if self._set_dims.get(name) != dims:
                arr = (ctypes.c_int64 * max(len(dims), 1))(*dims)
                self._set_dims.pop(name, None)
                _check(lib.kiln_context_set_input_shape(self._handle, self._names[name], arr, len(dims)),
                       f"the shape of '{name}'")
                self._set_dims[name], changed = dims, True
        if changed or self._out_shapes is None:
            self._out_shapes = None
            self._out_shapes = {t.name: self._shape(t.name) for t in self.engine.outputs}
        for name, value in inputs.items():
            dev = self._to_device(value, framework, torch, cupy)
            self._bind(name, dev, want[name], self._set_dims[name], torch, cupy)
            keep.append(dev)
        result = {}
        for t in self.engine.outputs:
            shape = self._out_shapes[t.name]
            out = (outputs or {}).get(t.name)
            if out is None:
                out = self._empty(t, shape, framework, torch, cupy)
            self._bind(t.name, out, t, shape, torch, cupy)
            result[t.name] = out
        # (kept until the next bind: the caller orders runs on its stream)
        self._keep, self._bound_framework = keep + list(result.values()), framework
        return result, framework, torch, cupy

    def _enqueue(self, stream, framework, torch, cupy):
        if stream is None:
            stream = _torch_stream(torch) if framework == "torch" else cupy.cuda.get_current_stream().ptr
        _check(_lib_handle().kiln_context_enqueue(self._handle, ctypes.c_void_p(stream)), "enqueue")

    @staticmethod
    def _to_device(value, framework, torch, cupy):
        if type(value).__module__ == "numpy":
            return torch.from_numpy(value).cuda() if framework == "torch" else cupy.asarray(value)
        return value

    def _shape(self, name):
        """The tensor's shape for the next run (outputs follow the inputs' shapes)."""
        dims, rank = (ctypes.c_int64 * 32)(), ctypes.c_int32()
        _check(_lib_handle().kiln_context_get_tensor_shape(self._handle, self._names[name], dims, 32, ctypes.byref(rank)),
               f"the shape of '{name}'")
        return tuple(dims[k] for k in range(rank.value))

    @staticmethod
    def _empty(info, shape, framework, torch, cupy):
        if framework == "torch":
            dt = getattr(torch, info.dtype, None)
            if dt is None:
                raise KilnError(f"output '{info.name}': torch has no {info.dtype}")
            return torch.empty(shape, dtype=dt, device="cuda")
        return cupy.empty(shape, dtype=info.dtype)

    def _bind(self, name, tensor, info, want_shape, torch, cupy):
        if torch is not None and isinstance(tensor, torch.Tensor):
            if not tensor.is_cuda:
                raise KilnError(f"'{name}': a CPU torch tensor; pass a CUDA tensor or a numpy array")
            dtype = str(tensor.dtype).replace("torch.", "")
            ptr, shape, contiguous = tensor.data_ptr(), tuple(tensor.shape), tensor.is_contiguous()
        elif hasattr(tensor, "__cuda_array_interface__"):
            cai = tensor.__cuda_array_interface__
            dtype = _TYPESTR.get(cai["typestr"], cai["typestr"])
            ptr, shape = cai["data"][0], tuple(cai["shape"])
            strides, step = [], int(cai["typestr"][2:])  # C-order strides in bytes
            for d in reversed(shape):
                strides.insert(0, step)
                step *= d
            contiguous = cai.get("strides") is None or tuple(cai["strides"]) == tuple(strides)
        else:
            raise KilnError(f"'{name}': {type(tensor).__name__} is not a CUDA tensor")
        if dtype != info.dtype or shape != want_shape:
            raise KilnError(f"'{name}' is {dtype} {'x'.join(map(str, shape))}, the engine takes "
                            f"{info.dtype} {'x'.join(map(str, want_shape))}")
        if not contiguous:
            raise KilnError(f"'{name}' is not contiguous (call .contiguous() first)")
        if self._bound.get(name) != ptr:
            self._bound.pop(name, None)
            _check(_lib_handle().kiln_context_set_tensor_address(self._handle, self._names[name],
                                                                 ctypes.c_void_p(ptr)), f"binding '{name}'")
            self._bound[name] = ptr


def _kiln_exe():
    exe = os.environ.get("KILN_BIN") or shutil.which("kiln")
    if not exe:
        here = os.path.dirname(os.path.abspath(__file__))
        local = os.path.normpath(os.path.join(here, "..", "..", "..", "build", "bin", "kiln"))
        exe = local if os.path.exists(local) else None
    if not exe:
        raise KilnError("the kiln executable was not found: set KILN_BIN or put kiln on PATH")
    return exe


def _cli(args):
    p = subprocess.run([_kiln_exe()] + args, capture_output=True, text=True)
    if p.returncode != 0:
        raise KilnError((p.stderr.strip() or p.stdout.strip()) or f"kiln {args[0]} exited {p.returncode}")
    return p.stdout


def _model_path(model, tmp):
    if isinstance(model, (bytes, bytearray, memoryview)):
        path = os.path.join(tmp, "model.onnx")
        with open(path, "wb") as f:
            f.write(bytes(model))
        return path
    return os.fspath(model)


def _shapes(shapes):
    if shapes is None or isinstance(shapes, str):
        return shapes
    # {"x": (1, 3, 224, 224), "batch": 8}: input shapes and symbolic dims by name
    return ",".join(f"{k}={v}" if isinstance(v, int) else f"{k}:{'x'.join(map(str, v))}" for k, v in shapes.items())


def compile(model, output=None, precision=None, route=None, shapes=None, io_dtype=None, args=()):
    """Compiles an ONNX model (a path, or the model's bytes) with `kiln compile` and returns the
    loaded Engine (written to `output` when given). `shapes`: a --shapes string or a dict of input
    shapes / symbolic dims by name; `io_dtype`: "fp16" or "bf16" for an engine whose float inputs
    and outputs are half-precision tensors; `args`: more CLI arguments."""
    with tempfile.TemporaryDirectory(prefix="kiln-") as tmp:
        path = _model_path(model, tmp)
        out = os.fspath(output) if output is not None else os.path.join(tmp, "model.kiln")
        cmd = ["compile", path, "-o", out, "--json"]
        if precision:
            cmd += ["--precision", precision]
        if route is not None:
            cmd += ["--route", route]
        if _shapes(shapes):
            cmd += ["--shapes", _shapes(shapes)]
        if io_dtype:
            cmd += ["--io-dtype", io_dtype]
        _cli(cmd + list(args))
        with open(out, "rb") as f:
            data = f.read()
    engine = Engine(data)
    engine.path = os.fspath(output) if output is not None else None
    return engine


def tune(model, route, output=None, args=()):
    """Runs `kiln tune MODEL --route ROUTE --json` (see docs/cli.md) and returns its JSON summary;
    the best engine is written to `output` when given. Needs a GPU (or args=["--dry-run"])."""
    with tempfile.TemporaryDirectory(prefix="kiln-") as tmp:
        cmd = ["tune", _model_path(model, tmp), "--route", route, "--json"]
        if output is not None:
            cmd += ["-o", os.fspath(output)]
        return json.loads(_cli(cmd + list(args)))
