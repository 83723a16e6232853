"""kiln from Python: compile ONNX models to engines, load them, run them on torch/CuPy/numpy data.

    import kiln, torch
    engine = kiln.compile("model.onnx", precision="fp16")      # or kiln.Engine("model.kiln")
    ctx = engine.context()
    y = ctx.run({"x": torch.randn(1, 3, 224, 224, device="cuda")})["y"]

compile() and tune() run the `kiln` executable ($KILN_BIN, else `kiln` on PATH, else this source
tree's build/bin/kiln); Engine and Context call libkiln_runtime.so (kiln._lib says where it is
found). CUDA tensors are passed zero-copy (anything with __cuda_array_interface__: torch, CuPy,
Numba) and the work is enqueued on the caller's current stream; numpy arrays are copied.
"""
from .engine import Engine, Context, TensorInfo, KilnError, compile, tune, version

__all__ = ["Engine", "Context", "TensorInfo", "KilnError", "compile", "tune", "version"]
